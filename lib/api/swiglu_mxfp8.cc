// SwiGLU + MXFP8 entry points: validate every argument, pick the program, fill the parameters,
// launch (the flow both SwiGLU families share, lib/api/swiglu_common.h). Nothing is launched or
// written when an argument is wrong.
#include "api/swiglu_common.h"
#include "families/swiglu_mxfp8_launch.h"

namespace cake {
namespace {

struct Mxfp8 {
  using Desc = cake_swiglu_mxfp8_desc;
  using Params = cake_swiglu_mxfp8_params;
  using Sizes = SwigluMxfp8Sizes;
  using SizesOut = cake_swiglu_mxfp8_sizes;
  static constexpr cake_family_t kFamily = CAKE_FAMILY_SWIGLU_MXFP8;
  // Whole 32-value scale blocks along both axes (the colwise blocks run along M); the
  // swizzled layout's padding past them is written 0x00.
  static constexpr SwigluShapeRule kShape = {32, 32, "the 32-value MXFP8 scale block"};

  static constexpr auto desc_init = &cake_swiglu_mxfp8_desc_init;
  static constexpr auto sizes_init = &cake_swiglu_mxfp8_sizes_init;
  static constexpr auto sizes = &swiglu_mxfp8_sizes;
  static constexpr auto tiles = &swiglu_mxfp8_tiles;
  static constexpr auto launch_shape = &swiglu_mxfp8_launch_shape;
  static cake_status_t check_desc(const Desc &) { return CAKE_STATUS_SUCCESS; }
  static int32_t variant(const Desc &) { return 0; }
  static bool fill_params(const cake_program_desc &prog, const Desc &d, const SwigluTensors &t,
                          Params *p) {
    return swiglu_mxfp8_fill_params(prog, d.m, d.k, t.in, t.grad, t.row_q, t.row_s, t.col_q,
                                    t.col_s, p);
  }
  static void more_sizes(const Desc &, SizesOut *) {}
};

using Api = SwigluApi<Mxfp8>;

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_swiglu_mxfp8_desc_init(cake_swiglu_mxfp8_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->orientation = CAKE_MXFP8_ROWWISE;
  swiglu_variant_defaults(&desc->variant);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_swiglu_mxfp8_sizes_init(cake_swiglu_mxfp8_sizes *sizes) {
  return init_struct(sizes, "sizes");
}

CAKE_API cake_status_t cake_swiglu_mxfp8_buffer_sizes(const cake_swiglu_mxfp8_desc *desc,
                                                      int backward,
                                                      cake_swiglu_mxfp8_sizes *sizes) {
  clear_error();
  return Api::buffer_sizes(desc, backward, sizes);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_forward(cake_handle_t handle,
                                                 const cake_swiglu_mxfp8_desc *desc,
                                                 const void *in, void *row_q, void *row_s,
                                                 void *col_q, void *col_s, cake_stream_t stream) {
  clear_error();
  return Api::run(handle, desc, 0, {in, nullptr, row_q, row_s, col_q, col_s}, stream);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_backward(cake_handle_t handle,
                                                  const cake_swiglu_mxfp8_desc *desc,
                                                  const void *in, const void *grad, void *row_q,
                                                  void *row_s, void *col_q, void *col_s,
                                                  cake_stream_t stream) {
  clear_error();
  return Api::run(handle, desc, 1, {in, grad, row_q, row_s, col_q, col_s}, stream);
}

CAKE_API cake_status_t cake_swiglu_mxfp8_query(cake_handle_t handle,
                                               const cake_swiglu_mxfp8_desc *desc, int backward,
                                               cake_program_info *info) {
  clear_error();
  return Api::query(handle, desc, backward, info);
}

}  // extern "C"
