"""The argument rules of the cake:: operators that need no device, in Python: the fake
implementations (torch.compile, FakeTensor tracing) apply them, so a traced call fails where the
real one would, with the same kind of error.

Two layers, in the order the real operators apply them:
- the operator's own rules (bindings/torch/*_ops.cc): ranks, shapes, dtypes, devices;
- the library's rules (lib/api/*.cc), which the operator meets only when there is work, i.e. for a
  non-empty x (an empty one returns before the library is called): d, group_size, eps, m, k.
Rules on sizes are applied where the size is a plain int; a symbolic size (dynamic shapes) is
left to the real call rather than guarded on here."""

import ctypes
import math

import torch

import cake as _cake

from .. import errors as _errors
from . import _schemas as S


def _library_error(status, message):
    name = "CAKE_STATUS_" + _errors.Status(status).name
    return _errors.error_for(status, name, message)


def _unsupported(message):
    return _library_error(_errors.Status.UNSUPPORTED_SHAPE, message)


def _invalid(message):
    return _library_error(_errors.Status.INVALID_ARGUMENT, message)


FLOATS = (torch.bfloat16, torch.float16, torch.float32)
MAX_D = 8192
def _known(v):
    return isinstance(v, int)


def _empty(t):
    n = t.numel()
    return _known(n) and n == 0


def device(op, first, first_name, *rest):
    """Every tensor on @p first's device. The device type is not checked here: DTensor's sharding
    propagation and other tracers run the fake implementations on CPU fakes, and a real CPU
    tensor reaches the real operator, whose CPU kernel says "Cake runs on CUDA tensors"."""
    for name, t in rest:
        if t is not None and t.device != first.device:
            raise ValueError(f"cake {op}: {name} is on {t.device}; all tensors must be on one "
                             f"CUDA device ({first.device})")


def normgate(op, x, z, w, gate, group_size, eps=None):
    """The norm-gate's rules (forward and backward), in the real operators' order. @p eps None:
    not checked (the fallback passes it to the library, which checks it)."""
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
    if _empty(x):
        return  # the operator returns before calling the library
    if _known(d) and (d < 8 or d > MAX_D or d % 8):
        raise _unsupported(f"desc->d = {d}: Cake serves multiples of 8 from 8 to {MAX_D} "
                           "(tuned: 64, 128, 256)")
    if eps is not None and not (math.isfinite(eps) and eps >= 0):
        raise _invalid(f"desc->eps = {eps:g}: must be finite and >= 0")
    if group_size < 0:
        raise _invalid(f"desc->group_size = {group_size}: must be >= 0 (0: the whole row)")
    if group_size and _known(d) and (group_size % 8 or d % group_size):
        raise _unsupported(f"desc->group_size = {group_size}: must be 0 (the whole row) or a "
                           f"multiple of 8 that divides d = {d}")


def dy(dy, x):
    if dy.shape != x.shape or dy.dtype != x.dtype or dy.device != x.device:
        raise ValueError(f"cake normgate backward: dy ({tuple(dy.shape)}, {dy.dtype}, "
                         f"{dy.device}) must match x ({tuple(x.shape)}, {x.dtype}, {x.device})")


def main_grad(dw, x):
    """The accumulating backward's dw buffer (Megatron's main_grad): [d], a float dtype, on x's
    device, contiguous (its 16-byte alignment is checked by the real call: a fake has no
    address)."""
    d = x.shape[-1]
    if dw.dim() != 1 or dw.shape[0] != d or dw.dtype not in FLOATS or dw.device != x.device:
        raise ValueError(f"cake normgate backward: main_grad {tuple(dw.shape)} {dw.dtype} must be "
                         f"a float32, bfloat16 or float16 [d = {d}] tensor on {x.device}")
    if not dw.is_contiguous():
        raise ValueError("cake normgate backward: main_grad must be contiguous and 16-byte "
                         "aligned (it is accumulated into in place)")


def orientation(value):
    """cake_mxfp8_orientation_t of the operators' int argument (the operators' own rule)."""
    if isinstance(value, int) and not 1 <= value <= 3:
        raise ValueError(f"cake swiglu_mxfp8: orientation {value}: 1 (rowwise), 2 (colwise) or "
                         "3 (both)")
    return _cake.Orientation.parse(value)


# A family's shape rule, as lib/api/swiglu_mxfp8.cc and swiglu_fp8.cc state it: M a multiple
# of the first number, K of the second, and why.
MXFP8_SHAPE = (32, 32, "the 32-value MXFP8 scale block")
FP8_SHAPE = (1, 128, "the 1x128 scale block")


def _shape_error(m, k, rule):
    """The library's message for a shape that breaks the family's rule, or None."""
    mm, km, why = rule
    if m % mm == 0 and k % km == 0:
        return None
    if mm == km:
        return f"desc->m = {m}, desc->k = {k}: both must be multiples of {km} ({why})"
    if mm == 1:
        return f"desc->k = {k}: must be a multiple of {km} ({why}); desc->m = {m} may be any"
    return (f"desc->m = {m}, desc->k = {k}: m must be a multiple of {mm} and k of {km} "
            f"({why})")


def swiglu_variant(op, inp, activation, prob):
    """The operators' own rules of the variant (bindings/torch/swiglu_common.cc): activation 0
    (silu) or 1 (clamped); prob None or float32 [m] / [m, 1] on in's device."""
    if activation not in (S.ACT_SILU, S.ACT_CLAMPED):
        raise ValueError(f"cake {op}: activation {activation}: 0 (silu) or 1 (clamped)")
    if prob is None:
        return
    m = inp.shape[0]
    shape = tuple(prob.shape)
    if shape not in ((m,), (m, 1)) or prob.dtype != torch.float32 or prob.device != inp.device:
        raise ValueError(f"cake {op}: prob ({shape}, {prob.dtype}, {prob.device}) must be "
                         f"float32 [m] or [m, 1] with m = {m} on {inp.device}")


def _f32(v):
    return ctypes.c_float(v).value  # the descriptor's float (a double beyond it: +-inf)


def swiglu_variant_library(activation, alpha, limit):
    """The library's rules of the variant (swiglu_check_variant, lib/api/swiglu_common.cc)."""
    if activation != S.ACT_CLAMPED:
        return
    lim, a = _f32(limit), _f32(alpha)
    if not lim > 0.0:
        raise _invalid(f"desc->variant.limit = {lim:g}: the clamped activation needs a limit > 0 "
                       "(not NaN)")
    if not math.isfinite(a):
        raise _invalid(f"desc->variant.alpha = {a:g}: the clamped activation needs a finite "
                       "alpha")


def swiglu(op, inp, grad=None, orient=None, shape=MXFP8_SHAPE, variant=None):
    """The SwiGLU rules (@p shape: the family's, MXFP8_SHAPE or FP8_SHAPE); @p orient (the
    operators' int argument) is checked where the operator checks it, between its own rules and
    the library's; @p variant (activation, alpha, limit, prob) after grad, its library rules
    after the shape's. Returns the Orientation (None when @p orient is None)."""
    if inp.dim() != 2 or inp.shape[1] % 2:
        raise ValueError(f"cake {op}: in {tuple(inp.shape)} must be [m, 2k]")
    if inp.dtype != torch.bfloat16:
        raise TypeError(f"cake {op}: in is {inp.dtype}; Cake takes bfloat16")
    m, k = inp.shape[0], inp.shape[1] // 2
    if grad is not None:
        if grad.shape != (m, k) or grad.dtype != torch.bfloat16 or grad.device != inp.device:
            raise ValueError(f"cake {op}: grad ({tuple(grad.shape)}, {grad.dtype}) must be "
                             f"bfloat16 [m, k] = [{m}, {k}] on {inp.device}")
    if variant is not None:
        swiglu_variant(op, inp, variant[0], variant[3])
    parsed = None if orient is None else orientation(orient)
    if _known(m) and _known(k):
        if m <= 0 or k <= 0:
            raise _invalid(f"desc->m = {m}, desc->k = {k}: both must be > 0")
        err = _shape_error(m, k, shape)
        if err is not None:
            raise _unsupported(err)
    if variant is not None:
        swiglu_variant_library(*variant[:3])
    return parsed


_DTYPES = {1: torch.bfloat16, 2: torch.float32, 3: torch.float16}


def dw_dtype(dw_mode, w):
    if dw_mode == S.DW_OF_W:
        return w.dtype
    if dw_mode not in _DTYPES:
        raise ValueError(f"cake normgate backward: dw_mode {dw_mode}: 0 (skip), 1 (bfloat16), "
                         "2 (float32), 3 (float16) or -1 (w's dtype)")
    return _DTYPES[dw_mode]


def dprob(inp, backward, prob):
    """The backwards' last output: FP32 [m] for a weighted call, else empty."""
    return inp.new_empty((inp.shape[0] if backward and prob is not None else 0,),
                         dtype=torch.float32)


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
    [O/128, M], col_s [ceil(M/128), O], FP32; empty where not asked for)."""
    m, k2 = inp.shape
    o = k2 if backward else k2 // 2
    row = orientation & _cake.Orientation.ROWWISE
    col = orientation & _cake.Orientation.COLWISE
    e4m3 = torch.float8_e4m3fn
    return (inp.new_empty((m, o) if row else (0,), dtype=e4m3),
            inp.new_empty((o // 128, m) if row else (0,), dtype=torch.float32),
            inp.new_empty((o, m) if col else (0,), dtype=e4m3),
            inp.new_empty(((m + 127) // 128, o) if col else (0,), dtype=torch.float32))


def swiglu_grouped(op, inp, grad, offs, fmt, orient, rule, variant=(S.ACT_SILU, S.ALPHA,
                                                                   S.LIMIT, None)):
    """The grouped SwiGLU operators' rules (bindings/torch/swiglu_grouped_ops.cc), then the
    library's (lib/api/swiglu_grouped.cc): in [T, 2k] bfloat16, format, orientation, scale
    rule, grad, offs int32 [E] on in's device, the variant (activation, alpha, limit, prob:
    prob [T]), E in range, T and k. Returns the Orientation."""
    if inp.dim() != 2 or inp.shape[1] % 2:
        raise ValueError(f"cake {op}: in {tuple(inp.shape)} must be [m, 2k]")
    if inp.dtype != torch.bfloat16:
        raise TypeError(f"cake {op}: in is {inp.dtype}; Cake takes bfloat16")
    if fmt not in (1, 2):
        raise ValueError(f"cake {op}: format {fmt}: 1 (FP8 blockwise) or 2 (MXFP8)")
    parsed = orientation(orient)
    scale_rule(op, rule)
    t, k = inp.shape[0], inp.shape[1] // 2
    if grad is not None:
        if grad.shape != (t, k) or grad.dtype != torch.bfloat16 or grad.device != inp.device:
            raise ValueError(f"cake {op}: grad ({tuple(grad.shape)}, {grad.dtype}) must be "
                             f"bfloat16 [m, k] = [{t}, {k}] on {inp.device}")
    if offs.dim() != 1 or offs.dtype != torch.int32 or offs.device != inp.device:
        raise ValueError(f"cake {op}: offs ({tuple(offs.shape)}, {offs.dtype}) must be int32 "
                         f"[E] on {inp.device}")
    swiglu_variant(op, inp, variant[0], variant[3])
    e = offs.shape[0]
    if _known(e) and not 1 <= e <= _cake.SWIGLU_GROUPED_MAX_EXPERTS:
        raise ValueError(f"cake {op}: offs holds {e} experts: 1 .. "
                         f"{_cake.SWIGLU_GROUPED_MAX_EXPERTS}")
    if _known(t) and _known(k):
        if t <= 0 or k <= 0:
            raise _invalid(f"desc->tokens = {t}, desc->k = {k}, desc->experts = {e}: tokens and "
                           "k must be > 0, experts >= 1")
        mult, why = (32, "the 32-value MXFP8 scale block") if fmt == 2 else \
            (128, "the 1x128 scale block")
        if k % mult:
            raise _unsupported(f"desc->k = {k}: must be a multiple of {mult} ({why})")
    swiglu_variant_library(*variant[:3])
    return parsed


def swiglu_grouped_outputs(inp, offs, fmt, orient, backward):
    """(row_q, row_s, col_q, col_s, status) of one grouped call (empty where not asked for):
    the shapes of bindings/torch/swiglu_grouped_ops.cc."""
    t, k2 = inp.shape
    k, e = k2 // 2, offs.shape[0]
    fmt_name = "mxfp8" if fmt == 2 else "fp8_blockwise"
    sz = _cake.swiglu_grouped_expected_sizes(t, k, e, backward, fmt_name)
    o, p = sz.out_cols, sz.scale_rows
    row = orient & _cake.Orientation.ROWWISE
    col = orient & _cake.Orientation.COLWISE
    e4m3, s = torch.float8_e4m3fn, torch.uint8 if fmt == 2 else torch.float32
    if fmt == 2:
        rs, cq, cs = (p, (o // 32 + 3) // 4 * 4), (o, t), ((o + 127) // 128 * 128, p // 32)
    else:
        rs, cq, cs = (p * (o // 128),), (t * o,), (p // 128 * o,)
    return (inp.new_empty((t, o) if row else (0,), dtype=e4m3),
            inp.new_empty(rs if row else (0,), dtype=s),
            inp.new_empty(cq if col else (0,), dtype=e4m3),
            inp.new_empty(cs if col else (0,), dtype=s),
            inp.new_empty((1,), dtype=torch.int32))


def scale_rule(op, rule):
    if rule not in (0, 1):
        raise ValueError(f"cake {op}: scale_rule {rule}: 0 (amax / 448) or 1 (powers of two)")


def normgate_quant(op, x, z, w, fmt, rule, heads, eps):
    """The quantized forward's rules: the norm-gate's (SiLU gate, z given), the operator's own
    (format, scale rule), then the library's (the default form, the widths, heads). Returns the
    expected sizes (cake.NormgateQuantSizes), None for an empty x."""
    normgate(op, x, z, w, S.GATE_SILU, 0, eps)
    if fmt not in (1, 2):
        raise ValueError(f"cake {op}: format {fmt}: 1 (FP8 blockwise) or 2 (MXFP8)")
    scale_rule(op, rule)
    if _empty(x):
        return None
    d = x.shape[-1]
    for name, t in (("x", x), ("z", z), ("w", w)):
        if t.dtype != torch.bfloat16:
            raise _invalid("quantized y serves the default form only (SiLU gate after a "
                           f"whole-row norm on BF16 x, z, w); {name} is {t.dtype}")
    if heads < 0:
        raise _invalid(f"quant->heads = {heads}: must be >= 0 (0: one head)")
    h = max(1, heads)
    if _known(d):
        if fmt == 1 and d % 128:
            raise _unsupported(f"desc->d = {d}: FP8 blockwise y needs a multiple of 128 (the "
                               "1x128 scale block)")
        if fmt == 2 and d % 32:
            raise _unsupported(f"desc->d = {d}: MXFP8 y needs a multiple of 32 (the 32-value "
                               "scale block)")
        if fmt == 2 and h > 1 and d % 128:
            raise _unsupported(f"desc->d = {d} with quant->heads = {h}: MXFP8 y of several heads "
                               "needs d a multiple of 128 (a head's scales fill whole 4-column "
                               "tiles)")
    rows = x.numel() // d if _known(x.numel()) and _known(d) else None
    if rows is None:
        return None
    if rows % h:
        raise _invalid(f"quant->heads = {h}: does not divide desc->rows = {rows}")
    if h > 1 and rows >= 2 ** 31:
        raise _unsupported(f"desc->rows = {rows} with quant->heads = {h}: more than one head "
                           "needs rows below 2^31")
    return _cake.normgate_quant_expected_sizes(rows, d, fmt, h)


def normgate_quant_outputs(x, fmt, heads, write_y, sizes):
    """(q, q_scale, y) of the quantized forward: q E4M3 [rows / heads, heads * d]; q_scale FP32
    [K/128, rows / heads] (FP8 blockwise, MN-major storage) or uint8 swizzled bytes; y x's shape
    or empty."""
    d = x.shape[-1]
    k = max(1, heads) * d
    if sizes is None:  # no rows
        q = x.new_empty((0, k), dtype=torch.float8_e4m3fn)
        s = x.new_empty((k // 128, 0), dtype=torch.float32) if fmt == 1 else \
            x.new_empty(0, dtype=torch.uint8)
    else:
        q = x.new_empty((sizes.q_rows, sizes.q_cols), dtype=torch.float8_e4m3fn)
        s = x.new_empty((sizes.s_cols, sizes.q_rows), dtype=torch.float32) if fmt == 1 else \
            x.new_empty(sizes.s_bytes, dtype=torch.uint8)
    y = x.new_empty(x.shape) if write_y else x.new_empty(0)
    return q, s, y
