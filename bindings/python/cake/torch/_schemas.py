"""The schemas of the cake:: operators: the same strings as bindings/torch/ops.h (a host test
keeps the two equal), so an operator has one signature whichever implementation is loaded."""

NORMGATE_FWD = ("normgate_fwd(Tensor x, Tensor? z, Tensor w, float eps=1e-06, int gate=0, "
                "bool gate_before_norm=False, int group_size=0, bool deterministic=True, "
                "int dw_mode=-1, Tensor? main_grad=None, str? program=None) -> Tensor")
NORMGATE_BWD = ("normgate_bwd(Tensor dy, Tensor x, Tensor? z, Tensor w, float eps, int gate, "
                "bool gate_before_norm, int group_size, bool deterministic, int dw_mode, "
                "str? program=None) -> (Tensor, Tensor, Tensor)")
NORMGATE_BWD_ACCUMULATE = (
    "normgate_bwd_accumulate(Tensor dy, Tensor x, Tensor? z, Tensor w, Tensor(a!) dw, "
    "float eps, int gate, bool gate_before_norm, int group_size, bool deterministic, "
    "str? program=None) -> (Tensor, Tensor)")
# The SwiGLU ops end with the variant (docs/spec/swiglu-mxfp8.md, "Variants"): activation
# (cake_swiglu_activation_t), alpha and limit (the clamped activation's), prob (FP32 [rows] or
# [rows, 1], the weighted SwiGLU's router probabilities). The backwards' last output is dprob
# (FP32 [rows]; empty without prob).
SWIGLU_MXFP8_FWD = ("swiglu_mxfp8_fwd(Tensor inp, int orientation, str? program=None, "
                    "int activation=0, float alpha=1.702, float limit=7.0, Tensor? prob=None) "
                    "-> (Tensor, Tensor, Tensor, Tensor)")
SWIGLU_MXFP8_BWD = ("swiglu_mxfp8_bwd(Tensor inp, Tensor grad, int orientation, "
                    "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
                    "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")

SWIGLU_FP8_FWD = ("swiglu_fp8_fwd(Tensor inp, int orientation, int scale_rule=0, "
                  "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
                  "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor)")
SWIGLU_FP8_BWD = ("swiglu_fp8_bwd(Tensor inp, Tensor grad, int orientation, int scale_rule=0, "
                  "str? program=None, int activation=0, float alpha=1.702, float limit=7.0, "
                  "Tensor? prob=None) -> (Tensor, Tensor, Tensor, Tensor, Tensor)")

SWIGLU_GROUPED_FWD = ("swiglu_grouped_fwd(Tensor inp, Tensor offs, int format, int orientation, "
                      "int scale_rule=0, str? program=None, int activation=0, "
                      "float alpha=1.702, float limit=7.0, Tensor? prob=None) "
                      "-> (Tensor, Tensor, Tensor, Tensor, Tensor)")
SWIGLU_GROUPED_BWD = ("swiglu_grouped_bwd(Tensor inp, Tensor grad, Tensor offs, int format, "
                      "int orientation, int scale_rule=0, str? program=None, int activation=0, "
                      "float alpha=1.702, float limit=7.0, Tensor? prob=None) "
                      "-> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor)")

NORMGATE_FWD_QUANT = ("normgate_fwd_quant(Tensor x, Tensor z, Tensor w, int format, "
                      "int scale_rule=0, int heads=0, bool write_y=False, float eps=1e-06, "
                      "str? program=None) -> (Tensor, Tensor, Tensor)")

ALL = (NORMGATE_FWD, NORMGATE_BWD, NORMGATE_BWD_ACCUMULATE, SWIGLU_MXFP8_FWD, SWIGLU_MXFP8_BWD,
       SWIGLU_FP8_FWD, SWIGLU_FP8_BWD, SWIGLU_GROUPED_FWD, SWIGLU_GROUPED_BWD, NORMGATE_FWD_QUANT)

#: cake_normgate_gate_t
GATE_SILU, GATE_SIGMOID, GATE_NONE = 0, 1, 2
#: cake_swiglu_activation_t, and the clamped activation's defaults (swiglu_variant_defaults in
#: lib/api/swiglu_common.cc: gpt-oss's alpha and limit).
ACT_SILU, ACT_CLAMPED = 0, 1
ALPHA, LIMIT = 1.702, 7.0
#: dw_mode: 0 skips dw, else the cake_dtype_t of dw; -1 is w's dtype.
DW_SKIP, DW_OF_W = 0, -1
