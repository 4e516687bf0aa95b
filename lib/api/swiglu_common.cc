#include "api/swiglu_common.h"

#include <cmath>

namespace cake {

void swiglu_variant_defaults(cake_swiglu_variant_desc *v) {
  v->activation = CAKE_SWIGLU_ACT_SILU;
  v->alpha = 1.702f;
  v->limit = 7.0f;
  v->weighted = 0;
  v->p = nullptr;
  v->dp = nullptr;
}

cake_status_t swiglu_check_variant(const cake_swiglu_variant_desc &v) {
  const int32_t act = enum_bits(v.activation);
  if (act != CAKE_SWIGLU_ACT_SILU && act != CAKE_SWIGLU_ACT_CLAMPED) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->variant.activation = %d: CAKE_SWIGLU_ACT_SILU (0) or "
                "CAKE_SWIGLU_ACT_CLAMPED (1)",
                act);
  }
  if (act == CAKE_SWIGLU_ACT_CLAMPED) {
    if (!(v.limit > 0.0f)) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT,
                  "desc->variant.limit = %g: the clamped activation needs a limit > 0 (not NaN)",
                  static_cast<double>(v.limit));
    }
    if (!std::isfinite(v.alpha)) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT,
                  "desc->variant.alpha = %g: the clamped activation needs a finite alpha",
                  static_cast<double>(v.alpha));
    }
  }
  if (v.weighted != 0 && v.weighted != 1) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->variant.weighted = %d: 0 (unweighted) or 1 (y * p, one weight a row)",
                v.weighted);
  }
  return CAKE_STATUS_SUCCESS;
}

bool swiglu_is_variant(const cake_swiglu_variant_desc &v) {
  return enum_bits(v.activation) != CAKE_SWIGLU_ACT_SILU || v.weighted != 0;
}

int32_t swiglu_route_variant(const cake_swiglu_variant_desc &v) {
  return swiglu_is_variant(v) ? kSwRouteVariant : 0;
}

cake_status_t check_aligned4(const void *ptr, const char *name) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
  if (addr % 4 != 0) {
    return fail(CAKE_STATUS_MISALIGNED, "%s = %p: must be 4-byte aligned; it is off by %u", name,
                ptr, static_cast<unsigned>(addr % 4));
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t swiglu_check_variant_tensors(cake_handle_t handle, int backward,
                                           const cake_swiglu_variant_desc &v) {
  if (v.weighted == 0) return CAKE_STATUS_SUCCESS;
  const bool dp = backward != 0;
  CAKE_TRY(check_not_null(v.p, "desc->variant.p"));
  if (dp) CAKE_TRY(check_not_null(v.dp, "desc->variant.dp"));
  CAKE_TRY(check_aligned4(v.p, "desc->variant.p"));
  if (dp) CAKE_TRY(check_aligned4(v.dp, "desc->variant.dp"));
  CAKE_TRY(check_device_pointer(handle, v.p, "desc->variant.p"));
  return dp ? check_device_pointer(handle, v.dp, "desc->variant.dp") : CAKE_STATUS_SUCCESS;
}

cake_swiglu_variant swiglu_kernel_variant(const cake_swiglu_variant_desc &v, int backward) {
  cake_swiglu_variant k{};
  k.clamped = enum_bits(v.activation) == CAKE_SWIGLU_ACT_CLAMPED ? 1u : 0u;
  k.weighted = v.weighted != 0 ? 1u : 0u;
  k.alpha = k.clamped ? v.alpha : 1.0f;
  k.limit = k.clamped ? v.limit : 0.0f;
  k.p = k.weighted ? v.p : nullptr;
  k.dp = k.weighted && backward ? v.dp : nullptr;
  return k;
}

int swiglu_form_of(bool backward, cake_mxfp8_orientation_t o) {
  const int orient = o == CAKE_MXFP8_ROWWISE ? 0 : (o == CAKE_MXFP8_COLWISE ? 1 : 2);
  return (backward ? 3 : 0) + orient;
}

cake_status_t swiglu_check_backward(int backward) {
  if (backward == 0 || backward == 1) return CAKE_STATUS_SUCCESS;
  return fail(CAKE_STATUS_INVALID_ARGUMENT, "backward = %d: 0 (forward) or 1 (backward)",
              backward);
}

cake_status_t swiglu_check_orientation(const cake_mxfp8_orientation_t &orientation_field) {
  const int32_t orientation = enum_bits(orientation_field);
  if (orientation == CAKE_MXFP8_ROWWISE || orientation == CAKE_MXFP8_COLWISE ||
      orientation == CAKE_MXFP8_BOTH) {
    return CAKE_STATUS_SUCCESS;
  }
  return fail(CAKE_STATUS_INVALID_ARGUMENT,
              "desc->orientation = %d: CAKE_MXFP8_ROWWISE (1), _COLWISE (2) or _BOTH (3); at "
              "least one orientation must be enabled",
              orientation);
}

cake_status_t swiglu_check_desc(int backward, int64_t m, int64_t k,
                                const cake_mxfp8_orientation_t &orientation_field,
                                const SwigluShapeRule &rule) {
  CAKE_TRY(swiglu_check_backward(backward));
  if (m <= 0 || k <= 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc->m = %lld, desc->k = %lld: both must be > 0",
                static_cast<long long>(m), static_cast<long long>(k));
  }
  if (m % rule.m_multiple != 0 || k % rule.k_multiple != 0) {
    if (rule.m_multiple == rule.k_multiple) {
      return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                  "desc->m = %lld, desc->k = %lld: both must be multiples of %lld (%s)",
                  static_cast<long long>(m), static_cast<long long>(k),
                  static_cast<long long>(rule.k_multiple), rule.why);
    }
    if (rule.m_multiple == 1) {
      return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                  "desc->k = %lld: must be a multiple of %lld (%s); desc->m = %lld may be any",
                  static_cast<long long>(k), static_cast<long long>(rule.k_multiple), rule.why,
                  static_cast<long long>(m));
    }
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->m = %lld, desc->k = %lld: m must be a multiple of %lld and k of %lld (%s)",
                static_cast<long long>(m), static_cast<long long>(k),
                static_cast<long long>(rule.m_multiple), static_cast<long long>(rule.k_multiple),
                rule.why);
  }
  return swiglu_check_orientation(orientation_field);
}

cake_status_t swiglu_check_scale_rule(const cake_fp8_scale_rule_t &rule_field) {
  const int32_t rule = enum_bits(rule_field);
  if (rule == CAKE_FP8_SCALE_EXACT || rule == CAKE_FP8_SCALE_POW2) return CAKE_STATUS_SUCCESS;
  return fail(CAKE_STATUS_INVALID_ARGUMENT,
              "desc->scale_rule = %d: CAKE_FP8_SCALE_EXACT (0) or CAKE_FP8_SCALE_POW2 (1)", rule);
}

cake_status_t swiglu_check_bytes(int64_t m, int64_t k, bool sizes_ok) {
  if (sizes_ok) return CAKE_STATUS_SUCCESS;
  return fail(CAKE_STATUS_INVALID_ARGUMENT,
              "desc->m = %lld, desc->k = %lld: the buffers overflow 64-bit byte counts",
              static_cast<long long>(m), static_cast<long long>(k));
}

cake_status_t swiglu_check_tiles(int64_t tiles, int64_t m, int64_t k,
                                 const cake_program_desc &prog) {
  if (tiles >= 1 && tiles <= INT32_MAX) return CAKE_STATUS_SUCCESS;
  return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
              "desc->m = %lld, desc->k = %lld: %lld CTA tiles for program %s; at most %d",
              static_cast<long long>(m), static_cast<long long>(k),
              static_cast<long long>(tiles), prog.name, INT32_MAX);
}

cake_status_t swiglu_check_tensors(cake_handle_t handle, int backward,
                                   cake_mxfp8_orientation_t orientation, SwigluTensors *t) {
  const bool rows = orientation & CAKE_MXFP8_ROWWISE;
  const bool cols = orientation & CAKE_MXFP8_COLWISE;
  if (!backward) t->grad = nullptr;
  if (!rows) t->row_q = t->row_s = nullptr;
  if (!cols) t->col_q = t->col_s = nullptr;
  // Checked in this order: every NULL first, then every alignment, then device memory.
  const struct {
    const void *ptr;
    const char *name;
    bool used;
  } tensors[] = {{t->in, "in", true},       {t->grad, "grad", backward != 0},
                 {t->row_q, "row_q", rows}, {t->row_s, "row_s", rows},
                 {t->col_q, "col_q", cols}, {t->col_s, "col_s", cols}};
  for (const auto &x : tensors) {
    if (x.used) CAKE_TRY(check_not_null(x.ptr, x.name));
  }
  for (const auto &x : tensors) {
    if (x.used) CAKE_TRY(check_aligned16(x.ptr, x.name));
  }
  for (const auto &x : tensors) CAKE_TRY(check_device_pointer(handle, x.ptr, x.name));
  return CAKE_STATUS_SUCCESS;
}

cake_status_t swiglu_fill_failed(const cake_program_desc &prog, int64_t m, int64_t k) {
  return fail(CAKE_STATUS_INTERNAL_ERROR, "program %s cannot run M = %lld, K = %lld", prog.name,
              static_cast<long long>(m), static_cast<long long>(k));
}

}  // namespace cake
