// cake::swiglu_grouped_fwd and cake::swiglu_grouped_bwd: grouped SwiGLU + quantization over the
// experts of a MoE layer in one launch, either format (docs/spec/swiglu-grouped.md). offs is
// PyTorch's grouped-GEMM offs (int32 [E] end rows on in's device), never read on the host, so
// the call is CUDA-graph capturable with counts that change every replay. Not differentiable.
// Outputs (row_q, row_s, col_q, col_s, status), each sized for every split of T rows into E
// experts (the scales' P padded rows):
//   MXFP8          row_q [T, O], row_s uint8 [P, ceil(O/128)*4] (each expert's swizzled tiles
//                  from row p[e]), col_q [O, T], col_s uint8 [ceil(O/128)*128, P/32] (each
//                  expert's tiles contiguous): what torch._scaled_grouped_mm reads on Blackwell
//   FP8 blockwise  row_q [T, O], row_s float32 [P * O/128], col_q [T * O], col_s float32
//                  [P/128 * O]: each expert's slices the ungrouped call's (cake.torch's
//                  fp8_expert_views() cuts them for a per-expert F.scaled_mm loop)
//   status         int32 [1]: cake_swiglu_grouped_status_t bits of the offsets (0: valid)
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>

#include "ops.h"
#include "runtime.h"
#include "swiglu_common.h"

namespace cake_torch {
namespace {

using Grouped = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;
using GroupedGrad =
    std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

constexpr int64_t kFp8Blockwise = CAKE_NORMGATE_QUANT_FP8_BLOCKWISE;
constexpr int64_t kMxfp8 = CAKE_NORMGATE_QUANT_MXFP8;

Grouped run(const char *op, const at::Tensor &inp, const at::Tensor *grad, const at::Tensor &offs,
            int64_t format, int64_t orientation, int64_t scale_rule,
            std::optional<c10::string_view> program, SwigluVariant *variant, int64_t activation,
            double alpha, double limit, const std::optional<at::Tensor> &prob) {
  check_swiglu_input(op, inp);
  TORCH_CHECK_VALUE(format == kFp8Blockwise || format == kMxfp8, "cake ", op, ": format ", format,
                    ": 1 (FP8 blockwise) or 2 (MXFP8)");
  TORCH_CHECK_VALUE(orientation >= 1 && orientation <= 3, "cake ", op, ": orientation ",
                    orientation, ": 1 (rowwise), 2 (colwise) or 3 (both)");
  TORCH_CHECK_VALUE(scale_rule == 0 || scale_rule == 1, "cake ", op, ": scale_rule ", scale_rule,
                    ": 0 (amax / 448) or 1 (powers of two)");
  check_swiglu_grad(op, inp, grad);
  TORCH_CHECK_VALUE(offs.dim() == 1 && offs.scalar_type() == at::kInt &&
                        offs.device() == inp.device(),
                    "cake ", op, ": offs (", offs.sizes(), ", ", offs.scalar_type(),
                    ") must be int32 [E] on ", inp.device());
  const std::optional<std::string> name = program_name(program);
  const bool bwd = grad != nullptr, mxfp8 = format == kMxfp8;
  const int64_t T = inp.size(0), k = inp.size(1) / 2, E = offs.size(0);
  cake_swiglu_grouped_sizes sizes;
  cake_swiglu_grouped_sizes_init(&sizes);
  cake_swiglu_mxfp8_grouped_desc md;
  cake_swiglu_fp8_grouped_desc fd;
  cake_swiglu_mxfp8_grouped_desc_init(&md);
  cake_swiglu_fp8_grouped_desc_init(&fd);
  *variant = swiglu_variant(op, inp, grad != nullptr, md.variant, activation, alpha, limit, prob);
  md.variant = fd.variant = variant->desc;
  // The tokens of no expert get no dp from the library: their probability's gradient is 0.
  if (variant->dprob.numel()) variant->dprob.zero_();
  md.tokens = fd.tokens = T;
  md.k = fd.k = k;
  md.experts = fd.experts = static_cast<int32_t>(E);
  md.orientation = fd.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  fd.scale_rule = static_cast<cake_fp8_scale_rule_t>(scale_rule);
  md.program = fd.program = name ? name->c_str() : nullptr;
  TORCH_CHECK_VALUE(E >= 1 && E <= CAKE_SWIGLU_GROUPED_MAX_EXPERTS, "cake ", op, ": offs holds ",
                    E, " experts: 1 .. ", CAKE_SWIGLU_GROUPED_MAX_EXPERTS);
  if (mxfp8) {
    check(cake_swiglu_mxfp8_grouped_buffer_sizes(&md, bwd ? 1 : 0, &sizes),
          "cake_swiglu_mxfp8_grouped_buffer_sizes");
  } else {
    check(cake_swiglu_fp8_grouped_buffer_sizes(&fd, bwd ? 1 : 0, &sizes),
          "cake_swiglu_fp8_grouped_buffer_sizes");
  }
  const int64_t O = sizes.out_cols, P = sizes.scale_rows;
  const bool row = orientation & CAKE_MXFP8_ROWWISE, col = orientation & CAKE_MXFP8_COLWISE;
  const auto q = inp.options().dtype(at::kFloat8_e4m3fn);
  const auto s = inp.options().dtype(mxfp8 ? at::kByte : at::kFloat);
  const int64_t row_s_cols = (O / 32 + 3) / 4 * 4;  // MXFP8: the swizzled layout's C'
  Grouped out{
      row ? at::empty({T, O}, q) : at::empty({0}, q),
      !row ? at::empty({0}, s) : mxfp8 ? at::empty({P, row_s_cols}, s) : at::empty({P * (O / 128)}, s),
      !col ? at::empty({0}, q) : mxfp8 ? at::empty({O, T}, q) : at::empty({T * O}, q),
      !col    ? at::empty({0}, s)
      : mxfp8 ? at::empty({(O + 127) / 128 * 128, P / 32}, s)
              : at::empty({P / 128 * O}, s),
      at::empty({1}, inp.options().dtype(at::kInt))};
  const at::Tensor in = dense(inp), offsets = dense(offs);
  const at::Tensor g = bwd ? dense(*grad) : at::Tensor();
  const cake_handle_t h = handle_for(inp.device());
  const cake_stream_t stream = current_stream(inp.device());
  auto &[row_q, row_s, col_q, col_s, status] = out;
  const int32_t *o = offsets.data_ptr<int32_t>();
  int32_t *st = status.data_ptr<int32_t>();
  void *rq = ptr_or_null(row_q), *rs = ptr_or_null(row_s), *cq = ptr_or_null(col_q),
       *cs = ptr_or_null(col_s);
  if (mxfp8) {
    check(bwd ? cake_swiglu_mxfp8_grouped_backward(h, &md, in.data_ptr(), g.data_ptr(), o, rq, rs,
                                                   cq, cs, st, stream)
              : cake_swiglu_mxfp8_grouped_forward(h, &md, in.data_ptr(), o, rq, rs, cq, cs, st,
                                                  stream),
          bwd ? "cake_swiglu_mxfp8_grouped_backward" : "cake_swiglu_mxfp8_grouped_forward");
  } else {
    check(bwd ? cake_swiglu_fp8_grouped_backward(h, &fd, in.data_ptr(), g.data_ptr(), o, rq, rs,
                                                 cq, cs, st, stream)
              : cake_swiglu_fp8_grouped_forward(h, &fd, in.data_ptr(), o, rq, rs, cq, cs, st,
                                                stream),
          bwd ? "cake_swiglu_fp8_grouped_backward" : "cake_swiglu_fp8_grouped_forward");
  }
  return out;
}

Grouped fwd(const at::Tensor &inp, const at::Tensor &offs, int64_t format, int64_t orientation,
            int64_t scale_rule, std::optional<c10::string_view> program, int64_t activation,
            double alpha, double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  return run("swiglu_grouped", inp, nullptr, offs, format, orientation, scale_rule, program, &v,
             activation, alpha, limit, prob);
}

GroupedGrad bwd(const at::Tensor &inp, const at::Tensor &grad, const at::Tensor &offs,
                int64_t format, int64_t orientation, int64_t scale_rule,
                std::optional<c10::string_view> program, int64_t activation, double alpha,
                double limit, const std::optional<at::Tensor> &prob) {
  SwigluVariant v;
  auto [row_q, row_s, col_q, col_s, status] =
      run("swiglu_grouped backward", inp, &grad, offs, format, orientation, scale_rule, program,
          &v, activation, alpha, limit, prob);
  return {row_q, row_s, col_q, col_s, status, v.dprob};
}

}  // namespace

TORCH_LIBRARY_IMPL(cake, CUDA, m) {
  m.impl("swiglu_grouped_fwd", &fwd);
  m.impl("swiglu_grouped_bwd", &bwd);
}

TORCH_LIBRARY_IMPL(cake, CPU, m) {
  m.impl("swiglu_grouped_fwd", &fwd);
  m.impl("swiglu_grouped_bwd", &bwd);
}

}  // namespace cake_torch
