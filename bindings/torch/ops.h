// The schemas of the cake:: operators, one list shared by the C++ library (library.cc) and the
// Python package's own ops where this library cannot load (cake/torch/_fallback.py reads the
// same strings from cake/torch/_schemas.py, which a test keeps equal to this list).
#pragma once

namespace cake_torch {

struct OpSchema {
  const char *schema;
};

// normgate_fwd is differentiable (its autograd, registered here, calls normgate_bwd or, with
// main_grad, normgate_bwd_accumulate). gate: cake_normgate_gate_t; dw_mode: 0 skip, else the
// cake_dtype_t of dw, -1 for w's dtype.
inline constexpr OpSchema kSchemas[] = {
    {"normgate_fwd(Tensor x, Tensor? z, Tensor w, float eps=1e-06, int gate=0, "
     "bool gate_before_norm=False, int group_size=0, bool deterministic=True, int dw_mode=-1, "
     "Tensor? main_grad=None, str? program=None) -> Tensor"},
    {"normgate_bwd(Tensor dy, Tensor x, Tensor? z, Tensor w, float eps, int gate, "
     "bool gate_before_norm, int group_size, bool deterministic, int dw_mode, "
     "str? program=None) -> (Tensor, Tensor, Tensor)"},
    {"normgate_bwd_accumulate(Tensor dy, Tensor x, Tensor? z, Tensor w, Tensor(a!) dw, "
     "float eps, int gate, bool gate_before_norm, int group_size, bool deterministic, "
     "str? program=None) -> (Tensor, Tensor)"},
    // SwiGLU: the variant last (docs/spec/swiglu-mxfp8.md, "Variants"): activation
    // (cake_swiglu_activation_t), alpha, limit, prob (FP32 [rows] or [rows, 1]: the weighted
    // SwiGLU). The backwards' last output is dprob (FP32 [rows], empty without prob).
    {"swiglu_mxfp8_fwd(Tensor inp, int orientation, str? program=None, "
     "int activation=0, float alpha=1.702, float limit=7.0, Tensor? prob=None) "
     "-> (Tensor, Tensor, Tensor, Tensor)"},
    {"swiglu_mxfp8_bwd(Tensor inp, Tensor grad, int orientation, "
     "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
     "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"},
    // SwiGLU + FP8 blockwise 1x128; scale_rule: cake_fp8_scale_rule_t.
    {"swiglu_fp8_fwd(Tensor inp, int orientation, int scale_rule=0, "
     "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
     "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor)"},
    {"swiglu_fp8_bwd(Tensor inp, Tensor grad, int orientation, int scale_rule=0, "
     "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
     "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"},
    // Grouped SwiGLU over MoE experts (offs: int32 end rows); format:
    // cake_normgate_quant_format_t; (row_q, row_s, col_q, col_s, status[, dprob]). Not
    // differentiable.
    {"swiglu_grouped_fwd(Tensor inp, Tensor offs, int format, int orientation, "
     "int scale_rule=0, str? program=None, int activation=0, "
     "float alpha=1.702, float limit=7.0, Tensor? prob=None) "
     "-> (Tensor, Tensor, Tensor, Tensor, Tensor)"},
    {"swiglu_grouped_bwd(Tensor inp, Tensor grad, Tensor offs, int format, "
     "int orientation, int scale_rule=0, str? program=None, int activation=0, "
     "float alpha=1.702, float limit=7.0, Tensor? prob=None) "
     "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)"},
    // The norm-gate forward (the default form) with quantized y: (q, q_scale, y); format:
    // cake_normgate_quant_format_t; y empty unless write_y. Not differentiable.
    {"normgate_fwd_quant(Tensor x, Tensor z, Tensor w, int format, int scale_rule=0, "
     "int heads=0, bool write_y=False, float eps=1e-06, str? program=None) "
     "-> (Tensor, Tensor, Tensor)"},
};

}  // namespace cake_torch
