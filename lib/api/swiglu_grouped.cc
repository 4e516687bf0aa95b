// Grouped SwiGLU entry points of both families (docs/spec/swiglu-grouped.md): validate every
// argument the host can see (never the offsets: they are device memory the kernel reads), pick
// the grouped program, fill the parameters, launch. The descriptor checks, tile check, pointer
// checks and launch are written once for both families; a family supplies its traits.
#include <stdint.h>

#include "api/handle.h"
#include "api/launch.h"
#include "api/program_info.h"
#include "api/struct_size.h"
#include "api/swiglu_common.h"
#include "api/validate.h"
#include "cake.h"
#include "error/error.h"
#include "families/family.h"
#include "families/swiglu_grouped_launch.h"
#include "router/router.h"
#include "swiglu_grouped_layout.h"

namespace cake {
namespace {

// The shape rules both families share, in order: backward, tokens, k, experts, orientation.
cake_status_t check_grouped_desc(int backward, int64_t T, int64_t k, int32_t E,
                                 const cake_mxfp8_orientation_t &orientation_field,
                                 int64_t k_multiple, const char *why) {
  CAKE_TRY(swiglu_check_backward(backward));
  if (T <= 0 || k <= 0 || E < 1) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->tokens = %lld, desc->k = %lld, desc->experts = %d: tokens and k must be > "
                "0, experts >= 1",
                static_cast<long long>(T), static_cast<long long>(k), E);
  }
  if (T > kSwgMaxTokens) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->tokens = %lld: at most %lld (the experts' rows are counted in 32 bits)",
                static_cast<long long>(T), static_cast<long long>(kSwgMaxTokens));
  }
  if (E > kSwgMaxExperts) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->experts = %d: at most CAKE_SWIGLU_GROUPED_MAX_EXPERTS (%lld)", E,
                static_cast<long long>(kSwgMaxExperts));
  }
  if (k % k_multiple != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->k = %lld: must be a multiple of %lld (%s)",
                static_cast<long long>(k), static_cast<long long>(k_multiple), why);
  }
  if (2 * k > kSwgMaxCols) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->k = %lld: at most %lld (2k output columns backward, counted in 32 bits)",
                static_cast<long long>(k), static_cast<long long>(kSwgMaxCols / 2));
  }
  return swiglu_check_orientation(orientation_field);
}

// The tensors of one call: those the form uses must be non-NULL (status may be NULL), aligned
// (16 bytes; offsets and status 4) and device memory; NULL first, then alignment, then memory.
cake_status_t check_grouped_tensors(cake_handle_t handle, int backward,
                                    cake_mxfp8_orientation_t orientation,
                                    SwigluGroupedTensors *t) {
  const bool rows = orientation & CAKE_MXFP8_ROWWISE;
  const bool cols = orientation & CAKE_MXFP8_COLWISE;
  if (!backward) t->grad = nullptr;
  if (!rows) t->row_q = t->row_s = nullptr;
  if (!cols) t->col_q = t->col_s = nullptr;
  const struct {
    const void *ptr;
    const char *name;
    bool used;
    bool word;  // int32: 4-byte aligned
  } tensors[] = {{t->in, "in", true, false},           {t->grad, "grad", backward != 0, false},
                 {t->offsets, "offsets", true, true},  {t->row_q, "row_q", rows, false},
                 {t->row_s, "row_s", rows, false},     {t->col_q, "col_q", cols, false},
                 {t->col_s, "col_s", cols, false},     {t->status, "status", false, true}};
  for (const auto &x : tensors) {
    if (x.used) CAKE_TRY(check_not_null(x.ptr, x.name));
  }
  for (const auto &x : tensors) {
    if (x.ptr == nullptr || !(x.used || x.word)) continue;
    CAKE_TRY(x.word ? check_aligned4(x.ptr, x.name) : check_aligned16(x.ptr, x.name));
  }
  for (const auto &x : tensors) CAKE_TRY(check_device_pointer(handle, x.ptr, x.name));
  return CAKE_STATUS_SUCCESS;
}

// F, a family's traits: Desc, Params, kFamily, kBlock (K's multiple) and kWhy, desc_init,
// check_desc (beyond the shared rules), sizes, fill_params.
template <class F>
struct GroupedApi {
  using Desc = typename F::Desc;
  using Call = SwigluCall<Desc>;  // metric T*K

  static cake_status_t read_desc(const Desc *user, int backward, Desc *d, int *form) {
    CAKE_TRY(swiglu_read_struct(user, F::desc_init, d));
    CAKE_TRY(check_grouped_desc(backward, d->tokens, d->k, d->experts, d->orientation, F::kBlock,
                                F::kWhy));
    CAKE_TRY(F::check_desc(*d));
    CAKE_TRY(swiglu_check_variant(d->variant));
    *form = CAKE_SWG_FWD_ROW + swiglu_form_of(backward != 0, d->orientation);
    SwigluGroupedSizes sizes;
    if (!F::sizes(*form, d->tokens, d->k, d->experts, &sizes)) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT,
                  "desc->tokens = %lld, desc->k = %lld: the buffers overflow 64-bit byte counts",
                  static_cast<long long>(d->tokens), static_cast<long long>(d->k));
    }
    return CAKE_STATUS_SUCCESS;
  }

  static cake_status_t prepare(cake_handle_t h, const Desc *user, int backward, Call *call) {
    CAKE_TRY(check_handle(h));
    CAKE_TRY(read_desc(user, backward, &call->desc, &call->form));
    const Desc &d = call->desc;
    const ArchTable &table = *h->table;
    call->metric = d.tokens * d.k;
    const ProgramRequest req = {F::kFamily, static_cast<uint16_t>(call->form), 0, call->metric,
                                0,          0,
                                d.program,  swiglu_route_variant(d.variant)};
    CAKE_TRY(resolve_program(table, family_ops(F::kFamily)->routing, req, &call->choice));
    const cake_program_desc &prog = table.programs[call->choice.program];
    const int64_t tiles = swiglu_grouped_tiles(prog, d.tokens, d.k, d.experts);
    if (tiles < 1 || tiles > INT32_MAX) {
      return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                  "desc->tokens = %lld, desc->k = %lld, desc->experts = %d: %lld CTA tiles for "
                  "program %s at the bound of every split; at most %d",
                  static_cast<long long>(d.tokens), static_cast<long long>(d.k), d.experts,
                  static_cast<long long>(tiles), prog.name, INT32_MAX);
    }
    call->launch = swiglu_grouped_launch_shape(prog, d.tokens, d.k, d.experts, h->sm_count);
    return CAKE_STATUS_SUCCESS;
  }

  static cake_status_t run(cake_handle_t handle, const Desc *desc, int backward,
                           SwigluGroupedTensors t, cake_stream_t stream) {
    Call call;
    CAKE_TRY(prepare(handle, desc, backward, &call));
    CAKE_TRY(check_grouped_tensors(handle, backward, call.desc.orientation, &t));
    CAKE_TRY(swiglu_check_variant_tensors(handle, backward, call.desc.variant));
    const cake_program_desc &prog = handle->table->programs[call.choice.program];
    typename F::Params p;
    if (!F::fill_params(prog, call.desc, t, &p)) {
      return fail(CAKE_STATUS_INTERNAL_ERROR, "program %s cannot run tokens = %lld, k = %lld",
                  prog.name, static_cast<long long>(call.desc.tokens),
                  static_cast<long long>(call.desc.k));
    }
    p.base.var = swiglu_kernel_variant(call.desc.variant, backward);
    return launch_program(handle, call.choice.program, call.launch.grid[0], call.launch.block,
                          call.launch.smem_bytes, stream, &p);
  }

  static cake_status_t buffer_sizes(const Desc *desc, int backward,
                                    cake_swiglu_grouped_sizes *sizes) {
    Desc d;
    int form = 0;
    CAKE_TRY(read_desc(desc, backward, &d, &form));
    CAKE_TRY(check_not_null(sizes, "sizes"));
    SwigluGroupedSizes s;
    F::sizes(CAKE_SWG_FWD_ROW + swiglu_form_of(backward != 0, CAKE_MXFP8_BOTH), d.tokens, d.k,
             d.experts, &s);
    cake_swiglu_grouped_sizes out;
    cake_swiglu_grouped_sizes_init(&out);
    out.out_cols = s.out_cols;
    out.scale_rows = s.scale_rows;
    out.q_bytes = static_cast<size_t>(s.row_q_bytes);
    out.row_s_bytes = static_cast<size_t>(s.row_s_bytes);
    out.col_s_bytes = static_cast<size_t>(s.col_s_bytes);
    return write_struct("sizes", sizes, &out, sizeof out);
  }

  static cake_status_t query(cake_handle_t handle, const Desc *desc, int backward,
                             cake_program_info *info) {
    Call call;
    CAKE_TRY(prepare(handle, desc, backward, &call));
    return swiglu_query_info(handle, call, info);
  }
};

struct Mxfp8 {
  using Desc = cake_swiglu_mxfp8_grouped_desc;
  using Params = cake_swiglu_mxfp8_grouped_params;
  static constexpr cake_family_t kFamily = CAKE_FAMILY_SWIGLU_MXFP8;
  static constexpr int64_t kBlock = 32;
  static constexpr const char *kWhy = "the 32-value MXFP8 scale block";
  static constexpr auto desc_init = &cake_swiglu_mxfp8_grouped_desc_init;
  static constexpr auto sizes = &swiglu_mxfp8_grouped_sizes;
  static cake_status_t check_desc(const Desc &) { return CAKE_STATUS_SUCCESS; }
  static bool fill_params(const cake_program_desc &prog, const Desc &d,
                          const SwigluGroupedTensors &t, Params *p) {
    return swiglu_mxfp8_grouped_fill_params(prog, d.tokens, d.k, d.experts, t, p);
  }
};

struct Fp8 {
  using Desc = cake_swiglu_fp8_grouped_desc;
  using Params = cake_swiglu_fp8_grouped_params;
  static constexpr cake_family_t kFamily = CAKE_FAMILY_SWIGLU_FP8;
  static constexpr int64_t kBlock = 128;
  static constexpr const char *kWhy = "the 1x128 scale block";
  static constexpr auto desc_init = &cake_swiglu_fp8_grouped_desc_init;
  static constexpr auto sizes = &swiglu_fp8_grouped_sizes;
  static cake_status_t check_desc(const Desc &d) { return swiglu_check_scale_rule(d.scale_rule); }
  static bool fill_params(const cake_program_desc &prog, const Desc &d,
                          const SwigluGroupedTensors &t, Params *p) {
    return swiglu_fp8_grouped_fill_params(prog, d.tokens, d.k, d.experts,
                                          enum_bits(d.scale_rule), t, p);
  }
};

using MxApi = GroupedApi<Mxfp8>;
using F8Api = GroupedApi<Fp8>;

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_desc_init(cake_swiglu_mxfp8_grouped_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->orientation = CAKE_MXFP8_ROWWISE;
  swiglu_variant_defaults(&desc->variant);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_swiglu_fp8_grouped_desc_init(cake_swiglu_fp8_grouped_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->orientation = CAKE_MXFP8_ROWWISE;
  desc->scale_rule = CAKE_FP8_SCALE_EXACT;
  swiglu_variant_defaults(&desc->variant);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_swiglu_grouped_sizes_init(cake_swiglu_grouped_sizes *sizes) {
  return init_struct(sizes, "sizes");
}

CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_buffer_sizes(
    const cake_swiglu_mxfp8_grouped_desc *desc, int backward, cake_swiglu_grouped_sizes *sizes) {
  clear_error();
  return MxApi::buffer_sizes(desc, backward, sizes);
}

CAKE_API cake_status_t cake_swiglu_fp8_grouped_buffer_sizes(
    const cake_swiglu_fp8_grouped_desc *desc, int backward, cake_swiglu_grouped_sizes *sizes) {
  clear_error();
  return F8Api::buffer_sizes(desc, backward, sizes);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_forward(
    cake_handle_t handle, const cake_swiglu_mxfp8_grouped_desc *desc, const void *in,
    const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s, int32_t *status,
    cake_stream_t stream) {
  clear_error();
  return MxApi::run(handle, desc, 0,
                    {in, nullptr, offsets, row_q, row_s, col_q, col_s, status}, stream);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_backward(
    cake_handle_t handle, const cake_swiglu_mxfp8_grouped_desc *desc, const void *in,
    const void *grad, const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s,
    int32_t *status, cake_stream_t stream) {
  clear_error();
  return MxApi::run(handle, desc, 1, {in, grad, offsets, row_q, row_s, col_q, col_s, status},
                    stream);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_query(cake_handle_t handle,
                                                       const cake_swiglu_mxfp8_grouped_desc *desc,
                                                       int backward, cake_program_info *info) {
  clear_error();
  return MxApi::query(handle, desc, backward, info);
}

CAKE_API cake_status_t cake_swiglu_fp8_grouped_forward(
    cake_handle_t handle, const cake_swiglu_fp8_grouped_desc *desc, const void *in,
    const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s, int32_t *status,
    cake_stream_t stream) {
  clear_error();
  return F8Api::run(handle, desc, 0,
                    {in, nullptr, offsets, row_q, row_s, col_q, col_s, status}, stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_grouped_backward(
    cake_handle_t handle, const cake_swiglu_fp8_grouped_desc *desc, const void *in,
    const void *grad, const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s,
    int32_t *status, cake_stream_t stream) {
  clear_error();
  return F8Api::run(handle, desc, 1, {in, grad, offsets, row_q, row_s, col_q, col_s, status},
                    stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_grouped_query(cake_handle_t handle,
                                                     const cake_swiglu_fp8_grouped_desc *desc,
                                                     int backward, cake_program_info *info) {
  clear_error();
  return F8Api::query(handle, desc, backward, info);
}

}  // extern "C"
