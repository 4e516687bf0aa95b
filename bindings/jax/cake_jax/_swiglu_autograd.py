"""SwiGLU under JAX autodiff: the quantized Y decoded (the values the next FP8 GEMM reads),
differentiable (jax.custom_vjp) in in and in the weighted SwiGLU's router probabilities.

    y = cake_jax.swiglu_dequantized(h, "fp8_blockwise", activation="clamped", prob=p)
    dh, dp = jax.grad(lambda h, p: loss(cake_jax.swiglu_dequantized(h, prob=p)), (0, 1))(h, p)

The forward runs Cake's forward (rowwise) and decodes it; the backward runs Cake's backward on
the cotangent (rounded to BF16, the kernel's grad) and decodes [dgate | dup], and prob's
cotangent is the backward's dprob (FP32, the spec's summation order). Quantization is treated
as the identity by the gradient (straight through). For a model whose GEMMs read the quantized
arrays themselves, call swiglu_mxfp8 / swiglu_fp8 and their _backward from its own
custom_vjp instead."""

import functools

import jax
import jax.numpy as jnp

_FORMATS = ("mxfp8", "fp8_blockwise")


def _decode(fmt, inp, grad, prob, opts):
    """The float32 values of the forward's Y (grad None) or the backward's [dgate | dup], and
    the backward's dprob (None without prob)."""
    from . import (dequantize_fp8_blockwise, dequantize_mxfp8, swiglu_fp8, swiglu_fp8_backward,
                   swiglu_mxfp8, swiglu_mxfp8_backward)

    activation, alpha, limit, scale_rule, program = opts
    kw = dict(activation=activation, alpha=alpha, limit=limit, prob=prob)
    if fmt == "mxfp8":
        out = (swiglu_mxfp8(inp, "rowwise", program, **kw) if grad is None else
               swiglu_mxfp8_backward(inp, grad, "rowwise", program, **kw))
        decode = dequantize_mxfp8
    else:
        out = (swiglu_fp8(inp, "rowwise", scale_rule, program, **kw) if grad is None else
               swiglu_fp8_backward(inp, grad, "rowwise", scale_rule, program, **kw))
        decode = dequantize_fp8_blockwise
    q, dprob = out if grad is not None and prob is not None else (out, None)
    return decode(q.row_q, q.row_s), dprob


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _swiglu_dequantized(inp, prob, fmt, opts):
    return _decode(fmt, inp, None, prob, opts)[0]


def _fwd(inp, prob, fmt, opts):
    return _decode(fmt, inp, None, prob, opts)[0], (inp, prob)


def _bwd(fmt, opts, residuals, dy):
    inp, prob = residuals
    d, dprob = _decode(fmt, inp, dy.astype(jnp.bfloat16), prob, opts)
    return d.astype(inp.dtype), dprob


_swiglu_dequantized.defvjp(_fwd, _bwd)


def swiglu_dequantized(inp, format: str = "mxfp8", *, activation: str = "silu",
                       alpha: float = 1.702, limit: float = 7.0, prob=None,
                       scale_rule: str = "exact", program=None):
    """float32 [m, k]: Cake's quantized Y of in (bfloat16 [m, 2k]) decoded, differentiable in
    in and prob (float32 [m] or [m, 1], the weighted SwiGLU's; its cotangent has its shape).

    format: "mxfp8" (m, k multiples of 32) or "fp8_blockwise" (m, k multiples of 128);
    activation "silu" or "clamped" with alpha and limit, as cake_jax.swiglu_mxfp8 takes them;
    scale_rule: FP8 blockwise "exact" or "pow2"."""
    if format not in _FORMATS:
        raise ValueError(f"cake_jax swiglu_dequantized: format {format!r}: 'mxfp8' or "
                         "'fp8_blockwise'")
    opts = (activation, float(alpha), float(limit), scale_rule, program)
    return _swiglu_dequantized(inp, prob, format, opts)
