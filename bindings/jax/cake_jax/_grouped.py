"""Grouped SwiGLU for MoE experts in JAX (docs/spec/swiglu-grouped.md): SwiGLU and its
quantization for the token rows of E experts in one launch, MXFP8 or FP8 blockwise 1x128, the six
forms (forward / backward x rowwise / colwise / both).

offsets is an int32 [E] device array of end rows (PyTorch's offs): expert e holds rows
[offsets[e-1], offsets[e]). It is an operand of the custom call, never read on the host, so a
jitted function is traced once for a token capacity T and expert count E and runs with whatever
split the offsets hold then. The outputs are the C call's buffers, shaped as cake.torch's
swiglu_grouped gives them; bytes the spec leaves unwritten (rows past the last offset, scale
padding past p[E]) are whatever the fresh XLA buffer held.

Partitioning: the offsets index the whole token buffer, so the rows cannot be split among
devices (a device's rows would need offsets of its own, and its scales sit at padded offsets
that depend on the rows before it). Under jit over a mesh every operand is replicated before the
call (XLA gathers a sharded one) and every output is replicated: each device runs the whole
call. Expert parallelism, where each device owns its token buffer and offsets, is a shard_map
over the grouped call: inside it, the call is the device's own. vmap maps over the batch
(jax.lax.map: one launch per element, each with its own offsets).
"""

import functools
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

import cake as _cake

from . import _partition
from ._partition import RowRule

_MX = int(_cake.NormgateQuantFormat.MXFP8)
_FP8 = int(_cake.NormgateQuantFormat.FP8_BLOCKWISE)
_TARGETS = {(_MX, False): "cake_swiglu_mxfp8_grouped_fwd",
            (_MX, True): "cake_swiglu_mxfp8_grouped_bwd",
            (_FP8, False): "cake_swiglu_fp8_grouped_fwd",
            (_FP8, True): "cake_swiglu_fp8_grouped_bwd"}
#: The variant handlers (prob after offsets, dprob after status, the variant's attributes).
_VARIANT_TARGETS = {(_MX, False): "cake_swiglu_mxfp8_grouped_variant_fwd",
                    (_MX, True): "cake_swiglu_mxfp8_grouped_variant_bwd",
                    (_FP8, False): "cake_swiglu_fp8_grouped_variant_fwd",
                    (_FP8, True): "cake_swiglu_fp8_grouped_variant_bwd"}
_OPS = {"cake_swiglu_mxfp8_grouped_fwd": "swiglu_mxfp8_grouped_fwd",
        "cake_swiglu_mxfp8_grouped_bwd": "swiglu_mxfp8_grouped_bwd",
        "cake_swiglu_fp8_grouped_fwd": "swiglu_fp8_grouped_fwd",
        "cake_swiglu_fp8_grouped_bwd": "swiglu_fp8_grouped_bwd"}


def _api():
    # The package's module, looked up at call time: its _ffi may be replaced (the host tests'
    # stand-in for the kernel).
    import cake_jax

    return cake_jax


class GroupedArrays(NamedTuple):
    """The outputs of one grouped call, the C call's buffers (docs/spec/swiglu-grouped.md,
    Layouts); an orientation not asked for has None. O = k forward, 2k backward; P the padded
    scale rows of every split (cake.swiglu_grouped_expected_sizes().scale_rows).

    MXFP8: row_q float8_e4m3fn [T, O]; row_s uint8 [P, ceil(O/128)*4], each expert's swizzled
    128x4 tiles from padded row p[e]; col_q [O, T]; col_s uint8 [ceil(O/128)*128, P/32], each
    expert's tiles contiguous.
    FP8 blockwise: row_q [T, O]; row_s float32 [P * O/128]; col_q float8_e4m3fn [T * O], expert
    e's [O, n_e] from element offsets[e-1] * O; col_s float32 [P/128 * O] (the per-expert slices
    are the ungrouped call's; dequantize_grouped() reads them all).
    status: int32 [1], cake.GroupedOffsetsStatus bits of the offsets (0: valid)."""

    row_q: Optional[jax.Array]
    row_s: Optional[jax.Array]
    col_q: Optional[jax.Array]
    col_s: Optional[jax.Array]
    status: jax.Array


class _Config(NamedTuple):
    """The static options of a grouped call (hashable: the op cache's and custom_vjp's key)."""

    fmt: int  # cake.NormgateQuantFormat
    orient: int  # cake.Orientation
    rule: int  # cake.Fp8ScaleRule (FP8 blockwise only)
    program: str
    variant: tuple = ()  # the variant's attributes ((name, value), ...); () for plain SwiGLU
    weighted: bool = False  # prob is an operand (and a backward's dprob a result)

    @property
    def row(self):
        return bool(self.orient & _cake.Orientation.ROWWISE)

    @property
    def col(self):
        return bool(self.orient & _cake.Orientation.COLWISE)

    def attrs(self):
        out = {"orientation": np.int32(self.orient), "program": self.program}
        if self.fmt != _MX:
            out["scale_rule"] = np.int32(self.rule)
        out.update(dict(self.variant))
        return out

    def target(self, backward):
        return (_VARIANT_TARGETS if self.variant else _TARGETS)[(self.fmt, bool(backward))]


class _GroupedName(NamedTuple):
    name: str


def _config(format, orientation, scale_rule, program, backward=False, t=None,
            activation="silu", alpha=None, limit=None, prob=None) -> _Config:
    """The static options; the variant's (activation, alpha, limit, prob) checked with Cake's
    words as the ungrouped ops check them, prob float32 [T] or [T, 1]."""
    api = _api()
    variant = ()
    if activation != "silu" or prob is not None:
        variant = api._variant_attrs(
            _GroupedName("swiglu_grouped"), backward, _Rows(t), activation,
            api.SWIGLU_ALPHA if alpha is None else alpha,
            api.SWIGLU_LIMIT if limit is None else limit, prob)
        if not hasattr(api._shim, "cake_jax_swiglu_grouped_variants"):
            raise NotImplementedError("cake_jax swiglu_grouped: the grouped SwiGLU variants need "
                                      "a libcake_jax.so built with them")
    return _Config(int(_cake.NormgateQuantFormat.parse(format)),
                   int(_cake.Orientation.parse(orientation)),
                   int(_cake.Fp8ScaleRule.parse(scale_rule)), program or "", variant,
                   prob is not None)


class _Rows(NamedTuple):
    """What _variant_attrs reads of in: its rows."""

    rows: int

    @property
    def shape(self):
        return (self.rows,)


def _results(c: _Config, t, k, e, backward):
    """(shape, dtype) of row_q, row_s, col_q, col_s (empty when not asked for) and status."""
    s = _cake.swiglu_grouped_expected_sizes(t, k, e, backward, "mxfp8" if c.fmt == _MX
                                            else "fp8_blockwise")
    o, p = s.out_cols, s.scale_rows
    e4m3 = jnp.float8_e4m3fn
    if c.fmt == _MX:
        shapes = ((t, o), (p, (o + 127) // 128 * 4), (o, t), ((o + 127) // 128 * 128, p // 32))
        types = (e4m3, jnp.uint8, e4m3, jnp.uint8)
    else:
        shapes = ((t, o), (p * (o // 128),), (t * o,), (p // 128 * o,))
        types = (e4m3, jnp.float32, e4m3, jnp.float32)
    keep = (c.row, c.row, c.col, c.col)
    out = tuple((sh if k_ else (0,), ty) for sh, ty, k_ in zip(shapes, types, keep))
    dprob = (((t,), jnp.float32),) if c.weighted and backward else ()
    return out + (((1,), jnp.int32),) + dprob


def _check(c: _Config, backward, inp, grad, offsets):
    """The call's rules at trace time, with the library's words where they are its rules."""
    name = "swiglu_grouped" + ("_backward" if backward else "")
    if inp.ndim != 2 or inp.shape[1] % 2 or inp.dtype != jnp.bfloat16:
        raise ValueError(f"cake_jax {name}: in {inp.shape} {inp.dtype} must be bfloat16 [T, 2k]")
    t, k = inp.shape[0], inp.shape[1] // 2
    if grad is not None and tuple(grad.shape) != (t, k):
        raise ValueError(f"cake_jax {name}: grad {grad.shape} must be [T, k] = [{t}, {k}]")
    if offsets.ndim != 1:
        raise ValueError(f"cake_jax {name}: offsets {offsets.shape} must be int32 [E], the end "
                         "row of each expert")
    if offsets.dtype != jnp.int32:
        raise TypeError(f"cake_jax {name}: offsets is {offsets.dtype}; Cake takes int32 end "
                        "rows (PyTorch's offs)")
    plain = _TARGETS[(c.fmt, bool(backward))]
    if not _api().has_op(_OPS[plain]):
        raise _cake.UnavailableError("cake_" + _OPS[plain].replace("_fwd", "_forward")
                                     .replace("_bwd", "_backward"), "libcake.so or libcake_jax.so")
    target = c.target(backward)
    # cake_swiglu_*_grouped_buffer_sizes applies the descriptor's rules (tokens, k, experts) and
    # raises Cake's error with its message; it needs no device.
    _cake.swiglu_grouped_buffer_sizes(t, k, offsets.shape[0], backward,
                                      "mxfp8" if c.fmt == _MX else "fp8_blockwise")
    return target


def _local(c: _Config, backward, target, inp, grad, offsets, prob=None):
    t, k = inp.shape[0], inp.shape[1] // 2
    results = _results(c, t, k, offsets.shape[0], backward)
    args = (inp, offsets) if grad is None else (inp, grad, offsets)
    args += (prob,) if c.weighted else ()
    out = _api()._ffi(target, results, args, **c.attrs())
    keep = (c.row, c.row, c.col, c.col, True) + ((True,) if c.weighted and backward else ())
    return tuple(o for o, k_ in zip(out, keep) if k_)


@functools.lru_cache(maxsize=None)
def _grouped_op(c: _Config, backward: bool, target: str):
    """The partitioned, batched op of one configuration: every operand and result replicated
    (the module's docstring says why), vmap mapped over the batch."""

    n_in = 2 if backward else 1  # in (and grad), then offsets, then prob (weighted)
    dprob = c.weighted and backward

    def local(axes, mesh, *args):
        inp, grad = args[0], (args[1] if backward else None)
        offsets = args[n_in]
        prob = args[n_in + 1] if c.weighted else None
        return _local(c, backward, target, inp, grad, offsets, prob)

    def shardings(mesh, spec, arg_shapes):
        ops = [(None, None)] * n_in + [(None,)] + ([(None,)] if c.weighted else [])
        return (None, None), ops, [(None,) * len(r.shape) for r in _result_shapes(arg_shapes)]

    def _result_shapes(arg_shapes):
        inp, offs = arg_shapes[0], arg_shapes[n_in]
        res = _results(c, inp.shape[0], inp.shape[1] // 2, offs.shape[0], backward)
        keep = (c.row, c.row, c.col, c.col, True) + ((True,) if dprob else ())
        return [jax.ShapeDtypeStruct(sh, ty) for (sh, ty), k_ in zip(res, keep) if k_]

    # One factor per dimension, each kept whole: nothing is split. The outputs' dimensions get
    # factors of their own (u0, u1, ...): no size is tied to an operand's.
    fp8 = c.fmt != _MX
    ranks = ([2, 1 if fp8 else 2] if c.row else []) + ([1, 1] if fp8 and c.col else
                                                        [2, 2] if c.col else []) + [1]
    ranks += [1] if dprob else []
    names = iter("u%d" % i for i in range(2 * len(ranks)))
    outs = [" ".join(next(names) for _ in range(r)) for r in ranks]
    ins = ["t c"] + (["t g"] if backward else []) + ["e"] + (["p"] if c.weighted else [])
    rule = ", ".join(ins) + " -> " + ", ".join(outs)
    factors = tuple(dict.fromkeys(rule.replace(",", " ").replace("->", " ").split()))
    op = _partition.partitioned(RowRule(local, rule, shardings, factors))
    # A batch of token buffers, each with its own offsets: one launch per element.
    return _partition.batched(op, lambda n, batched, *args: None)


def _call(c: _Config, backward, inp, grad, offsets, prob=None):
    """GroupedArrays; a weighted backward's (GroupedArrays, dprob in prob's shape)."""
    target = _check(c, backward, inp, grad, offsets)
    api = _api()
    api.prepare()
    grad = None if grad is None else grad.astype(jnp.bfloat16)
    args = (inp, offsets) if grad is None else (inp, grad, offsets)
    args += (prob.reshape(-1),) if c.weighted else ()
    if api._manual(args):  # inside shard_map: the device's own token buffer and offsets
        out = list(_local(c, backward, target, inp, grad, offsets,
                          args[-1] if c.weighted else None))
    else:
        out = list(_grouped_op(c, bool(backward), target)(*args))
    rq, rs = (out.pop(0), out.pop(0)) if c.row else (None, None)
    cq, cs = (out.pop(0), out.pop(0)) if c.col else (None, None)
    arrays = GroupedArrays(rq, rs, cq, cs, out.pop(0))
    if c.weighted and backward:
        # Tokens of no expert get no dp from the kernel; their gradient is 0 (as in cake.torch).
        t = inp.shape[0]
        end = jnp.minimum(t, jnp.maximum(0, jax.lax.cummax(offsets.astype(jnp.int32))))[-1]
        dprob = jnp.where(jnp.arange(t, dtype=jnp.int32) < end, out.pop(0), 0.0)
        return arrays, dprob.reshape(prob.shape)
    return arrays


def swiglu_grouped(inp, offsets, format="mxfp8", orientation="rowwise", scale_rule="exact",
                   program: Optional[str] = None, *, activation: str = "silu",
                   alpha: Optional[float] = None, limit: Optional[float] = None,
                   prob=None) -> GroupedArrays:
    """Forward: each expert's rows of Y = bf16(act(in[:, :k], in[:, k:])) quantized, O = k.

    in: bfloat16 [T, 2k], the rows grouped by expert; offsets: int32 [E] end rows on the device.
    format "mxfp8" (k a multiple of 32) or "fp8_blockwise" (k a multiple of 128); orientation
    "rowwise", "colwise" or "both" (colwise blocks run along each expert's own rows);
    scale_rule "exact" or "pow2" (FP8 blockwise). activation "silu" or "clamped" (gpt-oss, with
    alpha and limit: 1.702 and 7.0 by default), prob None or the router probabilities, float32
    [T] or [T, 1] (Y = act * prob per row), as cake_jax.swiglu_mxfp8 takes them. Not
    differentiable: swiglu_grouped_qdq() is."""
    c = _config(format, orientation, scale_rule, program, False, inp.shape[0], activation, alpha,
                limit, prob)
    return _call(c, False, inp, None, offsets, prob)


def swiglu_grouped_backward(inp, grad, offsets, format="mxfp8", orientation="rowwise",
                            scale_rule="exact", program: Optional[str] = None, *,
                            activation: str = "silu", alpha: Optional[float] = None,
                            limit: Optional[float] = None, prob=None):
    """Backward: each expert's rows of [dgate | dup] (from in and grad = dL/dY [T, k])
    quantized, O = 2k, for the forward's variant. With prob: (GroupedArrays, dprob), dprob =
    dL/dprob in prob's shape (0 for tokens of no expert)."""
    c = _config(format, orientation, scale_rule, program, True, inp.shape[0], activation, alpha,
                limit, prob)
    return _call(c, True, inp, grad, offsets, prob)


# ---- reading the outputs ---------------------------------------------------------------------
def _experts(offsets, t):
    """Per row m of T: (expert, row within it, its row count, its first row, its padded scale
    row p[e], whether the row belongs to an expert), from the spec's effective offsets (a running
    maximum clamped to [0, T])."""
    c = jnp.minimum(t, jnp.maximum(0, jax.lax.cummax(offsets.astype(jnp.int32))))
    start = jnp.concatenate([jnp.zeros((1,), jnp.int32), c[:-1]])
    n = c - start
    p = jnp.concatenate([jnp.zeros((1,), jnp.int32), jnp.cumsum((n + 127) // 128 * 128)[:-1]])
    m = jnp.arange(t, dtype=jnp.int32)
    e = jnp.minimum(jnp.searchsorted(c, m, side="right"), offsets.shape[0] - 1).astype(jnp.int32)
    return e, m - start[e], n[e], start[e], p[e], m < c[-1]


def _e8m0(s):
    e = s.astype(jnp.int32)
    return jnp.where(e == 255, jnp.nan, jnp.exp2((e - 127).astype(jnp.float32)))


def _swizzled(rows, cols, cp):
    """Byte offset of scale (rows, cols) in a swizzled 128x4 layout of cp columns."""
    return (((rows // 128) * (cp // 4) + cols // 4) * 512 + (rows % 32) * 16
            + ((rows % 128) // 32) * 4 + cols % 4)


def dequantize_grouped(g: GroupedArrays, offsets, format="mxfp8", colwise: bool = False,
                       out_cols: Optional[int] = None):
    """float32 [T, O] values of a grouped call's rowwise (or, @p colwise, colwise) outputs, in the
    logical orientation (row m, column o); rows that belong to no expert are 0. offsets: the
    call's (a device array: nothing is read on the host). out_cols: O, needed only for FP8
    blockwise colwise outputs without the rowwise ones (their col_q is flat)."""
    fmt = int(_cake.NormgateQuantFormat.parse(format))
    if (g.col_q if colwise else g.row_q) is None:
        raise ValueError("cake_jax dequantize_grouped: the call wrote no %s outputs"
                         % ("colwise" if colwise else "rowwise"))
    if g.row_q is not None:
        t, o = g.row_q.shape
    elif fmt == _MX:
        o, t = g.col_q.shape
    elif out_cols is None:
        raise ValueError("cake_jax dequantize_grouped: FP8 blockwise colwise outputs alone need "
                         "out_cols (O: k forward, 2k backward)")
    else:
        o = int(out_cols)
        t = g.col_q.shape[0] // o
    e, r, n, start, p, valid = _experts(offsets, t)
    col = jnp.arange(o, dtype=jnp.int32)[None, :]
    r2, n2, p2, s2 = r[:, None], n[:, None], p[:, None], start[:, None]
    if fmt == _MX and colwise:
        q = g.col_q.T.astype(jnp.float32)
        rp = (o + 127) // 128 * 128
        at = rp * p2 // 32 + _swizzled(col, r2 // 32, 4 * ((n2 + 127) // 128))
        scale = _e8m0(g.col_s.reshape(-1)[at])
    elif fmt == _MX:
        q = g.row_q.astype(jnp.float32)
        scale = _e8m0(g.row_s.reshape(-1)[_swizzled(p2 + r2, col // 32, g.row_s.shape[1])])
    elif colwise:
        q = g.col_q[s2 * o + col * n2 + r2].astype(jnp.float32)
        scale = g.col_s[(p2 // 128 + r2 // 128) * o + col]
    else:
        q = g.row_q.astype(jnp.float32)
        scale = g.row_s[p2 * (o // 128) + (col // 128) * n2 + r2]
    return jnp.where(valid[:, None], q * scale, 0.0)


# ---- the differentiable pairing --------------------------------------------------------------
@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _qdq(inp, offsets, prob, fwd: _Config, bwd: _Config):
    return _qdq_forward(inp, offsets, prob, fwd)


def _qdq_forward(inp, offsets, prob, fwd):
    g = _call(fwd, False, inp, None, offsets, prob)
    y = dequantize_grouped(g, offsets, _fmt_name(fwd), colwise=not fwd.row,
                           out_cols=inp.shape[1] // 2)
    return y.astype(jnp.bfloat16), g


def _fmt_name(c):
    return "mxfp8" if c.fmt == _MX else "fp8_blockwise"


def _qdq_fwd(inp, offsets, prob, fwd, bwd):
    return _qdq_forward(inp, offsets, prob, fwd), (inp, offsets, prob)


def _qdq_bwd(fwd, bwd, residuals, cotangents):
    inp, offsets, prob = residuals
    dy, _ = cotangents  # the quantized arrays carry no gradient
    out = _call(bwd, True, inp, dy.astype(jnp.bfloat16), offsets, prob)
    gb, dprob = out if prob is not None else (out, None)
    din = dequantize_grouped(gb, offsets, _fmt_name(bwd), colwise=not bwd.row,
                             out_cols=inp.shape[1])
    return din.astype(inp.dtype), np.zeros(offsets.shape, jax.dtypes.float0), dprob


_qdq.defvjp(_qdq_fwd, _qdq_bwd)


def swiglu_grouped_qdq(inp, offsets, format="mxfp8", orientation="rowwise",
                       backward_orientation="rowwise", scale_rule="exact",
                       program: Optional[str] = None, backward_program: Optional[str] = None, *,
                       activation: str = "silu", alpha: Optional[float] = None,
                       limit: Optional[float] = None, prob=None):
    """The grouped forward, differentiable (jax.custom_vjp), for FP8 training: returns (y, g),
    g the forward's GroupedArrays (for the GEMM that reads them) and y bfloat16 [T, k] their
    dequantized values (rowwise, or colwise when only colwise is asked for; rows of no expert 0).

    The gradient flows through y: the forward's quantization is taken as the identity (the
    straight-through rule of FP8 training) and d in is Cake's grouped backward of (in, dy)
    quantized as @p backward_orientation asks and dequantized: the [dgate | dup] the backward's
    FP8 GEMM reads, as bfloat16 [T, 2k] (rows of no expert 0). g carries no gradient. Under jit,
    y costs nothing when only g is used (XLA drops the dequantization). The variant
    (activation, alpha, limit, prob) as swiglu_grouped takes it; prob's cotangent is the
    backward's dprob."""
    t = inp.shape[0]
    fwd = _config(format, orientation, scale_rule, program, False, t, activation, alpha, limit,
                  prob)
    bwd = _config(format, backward_orientation, scale_rule, backward_program, True, t,
                  activation, alpha, limit, prob)
    return _qdq(inp, offsets, prob, fwd, bwd)
