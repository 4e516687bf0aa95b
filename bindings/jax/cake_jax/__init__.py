"""Cake's kernels in JAX programs, through XLA FFI custom calls (libcake_jax.so).

    import cake_jax
    y = cake_jax.normgate(x, z, w, eps=1e-6)          # jax.custom_vjp: jit, grad, shard_map
    y = cake_jax.normgate(x, z, w, gate="sigmoid", gate_before_norm=True, group_size=64)
    q = cake_jax.swiglu_mxfp8(inp, "both")            # MXFP8 row_q/row_s/col_q/col_s
    f = cake_jax.swiglu_fp8(inp, "rowwise", "pow2")   # FP8 blockwise 1x128 (Hopper GEMMs)
    g = cake_jax.swiglu_grouped(h, offs, "fp8_blockwise", "both")  # MoE: E experts, one launch
    g = cake_jax.swiglu_mxfp8_backward(inp, grad)      # the backward, quantized
    q = cake_jax.swiglu_mxfp8(inp, activation="clamped", prob=p)    # gpt-oss, router-weighted
    g, dp = cake_jax.swiglu_mxfp8_backward(inp, grad, activation="clamped", prob=p)
    y = cake_jax.swiglu_dequantized(inp, "mxfp8", prob=p)  # jax.custom_vjp: grad of inp and p
    n = cake_jax.normgate_fp8(x, z, w)                # norm-gate y as FP8 blockwise (or MXFP8)

Under jit over a mesh the ops partition on rows (cake_jax._partition: custom_partitioning with
Shardy rules); vmap folds into rows; inside shard_map they are the per-device calls. The grouped
ops (cake_jax._grouped) are replicated instead: their offsets index the whole token buffer.

Importing this module loads libcake_jax.so (the shim) and libcake.so (through the `cake`
Python package, which finds it), and registers the FFI targets for the "CUDA" platform. The
Cake handle of each local GPU is created while tracing (prepare()), never in XLA's execute
stage. The shim is looked for at $CAKE_JAX_LIBRARY, beside this package (the cake-kernels
wheel ships it there), then, only when this module runs from a source checkout, in its CMake
build (<repo>/build/bindings/jax or $CAKE_BUILD_DIR/bindings/jax). The installed jax and jaxlib
are checked against the range the shim is built for (cake_jax._jaxlib) before jax is imported.
"""

import ctypes
import functools
import os
import re
import threading
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from . import _jaxlib

if _jaxlib.problem():
    raise ImportError(_jaxlib.problem())

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import cake as _cake  # noqa: E402
import cake._lib as _cake_lib  # noqa: E402

from . import _partition  # noqa: E402
from ._partition import RowRule  # noqa: E402

__all__ = [
    "normgate",
    "normgate_forward",
    "normgate_backward",
    "swiglu_mxfp8",
    "swiglu_mxfp8_backward",
    "swiglu_fp8",
    "swiglu_fp8_backward",
    "swiglu_dequantized",
    "normgate_fp8",
    "swiglu_grouped",
    "swiglu_grouped_backward",
    "swiglu_grouped_qdq",
    "dequantize_grouped",
    "GroupedArrays",
    "MXFP8Arrays",
    "FP8BlockwiseArrays",
    "NormgateFP8Arrays",
    "dequantize_fp8_blockwise",
    "dequantize_mxfp8",
    "colwise_scales_to_global",
    "prepare",
    "has_op",
    "shim_path",
]

_HERE = Path(__file__).resolve().parent
TARGETS = {
    "cake_normgate_fwd": "cake_jax_normgate_fwd",
    "cake_normgate_bwd": "cake_jax_normgate_bwd",
    "cake_swiglu_mxfp8_fwd": "cake_jax_swiglu_mxfp8_fwd",
    "cake_swiglu_mxfp8_bwd": "cake_jax_swiglu_mxfp8_bwd",
    "cake_swiglu_fp8_fwd": "cake_jax_swiglu_fp8_fwd",
    "cake_swiglu_fp8_bwd": "cake_jax_swiglu_fp8_bwd",
    "cake_normgate_fwd_quant": "cake_jax_normgate_fwd_quant",
    "cake_swiglu_mxfp8_variant_fwd": "cake_jax_swiglu_mxfp8_variant_fwd",
    "cake_swiglu_mxfp8_variant_bwd": "cake_jax_swiglu_mxfp8_variant_bwd",
    "cake_swiglu_fp8_variant_fwd": "cake_jax_swiglu_fp8_variant_fwd",
    "cake_swiglu_fp8_variant_bwd": "cake_jax_swiglu_fp8_variant_bwd",
    "cake_swiglu_mxfp8_grouped_fwd": "cake_jax_swiglu_mxfp8_grouped_fwd",
    "cake_swiglu_mxfp8_grouped_bwd": "cake_jax_swiglu_mxfp8_grouped_bwd",
    "cake_swiglu_fp8_grouped_fwd": "cake_jax_swiglu_fp8_grouped_fwd",
    "cake_swiglu_fp8_grouped_bwd": "cake_jax_swiglu_fp8_grouped_bwd",
    "cake_swiglu_mxfp8_grouped_variant_fwd": "cake_jax_swiglu_mxfp8_grouped_variant_fwd",
    "cake_swiglu_mxfp8_grouped_variant_bwd": "cake_jax_swiglu_mxfp8_grouped_variant_bwd",
    "cake_swiglu_fp8_grouped_variant_fwd": "cake_jax_swiglu_fp8_grouped_variant_fwd",
    "cake_swiglu_fp8_grouped_variant_bwd": "cake_jax_swiglu_fp8_grouped_variant_bwd",
}
_OPS = {"normgate_fwd": 0, "normgate_bwd": 1, "swiglu_mxfp8_fwd": 2, "swiglu_mxfp8_bwd": 3,
        "swiglu_fp8_fwd": 4, "swiglu_fp8_bwd": 5, "normgate_fwd_quant": 6,
        "swiglu_mxfp8_grouped_fwd": 7, "swiglu_mxfp8_grouped_bwd": 8,
        "swiglu_fp8_grouped_fwd": 9, "swiglu_fp8_grouped_bwd": 10}


def _shim_candidates():
    env = os.environ.get("CAKE_JAX_LIBRARY")
    if env:
        return [env]
    out = [str(_HERE / "libcake_jax.so")]
    repo = _HERE.parents[2] if len(_HERE.parents) > 2 else None
    if repo is not None and (repo / "include" / "cake.h").is_file():  # a source checkout
        if os.environ.get("CAKE_BUILD_DIR"):
            out.append(str(Path(os.environ["CAKE_BUILD_DIR"]) / "bindings" / "jax" / "libcake_jax.so"))
        out.append(str(repo / "build" / "bindings" / "jax" / "libcake_jax.so"))
    return out


def _load_shim():
    _cake_lib.load()  # libcake.so.0 first: the shim's dependency then resolves to it by soname
    errors = []
    for cand in _shim_candidates():
        if not os.path.exists(cand):
            errors.append(f"{cand}: no such file")
            continue
        try:
            return cand, ctypes.CDLL(cand)
        except OSError as e:
            errors.append(f"{cand}: {e}")
    raise _cake.LibraryNotFoundError(
        "libcake_jax.so not found: " + "; ".join(errors) + ". Install the cake-kernels wheel "
        "(it ships the shim beside this package), set CAKE_JAX_LIBRARY, or build this checkout "
        "with the XLA FFI headers (cmake -DCAKE_BUILD_JAX_SHIM=ON; see bindings/jax/README.md).")


_SHIM_PATH, _shim = _load_shim()
_shim.cake_jax_prepare.argtypes = [ctypes.c_int]
_shim.cake_jax_prepare.restype = ctypes.c_int
_shim.cake_jax_has_op.argtypes = [ctypes.c_int]
_shim.cake_jax_has_op.restype = ctypes.c_int
_shim.cake_jax_normgate_workspace_size.argtypes = [
    ctypes.c_int, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32,
    ctypes.POINTER(ctypes.c_size_t)]
_shim.cake_jax_normgate_workspace_size.restype = ctypes.c_int

for _name, _symbol in TARGETS.items():
    if hasattr(_shim, _symbol):  # a shim from before an op has no handler for it (has_op: False)
        jax.ffi.register_ffi_target(_name, jax.ffi.pycapsule(getattr(_shim, _symbol)),
                                    platform="CUDA")


def shim_path() -> str:
    """Path of the loaded libcake_jax.so."""
    return _SHIM_PATH


def has_op(op: str) -> bool:
    """Whether the loaded libcake.so has the op ("normgate_fwd", "normgate_bwd",
    "swiglu_mxfp8_fwd", "swiglu_mxfp8_bwd", "swiglu_fp8_fwd", "swiglu_fp8_bwd",
    "normgate_fwd_quant", "swiglu_mxfp8_grouped_fwd", "swiglu_mxfp8_grouped_bwd",
    "swiglu_fp8_grouped_fwd", "swiglu_fp8_grouped_bwd"). A shim older than an op answers
    False."""
    return bool(_shim.cake_jax_has_op(_OPS[op]))


_prepared = set()
_prepare_lock = threading.Lock()


def prepare(devices=None) -> None:
    """Create the Cake handle of each local GPU (or of @p devices) once per process.

    The wrappers below call it while tracing; call it yourself before running a computation
    that was traced in another process (an exported or deserialized executable)."""
    if devices is None:
        devices = [d for d in jax.local_devices() if d.platform == "gpu"]
    for d in devices:
        ordinal = int(getattr(d, "local_hardware_id", None) if not isinstance(d, int) else d)
        if ordinal in _prepared:
            continue
        with _prepare_lock:
            if ordinal in _prepared:
                continue
            _check(_shim.cake_jax_prepare(ordinal), "cake_jax_prepare")
            _prepared.add(ordinal)


def _check(status: int, function: str) -> None:
    if status != 0:
        lib = _cake_lib.load()
        from cake.errors import error_for

        raise error_for(status, lib.status_name(status), lib.message(), function)


# ---- manual axes (inside jax.shard_map with check_vma) ---------------------------------------
def _varying(a) -> frozenset:
    t = jax.typeof(a)
    mat = getattr(t, "mat", None)  # jax >= 0.11: ManualAxisType
    if mat is not None:
        return frozenset(mat.varying)
    return frozenset(getattr(t, "vma", frozenset()))  # jax 0.7 .. 0.10


def _match_varying(args):
    """Make all operands vary over the same manual mesh axes (an FFI call requires it), and
    return them with that set: a replicated w next to row-sharded x becomes varying."""
    union = frozenset().union(*(_varying(a) for a in args))
    if not union:
        return list(args), union
    out = []
    for a in args:
        missing = tuple(union - _varying(a))
        if missing:
            a = (jax.lax.pcast(a, missing, to="varying") if hasattr(jax.lax, "pcast")
                 else jax.lax.pvary(a, missing))
        out.append(a)
    return out, union


def _result(shape, dtype, varying, like):
    if not varying:
        return jax.ShapeDtypeStruct(shape, dtype)
    mat_type = getattr(jax.sharding, "ManualAxisType", None)
    if mat_type is None:  # jax 0.7 .. 0.10
        return jax.ShapeDtypeStruct(shape, dtype, vma=varying)
    # A manual-axes type needs the (abstract) mesh it refers to: the operands'.
    mesh = jax.typeof(like).sharding.mesh
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding,
                                manual_axis_type=mat_type(varying=varying))


def _ffi(target, results, args, **attrs):
    """jax.ffi.ffi_call of @p target; @p results is a tuple of (shape, dtype). vmap reaches it
    only inside shard_map (elsewhere the ops' own vmap rules, cake_jax._partition, come first)."""
    args, varying = _match_varying(args)
    specs = tuple(_result(shape, dtype, varying, args[0]) for shape, dtype in results)
    call = jax.ffi.ffi_call(target, specs, vmap_method="sequential")
    return call(*args, **attrs)


# ---- norm-gate -------------------------------------------------------------------------------
_FLOATS = {jnp.dtype(jnp.bfloat16): _cake.DType.BF16, jnp.dtype(jnp.float16): _cake.DType.F16,
           jnp.dtype(jnp.float32): _cake.DType.F32}
#: The shim reads the variant attributes (gate, gate_before_norm, group_size) and takes F16 / F32
#: operands; a shim built before them takes BF16 and eps / program / package only.
_SHIM_VARIANTS = hasattr(_shim, "cake_jax_normgate_variants")
#: libcake.so's descriptor has the 0.3 variant fields (an older library would ignore them).
_LIB_VARIANTS = (ctypes.sizeof(_cake_lib.NormgateDesc)
                 <= _cake.normgate_desc(rows=1, d=8).struct_size)
if _SHIM_VARIANTS:
    _shim.cake_jax_normgate_workspace_size_ex.argtypes = (
        [ctypes.c_int, ctypes.c_int64] + [ctypes.c_int32] * 9 + [ctypes.POINTER(ctypes.c_size_t)])
    _shim.cake_jax_normgate_workspace_size_ex.restype = ctypes.c_int


class _Variant(NamedTuple):
    """The static options of a norm-gate call (hashable: custom_vjp's nondiff arguments)."""

    eps: float
    gate: int  # cake.NormgateGate
    gate_before_norm: bool
    group_size: int  # 0: the whole row
    program: Optional[str]

    def attrs(self, **extra):
        out = {"eps": np.float32(self.eps), "program": self.program or "", **extra}
        if self.is_default():
            if not _SHIM_VARIANTS:
                return out  # exactly what a shim of the first handlers decodes
        elif not (_SHIM_VARIANTS and _LIB_VARIANTS):
            what = "libcake_jax.so" if not _SHIM_VARIANTS else "libcake.so"
            raise _cake.UnavailableError("cake_normgate_desc_init", what,
                                         "the normgate gate / placement / group_size options")
        out.update(gate=np.int32(self.gate), gate_before_norm=np.int32(self.gate_before_norm),
                   group_size=np.int32(self.group_size))
        return out

    def is_default(self) -> bool:
        return (self.gate == _cake.NormgateGate.SILU and not self.gate_before_norm
                and self.group_size == 0)


def _variant(eps, gate, gate_before_norm, group_size, program, z) -> _Variant:
    g = _cake.NormgateGate.NONE if z is None else _cake.NormgateGate.parse(gate)
    if g == _cake.NormgateGate.NONE and z is not None:
        raise ValueError("cake_jax normgate: gate 'none' takes z=None")
    if not isinstance(gate_before_norm, (bool, np.bool_)):
        raise TypeError(f"cake_jax normgate: gate_before_norm {gate_before_norm!r}: True or False")
    group = 0 if group_size is None else int(group_size)
    return _Variant(float(eps), int(g), bool(gate_before_norm), group, program)


def _check_normgate(x, z, w, v: "_Variant"):
    if x.ndim < 1 or (z is not None and x.shape != z.shape) or w.shape != (x.shape[-1],):
        raise ValueError(f"cake_jax normgate: x {x.shape}, z {None if z is None else z.shape} "
                         f"must be one shape [..., d] and w {w.shape} must be [d]")
    d = x.shape[-1]
    from cake.errors import Status

    # The library's rules, at trace time with its words (not an XLA error at run time).
    if d < 8 or d > 8192 or d % 8:
        raise _library_error(Status.UNSUPPORTED_SHAPE, f"desc->d = {d}: Cake serves multiples "
                             "of 8 from 8 to 8192 (tuned: 64, 128, 256)")
    if not (np.isfinite(v.eps) and v.eps >= 0):
        raise _library_error(Status.INVALID_ARGUMENT,
                             f"desc->eps = {v.eps:g}: must be finite and >= 0")
    if v.group_size < 0:
        raise _library_error(Status.INVALID_ARGUMENT, f"desc->group_size = {v.group_size}: must "
                             "be >= 0 (0: the whole row)")
    if v.group_size and (v.group_size % 8 or d % v.group_size):
        raise _library_error(Status.UNSUPPORTED_SHAPE,
                             f"desc->group_size = {v.group_size}: must be 0 (the whole row) or a "
                             f"multiple of 8 that divides d = {d}")
    for name, t in (("x", x), ("z", z), ("w", w)):
        if t is None:
            continue
        if jnp.dtype(t.dtype) not in _FLOATS:
            raise TypeError(f"cake_jax normgate: {name} is {t.dtype}; Cake takes bfloat16, "
                            "float16 or float32")
        legacy = not (_SHIM_VARIANTS and _LIB_VARIANTS)
        if legacy and name != "w" and jnp.dtype(t.dtype) != jnp.dtype(jnp.bfloat16):
            raise TypeError(f"cake_jax normgate: {name} is {t.dtype}; this libcake takes "
                            "bfloat16 only (float16 / float32 need libcake 0.3)")


def _w_for_kernel(w):
    # A library without the dtype fields takes a BF16 w (an FP32 master weight is cast).
    if _SHIM_VARIANTS and _LIB_VARIANTS:
        return w
    return w.astype(jnp.bfloat16)


def _z_operand(x, z):
    # Without a gate the shim ignores z; an empty array stands in for it.
    return jnp.zeros((0,), x.dtype) if z is None else z


def normgate_forward(x, z, w, eps: float = 1e-6, program: Optional[str] = None, *,
                     gate="silu", gate_before_norm: bool = False, group_size=None):
    """y = rmsnorm_G(x) * w * a(z) (gate_before_norm False) or rmsnorm_G(x * a(z)) * w, in x's
    dtype; a = silu or sigmoid (@p gate); z None: no gate. No autodiff: see normgate()."""
    v = _variant(eps, gate, gate_before_norm, group_size, program, z)
    return _forward(x, z, w, v)


def _forward(x, z, w, v: _Variant):
    _check_normgate(x, z, w, v)
    prepare()
    args = (x, w) if z is None else (x, z, w)
    if _manual(args):  # inside shard_map: the operands are already one device's
        return _forward_local(x, z, w, v)
    return _normgate_fwd_op(v, z is not None)(*args)


def _forward_local(x, z, w, v):
    (y,) = _ffi("cake_normgate_fwd", ((x.shape, x.dtype),),
                (x, _z_operand(x, z), _w_for_kernel(w)), **v.attrs())
    return y


def _manual(args) -> bool:
    return any(_varying(a) for a in args)


@functools.lru_cache(maxsize=None)
def _normgate_fwd_op(v, has_z):
    def local(axes, mesh, x, *rest):
        z, w = rest if has_z else (None, rest[0])
        return _forward_local(x, z, w, v)

    def shardings(mesh, spec, arg_shapes):
        return spec, [spec] * (2 if has_z else 1) + [(None,)], [spec]

    rule = RowRule(local, "... d, ... d, d -> ... d" if has_z else "... d, d -> ... d",
                   shardings, ("d",))
    op = _partition.partitioned(rule)

    def fold(n, batched, *args):
        if batched[-1]:
            return None  # a w per batch element: one call cannot take it
        rows = [a if b else jnp.broadcast_to(a, (n,) + a.shape)
                for a, b in zip(args[:-1], batched[:-1])]
        return op(*rows, args[-1]), True

    return _partition.batched(op, fold)


def normgate_backward(dy, x, z, w, eps: float = 1e-6, deterministic: bool = True,
                      dw_dtype=jnp.bfloat16, program: Optional[str] = None, *, gate="silu",
                      gate_before_norm: bool = False, group_size=None):
    """(dx, dz, dw) of the norm-gate: dx in x's dtype, dz in z's (None when z is None), dw in
    @p dw_dtype (bfloat16, float16 or float32)."""
    v = _variant(eps, gate, gate_before_norm, group_size, program, z)
    return _backward(dy, x, z, w, v, deterministic, dw_dtype)


def _backward(dy, x, z, w, v: _Variant, deterministic, dw_dtype):
    _check_normgate(x, z, w, v)
    dw_dtype = jnp.dtype(dw_dtype)
    allowed = tuple(_FLOATS) if (_SHIM_VARIANTS and _LIB_VARIANTS) else (
        jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float32))
    if dw_dtype not in allowed:
        raise TypeError(f"cake_jax normgate: dw_dtype {dw_dtype}: "
                        + ", ".join(str(t) for t in allowed))
    prepare()
    package = int(_cake.NormgatePackage.DETERMINISTIC if deterministic
                  else _cake.NormgatePackage.NONDETERMINISTIC)
    dy = dy.astype(x.dtype)
    args = (dy, x, w) if z is None else (dy, x, z, w)
    if _manual(args):  # inside shard_map: the operands are already one device's
        return _backward_local(dy, x, z, w, v, package, dw_dtype, dw_dtype)
    out = _normgate_bwd_op(v, z is not None, package, dw_dtype.name)(*args)
    dx, dz, dw = out if z is not None else (out[0], None, out[1])
    return dx, dz, dw


def _backward_local(dy, x, z, w, v, package, dw_dtype, kernel_dw_dtype):
    d = x.shape[-1]
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    zop = _z_operand(x, z)
    ws = _workspace_bytes(rows, d, package, kernel_dw_dtype, v, x.dtype, zop.dtype, w.dtype)
    dz_shape = (0,) if z is None else z.shape
    dx, dz, dw, _ = _ffi("cake_normgate_bwd",
                         ((x.shape, x.dtype), (dz_shape, zop.dtype), ((d,), kernel_dw_dtype),
                          ((ws,), jnp.uint8)),
                         (dy, x, zop, _w_for_kernel(w)),
                         **v.attrs(package=np.int32(package)))
    # Inside shard_map, a w replicated over axes the rows are split over gets the sum of the
    # shards' gradients (what the transpose of its implicit broadcast would give).
    operands = (dy, x) if z is None else (dy, x, z)
    summed = tuple(frozenset().union(*(_varying(a) for a in operands)) - _varying(w))
    if summed:
        dw = jax.lax.psum(dw.astype(jnp.float32), summed).astype(dw_dtype)
    return dx, (None if z is None else dz), dw


@functools.lru_cache(maxsize=None)
def _normgate_bwd_op(v, has_z, package, dw_name):
    dw_dtype = jnp.dtype(dw_name)

    def local(axes, mesh, dy, x, *rest):
        z, w = rest if has_z else (None, rest[0])
        # Split rows: each device's dw in FP32, summed in FP32 over the row axes, rounded once.
        kernel_dw = jnp.dtype(jnp.float32) if axes else dw_dtype
        dx, dz, dw = _backward_local(dy, x, z, w, v, package, dw_dtype, kernel_dw)
        if axes:
            dw = jax.lax.psum(dw.astype(jnp.float32), axes).astype(dw_dtype)
        return (dx, dz, dw) if has_z else (dx, dw)

    def shardings(mesh, spec, arg_shapes):
        n = 3 if has_z else 2
        return spec, [spec] * n + [(None,)], [spec] * (n - 1) + [(None,)]

    rule = ("... d, ... d, ... d, d -> ... d, ... d, d" if has_z
            else "... d, ... d, d -> ... d, d")
    # The rows follow x (the forward's input, saved), whatever sharding dy arrives with.
    op = _partition.partitioned(RowRule(local, rule, shardings, ("d",), rows_from=1))
    # Under vmap each batch element has its own dw: mapped over the batch (fold returns None).
    return _partition.batched(op, lambda n, batched, *args: None)


def _workspace_bytes(rows, d, package, dw_dtype, v, x_dtype, z_dtype, w_dtype) -> int:
    """Bytes of norm-gate backward workspace: the most any prepared device needs."""
    if rows == 0:
        return 0
    n = ctypes.c_size_t(0)
    most = 0
    for ordinal in sorted(_prepared):
        if _SHIM_VARIANTS:
            dt = [int(_FLOATS[jnp.dtype(t)]) for t in (dw_dtype, x_dtype, z_dtype, w_dtype)]
            if not _LIB_VARIANTS:
                dt[3] = int(_cake.DType.BF16)  # w is cast for such a library
            status = _shim.cake_jax_normgate_workspace_size_ex(
                ordinal, rows, d, package, dt[0], v.gate, int(v.gate_before_norm), v.group_size,
                dt[1], dt[2], dt[3], ctypes.byref(n))
        else:
            status = _shim.cake_jax_normgate_workspace_size(
                ordinal, rows, d, package, int(jnp.dtype(dw_dtype) == jnp.float32),
                ctypes.byref(n))
        _check(status, "cake_normgate_workspace_size")
        most = max(most, n.value)
    return most


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def _normgate(x, z, w, variant, deterministic, dw_dtype):
    return _forward(x, z, w, variant)


def _normgate_fwd(x, z, w, variant, deterministic, dw_dtype):
    # Only the inputs are kept: the backward recomputes rstd and the gate from x and z.
    return _forward(x, z, w, variant), (x, z, w)


def _normgate_bwd(variant, deterministic, dw_dtype, residuals, dy):
    x, z, w = residuals
    dw_dtype = w.dtype if dw_dtype is None else dw_dtype
    dx, dz, dw = _backward(dy, x, z, w, variant, deterministic, dw_dtype)
    return dx, dz, dw.astype(w.dtype)


_normgate.defvjp(_normgate_fwd, _normgate_bwd)


def normgate(x, z, w, eps: float = 1e-6, *, gate="silu", gate_before_norm: bool = False,
             group_size=None, deterministic: bool = True, dw_dtype=None,
             program: Optional[str] = None):
    """The gated RMSNorm over rows of width d = x.shape[-1], differentiable (jax.custom_vjp):

        gate_before_norm False: y = rmsnorm_G(x) * w * a(z)
        gate_before_norm True:  y = rmsnorm_G(x * a(z)) * w

    a = silu (gate "silu" / "swish") or sigmoid ("sigmoid"); z None: no gate. G = group_size
    columns per mean square (None or d: the whole row). x, z: bfloat16, float16 or float32
    [..., d] (they may differ); w: [d] of any of them; y in x's dtype, FP32 inside, one
    rounding. dw_dtype: the dw the kernel writes (None: w's dtype); the gradient comes back in
    w's dtype. deterministic picks the package. The defaults are Cake 0.2's op (with a
    bfloat16 x and z, and a libcake older than 0.3, w is cast to bfloat16 as before)."""
    v = _variant(eps, gate, gate_before_norm, group_size, program, z)
    dw = None if dw_dtype is None else jnp.dtype(dw_dtype).name
    return _normgate(x, z, w, v, bool(deterministic), dw)


# ---- SwiGLU + MXFP8 and SwiGLU + FP8 blockwise -------------------------------------------------
class MXFP8Arrays(NamedTuple):
    """row_q E4M3 [m, O], row_s uint8 swizzled scales, col_q E4M3 [O, m], col_s; None when that
    orientation was not asked for. O = k forward, 2k backward."""

    row_q: Optional[jax.Array]
    row_s: Optional[jax.Array]
    col_q: Optional[jax.Array]
    col_s: Optional[jax.Array]


class FP8BlockwiseArrays(NamedTuple):
    """FP8 blockwise 1x128 (docs/spec/fp8-blockwise.md): row_q E4M3 [m, O]; row_s float32
    [O/128, m], the MN-major storage of the logical [m, O/128] scales (row_s.T is what
    F.scaled_mm's BlockWise1x128 scale_a holds); col_q E4M3 [O, m] (the transpose); col_s
    float32 [m/128, O], col_s.T the logical [O, m/128]. None when that orientation was not asked
    for. O = k forward, 2k backward."""

    row_q: Optional[jax.Array]
    row_s: Optional[jax.Array]
    col_q: Optional[jax.Array]
    col_s: Optional[jax.Array]


def _library_error(status, message):
    from cake.errors import Status, error_for

    return error_for(status, "CAKE_STATUS_" + Status(status).name, message)


class _SwigluFamily(NamedTuple):
    """What the SwiGLU ops of one quantized format differ in: the FFI targets, what m and k are
    multiples of and why (the library's words), the scales' results and how they shard, fold under
    vmap and read in the Shardy rule."""

    name: str
    targets: tuple  # (forward, backward)
    multiple: int  # m and k are multiples of it
    why_multiple: str
    arrays: type
    scale_results: Callable  # (m, o, row, col) -> (row_s (shape, dtype), col_s (shape, dtype))
    scale_specs: Callable  # (rows spec entry, row, col) -> (row_s spec, col_s spec)
    scale_factors: Callable  # (row, col) -> (row_s factors, col_s factors, rows factors of in)
    scale_sizes: Callable  # (m, o) -> (factor, size) pairs the shapes alone do not fix
    unfold_scales: Callable  # (row_s, col_s, n, m, o) -> per-batch-element row_s, col_s
    public_scales: Callable  # (row_s, col_s) of the op -> those the caller gets
    variant_targets: tuple = ()  # (forward, backward) with the variant's operands and attributes

    def target(self, backward, variant=False):
        return (self.variant_targets if variant else self.targets)[1 if backward else 0]


def _mxfp8_scale_results(m, o, row, col):
    sizes = _cake.swiglu_mxfp8_expected_sizes(m, o, False)  # O = k forward sizes of [m, o]
    return (((sizes.row_s_bytes if row else 0,), jnp.uint8),
            ((sizes.col_s_bytes if col else 0,), jnp.uint8))


def _mxfp8_unfold(rs, cs, n, m, o):
    t = _partition.SCALE_TILE
    rs = None if rs is None else rs.reshape(n, -1)
    cs = None if cs is None else cs.reshape(o // t, n, m // t, 512).transpose(1, 0, 2, 3).reshape(n, -1)
    return rs, cs


_MXFP8 = _SwigluFamily(
    "swiglu_mxfp8", ("cake_swiglu_mxfp8_fwd", "cake_swiglu_mxfp8_bwd"),
    32, "the 32-value MXFP8 scale block", MXFP8Arrays, _mxfp8_scale_results,
    # The scale bytes are m-major runs (row_s: C' bytes per row; col_s shard-major: its blocks
    # follow the rows).
    lambda rows, row, col: ((rows,), (rows,)),
    lambda row, col: ("(m r)", "(m s)", "m"),
    lambda m, o: (("r", _cake.swiglu_mxfp8_expected_sizes(m, o, False).row_s_bytes // m),
                  ("s", _cake.swiglu_mxfp8_expected_sizes(m, o, False).col_s_bytes // m)),
    _mxfp8_unfold, lambda rs, cs: (rs, cs),
    ("cake_swiglu_mxfp8_variant_fwd", "cake_swiglu_mxfp8_variant_bwd"))


def _fp8_scale_results(m, o, row, col):
    # col_s as the kernel writes it, [m/128, O] row-major, is declared [m, O/128] (the same
    # bytes): its rows then follow in's, so a row shard's scales are its own call's (128-row
    # blocks stay whole). _fp8_scales() gives the [m/128, O] view.
    t = _partition.SCALE_TILE
    return (((o // t, m) if row else (0,), jnp.float32), ((m, o // t) if col else (0,), jnp.float32))


def _fp8_scales(rs, cs):
    """col_s from the op's [m, O/128] declaration to its MN-major storage [m/128, O]."""
    if cs is None:
        return rs, cs
    m, ob = cs.shape
    t = _partition.SCALE_TILE
    spec = getattr(getattr(jax.typeof(cs), "sharding", None), "spec", None)
    mesh = getattr(getattr(jax.typeof(cs), "sharding", None), "mesh", None)
    if spec is not None and mesh is not None and not mesh.empty and any(
            t_ == jax.sharding.AxisType.Explicit for t_ in mesh.axis_types):
        return rs, jax.lax.reshape(cs, (m // t, ob * t),
                                   out_sharding=jax.sharding.NamedSharding(
                                       mesh, jax.sharding.PartitionSpec(spec[0], None)))
    return rs, cs.reshape(m // t, ob * t)


def _fp8_unfold(rs, cs, n, m, o):
    t = _partition.SCALE_TILE
    rs = None if rs is None else rs.reshape(o // t, n, m).transpose(1, 0, 2)
    cs = None if cs is None else cs.reshape(n, m, o // t)
    return rs, cs


_FP8 = _SwigluFamily(
    "swiglu_fp8", ("cake_swiglu_fp8_fwd", "cake_swiglu_fp8_bwd"), 128, "the 1x128 scale block",
    FP8BlockwiseArrays, _fp8_scale_results,
    # row_s [O/128, m] shards on m (its second dimension), col_s [m/128, O] on its 128-row
    # blocks: each device's scales are its own call's, and they concatenate to the global
    # MN-major layout (the strides m and O of one call).
    lambda rows, row, col: ((None, rows), (rows, None)),
    lambda row, col: ("b m", "m s", "m"),
    lambda m, o: (),
    _fp8_unfold, _fp8_scales, ("cake_swiglu_fp8_variant_fwd", "cake_swiglu_fp8_variant_bwd"))


def _swiglu_results(fam, m, k, orient, backward):
    o = 2 * k if backward else k
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    e4m3 = jnp.float8_e4m3fn
    rs, cs = fam.scale_results(m, o, row, col)
    return (((m, o) if row else (0,), e4m3), rs, ((o, m) if col else (0,), e4m3), cs), row, col


def _check_swiglu(fam, inp, grad):
    if inp.ndim != 2 or inp.shape[1] % 2 or inp.dtype != jnp.bfloat16:
        raise ValueError(f"cake_jax {fam.name}: in {inp.shape} {inp.dtype} must be bfloat16 "
                         "[m, 2k]")
    m, k = inp.shape[0], inp.shape[1] // 2
    if grad is not None and tuple(grad.shape) != (m, k):
        raise ValueError(f"cake_jax {fam.name} backward: grad {grad.shape} must be [m, k] = "
                         f"[{m}, {k}]")
    from cake.errors import Status

    if m <= 0 or k <= 0:
        raise _library_error(Status.INVALID_ARGUMENT,
                             f"desc->m = {m}, desc->k = {k}: both must be > 0")
    if m % fam.multiple or k % fam.multiple:
        raise _library_error(Status.UNSUPPORTED_SHAPE,
                             f"desc->m = {m}, desc->k = {k}: both must be multiples of "
                             f"{fam.multiple} ({fam.why_multiple})")


def _swiglu_local(fam, backward, orient, attrs, weighted, inp, *rest):
    """One call on one device's operands: in, then grad (backward), then prob (weighted); the
    outputs asked for, then a weighted backward's dprob."""
    m, k = inp.shape[0], inp.shape[1] // 2
    results, row, col = _swiglu_results(fam, m, k, orient, backward)
    keep = (row, row, col, col)
    if weighted and backward:
        results, keep = results + (((m,), jnp.float32),), keep + (True,)
    variant = any(name == "activation" for name, _ in attrs)
    out = _ffi(fam.target(backward, variant), results, (inp,) + rest, orientation=np.int32(
        int(orient)), **dict(attrs))
    return tuple(o for o, k_ in zip(out, keep) if k_)


@functools.lru_cache(maxsize=None)
def _swiglu_op(fam, backward, orient, attrs, sizes, weighted=False):
    """The partitioned, batched op of one family, direction, orientation and attributes
    (((name, value), ...): program, scale rule, the variant's); sizes: the Shardy rule's factor
    sizes; weighted: prob is the last operand (one value a row, sharded as in) and a backward's
    last result dprob (likewise)."""
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    dprob = weighted and backward

    def local(axes, mesh, inp, *rest):
        return _swiglu_local(fam, backward, orient, attrs, weighted, inp, *rest)

    def shardings(mesh, spec, arg_shapes):
        m = arg_shapes[0].shape[0]
        rows = spec[0]
        if m % (_partition.SCALE_TILE * _partition.axes_size(mesh, _partition._axes(rows))):
            rows = None  # a shard would hold part of a 128-row scale tile: rows replicated
        spec = (rows, None)
        rs, cs = fam.scale_specs(rows, row, col)
        res = ([(rows, None), rs] if row else []) + ([(None, rows), cs] if col else [])
        args = [spec] * (2 if backward else 1) + ([(rows,)] if weighted else [])
        return spec, args, res + ([(rows,)] if dprob else [])

    # Factors: the rows of in, c its columns, g grad's, o the output's columns.
    rs, cs, m_f = fam.scale_factors(row, col)
    outs = ([f"{m_f} o", rs] if row else []) + ([f"o {m_f}", cs] if col else [])
    outs += [m_f] if dprob else []
    ins = (f"{m_f} c, {m_f} g" if backward else f"{m_f} c") + (f", {m_f}" if weighted else "")
    rule = ins + " -> " + ", ".join(outs)
    # Sizes are given for the factors that appear only inside compound dimensions (JAX's rule).
    whole = set(re.sub(r"\([^)]*\)", " ", rule.replace(",", " ").replace("->", " ")).split())
    compound = set(" ".join(re.findall(r"\(([^)]*)\)", rule)).split())
    factor_sizes = tuple((f, n) for f, n in sizes if f in compound and f not in whole)
    # Columns stay whole (the scale blocks' factors too); the list in the rule's factor order.
    keep = {"c", "o", "b", "s"} | ({"g"} if backward else set())
    order = list(dict.fromkeys(re.findall(r"[a-z]+", rule)))
    keep = tuple(f for f in order if f in keep)
    r = RowRule(local, rule, shardings, keep, factor_sizes)
    op = _partition.partitioned(r)

    def fold(n, batched, *args):
        # The batch folded into the rows: one call on [n*m, 2k]; the outputs unfolded (the
        # colwise ones are the transpose).
        full = [a if b else jnp.broadcast_to(a, (n,) + a.shape) for a, b in zip(args, batched)]
        m = full[0].shape[1]
        flat = [a.reshape((n * m,) + a.shape[2:]) for a in full]
        o = flat[0].shape[1] // 2 * (2 if backward else 1)
        out = list(_swiglu_op(fam, backward, orient, attrs,
                              tuple(fam.scale_sizes(n * m, o)), weighted)(*flat))
        rq, rs = (out.pop(0), out.pop(0)) if row else (None, None)
        cq, cs = (out.pop(0), out.pop(0)) if col else (None, None)
        rs, cs = fam.unfold_scales(rs, cs, n, m, o)
        res = ([rq.reshape(n, m, -1), rs] if row else [])
        res += ([cq.reshape(o, n, m).transpose(1, 0, 2), cs] if col else [])
        res += [out.pop(0).reshape(n, m)] if dprob else []
        return tuple(res), tuple(True for _ in res)

    return _partition.batched(op, fold)


#: cake_swiglu_activation_t
_ACTIVATIONS = {"silu": 0, "clamped": 1}
#: The clamped activation's defaults (gpt-oss's; swiglu_variant_defaults in libcake).
SWIGLU_ALPHA, SWIGLU_LIMIT = 1.702, 7.0
#: The shim has the variant handlers; libcake.so's SwiGLU descriptors end with the variant.
_SHIM_SWIGLU_VARIANTS = hasattr(_shim, "cake_jax_swiglu_variants")


def _lib_swiglu_variants() -> bool:
    return ctypes.sizeof(_cake_lib.SwigluMxfp8Desc) <= _cake.swiglu_mxfp8_desc(32, 32).struct_size


def _f32(v) -> float:
    return ctypes.c_float(v).value  # the descriptor's float (a double beyond it: +-inf)


def _variant_attrs(fam, backward, inp, activation, alpha, limit, prob):
    """The variant's attributes (empty for the plain SwiGLU) after the trace-time checks, with
    Cake's words: the activation's name, prob float32 [m] or [m, 1], the library's rules on
    alpha and limit, and a shim and libcake.so that have the variants."""
    op = fam.name + (" backward" if backward else "")
    if activation == "silu" and prob is None:
        return ()
    act = _ACTIVATIONS.get(activation) if isinstance(activation, str) else None
    if act is None:
        raise ValueError(f"cake_jax {op}: activation {activation!r}: 'silu' or 'clamped'")
    if prob is not None:
        m = inp.shape[0]
        if tuple(prob.shape) not in ((m,), (m, 1)) or prob.dtype != jnp.float32:
            raise ValueError(f"cake_jax {op}: prob {tuple(prob.shape)} {prob.dtype} must be "
                             f"float32 [m] or [m, 1] with m = {m}")
    from cake.errors import Status

    a, lim = _f32(alpha), _f32(limit)
    if act == 1 and not lim > 0.0:
        raise _library_error(Status.INVALID_ARGUMENT, f"desc->variant.limit = {lim:g}: the "
                             "clamped activation needs a limit > 0 (not NaN)")
    if act == 1 and not np.isfinite(a):
        raise _library_error(Status.INVALID_ARGUMENT, f"desc->variant.alpha = {a:g}: the "
                             "clamped activation needs a finite alpha")
    if not (_SHIM_SWIGLU_VARIANTS and _lib_swiglu_variants()):
        raise NotImplementedError(f"cake_jax {op}: the SwiGLU variants need a libcake_jax.so "
                                  "and a libcake.so built with them (Cake 0.4)")
    return (("activation", np.int32(act)), ("alpha", np.float32(a)), ("limit", np.float32(lim)))


def _swiglu(fam, backward, inp, grad, orientation, program, activation="silu",
            alpha=SWIGLU_ALPHA, limit=SWIGLU_LIMIT, prob=None, **attrs):
    _check_swiglu(fam, inp, grad)
    variant = _variant_attrs(fam, backward, inp, activation, alpha, limit, prob)
    orient = _cake.Orientation.parse(orientation)
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    prepare()
    grad = None if grad is None else grad.astype(jnp.bfloat16)
    attrs = tuple(sorted(dict(attrs, program=program or "", **dict(variant)).items()))
    weighted = prob is not None
    args = (inp,) if grad is None else (inp, grad)
    args += (prob.reshape(-1),) if weighted else ()
    if _manual(args):
        out = list(_swiglu_local(fam, backward, orient, attrs, weighted, *args))
    else:
        m, k = inp.shape[0], inp.shape[1] // 2
        sizes = tuple(fam.scale_sizes(m, 2 * k if backward else k))
        out = list(_swiglu_op(fam, backward, orient, attrs, sizes, weighted)(*args))
    rq, rs = (out.pop(0), out.pop(0)) if row else (None, None)
    cq, cs = (out.pop(0), out.pop(0)) if col else (None, None)
    rs, cs = fam.public_scales(rs, cs)
    arrays = fam.arrays(rq, rs, cq, cs)
    if weighted and backward:
        return arrays, out.pop(0).reshape(prob.shape)
    return arrays


def colwise_scales_to_global(col_s, o: int, m: int, shards: int):
    """The colwise scales of a call whose rows were split into @p shards equal parts (the
    shard-major layout a row-sharded call gives, see cake_jax._partition) in the unsharded
    call's swizzled [o, m] layout: a permutation of 512-byte tiles. Takes the whole array (a
    NumPy array from jax.device_get, or a replicated jax.Array: under an Explicit mesh a reshape
    of a sharded array needs an out_sharding)."""
    t = _partition.SCALE_TILE
    if o % t or m % (t * shards):
        raise ValueError(f"cake_jax: colwise scales of o = {o}, m = {m} over {shards} shards: o "
                         "and m / shards must be multiples of 128")
    return col_s.reshape(shards, o // t, m // shards // t, 512).transpose(1, 0, 2, 3).reshape(-1)


def swiglu_mxfp8(inp, orientation="rowwise", program: Optional[str] = None, *,
                 activation: str = "silu", alpha: float = SWIGLU_ALPHA,
                 limit: float = SWIGLU_LIMIT, prob=None) -> MXFP8Arrays:
    """Y = bf16(act(in[:, :k], in[:, k:])) quantized to MXFP8 ("rowwise", "colwise", "both").

    activation: "silu" (silu(g) * u) or "clamped" (gpt-oss: g' = min(g, limit),
    u' = clamp(u, -limit, limit), g' * sigmoid(alpha * g') * (u' + 1)); prob: None, or the
    weighted SwiGLU's router probabilities, float32 [m] or [m, 1] (Y = act * prob per row),
    sharded like in's rows."""
    return _swiglu(_MXFP8, False, inp, None, orientation, program, activation, alpha, limit,
                   prob)


def swiglu_mxfp8_backward(inp, grad, orientation="rowwise", program: Optional[str] = None, *,
                          activation: str = "silu", alpha: float = SWIGLU_ALPHA,
                          limit: float = SWIGLU_LIMIT, prob=None):
    """[dgate | dup] ([m, 2k], from in and grad = dL/dY [m, k]) quantized to MXFP8, with the
    forward's variant. With prob: (MXFP8Arrays, dprob), dprob = dL/dprob in prob's shape."""
    return _swiglu(_MXFP8, True, inp, grad, orientation, program, activation, alpha, limit,
                   prob)


def swiglu_fp8(inp, orientation="rowwise", scale_rule="exact", program: Optional[str] = None,
               *, activation: str = "silu", alpha: float = SWIGLU_ALPHA,
               limit: float = SWIGLU_LIMIT, prob=None) -> FP8BlockwiseArrays:
    """Y = bf16(act(in[:, :k], in[:, k:])) quantized to FP8 blockwise 1x128 ("rowwise",
    "colwise", "both"; scale_rule "exact" or "pow2"): the format Hopper FP8 GEMMs take.
    activation, alpha, limit, prob: the variant, as swiglu_mxfp8 takes it."""
    rule = np.int32(int(_cake.Fp8ScaleRule.parse(scale_rule)))
    return _swiglu(_FP8, False, inp, None, orientation, program, activation, alpha, limit, prob,
                   scale_rule=rule)


def swiglu_fp8_backward(inp, grad, orientation="rowwise", scale_rule="exact",
                        program: Optional[str] = None, *, activation: str = "silu",
                        alpha: float = SWIGLU_ALPHA, limit: float = SWIGLU_LIMIT, prob=None):
    """[dgate | dup] ([m, 2k], from in and grad = dL/dY [m, k]) quantized to FP8 blockwise,
    with the forward's variant. With prob: (FP8BlockwiseArrays, dprob) in prob's shape."""
    rule = np.int32(int(_cake.Fp8ScaleRule.parse(scale_rule)))
    return _swiglu(_FP8, True, inp, grad, orientation, program, activation, alpha, limit, prob,
                   scale_rule=rule)


# ---- norm-gate with quantized y ----------------------------------------------------------------
class NormgateFP8Arrays(NamedTuple):
    """The norm-gate forward's y quantized for the GEMM that reads it (docs/spec/normgate.md,
    "Quantized y"): T = rows / heads rows of K = heads * d columns, normgate row t * heads + h
    being row t, columns [h d, (h + 1) d). Each array holds the C API's bytes:

    q: float8_e4m3fn. x's shape with its [heads, d] dimensions merged into K (x [T, H, d] with
       heads H: [T, K]; [B, S, H, d]: [B, S, K]); with heads 1, x's shape. q.reshape(-1, K) is
       the [T, K] row-major matrix (a GEMM's A).
    q_scale: FP8 blockwise, float32 [K/128, *q.shape[:-1]]: the MN-major storage of the logical
       [T, K/128] scale matrix (scale (t, j), of columns [128 j, 128 j + 128) of row t, at
       element j * T + t). s = q_scale.reshape(K // 128, -1) is the [K/128, T] storage; s.T the
       logical matrix; a BlockWise1x128 GEMM reading MN-major scales takes s as it is (what
       torch's F.scaled_mm gets as scale_a with strides (1, T), and DeepGEMM where T % 4 == 0).
       MXFP8: uint8 [bytes], the E8M0 scales of the [T, K/32] matrix in the swizzled 128x4
       layout (padding 0x00), as Blackwell's block-scaled GEMMs read them.
       dequantize_fp8_blockwise(q.reshape(-1, K), s) and dequantize_mxfp8(q.reshape(-1, K),
       q_scale) decode to float32 [T, K].
    y: the BF16 y (x's shape, the plain forward's bits), or None when not asked for."""

    q: jax.Array
    q_scale: jax.Array
    y: Optional[jax.Array]


_QUANT_TARGET = "cake_normgate_fwd_quant"
_FP8B = int(_cake.NormgateQuantFormat.FP8_BLOCKWISE)


class _Quant(NamedTuple):
    """The static options of a quantized norm-gate call. merged: x's last two dimensions are
    [heads, d] and q merges them into K; else heads is 1 and q has x's shape."""

    eps: float
    fmt: int  # cake.NormgateQuantFormat
    rule: int  # cake.Fp8ScaleRule (not read for MXFP8)
    heads: int
    merged: bool
    with_y: bool
    program: Optional[str]

    def attrs(self):
        return {"eps": np.float32(self.eps), "format": np.int32(self.fmt),
                "scale_rule": np.int32(self.rule), "heads": np.int64(self.heads),
                "program": self.program or ""}

    def lead(self, shape):
        """q's leading dimensions (its rows' shape, T elements) for an x of @p shape."""
        return tuple(shape[:-2] if self.merged else shape[:-1])

    def rows(self, shape):
        return int(np.prod(shape[:-1], dtype=np.int64))


def _quant_results(c: _Quant, shape, dtype):
    """(shape, dtype) of q, q_scale and y (empty when not asked for) for an x of @p shape."""
    d = shape[-1]
    k = c.heads * d
    lead = c.lead(shape)
    if c.fmt == _FP8B:
        scale = ((k // 128,) + lead, jnp.float32)
    else:
        sizes = _cake.normgate_quant_expected_sizes(c.rows(shape), d, c.fmt, c.heads)
        scale = ((sizes.s_bytes,), jnp.uint8)
    y = (tuple(shape), dtype) if c.with_y else ((0,), dtype)
    return (lead + (k,), jnp.float8_e4m3fn), scale, y


def _quant_local(c: _Quant, x, z, w):
    q, s, y = _ffi(_QUANT_TARGET, _quant_results(c, x.shape, x.dtype), (x, z, w), **c.attrs())
    return (q, s, y) if c.with_y else (q, s)


def _quant_mx_tiles(c: _Quant, shape) -> bool:
    """MXFP8: whether q's rows are whole 128-row scale tiles, so that the scale bytes split
    along q's first dimension (and a vmap batch unfolds) into each part's own layout."""
    t = c.rows(shape) // c.heads
    return len(c.lead(shape)) > 0 and t > 0 and t % _partition.SCALE_TILE == 0


@functools.lru_cache(maxsize=None)
def _normgate_quant_op(c: _Quant, shape):
    """The partitioned, batched op of one configuration and x shape (its rule names x's leading
    dimensions one by one). Rows (q's leading dimensions) shard; heads, d and the scale blocks
    stay whole. FP8 blockwise q_scale [K/128, *rows] shards on the rows' dimensions: each
    device's scales are its own call's and together the unsharded layout. MXFP8's bytes shard
    only with q's first dimension and whole 128-row tiles a device (the tiles' bytes are
    contiguous in row order), else the rows are replicated."""
    fp8b = c.fmt == _FP8B
    lead = ["t%d" % i for i in range(len(c.lead(shape)))]
    cols = ["h", "d"] if c.merged else ["d"]
    xs = " ".join(lead + cols)
    # Factors of x: the rows' t0, t1, ..., then h (merged) and d. q [rows, K]: K = (h d); the
    # FP8 blockwise scales [K/128, rows]: K/128 = (h b), b = d/128; the MXFP8 bytes: (t0 r).
    sizes, whole = {}, set(lead + cols)
    heads = (("h", c.heads),) if c.merged else ()
    qs = " ".join(lead + [_compound(heads + (("d", shape[-1]),), whole, sizes)])
    keep = list(cols)
    if fp8b:
        ss = " ".join([_compound(heads + (("b", shape[-1] // 128),), whole, sizes)] + lead)
        keep.append("b")
    elif _quant_mx_tiles(c, shape):
        nbytes = _quant_results(c, shape, jnp.bfloat16)[1][0][0]
        ss = _compound((("t0", shape[0]), ("r", nbytes // shape[0])), whole, sizes)
        keep += ["r"] + lead[1:]
    else:
        ss = "u"
        keep += ["u"] + lead
    rule = "%s, %s, d -> %s, %s%s" % (xs, xs, qs, ss, ", " + xs if c.with_y else "")
    t_rows = c.rows(shape) // c.heads

    def local(axes, mesh, x, z, w):
        return _quant_local(c, x, z, w)

    def shardings(mesh, spec, arg_shapes):
        rows = list(spec[:len(lead)])
        if not fp8b:  # MXFP8: the first dimension alone, in whole tiles
            rows = [rows[0] if rows else None] + [None] * max(len(rows) - 1, 0)
            n = _partition.axes_size(mesh, _partition._axes(rows[0])) if rows else 1
            if not _quant_mx_tiles(c, shape) or t_rows % (_partition.SCALE_TILE * n):
                rows = [None] * len(rows)
        xspec = tuple(rows) + (None,) * len(cols)
        qspec = tuple(rows) + (None,)
        sspec = (None,) + tuple(rows) if fp8b else ((rows[0] if rows else None),)
        res = [qspec, sspec] + ([xspec] if c.with_y else [])
        return xspec, [xspec, xspec, (None,)], res

    order = list(dict.fromkeys(re.findall(r"[a-z]\d*", rule)))
    r = RowRule(local, rule, shardings, tuple(f for f in order if f in keep),
                tuple(sorted(sizes.items())))
    op = _partition.partitioned(r)

    def fold(n, batched, x, z, w):
        # The batch becomes one more leading dimension of x (one call); the scales unfold to a
        # batch of each element's layout. MXFP8 rows that are not whole tiles, and a batched w,
        # map over the batch instead.
        if batched[2] or (not fp8b and not _quant_mx_tiles(c, shape)):
            return None
        full = [a if b else jnp.broadcast_to(a, (n,) + a.shape) for a, b in zip((x, z), batched)]
        out = list(_normgate_quant_op(c, (n,) + tuple(shape))(*full, w))
        out[1] = jnp.moveaxis(out[1], 1, 0) if fp8b else out[1].reshape(n, -1)
        return tuple(out), tuple(True for _ in out)

    return _partition.batched(op, fold)


def _compound(factors, whole, sizes):
    """One dimension of a Shardy rule made of @p factors ((name, size) pairs, major first):
    those of size 1 are left out (a compound may hold none), and the size of each factor inside
    the compound that is no whole dimension elsewhere (not in @p whole) goes into @p sizes. One
    factor or none left: the last factor alone, a whole dimension."""
    kept = [(n, k) for n, k in factors if k != 1]
    if len(kept) <= 1:
        return (kept or factors)[-1][0]
    sizes.update((n, k) for n, k in kept if n not in whole)
    return "(%s)" % " ".join(n for n, _ in kept)


def _check_normgate_quant(x, z, w, eps, fmt, rule, heads):
    """The library's rules for this call (cake_normgate_quant_buffer_sizes: needs no device), at
    trace time with its words: the descriptor's (d, eps), the default form's dtypes, the
    format's widths, heads."""
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    dtypes = {k: _FLOATS[jnp.dtype(t.dtype)] for k, t in (("x_dtype", x), ("z_dtype", z),
                                                          ("w_dtype", w))}
    # No rows is no call (the library takes rows > 0): its other rules are checked on one row.
    desc = _cake.normgate_desc(rows=rows or max(int(heads), 1), d=x.shape[-1], eps=eps, **dtypes)
    return _cake.normgate_quant_buffer_sizes(desc, _cake.normgate_quant_desc(fmt, rule, heads))


def normgate_fp8(x, z, w, eps: float = 1e-6, *, format="fp8_blockwise", scale_rule="exact",
                 heads: Optional[int] = None, return_y: bool = False,
                 program: Optional[str] = None) -> NormgateFP8Arrays:
    """y = bf16(rmsnorm(x) * w * silu(z)) (normgate()'s bits; bfloat16 x, z [..., d] and w [d])
    quantized in the same pass for the GEMM that reads it (Qwen3-Next's o_proj):

        g = cake_jax.normgate_fp8(x, z, w)        # x, z [T, H, 128]: g.q [T, H*128]
        g = cake_jax.normgate_fp8(x, z, w, format="mxfp8", return_y=True)

    format: "fp8_blockwise" (E4M3 + one FP32 scale per 128 columns; d a multiple of 128;
    scale_rule "exact" (amax / 448) or "pow2") or "mxfp8" (E4M3 + one E8M0 scale per 32; d a
    multiple of 32, of 128 with several heads). heads: normgate rows a row of the quantized
    matrix holds (None: x.shape[-2] for x of three or more dimensions, else 1); it must divide
    the rows. return_y: the BF16 y too. The outputs and how to read them: NormgateFP8Arrays.
    Not differentiable (the backward is normgate()'s, from x and z: normgate_backward()).

    Under jit over a mesh the rows (q's leading dimensions) stay sharded as x's are and each
    device quantizes its own rows; the heads and columns are replicated. FP8 blockwise scales
    shard with their rows into the unsharded layout; MXFP8's with x's first dimension when each
    device holds whole 128-row tiles of q, else the rows are replicated. vmap folds into rows."""
    if z is None:
        raise ValueError("cake_jax normgate_fp8: z is required (the quantized forward serves the "
                         "default form only: the SiLU gate after the norm)")
    fmt = int(_cake.NormgateQuantFormat.parse(format))
    rule = int(_cake.Fp8ScaleRule.parse(scale_rule))
    given = (x.shape[-2] if x.ndim >= 3 else 1) if heads is None else int(heads)
    v = _variant(eps, "silu", False, None, program, z)
    _check_normgate(x, z, w, v)
    _check_normgate_quant(x, z, w, v.eps, fmt, rule, given)
    if not has_op("normgate_fwd_quant"):
        raise _cake.UnavailableError("cake_normgate_forward_quantized", "libcake.so or "
                                     "libcake_jax.so")
    h = max(given, 1)
    shape = x.shape
    merged = x.ndim >= 3 and x.shape[-2] == h
    if not merged and h > 1:  # the [T, heads, d] view of the rows
        x, z = (a.reshape(_rows_view(a, h)) for a in (x, z))
        merged = True
    c = _Quant(v.eps, fmt, rule, h, merged, bool(return_y), program)
    prepare()
    if _manual((x, z, w)):  # inside shard_map: one device's operands already
        out = _quant_local(c, x, z, w)
    else:
        out = _normgate_quant_op(c, tuple(x.shape))(x, z, w)
    y = out[2].reshape(shape) if return_y else None
    return NormgateFP8Arrays(out[0], out[1], y)


def _rows_view(a, heads):
    return (int(np.prod(a.shape[:-1], dtype=np.int64)) // heads, heads, a.shape[-1])


def dequantize_fp8_blockwise(q, s):
    """float32 values of an FP8 blockwise array [R, N] (row_q with row_s, or col_q with col_s):
    s is the MN-major storage [N/128, R]."""
    rows, cols = q.shape
    return (q.astype(jnp.float32).reshape(rows, cols // 128, 128) * s.T[:, :, None]).reshape(rows, cols)


def swizzled_scale_offsets(rows: int, cols: int):
    """int32 [rows, cols]: byte offset of scale (r, c) in the swizzled 128x4 layout."""
    r = jnp.arange(rows, dtype=jnp.int32)[:, None]
    c = jnp.arange(cols, dtype=jnp.int32)[None, :]
    cp = (cols + 3) // 4 * 4
    return ((r // 128) * (cp // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def dequantize_mxfp8(q, s, colwise: bool = False):
    """float32 values of an MXFP8 array in the logical [M, O] orientation."""
    rows, cols = q.shape
    e = s[swizzled_scale_offsets(rows, cols // 32)].astype(jnp.int32)
    scale = jnp.where(e == 255, jnp.nan, jnp.exp2((e - 127).astype(jnp.float32)))
    out = q.astype(jnp.float32) * jnp.repeat(scale, 32, axis=1)
    return out.T if colwise else out


from ._swiglu_autograd import swiglu_dequantized  # noqa: E402,F401  (SwiGLU under autograd)
# ---- grouped SwiGLU for MoE experts (cake_jax._grouped) ---------------------------------------
from ._grouped import (GroupedArrays, dequantize_grouped, swiglu_grouped,  # noqa: E402
                       swiglu_grouped_backward, swiglu_grouped_qdq)
