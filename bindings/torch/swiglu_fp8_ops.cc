// cake::swiglu_fp8_fwd and cake::swiglu_fp8_bwd: SwiGLU + FP8 blockwise 1x128
// (docs/spec/fp8-blockwise.md). Not differentiable: the outputs feed FP8 GEMMs. The scales come
// back in their storage order, row_s as [O/128, M] and col_s as [ceil(M/128), O] (contiguous
// FP32); cake.torch.swiglu_fp8() transposes them into the [M, O/128] / [O, ceil(M/128)] views
// with strides
// (1, M) / (1, O) that F.scaled_mm's BlockWise1x128 checks ask for.
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

Quantized run(const char *op, const at::Tensor &inp, const at::Tensor *grad, int64_t orientation,
              int64_t scale_rule, std::optional<c10::string_view> program, SwigluVariant *variant,
              int64_t activation, double alpha, double limit,
              const std::optional<at::Tensor> &prob) {
  check_swiglu_input(op, inp);
  TORCH_CHECK_VALUE(orientation >= 1 && orientation <= 3, "cake ", op, ": orientation ",
                    orientation, ": 1 (rowwise), 2 (colwise) or 3 (both)");
  TORCH_CHECK_VALUE(scale_rule == 0 || scale_rule == 1, "cake ", op, ": scale_rule ", scale_rule,
                    ": 0 (amax / 448) or 1 (powers of two)");
  check_swiglu_grad(op, inp, grad);
  const std::optional<std::string> name = program_name(program);
  cake_swiglu_fp8_desc desc;
  cake_swiglu_fp8_desc_init(&desc);
  *variant =
      swiglu_variant(op, inp, grad != nullptr, desc.variant, activation, alpha, limit, prob);
  desc.variant = variant->desc;
  desc.m = inp.size(0);
  desc.k = inp.size(1) / 2;
  desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  desc.scale_rule = static_cast<cake_fp8_scale_rule_t>(scale_rule);
  desc.program = name ? name->c_str() : nullptr;
  cake_swiglu_fp8_sizes sizes;
  cake_swiglu_fp8_sizes_init(&sizes);
  check(cake_swiglu_fp8_buffer_sizes(&desc, grad != nullptr ? 1 : 0, &sizes),
        "cake_swiglu_fp8_buffer_sizes");
  const int64_t m = desc.m, o = sizes.out_cols;
  Quantized out = swiglu_outputs(inp, m, o, orientation & CAKE_MXFP8_ROWWISE,
                                 orientation & CAKE_MXFP8_COLWISE, {o / 128, m}, {(m + 127) / 128, o},
                                 at::kFloat);
  swiglu_launch(desc, inp, grad, out, &cake_swiglu_fp8_forward, "cake_swiglu_fp8_forward",
                &cake_swiglu_fp8_backward, "cake_swiglu_fp8_backward");
  return out;
}

Quantized fwd(const at::Tensor &inp, int64_t orientation, int64_t scale_rule,
              std::optional<c10::string_view> program, int64_t activation, double alpha,
              double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  return run("swiglu_fp8", inp, nullptr, orientation, scale_rule, program, &v, activation, alpha,
             limit, prob);
}

QuantizedGrad bwd(const at::Tensor &inp, const at::Tensor &grad, int64_t orientation,
                  int64_t scale_rule, std::optional<c10::string_view> program, int64_t activation,
                  double alpha, double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  auto [row_q, row_s, col_q, col_s] = run("swiglu_fp8 backward", inp, &grad, orientation,
                                          scale_rule, program, &v, activation, alpha, limit, prob);
  return {row_q, row_s, col_q, col_s, v.dprob};
}

}  // namespace

TORCH_LIBRARY_IMPL(cake, CUDA, m) {
  m.impl("swiglu_fp8_fwd", &fwd);
  m.impl("swiglu_fp8_bwd", &bwd);
}

TORCH_LIBRARY_IMPL(cake, CPU, m) {
  m.impl("swiglu_fp8_fwd", &fwd);
  m.impl("swiglu_fp8_bwd", &bwd);
}

}  // namespace cake_torch
