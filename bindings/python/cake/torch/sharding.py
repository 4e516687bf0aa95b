"""DTensor sharding rules of the cake:: operators (torch.distributed.tensor).

Every Cake operator works on rows: a norm-gate row is the last dimension of x ([..., d]), a
SwiGLU + MXFP8 row is a row of in ([m, 2k]). A DTensor sharded on rows therefore runs the
operator on each rank's local rows with no communication; the columns (d, 2k) and w are
replicated. The rules are registered when torch.distributed.tensor is imported (at once when it
already is, when cake.torch is imported; a program that never makes a DTensor is spared that
import), so

    x = distribute_tensor(x, mesh, [Shard(0)])            # or any leading dim of [..., d]
    w = distribute_tensor(w, mesh, [Replicate()])
    y = cake.torch.normgate(x, z, w)                      # y: Shard(0), computed locally
    y.sum().backward()                                    # w.grad: Partial(sum), see below

What each operator accepts (per mesh dimension; a 2-D mesh combines them):

- normgate_fwd:   x, z Shard(i) for a leading dim i (or Replicate), w Replicate  -> y like x.
- normgate_bwd:   dy, x, z Shard(i), w Replicate -> dx, dz Shard(i), dw Partial(sum): each rank's
                  dw is the sum over its rows (the deterministic package keeps each rank's bits
                  fixed by its rows); the engine reduces it (redistribute, full_tensor, or the
                  optimizer's first use: one all-reduce), in its collective's order and in the
                  gradient's dtype, which is w's (the operator's autograd casts dw to it). So an
                  FP32 w (master weights) has its partial sums added in FP32; for a BF16 w whose
                  partials should be added in FP32 and rounded once, accumulate into an FP32
                  Partial main_grad (below) and reduce that. Replicated rows give a Replicate dw.
- normgate_bwd_accumulate (main_grad): the buffer is written in place, so it is never
                  redistributed: with row-sharded inputs it must be a Partial(sum) DTensor (each
                  rank adds its rows' dw to its own part), with replicated inputs a Replicate
                  one. A Replicate main_grad with sharded rows makes DTensor gather the rows
                  (correct, with communication); a mixed one is refused.
- swiglu_mxfp8_fwd / _bwd: in (and grad) Shard(0) when every shard's rows are a multiple of 128
                  (the scale tile), else Replicate. Rowwise outputs: row_q Shard(0), row_s
                  Shard(0) (the swizzled layout keeps 128-row tiles contiguous, so the shards'
                  bytes concatenate to the global layout exactly). Colwise outputs: col_q
                  ([O, M], the transpose) Shard(1), exactly the global col_q. col_s Shard(0):
                  each rank writes the swizzled scales of its own [O, M/n] block, and the
                  global col_s is those n blocks one after the other ("shard-major"), not the
                  unsharded call's layout (which interleaves the shards' 512-byte tiles within
                  each 128-row tile of O). That is the layout a row-sharded MXFP8 GEMM wants
                  (each rank multiplies its own block); colwise_scales_to_global() permutes it
                  to the unsharded layout (a reshape and transpose of 512-byte tiles).
                  prob (the weighted SwiGLU's, one value a row) is placed as in, and the
                  backward's dprob as its rows.

- swiglu_fp8_fwd / _bwd: in (and grad) Shard(0), any rows for the rowwise form (row_q Shard(0),
                  row_s [O/128, M] Shard(1)); a colwise form needs every shard's rows a multiple
                  of 128 (col_q [O, M] Shard(1), col_s [M/128, O] Shard(0): the 128-row blocks
                  of the global layout in order), else Replicate. prob / dprob as for MXFP8.
- swiglu_grouped_fwd / _bwd: Replicate only (the offsets index the whole token buffer).
- normgate_fwd_quant: x, z Shard(0) when x's first dimension splits evenly into shards of whole
                  heads (MXFP8: whole 128-row scale tiles of q), w Replicate: q Shard(0), its
                  scales Shard(1) (FP8 blockwise, MN-major) or Shard(0) (MXFP8 bytes), y Shard(0).

A new operator brings its rule as one function decorated with @rule("cake::name"): it gets
the operator's arguments (DTensorSpec for tensors) and returns (outputs, inputs) placement lists
for one mesh dimension (see register_sharding).
"""

import importlib.abc
import importlib.util
import sys

import torch

from . import _schemas as S

__all__ = ["rule", "register", "registered", "colwise_scales_to_global"]

#: Filled by _load_dtensor(): DTensor's placements and registration function.
Partial = Replicate = Shard = register_sharding = None
_R = None
_RULES = {}
_REGISTERED = []
_active = False  # register() has run: a later @rule registers at once


def _load_dtensor():
    global Partial, Replicate, Shard, register_sharding, _R
    if register_sharding is None:
        from torch.distributed.tensor import Partial, Replicate, Shard  # noqa: F811
        from torch.distributed.tensor.experimental import register_sharding  # noqa: F811

        _R = Replicate()


def rule(op_name):
    """Decorator: @p fn is the sharding rule of operator @p op_name ("cake::name"); it is
    registered by register() (at once when register() has run already)."""

    def wrap(fn):
        _RULES[op_name] = fn
        if _active:
            _register_one(op_name, fn)
        return fn

    return wrap


def _overload(op_name):
    ns, name = op_name.split("::")
    packet = getattr(getattr(torch.ops, ns), name, None)
    return None if packet is None else packet.default


def _register_one(op_name, fn):
    op = _overload(op_name)
    if op is None:
        return False
    register_sharding(op)(fn)
    _REGISTERED.append(op_name)
    return True


def register():
    """Register every rule whose operator is loaded (idempotent). Imports DTensor."""
    global _active
    _load_dtensor()
    _active = True
    for name, fn in _RULES.items():
        if name not in _REGISTERED:
            _register_one(name, fn)


def registered():
    """The operators whose rules are registered."""
    return list(_REGISTERED)


_DTENSOR = "torch.distributed.tensor"


class _RegisterAfterDTensorImport(importlib.abc.MetaPathFinder):
    """Registers the rules right after torch.distributed.tensor is imported: a program makes
    DTensors only after that import, and one that never does is spared its import time."""

    def find_spec(self, name, path=None, target=None):
        if name != _DTENSOR:
            return None
        sys.meta_path.remove(self)  # the ordinary finders find the module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            register()

        spec.loader.exec_module = exec_then_register
        return spec


def _register_when_dtensor_loads():
    if not torch.distributed.is_available():
        return  # a torch without distributed support has no DTensor
    if _DTENSOR in sys.modules:
        register()
    else:
        sys.meta_path.insert(0, _RegisterAfterDTensorImport())


# ---- helpers ---------------------------------------------------------------------------------
def _row_placements(x):
    """Replicate, then Shard(i) for each leading (row) dimension of x ([..., d])."""
    return [_R] + [Shard(i) for i in range(x.ndim - 1)]


def _uniform(spec, what):
    """The one placement @p spec has on every mesh dimension (a rule here is written per mesh
    dimension, and a buffer written in place cannot be redistributed)."""
    kinds = set(spec.placements)
    if len(kinds) != 1:
        raise ValueError(f"cake: {what} has placements {tuple(spec.placements)}; Cake takes one "
                         "placement on every mesh dimension (all Partial with row-sharded inputs, "
                         "all Replicate with replicated ones)")
    return next(iter(kinds))


# ---- norm-gate -------------------------------------------------------------------------------
@rule("cake::normgate_fwd")
def _normgate_fwd(x, z, w, eps=1e-6, gate=S.GATE_SILU, gate_before_norm=False, group_size=0,
                  deterministic=True, dw_mode=S.DW_OF_W, main_grad=None, program=None):
    # main_grad is only carried to the backward: it keeps whatever placement it has.
    mg = None if main_grad is None else _uniform(main_grad, "main_grad")
    out = []
    for p in _row_placements(x):
        out.append(([p], [p, None if z is None else p, _R, None, None, None, None, None, None,
                          mg, None]))
    return out


@rule("cake::normgate_bwd")
def _normgate_bwd(dy, x, z, w, eps, gate, gate_before_norm, group_size, deterministic, dw_mode,
                  program=None):
    out = []
    for p in _row_placements(x):
        # dw sums over the rows: a partial sum per rank when the rows are split. Without z, dz
        # is an empty placeholder; a skipped dw is empty too.
        dw = _R if (p == _R or dw_mode == S.DW_SKIP) else Partial()
        zp = None if z is None else p
        out.append(([p, _R if z is None else p, dw],
                    [p, p, zp, _R, None, None, None, None, None, None, None]))
    return out


@rule("cake::normgate_bwd_accumulate")
def _normgate_bwd_accumulate(dy, x, z, w, dw, eps, gate, gate_before_norm, group_size,
                             deterministic, program=None):
    kind = _uniform(dw, "main_grad")
    if kind == _R:
        rows = [_R]  # each rank adds the whole dw: the inputs must be replicated
    elif isinstance(kind, Partial) and kind.reduce_op == "sum":
        rows = _row_placements(x)[1:]  # each rank adds its rows' part
    else:
        raise ValueError(f"cake: main_grad placement {kind}: Replicate (replicated rows) or "
                         "Partial(sum) (row-sharded inputs)")
    out = []
    for p in rows:
        zp = None if z is None else p
        out.append(([p, _R if z is None else p],
                    [p, p, zp, _R, kind, None, None, None, None, None, None]))
    return out


# ---- SwiGLU + MXFP8 --------------------------------------------------------------------------
_SCALE_TILE = 128  # rows of one swizzled scale tile (docs/spec/swiglu-mxfp8.md)


def _swiglu(inp, orientation, backward, prob=None):
    """(outputs, [in's placement, prob's]) pairs; a backward's outputs end with dprob."""
    row = bool(orientation & 1)
    col = bool(orientation & 2)
    m = inp.shape[0]
    e = _R  # the placement of an orientation's empty placeholders (and of an empty dprob)
    dp = [_R] if backward else []
    out = [([_R, _R, _R, _R] + dp, [_R, None if prob is None else _R])]
    # Every shard's rows must be whole scale tiles (checked against the whole mesh: a shard on
    # part of it then has whole tiles too). prob (and dprob) has one value a row: sharded as in.
    if m % (_SCALE_TILE * inp.mesh.size()) == 0:
        s = Shard(0)
        dp = ([e if prob is None else s] if backward else [])
        out.append(([s if row else e, s if row else e, Shard(1) if col else e, s if col else e]
                    + dp, [s, None if prob is None else s]))
    return out


def colwise_scales_to_global(col_s, o: int, m: int, shards: int):
    """The colwise scales of a call whose rows were split into @p shards equal parts, gathered
    (shard-major: each shard's swizzled [o, m/shards] block in turn), in the unsharded call's
    swizzled [o, m] layout. @p o: the colwise output's rows (k forward, 2k backward); @p m: all
    rows. A plain tensor in, a plain tensor out."""
    tile = _SCALE_TILE
    if o % tile or m % (tile * shards):
        raise ValueError(f"cake: colwise scales of o = {o}, m = {m} over {shards} shards: o and "
                         "m / shards must be multiples of 128")
    # One 512-byte tile per (128 rows of o, 4 scale columns = 128 rows of m); row tiles major.
    blocks = col_s.reshape(shards, o // tile, m // shards // tile, 512)
    return blocks.transpose(0, 1).reshape(-1)


@rule("cake::swiglu_mxfp8_fwd")
def _swiglu_fwd(inp, orientation, program=None, activation=0, alpha=S.ALPHA, limit=S.LIMIT,
                prob=None):
    return [(o, [i, None, None, None, None, None, p])
            for o, (i, p) in _swiglu(inp, orientation, False, prob)]


@rule("cake::swiglu_mxfp8_bwd")
def _swiglu_bwd(inp, grad, orientation, program=None, activation=0, alpha=S.ALPHA,
                limit=S.LIMIT, prob=None):
    return [(o, [i, i, None, None, None, None, None, p])
            for o, (i, p) in _swiglu(inp, orientation, True, prob)]


# ---- SwiGLU + FP8 blockwise ------------------------------------------------------------------
def _swiglu_fp8(inp, orientation, backward, prob=None):
    """(outputs, [in's placement, prob's]) pairs of the FP8 blockwise forms. row_q [M, O] and
    col_q [O, M] hold one value a row of in per row / column; row_s [O/128, M] (MN-major) one
    scale a row per column; col_s [ceil(M/128), O] one 128-row block per row, so a colwise form
    is sharded only where every shard's rows are whole blocks."""
    row = bool(orientation & 1)
    col = bool(orientation & 2)
    m = inp.shape[0]
    e = _R
    dp = [_R] if backward else []
    out = [([_R, _R, _R, _R] + dp, [_R, None if prob is None else _R])]
    if not col or m % (_SCALE_TILE * inp.mesh.size()) == 0:
        s = Shard(0)
        dp = ([e if prob is None else s] if backward else [])
        out.append(([s if row else e, Shard(1) if row else e, Shard(1) if col else e,
                     s if col else e] + dp, [s, None if prob is None else s]))
    return out


@rule("cake::swiglu_fp8_fwd")
def _swiglu_fp8_fwd(inp, orientation, scale_rule=0, program=None, activation=0, alpha=S.ALPHA,
                    limit=S.LIMIT, prob=None):
    return [(o, [i, None, None, None, None, None, None, p])
            for o, (i, p) in _swiglu_fp8(inp, orientation, False, prob)]


@rule("cake::swiglu_fp8_bwd")
def _swiglu_fp8_bwd(inp, grad, orientation, scale_rule=0, program=None, activation=0,
                    alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return [(o, [i, i, None, None, None, None, None, None, p])
            for o, (i, p) in _swiglu_fp8(inp, orientation, True, prob)]


# ---- grouped SwiGLU --------------------------------------------------------------------------
# The offsets index the whole token buffer (an expert's rows are a range of it), so a shard of
# the rows would misread them: the grouped operators take replicated inputs. Expert parallelism
# is the engine's own split (each rank's experts' tokens and its own offsets, plain tensors).
@rule("cake::swiglu_grouped_fwd")
def _swiglu_grouped_fwd(inp, offs, format, orientation, scale_rule=0, program=None,
                        activation=0, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return [([_R] * 5, [_R, _R, None, None, None, None, None, None, None,
                        None if prob is None else _R])]


@rule("cake::swiglu_grouped_bwd")
def _swiglu_grouped_bwd(inp, grad, offs, format, orientation, scale_rule=0, program=None,
                        activation=0, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return [([_R] * 6, [_R, _R, _R, None, None, None, None, None, None, None,
                        None if prob is None else _R])]


# ---- norm-gate with a quantized y ------------------------------------------------------------
@rule("cake::normgate_fwd_quant")
def _normgate_fwd_quant(x, z, w, format, scale_rule=0, heads=0, write_y=False, eps=1e-6,
                        program=None):
    """q [rows / heads, heads * d] holds x's rows in order (heads consecutive rows a q row), so
    x sharded on its first dimension, evenly, is q sharded on rows: its FP8 blockwise scales
    ([K/128, rows / heads], MN-major) on their columns, its MXFP8 scales (swizzled bytes, whole
    128-row tiles one after the other) on their bytes when every shard's q rows are whole
    tiles. y is placed as x."""
    args = [None, None, None, None, None, None]
    out = [([_R, _R, _R], [_R, _R, _R] + args)]
    n = x.mesh.size()
    lead = x.shape[0] if x.ndim > 1 else 0
    rows = 1
    for v in x.shape[:-1]:
        rows *= v
    h = max(1, heads)
    q_rows = rows // h if rows % h == 0 else 0
    whole = q_rows % n == 0 if format == 1 else q_rows % (_SCALE_TILE * n) == 0
    if lead and lead % n == 0 and (rows // n) % h == 0 and q_rows and whole:
        s = Shard(0)
        out.append(([s, Shard(1) if format == 1 else s, s if write_y else _R],
                    [s, s, _R] + args))
    return out


_register_when_dtensor_loads()
