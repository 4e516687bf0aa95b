// Normgate forward with quantized y: the quantized output's rules (docs/spec/normgate.md,
// "Quantized y"), its buffer sizes, the call and its query. The descriptor rules and the program
// choice are the plain forward's (lib/api/normgate.cc). Nothing is launched or written when an
// argument is wrong.
#include "api/handle.h"
#include "api/launch.h"
#include "api/normgate_call.h"
#include "api/program_info.h"
#include "api/struct_size.h"
#include "api/validate.h"
#include "error/error.h"
#include "families/normgate_launch.h"
#include "normgate_params.h"

namespace cake {
namespace {

// Rows of a call with more than one head: below 2^31 (the kernels split a row index into the
// quantized matrix's row and head with a 32-bit division).
constexpr int64_t kMaxHeadedRows = INT64_C(1) << 31;

}  // namespace

cake_status_t normgate_check_quant(const cake_normgate_desc &desc,
                                   const cake_normgate_quant_desc *user, NormgateQuantPlan *out) {
  CAKE_TRY(check_not_null(user, "quant"));
  cake_normgate_quant_desc q;
  cake_normgate_quant_desc_init(&q);
  CAKE_TRY(read_struct("quant", user, user->struct_size, sizeof q, &q, sizeof q));
  const int32_t format = enum_bits(q.format), rule = enum_bits(q.scale_rule);
  if (format != CAKE_NORMGATE_QUANT_FP8_BLOCKWISE && format != CAKE_NORMGATE_QUANT_MXFP8) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "quant->format = %d: not a cake_normgate_quant_format_t (1 FP8 blockwise, 2 MXFP8)",
                format);
  }
  if (format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE && rule != CAKE_FP8_SCALE_EXACT &&
      rule != CAKE_FP8_SCALE_POW2) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "quant->scale_rule = %d: CAKE_FP8_SCALE_EXACT (0) or CAKE_FP8_SCALE_POW2 (1)", rule);
  }
  if (q.heads < 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "quant->heads = %lld: must be >= 0 (0: one head)",
                static_cast<long long>(q.heads));
  }
  if (normgate_call_is_variant(desc, false)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "quantized y serves the default form only (SiLU gate after a whole-row norm on "
                "BF16 x, z, w); desc has gate %d, placement %d, group_size %d, x/z/w dtypes "
                "%d/%d/%d",
                enum_bits(desc.gate), enum_bits(desc.placement), desc.group_size,
                enum_bits(desc.x_dtype), enum_bits(desc.z_dtype), enum_bits(desc.w_dtype));
  }
  const int64_t heads = q.heads == 0 ? 1 : q.heads;
  if (format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE && desc.d % 128 != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->d = %d: FP8 blockwise y needs a multiple of 128 (the 1x128 scale block)",
                desc.d);
  }
  if (format == CAKE_NORMGATE_QUANT_MXFP8 && desc.d % 32 != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->d = %d: MXFP8 y needs a multiple of 32 (the 32-value scale block)", desc.d);
  }
  if (format == CAKE_NORMGATE_QUANT_MXFP8 && heads > 1 && desc.d % 128 != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->d = %d with quant->heads = %lld: MXFP8 y of several heads needs d a "
                "multiple of 128 (a head's scales fill whole 4-column tiles)",
                desc.d, static_cast<long long>(heads));
  }
  if (desc.rows % heads != 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "quant->heads = %lld: does not divide desc->rows = %lld",
                static_cast<long long>(heads), static_cast<long long>(desc.rows));
  }
  if (heads > 1 && desc.rows >= kMaxHeadedRows) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->rows = %lld with quant->heads = %lld: more than one head needs rows below "
                "2^31",
                static_cast<long long>(desc.rows), static_cast<long long>(heads));
  }
  if (!normgate_quant_plan(desc.rows, desc.d, format, rule, heads, out)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->rows = %lld, desc->d = %d: the quantized output's size overflows 64 bits",
                static_cast<long long>(desc.rows), desc.d);
  }
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_normgate_quant_desc_init(cake_normgate_quant_desc *quant) {
  CAKE_TRY(init_struct(quant, "quant"));
  quant->format = CAKE_NORMGATE_QUANT_FP8_BLOCKWISE;
  quant->scale_rule = CAKE_FP8_SCALE_EXACT;
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_normgate_quant_sizes_init(cake_normgate_quant_sizes *sizes) {
  return init_struct(sizes, "sizes");
}

CAKE_API cake_status_t cake_normgate_quant_buffer_sizes(const cake_normgate_desc *desc,
                                                        const cake_normgate_quant_desc *quant,
                                                        cake_normgate_quant_sizes *sizes) {
  clear_error();
  cake_normgate_desc d;
  CAKE_TRY(normgate_read_forward_desc(desc, &d));
  NormgateQuantPlan plan;
  CAKE_TRY(normgate_check_quant(d, quant, &plan));
  CAKE_TRY(check_not_null(sizes, "sizes"));
  cake_normgate_quant_sizes out;
  cake_normgate_quant_sizes_init(&out);
  out.q_rows = plan.q_rows;
  out.q_cols = plan.q_cols;
  out.q_bytes = static_cast<size_t>(plan.q_bytes);
  out.s_bytes = static_cast<size_t>(plan.s_bytes);
  out.s_cols = plan.s_cols;
  out.s_stride = plan.s_stride;
  return write_struct("sizes", sizes, &out, sizeof out);
}

CAKE_API cake_status_t cake_normgate_forward_quantized(
    cake_handle_t handle, const cake_normgate_desc *desc, const cake_normgate_quant_desc *quant,
    const void *x, const void *z, const void *w, void *y, float *rstd, void *q, void *q_scale,
    cake_stream_t stream) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(check_handle(handle));
  CAKE_TRY(check_not_null(quant, "quant"));  // (NULL would ask normgate_prepare_forward for the plain forward)
  CAKE_TRY(normgate_prepare_forward(handle, desc, quant, &call));
  // The outputs' null and alignment rules, then the forward's tensors (their device checks
  // last of theirs), then the outputs' device checks.
  CAKE_TRY(check_not_null(q, "q"));
  CAKE_TRY(check_not_null(q_scale, "q_scale"));
  CAKE_TRY(check_aligned16(q, "q"));
  CAKE_TRY(check_aligned16(q_scale, "q_scale"));
  CAKE_TRY(normgate_check_forward_tensors(handle, call.desc, x, z, w, y, true, rstd));
  CAKE_TRY(check_device_pointer(handle, q, "q"));
  CAKE_TRY(check_device_pointer(handle, q_scale, "q_scale"));
  cake_normgate_params p;
  normgate_fill_forward_params(call.desc, call.launch, {x, z, w, y, rstd}, &p);
  normgate_fill_quant_params(call.quant, q, q_scale, &p);
  return launch_program(handle, call.choice.program, call.launch.grid, call.launch.block,
                        call.launch.smem_bytes, stream, &p);
}

CAKE_API cake_status_t cake_normgate_forward_quantized_query(cake_handle_t handle,
                                                             const cake_normgate_desc *desc,
                                                             const cake_normgate_quant_desc *quant,
                                                             cake_program_info *info) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(check_handle(handle));
  CAKE_TRY(check_not_null(quant, "quant"));  // (NULL would ask normgate_prepare_forward for the plain forward)
  CAKE_TRY(normgate_prepare_forward(handle, desc, quant, &call));
  return write_program_info(handle, call.choice, call.launch.grid, call.metric, info);
}

}  // extern "C"
