"""Grouped SwiGLU for MoE experts in PyTorch: SwiGLU and its quantization for the token rows of
every expert in one launch, either block format (docs/spec/swiglu-grouped.md). offs is the
offs of PyTorch's grouped GEMMs, int32 [E] end rows on the GPU, never read on the host: the call
can be captured in a CUDA graph once and replayed with new counts.

    offs = torch.cumsum(tokens_per_expert, 0, dtype=torch.int32)
    g = cake.torch.swiglu_grouped(h, offs, "mxfp8", "both")      # h: bf16 [T, 2k] by expert
    # Blackwell: g.row_q [T, k] and g.row_s (each expert's swizzled 128x4 tiles from padded row
    # p[e]) for the 2D x 3D grouped GEMM with offs; g.col_q [k, T] and g.col_s (each expert's
    # tiles contiguous) for the 2D x 2D weight gradient.

    g = cake.torch.swiglu_grouped(h, offs, "fp8_blockwise")      # sm_90: a per-expert loop
    for v, w_q, w_s in zip(cake.torch.fp8_expert_views(g, offs.tolist()), w_qs, w_ss):
        y = F.scaled_mm(v.row_q, w_q.t(), v.row_s, ScalingType.BlockWise1x128, w_s.t(),
                        ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)

g.status (int32 [1], on the device) holds cake.GroupedOffsetsStatus bits: 0 for valid offsets;
offsets that decrease or pass T give the spec's defined result instead of an error."""

from typing import List, NamedTuple, Optional, Sequence

import torch

import cake as _cake

from . import _schemas as S, _variant

__all__ = ["GroupedTensors", "FP8ExpertViews", "swiglu_grouped", "swiglu_grouped_backward",
           "fp8_expert_views"]


class GroupedTensors(NamedTuple):
    """The outputs of one grouped call; an orientation not asked for has None. MXFP8: row_q
    float8_e4m3fn [T, O], row_s uint8 [P, ceil(O/128)*4], col_q [O, T], col_s uint8
    [ceil(O/128)*128, P/32]. FP8 blockwise: row_q [T, O], row_s float32 [P * O/128], col_q
    [T * O], col_s float32 [P/128 * O] (fp8_expert_views() cuts them). O = k forward, 2k
    backward; P the padded scale rows of every split."""

    row_q: Optional[torch.Tensor]
    row_s: Optional[torch.Tensor]
    col_q: Optional[torch.Tensor]
    col_s: Optional[torch.Tensor]
    status: torch.Tensor
    out_cols: int


def _format(value) -> int:
    return int(_cake.NormgateQuantFormat.parse(value))


def _wrap(out, orient, out_cols) -> GroupedTensors:
    row_q, row_s, col_q, col_s, status = out
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    return GroupedTensors(row_q if row else None, row_s if row else None,
                          col_q if col else None, col_s if col else None, status, out_cols)


def swiglu_grouped(inp: torch.Tensor, offs: torch.Tensor, format="mxfp8", orientation="rowwise",
                   pow2_scales=False, program: Optional[str] = None, *,
                   activation: str = "silu", alpha: float = S.ALPHA, limit: float = S.LIMIT,
                   prob: Optional[torch.Tensor] = None) -> GroupedTensors:
    """Forward: each expert's rows of Y = bf16(act(in[:, :k], in[:, k:])) quantized, O = k.

    format: "mxfp8" or "fp8_blockwise"; orientation: "rowwise", "colwise" or "both"
    (colwise blocks run along each expert's own rows); pow2_scales: FP8 blockwise power-of-two
    scales. activation, alpha, limit: as cake.torch.swiglu_mxfp8 takes them; prob: None or the
    router probability of each token, CUDA float32 [T] or [T, 1]. Not differentiable."""
    from . import _call

    orient = _cake.Orientation.parse(orientation)
    rule = int(_cake.Fp8ScaleRule.parse(pow2_scales))
    v = _variant.args("swiglu_grouped", activation, alpha, limit, prob)
    return _wrap(_call(torch.ops.cake.swiglu_grouped_fwd.default, inp, offs, _format(format),
                       int(orient), rule, program, *v), orient, inp.shape[1] // 2)


def swiglu_grouped_backward(inp: torch.Tensor, grad: torch.Tensor, offs: torch.Tensor,
                            format="mxfp8", orientation="rowwise", pow2_scales=False,
                            program: Optional[str] = None, *, activation: str = "silu",
                            alpha: float = S.ALPHA, limit: float = S.LIMIT,
                            prob: Optional[torch.Tensor] = None):
    """Backward: each expert's rows of [dgate | dup] (from in and grad = dL/dY [T, k])
    quantized, O = 2k. With prob: (GroupedTensors, dprob), dprob = dL/dprob in prob's shape (0
    for the tokens of no expert)."""
    from . import _call

    orient = _cake.Orientation.parse(orientation)
    rule = int(_cake.Fp8ScaleRule.parse(pow2_scales))
    v = _variant.args("swiglu_grouped backward", activation, alpha, limit, prob)
    out = _call(torch.ops.cake.swiglu_grouped_bwd.default, inp, grad, offs, _format(format),
                int(orient), rule, program, *v)
    g = _wrap(out[:5], orient, inp.shape[1])
    return g if prob is None else (g, _variant.dprob_like(out[5], prob))


class FP8ExpertViews(NamedTuple):
    """One expert's FP8 blockwise slices, exactly the ungrouped call's outputs for its rows, in
    F.scaled_mm's BlockWise1x128 views: row_q [n, O], row_s [n, O/128] strides (1, n); col_q
    [O, n], col_s [O, ceil(n/128)] strides (1, O). None where the call did not write them."""

    row_q: Optional[torch.Tensor]
    row_s: Optional[torch.Tensor]
    col_q: Optional[torch.Tensor]
    col_s: Optional[torch.Tensor]


def fp8_expert_views(g: GroupedTensors, offsets: Sequence[int]) -> List[FP8ExpertViews]:
    """The per-expert views of an FP8 blockwise grouped call, from the offsets on the host
    (offs.tolist(): a loop of F.scaled_mm needs each expert's row count there anyway), with the
    spec's effective offsets (a running maximum clamped to T). An expert with no rows gets
    empty views."""
    o = g.out_cols
    tokens = g.row_q.shape[0] if g.row_q is not None else g.col_q.numel() // o
    out, c, p = [], 0, 0
    for off in offsets:
        end = min(tokens, max(c, int(off)))
        n = end - c
        row_q = row_s = col_q = col_s = None
        if g.row_q is not None:
            row_q = g.row_q[c:end]
            row_s = g.row_s.as_strided((n, o // 128), (1, max(n, 1)), g.row_s.storage_offset()
                                       + p * (o // 128))
        if g.col_q is not None:
            col_q = g.col_q[c * o:end * o].view(o, n)
            col_s = g.col_s.as_strided((o, -(-n // 128)), (1, o),
                                       g.col_s.storage_offset() + (p // 128) * o)
        out.append(FP8ExpertViews(row_q, row_s, col_q, col_s))
        p += -(-n // 128) * 128
        c = end
    return out
