#include "swiglu_common.h"

namespace cake_torch {

void check_swiglu_input(const char *op, const at::Tensor &inp) {
  TORCH_CHECK_VALUE(inp.dim() == 2 && inp.size(1) % 2 == 0, "cake ", op, ": in ", inp.sizes(),
                    " must be [m, 2k]");
  TORCH_CHECK_TYPE(inp.scalar_type() == at::kBFloat16, "cake ", op, ": in is ",
                   inp.scalar_type(), "; Cake takes bfloat16");
  check_same_cuda_device(op, inp, "in", {});
}

void check_swiglu_grad(const char *op, const at::Tensor &inp, const at::Tensor *grad) {
  if (grad == nullptr) return;
  const int64_t m = inp.size(0), k = inp.size(1) / 2;
  TORCH_CHECK_VALUE(grad->dim() == 2 && grad->size(0) == m && grad->size(1) == k &&
                        grad->scalar_type() == at::kBFloat16 && grad->device() == inp.device(),
                    "cake ", op, ": grad (", grad->sizes(), ", ", grad->scalar_type(),
                    ") must be bfloat16 [m, k] = [", m, ", ", k, "] on ", inp.device());
}

std::optional<std::string> program_name(const std::optional<c10::string_view> &program) {
  if (!program.has_value()) return std::nullopt;
  return std::string(program->data(), program->size());
}

SwigluOutputs swiglu_outputs(const at::Tensor &inp, int64_t m, int64_t o, bool row, bool col,
                             at::IntArrayRef row_s_shape, at::IntArrayRef col_s_shape,
                             at::ScalarType scale_type) {
  const auto q = inp.options().dtype(at::kFloat8_e4m3fn);
  const auto s = inp.options().dtype(scale_type);
  return {row ? at::empty({m, o}, q) : at::empty({0}, q),
          row ? at::empty(row_s_shape, s) : at::empty({0}, s),
          col ? at::empty({o, m}, q) : at::empty({0}, q),
          col ? at::empty(col_s_shape, s) : at::empty({0}, s)};
}

void *ptr_or_null(const at::Tensor &t) { return t.numel() ? t.data_ptr() : nullptr; }

}  // namespace cake_torch
