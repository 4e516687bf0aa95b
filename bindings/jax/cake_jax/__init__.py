"""Cake's kernels in JAX programs, through XLA FFI custom calls (libcake_jax.so).

    import cake_jax
    y = cake_jax.normgate(x, z, w, eps=1e-6)          # jax.custom_vjp: jit, grad, shard_map
    q = cake_jax.swiglu_mxfp8(inp, "both")            # MXFP8 row_q/row_s/col_q/col_s
    g = cake_jax.swiglu_mxfp8_backward(inp, grad)      # the backward, quantized

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
import threading
from pathlib import Path
from typing import NamedTuple, Optional

from . import _jaxlib

if _jaxlib.problem():
    raise ImportError(_jaxlib.problem())

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import cake as _cake  # noqa: E402
import cake._lib as _cake_lib  # noqa: E402

__all__ = [
    "normgate",
    "normgate_forward",
    "normgate_backward",
    "swiglu_mxfp8",
    "swiglu_mxfp8_backward",
    "MXFP8Arrays",
    "dequantize_mxfp8",
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
}
_OPS = {"normgate_fwd": 0, "normgate_bwd": 1, "swiglu_mxfp8_fwd": 2, "swiglu_mxfp8_bwd": 3}


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
    jax.ffi.register_ffi_target(_name, jax.ffi.pycapsule(getattr(_shim, _symbol)),
                                platform="CUDA")


def shim_path() -> str:
    """Path of the loaded libcake_jax.so."""
    return _SHIM_PATH


def has_op(op: str) -> bool:
    """Whether the loaded libcake.so has the op ("normgate_fwd", "normgate_bwd",
    "swiglu_mxfp8_fwd", "swiglu_mxfp8_bwd")."""
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


def _workspace_bytes(rows: int, d: int, package: int, dw_f32: bool) -> int:
    """Bytes of norm-gate backward workspace: the most any prepared device needs."""
    if rows == 0:
        return 0
    n = ctypes.c_size_t(0)
    most = 0
    for ordinal in sorted(_prepared):
        _check(_shim.cake_jax_normgate_workspace_size(ordinal, rows, d, package, int(dw_f32),
                                                      ctypes.byref(n)),
               "cake_normgate_workspace_size")
        most = max(most, n.value)
    return most


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
    """jax.ffi.ffi_call of @p target; @p results is a tuple of (shape, dtype)."""
    args, varying = _match_varying(args)
    specs = tuple(_result(shape, dtype, varying, args[0]) for shape, dtype in results)
    call = jax.ffi.ffi_call(target, specs, vmap_method="sequential")
    return call(*args, **attrs)


# ---- norm-gate -------------------------------------------------------------------------------
def _check_normgate(x, z, w):
    if x.ndim < 1 or x.shape != z.shape or w.shape != (x.shape[-1],):
        raise ValueError(f"cake_jax normgate: x {x.shape}, z {z.shape} must be one shape [..., d] "
                         f"and w {w.shape} must be [d]")
    for name, t in (("x", x), ("z", z)):
        if t.dtype != jnp.bfloat16:
            raise TypeError(f"cake_jax normgate: {name} is {t.dtype}; Cake takes bfloat16")


def normgate_forward(x, z, w, eps: float = 1e-6, program: Optional[str] = None):
    """y = bf16(rmsnorm(x) * w * silu(z)) (no autodiff: see normgate())."""
    _check_normgate(x, z, w)
    prepare()
    (y,) = _ffi("cake_normgate_fwd", ((x.shape, jnp.bfloat16),),
                (x, z, w.astype(jnp.bfloat16)), eps=np.float32(eps), program=program or "")
    return y


def normgate_backward(dy, x, z, w, eps: float = 1e-6, deterministic: bool = True,
                      dw_dtype=jnp.bfloat16, program: Optional[str] = None):
    """(dx, dz, dw) of the norm-gate; dw in @p dw_dtype (bfloat16 or float32)."""
    _check_normgate(x, z, w)
    dw_dtype = jnp.dtype(dw_dtype)
    if dw_dtype not in (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float32)):
        raise TypeError(f"cake_jax normgate: dw_dtype {dw_dtype}: bfloat16 or float32")
    prepare()
    d = x.shape[-1]
    package = int(_cake.NormgatePackage.DETERMINISTIC if deterministic
                  else _cake.NormgatePackage.NONDETERMINISTIC)
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    ws = _workspace_bytes(rows, d, package, dw_dtype == jnp.dtype(jnp.float32))
    dx, dz, dw, _ = _ffi("cake_normgate_bwd",
                         ((x.shape, jnp.bfloat16), (z.shape, jnp.bfloat16), ((d,), dw_dtype),
                          ((ws,), jnp.uint8)),
                         (dy.astype(jnp.bfloat16), x, z, w.astype(jnp.bfloat16)),
                         eps=np.float32(eps), package=np.int32(package), program=program or "")
    # Inside shard_map, a w replicated over axes the rows are split over gets the sum of the
    # shards' gradients (what the transpose of its implicit broadcast would give).
    summed = tuple(frozenset().union(*(_varying(a) for a in (dy, x, z))) - _varying(w))
    if summed:
        dw = jax.lax.psum(dw.astype(jnp.float32), summed).astype(dw_dtype)
    return dx, dz, dw


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6))
def _normgate(x, z, w, eps, deterministic, dw_dtype, program):
    return normgate_forward(x, z, w, eps, program)


def _normgate_fwd(x, z, w, eps, deterministic, dw_dtype, program):
    # Only the inputs are kept: the backward recomputes rstd and the gate from x and z.
    return normgate_forward(x, z, w, eps, program), (x, z, w)


def _normgate_bwd(eps, deterministic, dw_dtype, program, residuals, dy):
    x, z, w = residuals
    dw_dtype = w.dtype if dw_dtype is None else dw_dtype
    dx, dz, dw = normgate_backward(dy, x, z, w, eps, deterministic, dw_dtype, program)
    return dx, dz, dw.astype(w.dtype)


_normgate.defvjp(_normgate_fwd, _normgate_bwd)


def normgate(x, z, w, eps: float = 1e-6, *, deterministic: bool = True, dw_dtype=None,
             program: Optional[str] = None):
    """y = bf16(rmsnorm(x) * w * silu(z)) over rows of width d = x.shape[-1], differentiable.

    x, z: bfloat16 [..., d]; w: bfloat16 or float32 [d] (float32: cast for the kernel, and the
    gradient comes back in float32 from an FP32 dw). dw_dtype overrides the dw the kernel
    writes (None: w's dtype). deterministic picks the package."""
    dw = None if dw_dtype is None else jnp.dtype(dw_dtype).name
    return _normgate(x, z, w, float(eps), bool(deterministic), dw, program)


# ---- SwiGLU + MXFP8 --------------------------------------------------------------------------
class MXFP8Arrays(NamedTuple):
    """row_q E4M3 [m, O], row_s uint8 swizzled scales, col_q E4M3 [O, m], col_s; None when that
    orientation was not asked for. O = k forward, 2k backward."""

    row_q: Optional[jax.Array]
    row_s: Optional[jax.Array]
    col_q: Optional[jax.Array]
    col_s: Optional[jax.Array]


def _swiglu_results(m, k, orient, backward):
    sizes = _cake.swiglu_mxfp8_expected_sizes(m, k, backward)
    o = sizes.out_cols
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    e4m3, u8 = jnp.float8_e4m3fn, jnp.uint8
    return (((m, o) if row else (0,), e4m3),
            ((sizes.row_s_bytes if row else 0,), u8),
            ((o, m) if col else (0,), e4m3),
            ((sizes.col_s_bytes if col else 0,), u8)), row, col


def _swiglu(target, backward, inp, grad, orientation, program):
    if inp.ndim != 2 or inp.shape[1] % 2 or inp.dtype != jnp.bfloat16:
        raise ValueError(f"cake_jax swiglu_mxfp8: in {inp.shape} {inp.dtype} must be bfloat16 "
                         "[m, 2k]")
    m, k = inp.shape[0], inp.shape[1] // 2
    orient = _cake.Orientation.parse(orientation)
    results, row, col = _swiglu_results(m, k, orient, backward)
    prepare()
    args = (inp,) if grad is None else (inp, grad.astype(jnp.bfloat16))
    out = _ffi(target, results, args, orientation=np.int32(int(orient)), program=program or "")
    return MXFP8Arrays(out[0] if row else None, out[1] if row else None,
                       out[2] if col else None, out[3] if col else None)


def swiglu_mxfp8(inp, orientation="rowwise", program: Optional[str] = None) -> MXFP8Arrays:
    """Y = bf16(silu(in[:, :k]) * in[:, k:]) quantized to MXFP8 ("rowwise", "colwise", "both")."""
    return _swiglu("cake_swiglu_mxfp8_fwd", False, inp, None, orientation, program)


def swiglu_mxfp8_backward(inp, grad, orientation="rowwise",
                          program: Optional[str] = None) -> MXFP8Arrays:
    """[dgate | dup] ([m, 2k], from in and grad = dL/dY [m, k]) quantized to MXFP8."""
    return _swiglu("cake_swiglu_mxfp8_bwd", True, inp, grad, orientation, program)


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
