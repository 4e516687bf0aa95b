"""SwiGLU under autograd: the quantized Y decoded (the values the next FP8 GEMM reads),
differentiable in in and in the weighted SwiGLU's router probabilities.

    y = cake.torch.swiglu_dequantized(h, "fp8_blockwise", activation="clamped", prob=p)
    loss(y).backward()        # h.grad: Cake's [dgate | dup], decoded; p.grad: Cake's dprob

The forward runs Cake's forward (rowwise) and decodes it; the backward runs Cake's backward on
the incoming gradient (rounded to BF16, the kernel's grad) and decodes [dgate | dup], and
prob's gradient is the backward's dprob (FP32, the spec's summation order). Quantization is
treated as the identity by the gradient (straight through), as an FP8 training step sees it.
For a model whose GEMMs read the quantized tensors themselves, call the forward and backward
ops (swiglu_mxfp8 / swiglu_fp8 and their _backward) from its own autograd function instead."""

from typing import Optional

import torch

from . import _schemas as S

__all__ = ["swiglu_dequantized"]

_FORMATS = ("mxfp8", "fp8_blockwise")


def _decode(fmt, inp, grad, prob, v, pow2, program):
    """The FP32 values of the forward's Y (grad None) or the backward's [dgate | dup], and the
    backward's dprob (None without prob)."""
    from . import dequantize_mxfp8, swiglu_mxfp8, swiglu_mxfp8_backward
    from .fp8 import dequantize_fp8_blockwise, swiglu_fp8, swiglu_fp8_backward

    kw = dict(activation=v[0], alpha=v[1], limit=v[2], prob=prob)
    if fmt == "mxfp8":
        out = (swiglu_mxfp8(inp, "rowwise", program, **kw) if grad is None else
               swiglu_mxfp8_backward(inp, grad, "rowwise", program, **kw))
        q, dprob = out if grad is not None and prob is not None else (out, None)
        return dequantize_mxfp8(q.row_q, q.row_s), dprob
    out = (swiglu_fp8(inp, "rowwise", pow2, program, **kw) if grad is None else
           swiglu_fp8_backward(inp, grad, "rowwise", pow2, program, **kw))
    q, dprob = out if grad is not None and prob is not None else (out, None)
    return dequantize_fp8_blockwise(q.row_q, q.row_s), dprob


class _SwigluDequantized(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, prob, fmt, v, pow2, program):
        ctx.save_for_backward(inp, prob)
        ctx.opts = (fmt, v, pow2, program)
        return _decode(fmt, inp, None, prob, v, pow2, program)[0]

    @staticmethod
    def backward(ctx, dy):
        inp, prob = ctx.saved_tensors
        fmt, v, pow2, program = ctx.opts
        d, dprob = _decode(fmt, inp, dy.to(torch.bfloat16).contiguous(), prob, v, pow2, program)
        dinp = d.to(inp.dtype) if ctx.needs_input_grad[0] else None
        dp = dprob if prob is not None and ctx.needs_input_grad[1] else None
        return dinp, dp, None, None, None, None


def swiglu_dequantized(inp: torch.Tensor, format: str = "mxfp8", *, activation: str = "silu",
                       alpha: float = S.ALPHA, limit: float = S.LIMIT,
                       prob: Optional[torch.Tensor] = None, pow2_scales: bool = False,
                       program: Optional[str] = None) -> torch.Tensor:
    """float32 [m, k]: Cake's quantized Y of in (bfloat16 [m, 2k]) decoded, differentiable in
    in and prob (float32 [m] or [m, 1], the weighted SwiGLU's; prob.grad has its shape).

    format: "mxfp8" (m, k multiples of 32) or "fp8_blockwise" (k a multiple of 128);
    activation "silu" or "clamped" with alpha and limit, as cake.torch.swiglu_mxfp8 takes
    them; pow2_scales: FP8 blockwise power-of-two scales."""
    if format not in _FORMATS:
        raise ValueError(f"cake swiglu_dequantized: format {format!r}: 'mxfp8' or "
                         "'fp8_blockwise'")
    v = (activation, float(alpha), float(limit))
    return _SwigluDequantized.apply(inp, prob, format, v, bool(pow2_scales), program)
