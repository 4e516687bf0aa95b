"""ctypes declarations of include/cake.h (the whole ABI, in one place) and the library loader.

Every C function of cake.h is listed in FUNCTIONS with its restype and argtypes; every public
struct is a ctypes.Structure with the header's fields in the header's order. A function the
loaded library does not export (an older build) is left undeclared, and calling it through
call() raises UnavailableError; has() says which are there.
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import POINTER, c_char, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32
from ctypes import c_void_p
from pathlib import Path

from .errors import LibraryNotFoundError, UnavailableError, error_for

# ---- types ---------------------------------------------------------------------------------
c_status = c_int  # cake_status_t
c_arch = c_int  # cake_arch_t
c_dtype = c_int  # cake_dtype_t
c_package = c_int  # cake_normgate_package_t
c_gate = c_int  # cake_normgate_gate_t
c_placement = c_int  # cake_normgate_placement_t
c_orientation = c_int  # cake_mxfp8_orientation_t
c_family = c_int  # cake_family_t
c_op = c_int  # cake_op_t
c_handle = c_void_p  # cake_handle_t (opaque)
c_stream = c_void_p  # cake_stream_t (CUstream == cudaStream_t)
c_devptr = c_void_p  # device pointers: Python ints (addresses) or None for NULL


class HandleOptions(ctypes.Structure):
    """cake_handle_options."""

    _fields_ = [("struct_size", c_size_t), ("table", c_arch), ("sm_count", c_int32)]


class DeviceInfoStruct(ctypes.Structure):
    """cake_device_info."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("device_ordinal", c_int32),
        ("cc_major", c_int32),
        ("cc_minor", c_int32),
        ("sm_count", c_int32),
        ("routing_sm_count", c_int32),
        ("table", c_arch),
        ("jit", c_int32),
        ("cross_check", c_int32),
        ("program_count", c_int32),
        ("image", c_char * 32),
        ("device_name", c_char * 96),
    ]


class ProgramInfoStruct(ctypes.Structure):
    """cake_program_info."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("name", c_char * 64),
        ("kernel", c_char * 80),
        ("forced", c_int32),
        ("threads", c_int32),
        ("ctas_per_sm", c_int32),
        ("grid", c_int64),
        ("metric", c_int64),
        ("metric_lo", c_int64),
        ("metric_hi", c_int64),
    ]


class TableProgramStruct(ctypes.Structure):
    """cake_table_program."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("name", c_char * 64),
        ("kernel", c_char * 80),
        ("family", c_family),
        ("op", c_op),
        ("threads", c_int32),
        ("min_ctas_per_sm", c_int32),
        ("knobs", c_int32 * 8),
        ("knobs_ext", c_int32 * 8),  # 0.2
    ]


class TableRouteStruct(ctypes.Structure):
    """cake_table_route."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("family", c_family),
        ("op", c_op),
        ("d", c_int32),
        ("metric_lo", c_int64),
        ("metric_hi", c_int64),
        ("program", c_char * 64),
        ("wave_rows", c_int32),  # 0.2: wave routes (normgate)
        ("waves_lo", c_int32),
        ("waves_hi", c_int32),
        ("frac_lo", c_int32),
        ("frac_hi", c_int32),
    ]


class NormgateDesc(ctypes.Structure):
    """cake_normgate_desc. Strides are in elements; 0 means packed (= d)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("rows", c_int64),
        ("d", c_int32),
        ("eps", c_float),
        ("x_stride", c_int64),
        ("z_stride", c_int64),
        ("y_stride", c_int64),
        ("dy_stride", c_int64),
        ("dx_stride", c_int64),
        ("dz_stride", c_int64),
        ("package", c_package),
        ("dw_dtype", c_dtype),
        ("flags", c_uint32),
        ("program", c_char_p),
        # 0.3: a library whose cake_normgate_desc_init() sets a smaller struct_size predates
        # these fields and ignores them (cake.normgate_desc() refuses non-defaults then).
        ("gate", c_gate),
        ("placement", c_placement),
        ("group_size", c_int32),
        ("x_dtype", c_dtype),
        ("z_dtype", c_dtype),
        ("w_dtype", c_dtype),
    ]


class SwigluVariantDesc(ctypes.Structure):
    """cake_swiglu_variant_desc (0.4): the last member of every SwiGLU descriptor."""

    _fields_ = [
        ("activation", c_int),  # cake_swiglu_activation_t
        ("alpha", c_float),
        ("limit", c_float),
        ("weighted", c_int32),
        ("p", c_devptr),
        ("dp", c_devptr),
    ]


class SwigluMxfp8Desc(ctypes.Structure):
    """cake_swiglu_mxfp8_desc."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("m", c_int64),
        ("k", c_int64),
        ("orientation", c_orientation),
        ("program", c_char_p),
        ("variant", SwigluVariantDesc),  # 0.4
    ]


class SwigluMxfp8SizesStruct(ctypes.Structure):
    """cake_swiglu_mxfp8_sizes."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("out_cols", c_int64),
        ("q_bytes", c_size_t),
        ("row_s_bytes", c_size_t),
        ("col_s_bytes", c_size_t),
    ]


class SwigluFp8Desc(ctypes.Structure):
    """cake_swiglu_fp8_desc (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("m", c_int64),
        ("k", c_int64),
        ("orientation", c_orientation),
        ("scale_rule", c_int),  # cake_fp8_scale_rule_t
        ("program", c_char_p),
        ("variant", SwigluVariantDesc),  # 0.4
    ]


class SwigluFp8SizesStruct(ctypes.Structure):
    """cake_swiglu_fp8_sizes (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("out_cols", c_int64),
        ("q_bytes", c_size_t),
        ("row_s_bytes", c_size_t),
        ("col_s_bytes", c_size_t),
        ("row_s_stride", c_int64),
        ("col_s_stride", c_int64),
    ]


class SwigluMxfp8GroupedDesc(ctypes.Structure):
    """cake_swiglu_mxfp8_grouped_desc (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("tokens", c_int64),
        ("k", c_int64),
        ("experts", c_int32),
        ("orientation", c_orientation),
        ("program", c_char_p),
        ("variant", SwigluVariantDesc),  # 0.4
    ]


class SwigluFp8GroupedDesc(ctypes.Structure):
    """cake_swiglu_fp8_grouped_desc (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("tokens", c_int64),
        ("k", c_int64),
        ("experts", c_int32),
        ("orientation", c_orientation),
        ("scale_rule", c_int),  # cake_fp8_scale_rule_t
        ("program", c_char_p),
        ("variant", SwigluVariantDesc),  # 0.4
    ]


class SwigluGroupedSizesStruct(ctypes.Structure):
    """cake_swiglu_grouped_sizes (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("out_cols", c_int64),
        ("scale_rows", c_int64),
        ("q_bytes", c_size_t),
        ("row_s_bytes", c_size_t),
        ("col_s_bytes", c_size_t),
    ]


class NormgateQuantDesc(ctypes.Structure):
    """cake_normgate_quant_desc (0.4): the quantized y of a normgate forward."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("format", c_int),  # cake_normgate_quant_format_t
        ("scale_rule", c_int),  # cake_fp8_scale_rule_t
        ("heads", c_int64),
    ]


class NormgateQuantSizesStruct(ctypes.Structure):
    """cake_normgate_quant_sizes (0.4)."""

    _fields_ = [
        ("struct_size", c_size_t),
        ("q_rows", c_int64),
        ("q_cols", c_int64),
        ("q_bytes", c_size_t),
        ("s_bytes", c_size_t),
        ("s_cols", c_int64),
        ("s_stride", c_int64),
    ]


#: Every public struct, by its C name (the host tests compare layouts with a C compiler).
STRUCTS = {
    "cake_swiglu_variant_desc": SwigluVariantDesc,
    "cake_handle_options": HandleOptions,
    "cake_device_info": DeviceInfoStruct,
    "cake_program_info": ProgramInfoStruct,
    "cake_table_program": TableProgramStruct,
    "cake_table_route": TableRouteStruct,
    "cake_normgate_desc": NormgateDesc,
    "cake_swiglu_mxfp8_desc": SwigluMxfp8Desc,
    "cake_swiglu_mxfp8_sizes": SwigluMxfp8SizesStruct,
    "cake_swiglu_fp8_desc": SwigluFp8Desc,
    "cake_swiglu_fp8_sizes": SwigluFp8SizesStruct,
    "cake_swiglu_mxfp8_grouped_desc": SwigluMxfp8GroupedDesc,
    "cake_swiglu_fp8_grouped_desc": SwigluFp8GroupedDesc,
    "cake_swiglu_grouped_sizes": SwigluGroupedSizesStruct,
    "cake_normgate_quant_desc": NormgateQuantDesc,
    "cake_normgate_quant_sizes": NormgateQuantSizesStruct,
}


def _swiglu_family(prefix: str, desc, sizes, sizes_init: str | None = None,
                   grouped: bool = False) -> dict:
    """The FUNCTIONS entries of one SwiGLU family (prefix cake_swiglu_<format>[_grouped]).

    Every family has the same calls: desc_init, buffer_sizes, forward (handle, desc, in, row_q,
    row_s, col_q, col_s, stream), backward (grad after in) and query; a grouped family's forward
    and backward take the offsets after in (and grad) and the status word after col_s.
    @p sizes_init names the sizes struct's init, which the two grouped families share (declared
    once).
    """
    d = POINTER(desc)
    ptrs = 5 + (2 if grouped else 0)
    out = {f"{prefix}_desc_init": (c_status, [d])}
    if sizes_init is not None:
        out[sizes_init] = (c_status, [POINTER(sizes)])
    out[f"{prefix}_buffer_sizes"] = (c_status, [d, c_int, POINTER(sizes)])
    out[f"{prefix}_forward"] = (c_status, [c_handle, d] + [c_devptr] * ptrs + [c_stream])
    out[f"{prefix}_backward"] = (c_status, [c_handle, d] + [c_devptr] * (ptrs + 1) + [c_stream])
    out[f"{prefix}_query"] = (c_status, [c_handle, d, c_int, POINTER(ProgramInfoStruct)])
    return out


# ---- functions: name -> (restype, argtypes), in cake.h's order by family ------------------
FUNCTIONS = {
    "cake_version": (c_int, []),
    "cake_status_string": (c_char_p, [c_status]),
    "cake_last_error_message": (c_char_p, []),
    "cake_handle_options_init": (c_status, [POINTER(HandleOptions)]),
    "cake_create": (c_status, [POINTER(c_handle), c_int]),
    "cake_create_ex": (c_status, [POINTER(c_handle), c_int, POINTER(HandleOptions)]),
    "cake_destroy": (c_status, [c_handle]),
    "cake_device_info_init": (c_status, [POINTER(DeviceInfoStruct)]),
    "cake_device_query": (c_status, [c_handle, POINTER(DeviceInfoStruct)]),
    "cake_program_info_init": (c_status, [POINTER(ProgramInfoStruct)]),
    "cake_program_count": (c_int, [c_handle]),
    "cake_program_name": (c_char_p, [c_handle, c_int]),
    "cake_table_program_init": (c_status, [POINTER(TableProgramStruct)]),
    "cake_table_route_init": (c_status, [POINTER(TableRouteStruct)]),
    "cake_table_counts": (c_status, [c_arch, POINTER(c_int32), POINTER(c_int32)]),
    "cake_table_program_get": (c_status, [c_arch, c_int32, POINTER(TableProgramStruct)]),
    "cake_table_route_get": (c_status, [c_arch, c_int32, POINTER(TableRouteStruct)]),
    "cake_normgate_desc_init": (c_status, [POINTER(NormgateDesc)]),
    # handle, desc, x, z, w, y, rstd, stream
    "cake_normgate_forward": (
        c_status,
        [c_handle, POINTER(NormgateDesc), c_devptr, c_devptr, c_devptr, c_devptr, c_devptr, c_stream],
    ),
    "cake_normgate_forward_query": (
        c_status,
        [c_handle, POINTER(NormgateDesc), POINTER(ProgramInfoStruct)],
    ),
    "cake_normgate_workspace_size": (c_status, [c_handle, POINTER(NormgateDesc), POINTER(c_size_t)]),
    # handle, desc, dy, x, z, w, dx, dz, dw, workspace, workspace_bytes, stream
    "cake_normgate_backward": (
        c_status,
        [c_handle, POINTER(NormgateDesc)]
        + [c_devptr] * 8
        + [c_size_t, c_stream],
    ),
    "cake_normgate_backward_query": (
        c_status,
        [c_handle, POINTER(NormgateDesc), POINTER(ProgramInfoStruct)],
    ),
    **_swiglu_family("cake_swiglu_mxfp8", SwigluMxfp8Desc, SwigluMxfp8SizesStruct,
                     sizes_init="cake_swiglu_mxfp8_sizes_init"),
    # 0.4: SwiGLU + FP8 blockwise 1x128.
    **_swiglu_family("cake_swiglu_fp8", SwigluFp8Desc, SwigluFp8SizesStruct,
                     sizes_init="cake_swiglu_fp8_sizes_init"),
    # 0.4: grouped SwiGLU (MoE experts in one launch); both formats share one sizes struct.
    **_swiglu_family("cake_swiglu_mxfp8_grouped", SwigluMxfp8GroupedDesc,
                     SwigluGroupedSizesStruct, sizes_init="cake_swiglu_grouped_sizes_init",
                     grouped=True),
    **_swiglu_family("cake_swiglu_fp8_grouped", SwigluFp8GroupedDesc, SwigluGroupedSizesStruct,
                     grouped=True),
    # 0.4: normgate with quantized y.
    "cake_normgate_quant_desc_init": (c_status, [POINTER(NormgateQuantDesc)]),
    "cake_normgate_quant_sizes_init": (c_status, [POINTER(NormgateQuantSizesStruct)]),
    "cake_normgate_quant_buffer_sizes": (
        c_status,
        [POINTER(NormgateDesc), POINTER(NormgateQuantDesc), POINTER(NormgateQuantSizesStruct)],
    ),
    # handle, desc, quant, x, z, w, y, rstd, q, q_scale, stream
    "cake_normgate_forward_quantized": (
        c_status,
        [c_handle, POINTER(NormgateDesc), POINTER(NormgateQuantDesc)] + [c_devptr] * 7
        + [c_stream],
    ),
    "cake_normgate_forward_quantized_query": (
        c_status,
        [c_handle, POINTER(NormgateDesc), POINTER(NormgateQuantDesc), POINTER(ProgramInfoStruct)],
    ),
}

# ---- loading -------------------------------------------------------------------------------
_PACKAGE_DIR = Path(__file__).resolve().parent
_NAMES = ("libcake.so.0", "libcake.so")
#: The ABI this binding declares: CAKE_VERSION_MAJOR of include/cake.h (the SONAME's number).
ABI_MAJOR = 0
#: The oldest library this binding loads (functions added later are left undeclared).
MIN_VERSION = (0, 1, 0)


def _checkout_build_dirs() -> list[Path]:
    """The CMake build folders of the source checkout this package runs from, if it runs from
    one (bindings/python/cake beside include/cake.h); none for an installed package."""
    repo = _PACKAGE_DIR.parents[2] if len(_PACKAGE_DIR.parents) > 2 else None
    if repo is None or not (repo / "include" / "cake.h").is_file():
        return []
    out = []
    if os.environ.get("CAKE_BUILD_DIR"):
        out.append(Path(os.environ["CAKE_BUILD_DIR"]))
    out.append(repo / "build")
    return out


def library_candidates() -> list[str]:
    """Where libcake.so is looked for, in order.

    1. $CAKE_LIBRARY: a file, or a directory holding libcake.so.0 / libcake.so (when set, only
       this is tried);
    2. beside this package (the library the cake-kernels wheel ships);
    3. only when this package runs from a source checkout: its CMake build (<repo>/build/lib,
       or $CAKE_BUILD_DIR/lib);
    4. the dynamic loader's own search (LD_LIBRARY_PATH, ldconfig), by the SONAME.
    Paths that do not exist are left out, so none is reported as tried.
    """
    env = os.environ.get("CAKE_LIBRARY")
    if env:
        p = Path(env)
        return [str(p / n) for n in _NAMES] if p.is_dir() else [str(p)]
    out = [str(_PACKAGE_DIR / n) for n in _NAMES]
    for b in _checkout_build_dirs():
        out += [str(b / "lib" / n) for n in _NAMES]
    out = [c for c in out if os.path.exists(c)]
    return out + list(_NAMES)  # bare names: the dynamic loader searches


def _version_error(path: str, dll: ctypes.CDLL) -> str | None:
    """Why the library at @p path cannot serve this binding (another ABI), or None."""
    fn = dll.cake_version
    fn.restype = c_int
    fn.argtypes = []
    v = int(fn())
    found = (v // 10000, v // 100 % 100, v % 100)
    if found[0] == ABI_MAJOR and found >= MIN_VERSION:
        return None
    return (f"{path} is libcake {'.'.join(map(str, found))} (ABI {found[0]}); this cake package "
            f"{_package_version()} needs ABI {ABI_MAJOR} (libcake.so.{ABI_MAJOR}, version "
            f"{'.'.join(map(str, MIN_VERSION))} or newer)")


def _package_version() -> str:
    from . import __version__

    return __version__


class Library:
    """The loaded libcake.so with its functions declared."""

    def __init__(self, path: str, dll: ctypes.CDLL):
        self.path = path
        self.dll = dll
        self.missing = []
        for name, (restype, argtypes) in FUNCTIONS.items():
            if not hasattr(dll, name):
                self.missing.append(name)
                continue
            fn = getattr(dll, name)
            fn.restype = restype
            fn.argtypes = argtypes

    def has(self, name: str) -> bool:
        """Whether the loaded library exports function @p name."""
        return name not in self.missing and hasattr(self.dll, name)

    def fn(self, name: str):
        """The declared function @p name; UnavailableError when the library lacks it."""
        if name in self.missing:
            raise UnavailableError(name, self.path)
        return getattr(self.dll, name)

    def message(self) -> str:
        return self.dll.cake_last_error_message().decode("utf-8", "replace")

    def status_name(self, status: int) -> str:
        return self.dll.cake_status_string(status).decode("ascii", "replace")

    def call(self, name: str, *args) -> None:
        """Call a status-returning function; raise the status's exception with the message.

        The message is read right after the call, on the same thread (it is thread-local)."""
        status = self.fn(name)(*args)
        if status != 0:
            raise error_for(status, self.status_name(status), self.message(), name)


_lock = threading.Lock()
_library: Library | None = None


def load() -> Library:
    """Load libcake.so once (thread-safe) and return it.

    LibraryNotFoundError if none loads, naming each file tried and why; a library of another
    ABI raises it too (what was found, what is needed), never falls through to another one."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is not None:
            return _library
        errors = []
        candidates = library_candidates()
        for cand in candidates:
            is_path = os.sep in cand
            if is_path and not os.path.exists(cand):
                errors.append(f"{cand}: no such file")
                continue
            try:
                dll = ctypes.CDLL(cand)
            except OSError as e:
                if is_path:
                    errors.append(f"{cand}: {e}")
                continue  # a bare name the loader does not find is not an error to report
            path = cand
            if not is_path:  # resolve the file the loader picked
                path = _loaded_path(dll) or cand
            if not hasattr(dll, "cake_version"):
                errors.append(f"{path}: not libcake (no cake_version)")
                continue
            why = _version_error(path, dll)
            if why:
                raise LibraryNotFoundError(why)
            _library = Library(os.path.realpath(path) if is_path else path, dll)
            return _library
        if not errors:
            errors.append(f"none beside the package ({_PACKAGE_DIR}), CAKE_LIBRARY unset, and "
                          "the dynamic loader finds no " + " or ".join(_NAMES))
        fix = "install the cake-kernels wheel (it ships the library) or set CAKE_LIBRARY"
        if _checkout_build_dirs():
            fix += ", or build this checkout (cmake -S . -B build && cmake --build build)"
        raise LibraryNotFoundError("libcake.so not found: " + "; ".join(errors) + ". To fix: " + fix)


def _loaded_path(dll: ctypes.CDLL) -> str | None:
    """The file a CDLL came from (via dladdr on cake_version), or None."""

    class DlInfo(ctypes.Structure):
        _fields_ = [("dli_fname", c_char_p), ("dli_fbase", c_void_p), ("dli_sname", c_char_p),
                    ("dli_saddr", c_void_p)]

    try:
        libc = ctypes.CDLL(None)
        dladdr = libc.dladdr
        dladdr.argtypes = [c_void_p, POINTER(DlInfo)]
        dladdr.restype = c_int
        info = DlInfo()
        addr = ctypes.cast(dll.cake_version, c_void_p).value
        if dladdr(addr, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(info.dli_fname.decode())
    except (AttributeError, OSError):
        pass
    return None
