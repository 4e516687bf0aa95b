// cake::swiglu_mxfp8_fwd and cake::swiglu_mxfp8_bwd: the CUDA kernels. Not differentiable: the
// quantized outputs feed an MXFP8 GEMM, and the backward is its own op.
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "ops.h"
#include "runtime.h"
#include "swiglu_common.h"

namespace cake_torch {
namespace {

using Quantized = SwigluOutputs;
using QuantizedGrad = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

cake_mxfp8_orientation_t orientation_of(int64_t orientation) {
  TORCH_CHECK_VALUE(orientation >= 1 && orientation <= 3, "cake swiglu_mxfp8: orientation ",
                    orientation, ": 1 (rowwise), 2 (colwise) or 3 (both)");
  return static_cast<cake_mxfp8_orientation_t>(orientation);
}

Quantized run(const char *op, const at::Tensor &inp, const at::Tensor *grad, int64_t orientation,
              std::optional<c10::string_view> program, SwigluVariant *variant,
              int64_t activation, double alpha, double limit,
              const std::optional<at::Tensor> &prob) {
  check_swiglu_input(op, inp);
  check_swiglu_grad(op, inp, grad);
  const std::optional<std::string> name = program_name(program);
  cake_swiglu_mxfp8_desc desc;
  cake_swiglu_mxfp8_desc_init(&desc);
  *variant =
      swiglu_variant(op, inp, grad != nullptr, desc.variant, activation, alpha, limit, prob);
  desc.variant = variant->desc;
  desc.m = inp.size(0);
  desc.k = inp.size(1) / 2;
  desc.orientation = orientation_of(orientation);
  desc.program = name ? name->c_str() : nullptr;
  cake_swiglu_mxfp8_sizes sizes;
  cake_swiglu_mxfp8_sizes_init(&sizes);
  check(cake_swiglu_mxfp8_buffer_sizes(&desc, grad != nullptr ? 1 : 0, &sizes),
        "cake_swiglu_mxfp8_buffer_sizes");
  // The scales come back as the bytes of the swizzled 128x4 layout.
  Quantized out = swiglu_outputs(inp, desc.m, sizes.out_cols, desc.orientation & CAKE_MXFP8_ROWWISE,
                                 desc.orientation & CAKE_MXFP8_COLWISE,
                                 {static_cast<int64_t>(sizes.row_s_bytes)},
                                 {static_cast<int64_t>(sizes.col_s_bytes)}, at::kByte);
  swiglu_launch(desc, inp, grad, out, &cake_swiglu_mxfp8_forward, "cake_swiglu_mxfp8_forward",
                &cake_swiglu_mxfp8_backward, "cake_swiglu_mxfp8_backward");
  return out;
}

Quantized swiglu_fwd_cuda(const at::Tensor &inp, int64_t orientation,
                          std::optional<c10::string_view> program, int64_t activation,
                          double alpha, double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  return run("swiglu_mxfp8", inp, nullptr, orientation, program, &v, activation, alpha, limit,
             prob);
}

QuantizedGrad swiglu_bwd_cuda(const at::Tensor &inp, const at::Tensor &grad, int64_t orientation,
                              std::optional<c10::string_view> program, int64_t activation,
                              double alpha, double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  auto [row_q, row_s, col_q, col_s] = run("swiglu_mxfp8 backward", inp, &grad, orientation,
                                          program, &v, activation, alpha, limit, prob);
  return {row_q, row_s, col_q, col_s, v.dprob};
}

}  // namespace

TORCH_LIBRARY_IMPL(cake, CUDA, m) {
  m.impl("swiglu_mxfp8_fwd", &swiglu_fwd_cuda);
  m.impl("swiglu_mxfp8_bwd", &swiglu_bwd_cuda);
}

TORCH_LIBRARY_IMPL(cake, CPU, m) {
  m.impl("swiglu_mxfp8_fwd", &swiglu_fwd_cuda);
  m.impl("swiglu_mxfp8_bwd", &swiglu_bwd_cuda);
}

}  // namespace cake_torch
