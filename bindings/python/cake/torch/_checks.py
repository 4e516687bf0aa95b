"""The argument rules of the cake:: operators that need no device, in Python: the fake
implementations (torch.compile, FakeTensor tracing) apply them, so a traced call fails where the
real one would, with the same kind of error."""

import torch

import cake as _cake

from .. import errors as _errors
from . import _schemas as S


def _unsupported(message):
    return _errors.error_for(_errors.Status.UNSUPPORTED_SHAPE, "CAKE_STATUS_UNSUPPORTED_SHAPE",
                             message)

FLOATS = (torch.bfloat16, torch.float16, torch.float32)
MAX_D = 8192


def normgate(op, x, z, w, gate, group_size):
    if x.dim() < 1:
        raise ValueError(f"cake {op}: x must be [..., d]")
    has_z = z is not None
    if has_z != (gate != S.GATE_NONE):
        raise ValueError(f"cake {op}: gate {gate}" +
                         (" (none) with a z tensor" if has_z else " needs z") +
                         "; pass z exactly when there is a gate")
    if has_z and z.shape != x.shape:
        raise ValueError(f"cake {op}: x {tuple(x.shape)} and z {tuple(z.shape)} must have one "
                         "shape [..., d]")
    d = x.shape[-1]
    if w.dim() != 1 or w.shape[0] != d:
        raise ValueError(f"cake {op}: w {tuple(w.shape)} must be [d] with d = x.shape[-1] = {d}")
    for name, t in (("x", x), ("z", z), ("w", w)):
        if t is not None and t.dtype not in FLOATS:
            raise TypeError(f"cake {op}: {name} is {t.dtype}; Cake takes bfloat16, float16 or "
                            "float32")
    for name, t in (("z", z), ("w", w)):
        if t is not None and t.device != x.device:
            raise ValueError(f"cake {op}: {name} is on {t.device}; all tensors must be on one "
                             f"CUDA device ({x.device})")
    if isinstance(d, int) and (d < 8 or d > MAX_D or d % 8):
        raise _unsupported(f"cake {op}: desc->d = {d}: Cake serves multiples of 8 from 8 to "
                           f"{MAX_D}")
    if group_size and isinstance(d, int) and (group_size % 8 or d % group_size):
        raise _unsupported(f"cake {op}: group_size {group_size} must be a multiple of 8 dividing "
                           f"d = {d}")


def dy(dy, x):
    if dy.shape != x.shape or dy.dtype != x.dtype or dy.device != x.device:
        raise ValueError(f"cake normgate backward: dy ({tuple(dy.shape)}, {dy.dtype}, "
                         f"{dy.device}) must match x ({tuple(x.shape)}, {x.dtype}, {x.device})")


def swiglu(op, inp, grad=None):
    if inp.dim() != 2 or inp.shape[1] % 2:
        raise ValueError(f"cake {op}: in {tuple(inp.shape)} must be [m, 2k]")
    if inp.dtype != torch.bfloat16:
        raise TypeError(f"cake {op}: in is {inp.dtype}; Cake takes bfloat16")
    m, k = inp.shape[0], inp.shape[1] // 2
    for name, v in (("m", m), ("k", k)):
        if isinstance(v, int) and (v <= 0 or v % 128):
            raise _unsupported(f"cake {op}: {name} = {v}: must be a positive multiple of 128")
    if grad is not None:
        m, k2 = inp.shape
        if grad.shape != (m, k2 // 2) or grad.dtype != torch.bfloat16 or grad.device != inp.device:
            raise ValueError(f"cake {op}: grad ({tuple(grad.shape)}, {grad.dtype}) must be "
                             f"bfloat16 [m, k] = [{m}, {k2 // 2}] on {inp.device}")


_DTYPES = {1: torch.bfloat16, 2: torch.float32, 3: torch.float16}


def dw_dtype(dw_mode, w):
    if dw_mode == S.DW_OF_W:
        return w.dtype
    if dw_mode not in _DTYPES:
        raise ValueError(f"cake normgate backward: dw_mode {dw_mode}: 0 (skip), 1 (bfloat16), "
                         "2 (float32), 3 (float16) or -1 (w's dtype)")
    return _DTYPES[dw_mode]


def swiglu_outputs(inp, orientation, backward, sizes):
    """The four output tensors of one SwiGLU + MXFP8 form (empty where not asked for)."""
    m, k2 = inp.shape
    o = k2 if backward else k2 // 2
    row = orientation & _cake.Orientation.ROWWISE
    col = orientation & _cake.Orientation.COLWISE
    e4m3 = torch.float8_e4m3fn
    return (inp.new_empty((m, o) if row else (0,), dtype=e4m3),
            inp.new_empty(sizes.row_s_bytes if row else 0, dtype=torch.uint8),
            inp.new_empty((o, m) if col else (0,), dtype=e4m3),
            inp.new_empty(sizes.col_s_bytes if col else 0, dtype=torch.uint8))


def swiglu_fp8_outputs(inp, orientation, backward):
    """The four output tensors of one SwiGLU + FP8 blockwise form in storage order (row_s
    [O/128, M], col_s [M/128, O], FP32; empty where not asked for)."""
    m, k2 = inp.shape
    o = k2 if backward else k2 // 2
    row = orientation & _cake.Orientation.ROWWISE
    col = orientation & _cake.Orientation.COLWISE
    e4m3 = torch.float8_e4m3fn
    return (inp.new_empty((m, o) if row else (0,), dtype=e4m3),
            inp.new_empty((o // 128, m) if row else (0,), dtype=torch.float32),
            inp.new_empty((o, m) if col else (0,), dtype=e4m3),
            inp.new_empty((m // 128, o) if col else (0,), dtype=torch.float32))


def scale_rule(op, rule):
    if rule not in (0, 1):
        raise ValueError(f"cake {op}: scale_rule {rule}: 0 (amax / 448) or 1 (powers of two)")
