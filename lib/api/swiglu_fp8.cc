// SwiGLU + FP8 blockwise entry points: validate every argument, pick the program, fill the
// parameters, launch (the flow both SwiGLU families share, lib/api/swiglu_common.h). Nothing is
// launched or written when an argument is wrong.
#include "api/swiglu_common.h"
#include "families/swiglu_fp8_launch.h"

namespace cake {
namespace {

struct Fp8 {
  using Desc = cake_swiglu_fp8_desc;
  using Params = cake_swiglu_fp8_params;
  using Sizes = SwigluFp8Sizes;
  using SizesOut = cake_swiglu_fp8_sizes;
  static constexpr cake_family_t kFamily = CAKE_FAMILY_SWIGLU_FP8;
  // Any M: the last row block may be partial (a tail program's); K holds whole 1x128 blocks.
  static constexpr SwigluShapeRule kShape = {1, 128, "the 1x128 scale block"};

  static constexpr auto desc_init = &cake_swiglu_fp8_desc_init;
  static constexpr auto sizes_init = &cake_swiglu_fp8_sizes_init;
  static constexpr auto sizes = &swiglu_fp8_sizes;
  static constexpr auto tiles = &swiglu_fp8_tiles;
  static constexpr auto launch_shape = &swiglu_fp8_launch_shape;
  static cake_status_t check_desc(const Desc &d) { return swiglu_check_scale_rule(d.scale_rule); }
  static int32_t variant(const Desc &d) { return swiglu_fp8_variant(d.m); }
  static bool fill_params(const cake_program_desc &prog, const Desc &d, const SwigluTensors &t,
                          Params *p) {
    return swiglu_fp8_fill_params(prog, d.m, d.k, enum_bits(d.scale_rule), t.in, t.grad, t.row_q,
                                  t.row_s, t.col_q, t.col_s, p);
  }
  // The scale matrices' storage strides: row_s is [O/128, M], col_s [M/128, O].
  static void more_sizes(const Desc &d, SizesOut *out) {
    out->row_s_stride = d.m;
    out->col_s_stride = out->out_cols;
  }
};

using Api = SwigluApi<Fp8>;

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_swiglu_fp8_desc_init(cake_swiglu_fp8_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->orientation = CAKE_MXFP8_ROWWISE;
  desc->scale_rule = CAKE_FP8_SCALE_EXACT;
  swiglu_variant_defaults(&desc->variant);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_swiglu_fp8_sizes_init(cake_swiglu_fp8_sizes *sizes) {
  return init_struct(sizes, "sizes");
}

CAKE_API cake_status_t cake_swiglu_fp8_buffer_sizes(const cake_swiglu_fp8_desc *desc,
                                                    int backward, cake_swiglu_fp8_sizes *sizes) {
  clear_error();
  return Api::buffer_sizes(desc, backward, sizes);
}

CAKE_API cake_status_t cake_swiglu_fp8_forward(cake_handle_t handle,
                                               const cake_swiglu_fp8_desc *desc, const void *in,
                                               void *row_q, void *row_s, void *col_q,
                                               void *col_s, cake_stream_t stream) {
  clear_error();
  return Api::run(handle, desc, 0, {in, nullptr, row_q, row_s, col_q, col_s}, stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_backward(cake_handle_t handle,
                                                const cake_swiglu_fp8_desc *desc, const void *in,
                                                const void *grad, void *row_q, void *row_s,
                                                void *col_q, void *col_s, cake_stream_t stream) {
  clear_error();
  return Api::run(handle, desc, 1, {in, grad, row_q, row_s, col_q, col_s}, stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_query(cake_handle_t handle,
                                             const cake_swiglu_fp8_desc *desc, int backward,
                                             cake_program_info *info) {
  clear_error();
  return Api::query(handle, desc, backward, info);
}

}  // extern "C"
