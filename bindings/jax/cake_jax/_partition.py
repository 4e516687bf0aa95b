"""Partitioning (jit over a mesh) and batching (vmap) rules of Cake's custom calls.

Every Cake op works on rows: a norm-gate row is x's last dimension ([..., d]); a SwiGLU row
(MXFP8 or FP8 blockwise) is a row of in ([m, 2k]). Each op is wrapped in jax.experimental.custom_partitioning with a
Shardy rule (the mechanism JAX 0.11 gives FFI calls under plain jit): its rows may be sharded over
any mesh axes, and each device calls the kernel on its own rows; the columns must be replicated
(an operand sharded on them is resharded to replicated columns by XLA, before the call, because
the partition callback asks for it). Rules:

- norm-gate forward: x, z sharded on their leading dimensions as given; w replicated; y like x.
- norm-gate backward: dx, dz like x; dw = psum over the mesh axes that split the rows of each
  device's dw. Each device's dw is the kernel's (the deterministic package's bits are fixed by
  its rows); it is written in FP32, summed by the all-reduce in FP32, and rounded once to the
  dw dtype asked for. What stays deterministic: each device's part, and the sum for a fixed mesh
  and collective implementation (XLA's all-reduce order); a different number of row shards
  changes the summation order and so may change the last bit. Without row sharding the kernel
  writes dw in the asked dtype directly (bit for bit the unsharded call).
- SwiGLU + MXFP8 (forward and backward): rows sharded when each shard's rows are a multiple of
  128 (the scale tile), else replicated. row_q and row_s shard on rows (the swizzled layout keeps
  128-row tiles contiguous: the shards' scale bytes concatenate to the global layout). col_q, the
  transpose [O, M], shards on its second dimension. col_s: each device writes the swizzled scales
  of its own [O, M/n] block, and the global col_s is those n blocks in turn ("shard-major"), not
  the unsharded call's layout; colwise_scales_to_global() permutes it to that layout.
- SwiGLU + FP8 blockwise (forward and backward): rows as for MXFP8 (whole 128-row blocks a
  shard, else replicated). row_q and col_q as above; row_s, the MN-major storage [O/128, M],
  shards on its second dimension (M); col_s, the storage [M/128, O], is declared to the rule as
  its bytes' [M, O/128] view, so it shards on rows like row_q (the shards' 128-row blocks stay
  whole), and the op's caller gets the [M/128, O] view. Either way a device's scales are its own
  call's and the shards concatenate to the unsharded call's layout: nothing to permute.
- norm-gate forward with quantized y: the rows (q's leading dimensions: x's but the heads
  dimension) sharded as x's are, heads and columns replicated; q and y like x; FP8 blockwise
  q_scale, the storage [K/128, *rows], on its rows' dimensions (the shards make the unsharded
  layout); MXFP8's swizzled bytes with x's first dimension in whole 128-row tiles a device (the
  tiles' bytes follow the rows), else the rows are replicated.

- grouped SwiGLU (both formats, forward and backward; cake_jax._grouped): nothing split. The
  offsets index the whole token buffer and each expert's scales sit at padded offsets that
  depend on the experts before it, so no device's rows make a call of their own: every operand
  is replicated before the call (a row-sharded in is gathered) and every result is replicated.
  Expert parallelism is a shard_map over the call, each device with its own tokens and offsets.

A new op brings its rule as one RowRule (the kernel call on local operands, the Shardy string
and how its operands and results are sharded given the rows' spec).

Batching (vmap): the forward ops fold the batch into the rows (one kernel call on [B, ..., d] or
[B*m, 2k]); a batched w, and the norm-gate backward (whose dw is a per-example sum that one call
cannot give per batch element), map over the batch with lax.map instead, as do the grouped ops
(each element's offsets index its own token buffer, and its scales are laid out for its own
split).
"""

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec as P

SCALE_TILE = 128


def _axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def row_spec(sharding, ndim: int):
    """The rows' part of an operand's sharding: its leading dimensions' entries, the last one
    (the columns) replicated. None (no sharding known): replicated."""
    spec = tuple(getattr(sharding, "spec", ()) or ())
    spec = spec + (None,) * (ndim - len(spec))
    return spec[:ndim - 1] + (None,)


def row_axes(spec):
    return tuple(a for e in spec[:-1] for a in _axes(e))


def axes_size(mesh, axes) -> int:
    n = 1
    for a in axes:
        n *= mesh.shape[a]
    return n


class RowRule(NamedTuple):
    """One op's rule. local(axes, mesh, *operands) runs the kernel on one device's operands
    (axes: the mesh axes that split the rows, () when they are not split); shardings(mesh, spec,
    arg_shapes) returns (the rows' spec it settles on, operand specs, result specs) from operand
    rows_from's rows' spec; rule: the Shardy string (jax.experimental.custom_partitioning's Einsum-like
    notation), need_replication: its factors that must not be sharded (the columns)."""

    local: Callable
    rule: str
    shardings: Callable
    need_replication: tuple = ()
    sizes: tuple = ()  # (factor, size) pairs the shapes alone do not fix
    rows_from: int = 0  # the operand whose sharding decides the rows' (x, not dy, backward)


def partitioned(r: RowRule):
    """@p r as a custom_partitioning function; the rows come from operand r.rows_from's
    sharding. On one device (or fully inside shard_map) JAX inlines r.local with no axes: the
    plain call."""

    @custom_partitioning
    def op(*args):
        return r.local((), None, *args)

    def partition(mesh, arg_shapes, result_shape):
        lead = arg_shapes[r.rows_from]
        spec = row_spec(lead.sharding, len(lead.shape))
        spec, arg_specs, res_specs = r.shardings(mesh, spec, arg_shapes)
        axes = row_axes(spec)
        axes = axes if axes_size(mesh, axes) > 1 else ()

        def lower(*args):
            return r.local(axes, mesh, *args)

        def named(s):
            return NamedSharding(mesh, P(*s))

        res = tuple(named(s) for s in res_specs)
        single = not isinstance(result_shape, (tuple, list))
        return mesh, lower, res[0] if single else res, tuple(named(s) for s in arg_specs)

    op.def_partition(partition=partition, sharding_rule=r.rule,
                     need_replication_factors=r.need_replication, **dict(r.sizes))
    return op


# ---- batching ---------------------------------------------------------------------------------
def batched(fn, fold):
    """@p fn with a vmap rule (jax.custom_batching.custom_vmap): fold(axis_size, in_batched,
    *args) returns (outputs, out_batched) for a batched call, or None to map over the batch."""

    @jax.custom_batching.custom_vmap
    def op(*args):
        return fn(*args)

    @op.def_vmap
    def rule(axis_size, in_batched, *args):
        got = fold(axis_size, in_batched, *args)
        if got is not None:
            return got
        full = [a if b else jnp.broadcast_to(a, (axis_size,) + a.shape)
                for a, b in zip(args, in_batched)]
        out = jax.lax.map(lambda xs: fn(*xs), full)
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return op
