// cake::swiglu_fp8_fwd and cake::swiglu_fp8_bwd: SwiGLU + FP8 blockwise 1x128
// (docs/spec/fp8-blockwise.md). Not differentiable: the outputs feed FP8 GEMMs. The scales come
// back in their storage order, row_s as [O/128, M] and col_s as [M/128, O] (contiguous FP32);
// cake.torch.swiglu_fp8() transposes them into the [M, O/128] / [O, M/128] views with strides
// (1, M) / (1, O) that F.scaled_mm's BlockWise1x128 checks ask for.
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "ops.h"
#include "runtime.h"

namespace cake_torch {
namespace {

using Quantized = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

Quantized run(const char *op, const at::Tensor &inp, const at::Tensor *grad, int64_t orientation,
              int64_t scale_rule, std::optional<c10::string_view> program) {
  TORCH_CHECK_VALUE(inp.dim() == 2 && inp.size(1) % 2 == 0, "cake ", op, ": in ", inp.sizes(),
                    " must be [m, 2k]");
  TORCH_CHECK_TYPE(inp.scalar_type() == at::kBFloat16, "cake ", op, ": in is ",
                   inp.scalar_type(), "; Cake takes bfloat16");
  check_same_cuda_device(op, inp, "in", {});
  TORCH_CHECK_VALUE(orientation >= 1 && orientation <= 3, "cake ", op, ": orientation ",
                    orientation, ": 1 (rowwise), 2 (colwise) or 3 (both)");
  TORCH_CHECK_VALUE(scale_rule == 0 || scale_rule == 1, "cake ", op, ": scale_rule ", scale_rule,
                    ": 0 (amax / 448) or 1 (powers of two)");
  const int64_t m = inp.size(0), k = inp.size(1) / 2;
  if (grad != nullptr) {
    TORCH_CHECK_VALUE(grad->dim() == 2 && grad->size(0) == m && grad->size(1) == k &&
                          grad->scalar_type() == at::kBFloat16 && grad->device() == inp.device(),
                      "cake ", op, ": grad (", grad->sizes(), ", ", grad->scalar_type(),
                      ") must be bfloat16 [m, k] = [", m, ", ", k, "] on ", inp.device());
  }
  std::optional<std::string> name;
  if (program.has_value()) name = std::string(program->data(), program->size());
  cake_swiglu_fp8_desc desc;
  cake_swiglu_fp8_desc_init(&desc);
  desc.m = m;
  desc.k = k;
  desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  desc.scale_rule = static_cast<cake_fp8_scale_rule_t>(scale_rule);
  desc.program = name ? name->c_str() : nullptr;
  cake_swiglu_fp8_sizes sizes;
  cake_swiglu_fp8_sizes_init(&sizes);
  check(cake_swiglu_fp8_buffer_sizes(&desc, grad != nullptr ? 1 : 0, &sizes),
        "cake_swiglu_fp8_buffer_sizes");
  const int64_t o = sizes.out_cols;
  const bool row = orientation & CAKE_MXFP8_ROWWISE, col = orientation & CAKE_MXFP8_COLWISE;
  const auto q = inp.options().dtype(at::kFloat8_e4m3fn);
  const auto f = inp.options().dtype(at::kFloat);
  Quantized out{row ? at::empty({m, o}, q) : at::empty({0}, q),
                row ? at::empty({o / 128, m}, f) : at::empty({0}, f),
                col ? at::empty({o, m}, q) : at::empty({0}, q),
                col ? at::empty({m / 128, o}, f) : at::empty({0}, f)};
  auto &[row_q, row_s, col_q, col_s] = out;
  auto p = [](const at::Tensor &t) -> void * { return t.numel() ? t.data_ptr() : nullptr; };
  const at::Tensor in = dense(inp);
  const cake_handle_t h = handle_for(inp.device());
  const cake_stream_t stream = current_stream(inp.device());
  if (grad == nullptr) {
    check(cake_swiglu_fp8_forward(h, &desc, in.data_ptr(), p(row_q), p(row_s), p(col_q),
                                  p(col_s), stream),
          "cake_swiglu_fp8_forward");
  } else {
    const at::Tensor g = dense(*grad);
    check(cake_swiglu_fp8_backward(h, &desc, in.data_ptr(), g.data_ptr(), p(row_q), p(row_s),
                                   p(col_q), p(col_s), stream),
          "cake_swiglu_fp8_backward");
  }
  return out;
}

Quantized fwd(const at::Tensor &inp, int64_t orientation, int64_t scale_rule,
              std::optional<c10::string_view> program) {
  return run("swiglu_fp8", inp, nullptr, orientation, scale_rule, program);
}

Quantized bwd(const at::Tensor &inp, const at::Tensor &grad, int64_t orientation,
              int64_t scale_rule, std::optional<c10::string_view> program) {
  return run("swiglu_fp8 backward", inp, &grad, orientation, scale_rule, program);
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
