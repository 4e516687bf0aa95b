"""SwiGLU + FP8 blockwise 1x128 for PyTorch: E4M3 data with one FP32 scale per 128 values along
the GEMM's K, returned in the views torch.nn.functional.scaled_mm checks for
ScalingType.BlockWise1x128 (docs/spec/fp8-blockwise.md, "Feeding F.scaled_mm"):

    q = cake.torch.swiglu_fp8(h, "both")          # h = x @ W_gu^T, bf16 [m, 2k]
    y = F.scaled_mm(q.row_q, w_down_q.t(), q.row_s, ScalingType.BlockWise1x128,
                    w_down_s.t(), ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)

row_q [m, O] and col_q [O, m] are float8_e4m3fn; row_s [m, O/128] has strides (1, m) and col_s
[O, ceil(m/128)] strides (1, O) (FP32). Any m >= 1 (the last colwise block of a column may be
partial); k a multiple of 128. Also here: quantize_fp8_blockwise(), the same format in plain
PyTorch (the reference a Hopper user would write, and torch.compile's peer), and
dequantize_fp8_blockwise().

The norm-gate's forward with quantized y, for the GEMM that reads it (Qwen3-Next's o_proj):

    g = cake.torch.normgate_fp8(x, z, w)          # x, z [T, H, 128]: q [T, H*128]
    o = F.scaled_mm(g.q, w_o_q.t(), g.q_scale, ScalingType.BlockWise1x128, ...)
"""

from typing import NamedTuple, Optional

import torch

import cake as _cake

from . import _schemas as S, _variant

__all__ = ["FP8Tensors", "swiglu_fp8", "swiglu_fp8_backward", "quantize_fp8_blockwise",
           "dequantize_fp8_blockwise", "NormgateFP8", "normgate_fp8"]


class FP8Tensors(NamedTuple):
    """The outputs of one call; an orientation not asked for has None."""

    row_q: Optional[torch.Tensor]  # float8_e4m3fn [m, O]
    row_s: Optional[torch.Tensor]  # float32 [m, O/128], strides (1, m)
    col_q: Optional[torch.Tensor]  # float8_e4m3fn [O, m]
    col_s: Optional[torch.Tensor]  # float32 [O, ceil(m/128)], strides (1, O)


def _wrap(out, orient) -> FP8Tensors:
    row_q, row_s, col_q, col_s = out
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    # The kernels store the scales MN-major: [O/128, m] and [ceil(m/128), O]; their transposes
    # are the [m, O/128] / [O, ceil(m/128)] views with the strides scaled_mm checks.
    return FP8Tensors(row_q if row else None, row_s.t() if row else None,
                      col_q if col else None, col_s.t() if col else None)


def _rule(pow2_scales) -> int:
    return int(_cake.Fp8ScaleRule.parse(pow2_scales))


def swiglu_fp8(inp: torch.Tensor, orientation="rowwise", pow2_scales=False,
               program: Optional[str] = None, *, activation: str = "silu",
               alpha: float = S.ALPHA, limit: float = S.LIMIT,
               prob: Optional[torch.Tensor] = None) -> FP8Tensors:
    """Forward: Y = bf16(act(in[:, :k], in[:, k:])) (the MXFP8 family's Y, bit for bit)
    quantized to FP8 blockwise 1x128 (O = k).

    orientation: "rowwise" (blocks along Y's columns: the next GEMM's A), "colwise" (Y^T
    [k, m], blocks along m: the weight-gradient GEMM's A) or "both"; pow2_scales: False for
    s = amax / 448, True for s = 2^ceil(log2(amax / 448)) (UE8M0-compatible). activation,
    alpha, limit, prob: the variant, as cake.torch.swiglu_mxfp8 takes it. Not differentiable."""
    from . import _call  # the lead's error translation of the cake:: operators

    orient = _cake.Orientation.parse(orientation)
    v = _variant.args("swiglu_fp8", activation, alpha, limit, prob)
    return _wrap(_call(torch.ops.cake.swiglu_fp8_fwd.default, inp, int(orient),
                       _rule(pow2_scales), program, *v), orient)


def swiglu_fp8_backward(inp: torch.Tensor, grad: torch.Tensor, orientation="rowwise",
                        pow2_scales=False, program: Optional[str] = None, *,
                        activation: str = "silu", alpha: float = S.ALPHA,
                        limit: float = S.LIMIT, prob: Optional[torch.Tensor] = None):
    """Backward: [dgate | dup] (BF16 [m, 2k] from in and grad = dL/dY [m, k], the MXFP8
    family's bits) quantized to FP8 blockwise 1x128 (O = 2k). With prob: (FP8Tensors, dprob),
    dprob = dL/dprob in prob's shape."""
    from . import _call

    orient = _cake.Orientation.parse(orientation)
    v = _variant.args("swiglu_fp8 backward", activation, alpha, limit, prob)
    out = _call(torch.ops.cake.swiglu_fp8_bwd.default, inp, grad, int(orient),
                _rule(pow2_scales), program, *v)
    q = _wrap(out[:4], orient)
    return q if prob is None else (q, _variant.dprob_like(out[4], prob))


_FLOOR = 448.0 * 2.0 ** -126  # the spec's amax floor: s >= 2^-126


def quantize_fp8_blockwise(y: torch.Tensor, pow2_scales: bool = False):
    """The spec's encoding of a BF16 [m, O] tensor in plain PyTorch, blocks of 128 along dim 1
    (rowwise; pass y.t() for colwise): (q float8_e4m3fn [m, O], s float32 [m, ceil(O/128)]).
    A partial last block (O not a multiple of 128: the colwise blocks of a call whose m is not)
    takes the amax of its own values: zeros pad it, which change no amax.

    Eager mode gives the bytes of the spec (IEEE FP32 division, one rounded product); the
    torch.compile form may differ where a backend's division is not correctly rounded."""
    m, o = y.shape
    pad = -o % 128
    if pad:
        y = torch.nn.functional.pad(y, (0, pad))
    yb = y.reshape(m, (o + pad) // 128, 128)
    amax = yb.abs().amax(dim=-1).float()  # NaN-propagating, exact (BF16 values)
    bad = ~torch.isfinite(amax)
    a = amax.clamp(min=_FLOOR)
    # Tensor by tensor: PyTorch divides by a Python scalar as a product with its reciprocal
    # (and scalar / tensor likewise), one ulp off IEEE division at times.
    c = torch.full_like(a, 448.0)
    if pow2_scales:
        # x = a / 448 (IEEE) is exactly a power of two where the real quotient is one, and at
        # least 2^-8 relative away from one elsewhere, so frexp's exponent gives ceil(log2 x)
        # exactly; s and 1/s are built from their bits (no exp2 rounding).
        mant, ex = torch.frexp(torch.div(a, c))
        e = torch.where(mant == 0.5, ex - 1, ex).to(torch.int32)  # 1 - 127 .. 120
        s = ((e + 127) << 23).view(torch.float32)
        r = ((127 - e) << 23).view(torch.float32)
    else:
        s = torch.div(a, c)
        r = torch.div(c, a)
    s = torch.where(bad, torch.full_like(s, float("nan")), s)
    prod = yb.float() * r.unsqueeze(-1)
    q = prod.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)
    q = torch.where(bad.unsqueeze(-1), torch.full_like(q, 0x7F), q)
    return q.view(torch.float8_e4m3fn).reshape(m, o + pad)[:, :o], s


def dequantize_fp8_blockwise(q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """FP32 values of q [R, C] (float8_e4m3fn) with scales s [R, ceil(C/128)] (any strides)."""
    r, c = q.shape
    pad = -c % 128
    qf = torch.nn.functional.pad(q.float(), (0, pad)) if pad else q.float()
    return (qf.reshape(r, (c + pad) // 128, 128) * s.float().unsqueeze(-1)).reshape(r, c + pad)[:, :c]


class NormgateFP8(NamedTuple):
    """The norm-gate forward's quantized y: q float8_e4m3fn [T, K] (T = rows / heads,
    K = heads * d); q_scale FP8 blockwise float32 [T, K/128] with strides (1, T) (F.scaled_mm's
    BlockWise1x128 scale_a), or MXFP8 uint8 swizzled E8M0 bytes; y the BF16 y (x's shape) or
    None."""

    q: torch.Tensor
    q_scale: torch.Tensor
    y: Optional[torch.Tensor]


def normgate_fp8(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor, eps: float = 1e-6, *,
                 format="fp8_blockwise", pow2_scales=False, heads: Optional[int] = None,
                 return_y: bool = False, program: Optional[str] = None) -> NormgateFP8:
    """y = bf16(rmsnorm(x) * w * silu(z)) (cake.torch.normgate's bits; bfloat16 x, z, w
    [..., d]) quantized in the same pass: format "fp8_blockwise" (d a multiple of 128, one FP32
    scale per 128 columns; pow2_scales for powers of two) or "mxfp8" (d a multiple of 32).
    heads: normgate rows a row of the quantized matrix holds (None: x.shape[-2] for x of three
    or more dimensions, e.g. [T, H, d] -> q [T, H*d]; else 1). return_y: the BF16 y too. Not
    differentiable (the backward is cake.torch.normgate's, from x and z)."""
    from . import _call

    fmt = int(_cake.NormgateQuantFormat.parse(format))
    h = (x.shape[-2] if x.dim() >= 3 else 1) if heads is None else int(heads)
    q, s, y = _call(torch.ops.cake.normgate_fwd_quant.default, x, z, w, fmt, _rule(pow2_scales),
                    h, bool(return_y), float(eps), program)
    return NormgateFP8(q, s.t() if fmt == _cake.NormgateQuantFormat.FP8_BLOCKWISE else s,
                       y if return_y else None)
