"""PyTorch layer: Cake's kernels on PyTorch tensors, on PyTorch's current stream.

Norm-gate, per row of width d = x.shape[-1] split into groups of group_size columns, with the
gate a(z) = silu(z) or sigmoid(z):

    y = cake.torch.normgate(x, z, w)                           # rmsnorm(x) * w * silu(z)
    y = cake.torch.normgate(x, z, w, gate_before_norm=True)    # rmsnorm(x * silu(z)) * w
    y = cake.torch.normgate(x, z, w, gate="sigmoid", group_size=1024)
    y = cake.torch.normgate(x, None, w)                        # no gate: rmsnorm(x) * w
    y = cake.torch.normgate(x, z, w32)                          # FP32 master weight: FP32 dw
    y = cake.torch.normgate(x, z, w, main_grad=w_main_grad)     # dw accumulated into a buffer

Differentiable; the forward saves only its inputs (x, z, w) and the backward recomputes the rest,
so the op is as cheap to checkpoint as it can be.

SwiGLU + MXFP8 (in = [gate | up], BF16 [m, 2k]; outputs E4M3 data and E8M0 swizzled scales):

    q = cake.torch.swiglu_mxfp8(inp, "both")                   # q.row_q [m, k], q.col_q [k, m]
    g = cake.torch.swiglu_mxfp8_backward(inp, grad, "rowwise") # [m, 2k] gradients, quantized
    q = cake.torch.swiglu_mxfp8(inp, activation="clamped", prob=p)  # gpt-oss, router-weighted
    g, dp = cake.torch.swiglu_mxfp8_backward(inp, grad, activation="clamped", prob=p)
    y = cake.torch.swiglu_dequantized(inp, "mxfp8", prob=p)    # autograd: inp.grad, p.grad

The operators are cake::normgate_fwd, normgate_bwd, normgate_bwd_accumulate, swiglu_mxfp8_fwd and
swiglu_mxfp8_bwd, with fake implementations, so torch.compile graphs hold them. They come from
libcake_torch (C++: no Python between the call and the launch, the norm-gate's autograd in C++)
when it matches the running torch, else from Python through the ctypes binding (same results,
more host time per call; one notice says so). backend() tells which.

The norm-gate backward's workspace is cached per (device, stream), zeroed once (Cake leaves it
zeroed after every call). Capture a CUDA graph only after one eager call of the shape on the
stream; a capture that would need a new workspace is refused with a message saying so.
"""

import re
from typing import NamedTuple, Optional

import torch

import cake as _cake
from cake import errors as _errors

from . import _native, _schemas as S, _variant

__all__ = [
    "normgate",
    "NormGateFunction",
    "normgate_reference",
    "swiglu_mxfp8",
    "swiglu_mxfp8_backward",
    "swiglu_dequantized",
    "MXFP8Tensors",
    "dequantize_mxfp8",
    "swizzled_scale_offsets",
    "backend",
    "handle",
    "workspace",
    "FusedRMSNormGated",
    "RMSNormGated",
    "patch_transformers",
    "GatedNormPatchError",
]


def _load_operators():
    """The native operators where they load, else the Python ones; returns which."""
    path = _native.load(_cake.library_path())
    if path is None:
        from . import _fallback

        _fallback.define()
        return "python"
    return "native"


_BACKEND = _load_operators()
from . import _fakes  # noqa: E402  (registers the fake implementations of the loaded operators)
from ._fallback import handle, workspace  # noqa: E402,F401


def backend() -> str:
    """"native" (libcake_torch's C++ operators) or "python" (the ctypes operators)."""
    return _BACKEND


# A failing Cake call inside a C++ operator raises ValueError or RuntimeError with this marker;
# the functions below turn it back into the CakeError class of its status.
_CAKE_MARK = re.compile(r"^cake: (\w+): (CAKE_STATUS_\w+) \((\d+)\): (.*)$", re.S)


def _cake_error(e: Exception):
    m = _CAKE_MARK.match(str(e))
    if m is None:
        return None
    return _errors.error_for(int(m.group(3)), m.group(2), m.group(4).strip(), m.group(1))


_F32 = torch.float32
_GATES = {"silu": S.GATE_SILU, "swish": S.GATE_SILU, "sigmoid": S.GATE_SIGMOID}
_DW_MODES = {None: S.DW_OF_W, torch.bfloat16: 1, torch.float32: 2, torch.float16: 3}
_normgate_op = torch.ops.cake.normgate_fwd.default
_swiglu_fwd_op = torch.ops.cake.swiglu_mxfp8_fwd.default
_swiglu_bwd_op = torch.ops.cake.swiglu_mxfp8_bwd.default


def normgate(x: torch.Tensor, z: Optional[torch.Tensor], w: torch.Tensor, eps: float = 1e-6, *,
             gate: str = "silu", gate_before_norm: bool = False,
             group_size: Optional[int] = None, deterministic: bool = True,
             dw_dtype: Optional[torch.dtype] = None, main_grad: Optional[torch.Tensor] = None,
             program: Optional[str] = None) -> torch.Tensor:
    """The gated RMSNorm of x ([..., d]), differentiable in x, z and w.

    z: the gate's input, x's shape, or None for no gate (then `gate` is not used);
    gate: "silu" (also "swish") or "sigmoid";
    gate_before_norm: False: y = rmsnorm_G(x) * w * a(z); True: y = rmsnorm_G(x * a(z)) * w;
    group_size: columns per mean-square group (None: the whole row);
    x, z: bfloat16, float16 or float32 (they may differ); w: bfloat16, float16 or float32;
    y has x's dtype. The tuned programs serve SiLU after a whole-row norm with x, z and w all
    bfloat16; anything else (an FP32 master w included: it is used as FP32, not rounded) runs
    the general variant programs;
    deterministic: the deterministic package (dw bits fixed by the inputs) or the faster
      non-deterministic one (dw within 1 ulp);
    dw_dtype: the dtype dw is reduced in (None: w's); w.grad has w's dtype;
    main_grad: None, or an FP32/BF16/FP16 [d] buffer the weight gradient is added to in place
      (then w gets no .grad: the Megatron "main_grad" pattern).
    """
    if (gate == "silu" and not gate_before_norm and group_size is None and deterministic
            and dw_dtype is None and main_grad is None and program is None):
        # The common call with the operator's defaults: fewer arguments for the dispatcher to
        # convert (its host cost).
        try:
            if z is None:
                return _normgate_op(x, z, w, eps, S.GATE_NONE)
            return _normgate_op(x, z, w, eps)
        except (RuntimeError, ValueError) as e:
            err = _cake_error(e)
            if err is None:
                raise
            raise err from None
    if z is None:
        g = S.GATE_NONE
    else:
        g = _GATES.get(gate)
        if g is None:
            raise ValueError(f"cake normgate: gate {gate!r}: 'silu', 'swish' or 'sigmoid'")
    mode = _DW_MODES.get(dw_dtype)
    if mode is None:
        raise TypeError(f"cake normgate: dw_dtype {dw_dtype}: bfloat16, float32, float16 or None")
    try:
        return _normgate_op(x, z, w, eps, g, gate_before_norm, group_size or 0, deterministic,
                            mode, main_grad, program)
    except (RuntimeError, ValueError) as e:
        err = _cake_error(e)
        if err is None:
            raise
        raise err from None


class NormGateFunction:
    """normgate() as an autograd-function-like entry point (apply(x, z, w, eps, deterministic,
    dw_dtype, main_grad, program)), for callers written against it."""

    @staticmethod
    def apply(x, z, w, eps=1e-6, deterministic=True, dw_dtype=None, main_grad=None,
              program=None):
        return normgate(x, z, w, eps, deterministic=deterministic, dw_dtype=dw_dtype,
                        main_grad=main_grad, program=program)


def normgate_reference(x: torch.Tensor, z: Optional[torch.Tensor], w: torch.Tensor,
                       eps: float = 1e-6, *, gate: str = "silu", gate_before_norm: bool = False,
                       group_size: Optional[int] = None) -> torch.Tensor:
    """The unfused PyTorch form (FP32 inside, x's dtype out), for comparisons."""
    d = x.shape[-1]
    g = group_size or d
    xf = x.float()
    if z is not None:
        zf = z.float()
        a = torch.sigmoid(zf) if gate == "sigmoid" else zf * torch.sigmoid(zf)
        if gate_before_norm:
            xf = xf * a
    xg = xf.reshape(*x.shape[:-1], d // g, g)
    rstd = torch.rsqrt(xg.pow(2).mean(-1, keepdim=True) + eps)
    y = (xg * rstd).reshape(x.shape) * w.float()
    if z is not None and not gate_before_norm:
        y = y * a
    return y.to(x.dtype)


# ---- SwiGLU + MXFP8 ------------------------------------------------------------------------
class MXFP8Tensors(NamedTuple):
    """Outputs of a SwiGLU + MXFP8 call; None for an orientation not asked for.

    row_q: E4M3 [m, O]; row_s: E8M0 bytes (uint8) in the swizzled 128x4 layout, R = m,
    C = O/32; col_q: E4M3 [O, m] (the transpose, stored row-major); col_s: uint8, R = O,
    C = m/32. O = k forward, 2k backward. view(torch.float8_e8m0fnu) gives E8M0-typed scales.
    """

    row_q: Optional[torch.Tensor]
    row_s: Optional[torch.Tensor]
    col_q: Optional[torch.Tensor]
    col_s: Optional[torch.Tensor]



def _wrap(out, orient: int) -> MXFP8Tensors:
    if orient == 3:
        return MXFP8Tensors(*out)
    if orient == 1:
        return MXFP8Tensors(out[0], out[1], None, None)
    return MXFP8Tensors(None, None, out[2], out[3])


def _call(op, *args):
    try:
        return op(*args)
    except (RuntimeError, ValueError) as e:
        err = _cake_error(e)
        if err is None:
            raise
        raise err from None


_ORIENTATIONS = {"rowwise": 1, "colwise": 2, "both": 3}


def _orientation(value) -> int:
    o = _ORIENTATIONS.get(value) if isinstance(value, str) else None
    return o if o is not None else int(_cake.Orientation.parse(value))


_ALPHA, _LIMIT = S.ALPHA, S.LIMIT


def swiglu_mxfp8(inp: torch.Tensor, orientation="rowwise", program: Optional[str] = None, *,
                 activation: str = "silu", alpha: float = _ALPHA, limit: float = _LIMIT,
                 prob: Optional[torch.Tensor] = None) -> MXFP8Tensors:
    """Forward: Y = bf16(act(in[:, :k], in[:, k:])) quantized to MXFP8 (O = k).

    orientation: "rowwise", "colwise", "both" (or cake.Orientation). activation: "silu"
    (silu(g) * u) or "clamped" (gpt-oss: g' = min(g, limit), u' = clamp(u, -limit, limit),
    g' * sigmoid(alpha * g') * (u' + 1)); prob: None, or the weighted SwiGLU's router
    probabilities, a CUDA float32 [m] or [m, 1] tensor (Y = act * prob per row). Not
    differentiable: the quantized outputs feed an MXFP8 GEMM; pair it with
    swiglu_mxfp8_backward() (or use swiglu_dequantized() for autograd)."""
    orient = _orientation(orientation)
    v = _variant.args("swiglu_mxfp8", activation, alpha, limit, prob)
    return _wrap(_call(_swiglu_fwd_op, inp, orient, program, *v), orient)


def swiglu_mxfp8_backward(inp: torch.Tensor, grad: torch.Tensor, orientation="rowwise",
                          program: Optional[str] = None, *, activation: str = "silu",
                          alpha: float = _ALPHA, limit: float = _LIMIT,
                          prob: Optional[torch.Tensor] = None):
    """Backward: [dgate | dup] (BF16 [m, 2k], from in and grad = dL/dY [m, k]) quantized to
    MXFP8 (O = 2k), with the forward's activation, alpha, limit and prob. With prob it returns
    (MXFP8Tensors, dprob): dprob = dL/dprob (float32, prob's shape), the sum over a row of
    grad * act(g, u)."""
    orient = _orientation(orientation)
    v = _variant.args("swiglu_mxfp8 backward", activation, alpha, limit, prob)
    out = _call(_swiglu_bwd_op, inp, grad, orient, program, *v)
    q = _wrap(out[:4], orient)
    return q if prob is None else (q, _variant.dprob_like(out[4], prob))


def swizzled_scale_offsets(rows: int, cols: int, device=None) -> torch.Tensor:
    """int64 [rows, cols]: byte offset of scale (r, c) in the swizzled 128x4 layout
    (docs/spec/swiglu-mxfp8.md): ((r/128)*(C'/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4."""
    r = torch.arange(rows, device=device, dtype=torch.int64).view(-1, 1)
    c = torch.arange(cols, device=device, dtype=torch.int64).view(1, -1)
    cp = (cols + 3) // 4 * 4
    return ((r // 128) * (cp // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def dequantize_mxfp8(q: torch.Tensor, s: torch.Tensor, colwise: bool = False) -> torch.Tensor:
    """FP32 values of an MXFP8 tensor, in the logical [M, O] orientation.

    q: E4M3 [M, O] (rowwise) or [O, M] (colwise, the stored transpose); s: its uint8 scales."""
    qf = q.float()
    rows, cols = qf.shape  # stored shape: [M, O] rowwise, [O, M] colwise
    offs = swizzled_scale_offsets(rows, cols // 32, q.device)
    e = s.view(torch.uint8)[offs].to(torch.int32)  # [rows, cols/32]
    scale = torch.exp2((e - 127).to(_F32))
    scale[e == 255] = float("nan")  # E8M0 255 is NaN
    out = qf * scale.repeat_interleave(32, dim=1)
    return out.t() if colwise else out


# The drop-in modules and the transformers patch (they call normgate above).
from .modules import FusedRMSNormGated, RMSNormGated  # noqa: E402
from .patch import GatedNormPatchError, patch_transformers  # noqa: E402
from . import sharding  # noqa: E402,F401  (the DTensor sharding rules of the operators)
from .fp8 import (  # noqa: E402,F401  (SwiGLU + FP8 blockwise 1x128, the norm-gate's FP8 y)
    FP8Tensors, NormgateFP8, dequantize_fp8_blockwise, normgate_fp8, quantize_fp8_blockwise,
    swiglu_fp8, swiglu_fp8_backward)
from .grouped import (  # noqa: E402,F401  (grouped SwiGLU over MoE experts, both formats)
    FP8ExpertViews, GroupedTensors, fp8_expert_views, swiglu_grouped, swiglu_grouped_backward)
from .swiglu_autograd import swiglu_dequantized  # noqa: E402,F401  (SwiGLU under autograd)
