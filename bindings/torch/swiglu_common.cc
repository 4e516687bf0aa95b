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

SwigluVariant swiglu_variant(const char *op, const at::Tensor &inp, bool backward,
                             const cake_swiglu_variant_desc &defaults, int64_t activation,
                             double alpha, double limit, const std::optional<at::Tensor> &prob) {
  TORCH_CHECK_VALUE(activation == CAKE_SWIGLU_ACT_SILU || activation == CAKE_SWIGLU_ACT_CLAMPED,
                    "cake ", op, ": activation ", activation, ": 0 (silu) or 1 (clamped)");
  SwigluVariant v{defaults, at::Tensor(), at::empty({0}, inp.options().dtype(at::kFloat))};
  v.desc.activation = static_cast<cake_swiglu_activation_t>(activation);
  v.desc.alpha = static_cast<float>(alpha);
  v.desc.limit = static_cast<float>(limit);
  if (!prob.has_value()) return v;
  const at::Tensor &p = *prob;
  const int64_t m = inp.size(0);
  TORCH_CHECK_VALUE(((p.dim() == 1 && p.size(0) == m) ||
                     (p.dim() == 2 && p.size(0) == m && p.size(1) == 1)) &&
                        p.scalar_type() == at::kFloat && p.device() == inp.device(),
                    "cake ", op, ": prob (", p.sizes(), ", ", p.scalar_type(), ", ", p.device(),
                    ") must be float32 [m] or [m, 1] with m = ", m, " on ", inp.device());
  v.prob = p.contiguous();
  v.desc.weighted = 1;
  v.desc.p = v.prob.data_ptr<float>();
  if (backward) {
    v.dprob = at::empty({m}, inp.options().dtype(at::kFloat));
    v.desc.dp = v.dprob.data_ptr<float>();
  }
  return v;
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
