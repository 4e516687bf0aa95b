// cake::swiglu_mxfp8_fwd and cake::swiglu_mxfp8_bwd: the CUDA kernels. Not differentiable: the
// quantized outputs feed an MXFP8 GEMM, and the backward is its own op.
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "ops.h"
#include "runtime.h"

namespace cake_torch {
namespace {

using Quantized = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

void check_input(const char *op, const at::Tensor &inp) {
  TORCH_CHECK_VALUE(inp.dim() == 2 && inp.size(1) % 2 == 0, "cake ", op, ": in ", inp.sizes(),
                    " must be [m, 2k]");
  TORCH_CHECK_TYPE(inp.scalar_type() == at::kBFloat16, "cake ", op, ": in is ",
                   inp.scalar_type(), "; Cake takes bfloat16");
  check_same_cuda_device(op, inp, "in", {});
}

cake_mxfp8_orientation_t orientation_of(int64_t orientation) {
  TORCH_CHECK_VALUE(orientation >= 1 && orientation <= 3, "cake swiglu_mxfp8: orientation ",
                    orientation, ": 1 (rowwise), 2 (colwise) or 3 (both)");
  return static_cast<cake_mxfp8_orientation_t>(orientation);
}

// The four outputs of one form; an orientation not asked for gets empty tensors.
Quantized outputs(const at::Tensor &inp, const cake_swiglu_mxfp8_desc &desc, bool backward) {
  cake_swiglu_mxfp8_sizes sizes;
  cake_swiglu_mxfp8_sizes_init(&sizes);
  check(cake_swiglu_mxfp8_buffer_sizes(&desc, backward ? 1 : 0, &sizes),
        "cake_swiglu_mxfp8_buffer_sizes");
  const int64_t m = desc.m, o = sizes.out_cols;
  const bool row = desc.orientation & CAKE_MXFP8_ROWWISE, col = desc.orientation & CAKE_MXFP8_COLWISE;
  const auto q = inp.options().dtype(at::kFloat8_e4m3fn);
  const auto s = inp.options().dtype(at::kByte);
  return {row ? at::empty({m, o}, q) : at::empty({0}, q),
          at::empty({row ? static_cast<int64_t>(sizes.row_s_bytes) : 0}, s),
          col ? at::empty({o, m}, q) : at::empty({0}, q),
          at::empty({col ? static_cast<int64_t>(sizes.col_s_bytes) : 0}, s)};
}

void *ptr_or_null(const at::Tensor &t) { return t.numel() ? t.data_ptr() : nullptr; }

Quantized run(const char *op, const at::Tensor &inp, const at::Tensor *grad, int64_t orientation,
              std::optional<c10::string_view> program) {
  check_input(op, inp);
  const int64_t m = inp.size(0), k = inp.size(1) / 2;
  if (grad != nullptr) {
    TORCH_CHECK_VALUE(grad->dim() == 2 && grad->size(0) == m && grad->size(1) == k &&
                          grad->scalar_type() == at::kBFloat16 && grad->device() == inp.device(),
                      "cake ", op, ": grad (", grad->sizes(), ", ", grad->scalar_type(),
                      ") must be bfloat16 [m, k] = [", m, ", ", k, "] on ", inp.device());
  }
  std::optional<std::string> name;
  if (program.has_value()) name = std::string(program->data(), program->size());
  cake_swiglu_mxfp8_desc desc;
  cake_swiglu_mxfp8_desc_init(&desc);
  desc.m = m;
  desc.k = k;
  desc.orientation = orientation_of(orientation);
  desc.program = name ? name->c_str() : nullptr;
  Quantized out = outputs(inp, desc, grad != nullptr);
  const at::Tensor in = dense(inp);
  const cake_handle_t h = handle_for(inp.device());
  const cake_stream_t stream = current_stream(inp.device());
  auto &[row_q, row_s, col_q, col_s] = out;
  if (grad == nullptr) {
    check(cake_swiglu_mxfp8_forward(h, &desc, in.data_ptr(), ptr_or_null(row_q),
                                    ptr_or_null(row_s), ptr_or_null(col_q), ptr_or_null(col_s),
                                    stream),
          "cake_swiglu_mxfp8_forward");
  } else {
    const at::Tensor g = dense(*grad);
    check(cake_swiglu_mxfp8_backward(h, &desc, in.data_ptr(), g.data_ptr(), ptr_or_null(row_q),
                                     ptr_or_null(row_s), ptr_or_null(col_q), ptr_or_null(col_s),
                                     stream),
          "cake_swiglu_mxfp8_backward");
  }
  return out;
}

Quantized swiglu_fwd_cuda(const at::Tensor &inp, int64_t orientation,
                          std::optional<c10::string_view> program) {
  return run("swiglu_mxfp8", inp, nullptr, orientation, program);
}

Quantized swiglu_bwd_cuda(const at::Tensor &inp, const at::Tensor &grad, int64_t orientation,
                          std::optional<c10::string_view> program) {
  return run("swiglu_mxfp8 backward", inp, &grad, orientation, program);
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
