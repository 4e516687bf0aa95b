"""Cake: fused training kernels for large models, from Python.

A thin ctypes binding of libcake.so's C ABI (include/cake.h). Device memory is passed as integer
addresses and streams as integer CUstream/cudaStream_t values, so any CUDA Python stack can call
it; `cake.torch` is the PyTorch layer (autograd functions, custom ops) on top of this module.

    import cake
    print(cake.version())                       # (0, 3, 0)
    with cake.Handle(0) as h:                   # device 0
        desc = cake.normgate_desc(rows=4096, d=128)
        h.normgate_forward(desc, x_ptr, z_ptr, w_ptr, y_ptr, stream=stream_ptr)

Every failing call raises the CakeError subclass of its status (cake.errors) carrying the
library's message (cake_last_error_message()).
"""

from __future__ import annotations

import ctypes
import dataclasses
import enum
import operator
import sys
from ctypes import byref, c_size_t

from . import _lib
from ._lib import (NormgateDesc, NormgateQuantDesc, SwigluFp8Desc, SwigluFp8GroupedDesc,
                   SwigluMxfp8Desc, SwigluMxfp8GroupedDesc, library_candidates)
from .errors import (
    ArchUnsupportedError,
    CakeError,
    CudaError,
    DriverUnavailableError,
    InsufficientWorkspaceError,
    InternalError,
    InvalidArgumentError,
    InvalidHandleError,
    LibraryNotFoundError,
    MisalignedError,
    NoDeviceError,
    ProgramNotFoundError,
    Status,
    UnavailableError,
    UnsupportedShapeError,
)

__version__ = "0.3.0"

__all__ = [
    "Arch", "Family", "Op", "DType", "NormgatePackage", "NormgateFlags", "NormgateGate",
    "NormgatePlacement", "Orientation", "Status",
    "CakeError", "InvalidArgumentError", "ArchUnsupportedError", "DriverUnavailableError",
    "CudaError", "InsufficientWorkspaceError", "UnsupportedShapeError", "MisalignedError",
    "InvalidHandleError", "ProgramNotFoundError", "InternalError", "NoDeviceError",
    "LibraryNotFoundError", "UnavailableError",
    "DeviceInfo", "ProgramInfo", "SwigluMxfp8Sizes", "TableProgram", "TableRoute", "Handle",
    "version", "version_tuple", "status_string", "last_error_message", "library_path",
    "library_candidates", "has", "normgate_desc", "swiglu_mxfp8_desc",
    "swiglu_mxfp8_buffer_sizes", "swiglu_mxfp8_expected_sizes", "table_programs", "table_routes",
    "Fp8ScaleRule", "SwigluFp8Sizes", "swiglu_fp8_desc", "swiglu_fp8_buffer_sizes",
    "swiglu_fp8_expected_sizes",
    "NormgateQuantFormat", "NormgateQuantSizes", "normgate_quant_desc",
    "normgate_quant_buffer_sizes", "normgate_quant_expected_sizes",
    "SWIGLU_GROUPED_MAX_EXPERTS", "GroupedOffsetsStatus", "SwigluGroupedSizes",
    "swiglu_mxfp8_grouped_desc", "swiglu_fp8_grouped_desc", "swiglu_grouped_buffer_sizes",
    "swiglu_grouped_expected_sizes",
]


class Arch(enum.IntEnum):
    """cake_arch_t: the architecture tables shipped in the library."""

    NONE = 0
    SM90 = 90
    SM100 = 100
    SM103 = 103
    SM107 = 107


class Family(enum.IntEnum):
    """cake_family_t: kernel families."""

    NORMGATE = 1
    SWIGLU_MXFP8 = 2
    SWIGLU_FP8 = 3


class Op(enum.IntEnum):
    """cake_op_t: operations within a family (numbers are reused across families, so the
    SWIGLU_* names with the values of NORMGATE_* names are aliases of them here)."""

    NORMGATE_FORWARD = 0
    NORMGATE_BACKWARD_DET = 1
    NORMGATE_BACKWARD_NONDET = 2
    SWIGLU_FORWARD_ROWWISE = 0
    SWIGLU_FORWARD_COLWISE = 1
    SWIGLU_FORWARD_BOTH = 2
    SWIGLU_BACKWARD_ROWWISE = 3
    SWIGLU_BACKWARD_COLWISE = 4
    SWIGLU_BACKWARD_BOTH = 5
    SWIGLU_GROUPED_FORWARD_ROWWISE = 6
    SWIGLU_GROUPED_FORWARD_COLWISE = 7
    SWIGLU_GROUPED_FORWARD_BOTH = 8
    SWIGLU_GROUPED_BACKWARD_ROWWISE = 9
    SWIGLU_GROUPED_BACKWARD_COLWISE = 10
    SWIGLU_GROUPED_BACKWARD_BOTH = 11


class DType(enum.IntEnum):
    """cake_dtype_t."""

    BF16 = 1
    F32 = 2
    F16 = 3

    @classmethod
    def parse(cls, value) -> "DType":
        """Accept a DType, its int value, or a dtype by name: "bf16" / "bfloat16", "f16" /
        "float16" / "half", "f32" / "float32" / "float", or any object whose str() or .name is
        one of these (torch.bfloat16, numpy.dtype("float16"), jax.numpy.float32)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                raise ValueError(f"dtype {value}: expected 1 (BF16), 2 (F32) or 3 (F16)") from None
        name = getattr(value, "name", None) if not isinstance(value, str) else value
        name = str(value if name is None or not isinstance(name, str) else name)
        key = name.lower().rsplit(".", 1)[-1]  # "torch.bfloat16" -> "bfloat16"
        found = _DTYPE_NAMES.get(key)
        if found is None:
            raise TypeError(f"dtype {value!r}: Cake takes bfloat16, float16 or float32")
        return found


class NormgatePackage(enum.IntEnum):
    """cake_normgate_package_t: how dw is reduced in the backward."""

    DETERMINISTIC = 0
    NONDETERMINISTIC = 1


class NormgateGate(enum.IntEnum):
    """cake_normgate_gate_t: the gate function a(z)."""

    SILU = 0  #: a(z) = z * sigmoid(z) (the default)
    SIGMOID = 1  #: a(z) = sigmoid(z)
    NONE = 2  #: no gate: y = rmsnorm_G(x) * w; z and dz are not used

    @classmethod
    def parse(cls, value) -> "NormgateGate":
        """Accept a NormgateGate, its int value, its name ("silu", "sigmoid", "none"), "swish"
        (another name of SiLU) or None (no gate)."""
        if value is None:
            return cls.NONE
        if isinstance(value, str):
            key = value.upper()
            if key == "SWISH":
                return cls.SILU
            try:
                return cls[key]
            except KeyError:
                raise ValueError(f"gate {value!r}: expected 'silu', 'sigmoid' or 'none'") from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"gate {value!r}: a NormgateGate, its name or its int value")
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"gate {value}: expected 0 (SILU), 1 (SIGMOID) or 2 (NONE)") from None


class NormgatePlacement(enum.IntEnum):
    """cake_normgate_placement_t: where the gate applies relative to the normalisation."""

    AFTER_NORM = 0  #: y = rmsnorm_G(x) * w * a(z) (the default)
    BEFORE_NORM = 1  #: y = rmsnorm_G(x * a(z)) * w


class NormgateFlags(enum.IntFlag):
    """cake_normgate_flags_t (backward)."""

    NONE = 0
    DW_ACCUMULATE = 1
    DW_SKIP = 2


class Orientation(enum.IntFlag):
    """cake_mxfp8_orientation_t."""

    ROWWISE = 1
    COLWISE = 2
    BOTH = 3

    @classmethod
    def parse(cls, value) -> "Orientation":
        """Accept an Orientation, its int value or its name ("rowwise", "colwise", "both")."""
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(
                    f"orientation {value!r}: expected 'rowwise', 'colwise' or 'both'"
                ) from None
        value = cls(int(value))
        if value not in (cls.ROWWISE, cls.COLWISE, cls.BOTH):
            raise ValueError(f"orientation {int(value)}: expected 1, 2 or 3")
        return value


_DTYPE_NAMES = {
    "bf16": DType.BF16, "bfloat16": DType.BF16,
    "f16": DType.F16, "fp16": DType.F16, "float16": DType.F16, "half": DType.F16,
    "f32": DType.F32, "fp32": DType.F32, "float32": DType.F32, "float": DType.F32,
}


def _str(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """cake_device_info, as Python values."""

    device_ordinal: int
    cc_major: int
    cc_minor: int
    sm_count: int
    routing_sm_count: int
    table: int
    jit: bool
    cross_check: bool
    program_count: int
    image: str
    device_name: str


@dataclasses.dataclass(frozen=True)
class ProgramInfo:
    """cake_program_info: which program a call runs, and why."""

    name: str
    kernel: str
    forced: bool
    threads: int
    ctas_per_sm: int
    grid: int
    metric: int
    metric_lo: int
    metric_hi: int

    @classmethod
    def _from(cls, s: _lib.ProgramInfoStruct) -> "ProgramInfo":
        return cls(_str(s.name), _str(s.kernel), bool(s.forced), s.threads, s.ctas_per_sm,
                   s.grid, s.metric, s.metric_lo, s.metric_hi)


@dataclasses.dataclass(frozen=True)
class SwigluMxfp8Sizes:
    """cake_swiglu_mxfp8_sizes: output buffer sizes of one SwiGLU + MXFP8 form."""

    out_cols: int
    q_bytes: int
    row_s_bytes: int
    col_s_bytes: int


class Fp8ScaleRule(enum.IntEnum):
    """cake_fp8_scale_rule_t: how an FP8 blockwise block's FP32 scale follows from its amax."""

    EXACT = 0  # s = amax / 448
    POW2 = 1   # s = 2^ceil(log2(amax / 448)), UE8M0-compatible

    @classmethod
    def parse(cls, value) -> "Fp8ScaleRule":
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                raise ValueError(f"scale rule {value!r}: 'exact' or 'pow2'") from None
        if isinstance(value, bool):
            return cls.POW2 if value else cls.EXACT
        return cls(value)


@dataclasses.dataclass(frozen=True)
class SwigluFp8Sizes:
    """cake_swiglu_fp8_sizes: output buffer sizes of one SwiGLU + FP8 blockwise form, and the
    MN-major scale strides (elements between scale columns)."""

    out_cols: int
    q_bytes: int
    row_s_bytes: int
    col_s_bytes: int
    row_s_stride: int
    col_s_stride: int


#: CAKE_SWIGLU_GROUPED_MAX_EXPERTS: the most experts a grouped SwiGLU call takes (0.4).
SWIGLU_GROUPED_MAX_EXPERTS = 1024


class GroupedOffsetsStatus(enum.IntFlag):
    """cake_swiglu_grouped_status_t: the bits a grouped call writes to its status word (0.4)."""

    OK = 0
    DECREASING = 1   # some offsets[e] < offsets[e-1], or offsets[0] < 0
    PAST_TOKENS = 2  # some offsets[e] > T


@dataclasses.dataclass(frozen=True)
class SwigluGroupedSizes:
    """cake_swiglu_grouped_sizes: output buffer sizes of one grouped SwiGLU form (either
    format), scales sized for every split of T rows into E experts (P padded scale rows)."""

    out_cols: int
    scale_rows: int
    q_bytes: int
    row_s_bytes: int
    col_s_bytes: int


class NormgateQuantFormat(enum.IntEnum):
    """cake_normgate_quant_format_t: the quantized form of a normgate forward's y (0.4)."""

    FP8_BLOCKWISE = 1  # E4M3 + FP32 scale per 128 columns, MN-major (F.scaled_mm BlockWise1x128)
    MXFP8 = 2          # E4M3 + E8M0 scale per 32 columns, swizzled 128x4

    @classmethod
    def parse(cls, value) -> "NormgateQuantFormat":
        if isinstance(value, str):
            names = {"fp8_blockwise": cls.FP8_BLOCKWISE, "fp8": cls.FP8_BLOCKWISE,
                     "blockwise": cls.FP8_BLOCKWISE, "mxfp8": cls.MXFP8}
            try:
                return names[value.lower()]
            except KeyError:
                raise ValueError(f"quantized y format {value!r}: 'fp8_blockwise' or 'mxfp8'") from None
        return cls(value)


@dataclasses.dataclass(frozen=True)
class NormgateQuantSizes:
    """cake_normgate_quant_sizes: the quantized matrix [q_rows, q_cols] = [rows / heads,
    heads * d], its E4M3 bytes, its scale bytes, scale columns and (FP8 blockwise) the MN-major
    scale stride (q_rows; 0 for MXFP8's swizzled layout)."""

    q_rows: int
    q_cols: int
    q_bytes: int
    s_bytes: int
    s_cols: int
    s_stride: int


@dataclasses.dataclass(frozen=True)
class TableProgram:
    """cake_table_program: one program of an architecture's table."""

    name: str
    kernel: str
    family: int
    op: int
    threads: int
    min_ctas_per_sm: int
    knobs: tuple
    # knobs 8..15 (swiglu_mxfp8: col_lanes, slot_cols, row_from_tile, variant, col_runs); zeros
    # from a 0.1 library
    knobs_ext: tuple = (0,) * 8


@dataclasses.dataclass(frozen=True)
class TableRoute:
    """cake_table_route: one route of a table (metric_hi -1: open)."""

    family: int
    op: int
    d: int
    metric_lo: int
    metric_hi: int
    program: str
    # A wave route (0.2; wave_rows 0: a plain route): rows in units of wave_rows over the SMs make
    # W waves; it needs waves_lo <= floor(100 W) < waves_hi and frac_lo <= floor(100 W) % 100 <= frac_hi.
    wave_rows: int = 0
    waves_lo: int = 0
    waves_hi: int = 0
    frac_lo: int = 0
    frac_hi: int = 0


# ---- library-level ---------------------------------------------------------------------
def _L() -> _lib.Library:
    return _lib.load()


def version() -> tuple[int, int, int]:
    """The run-time library's version as (major, minor, patch)."""
    v = _L().fn("cake_version")()
    return (v // 10000, v // 100 % 100, v % 100)


def version_tuple() -> tuple[int, int, int]:
    """Alias of version()."""
    return version()


def status_string(status: int) -> str:
    """The library's name of a status (e.g. "CAKE_STATUS_INVALID_ARGUMENT")."""
    return _L().status_name(int(status))


def last_error_message() -> str:
    """cake_last_error_message() of this thread."""
    return _L().message()


def library_path() -> str:
    """The path of the loaded libcake.so."""
    return _L().path


def has(function: str) -> bool:
    """Whether the loaded libcake.so exports C function @p function (e.g. "cake_normgate_backward")."""
    return _L().has(function)


def _table_counts(arch) -> tuple[int, int]:
    programs, routes = ctypes.c_int32(0), ctypes.c_int32(0)
    _L().call("cake_table_counts", int(arch), byref(programs), byref(routes))
    return programs.value, routes.value


def table_programs(arch) -> list[TableProgram]:
    """The programs of architecture table @p arch (cake.Arch.SM90, ...). Needs no device."""
    out = []
    for i in range(_table_counts(arch)[0]):
        s = _lib.TableProgramStruct()
        _L().call("cake_table_program_init", byref(s))
        _L().call("cake_table_program_get", int(arch), i, byref(s))
        fam = Family(s.family) if s.family in Family._value2member_map_ else s.family
        out.append(TableProgram(_str(s.name), _str(s.kernel), fam, s.op, s.threads,
                                s.min_ctas_per_sm, tuple(s.knobs), tuple(s.knobs_ext)))
    return out


def table_routes(arch) -> list[TableRoute]:
    """The routes of table @p arch, in the order the router tries them. Needs no device."""
    out = []
    for i in range(_table_counts(arch)[1]):
        s = _lib.TableRouteStruct()
        _L().call("cake_table_route_init", byref(s))
        _L().call("cake_table_route_get", int(arch), i, byref(s))
        fam = Family(s.family) if s.family in Family._value2member_map_ else s.family
        out.append(TableRoute(fam, s.op, s.d, s.metric_lo, s.metric_hi, _str(s.program),
                              s.wave_rows, s.waves_lo, s.waves_hi, s.frac_lo, s.frac_hi))
    return out


def _program(program: str | None):
    return None if program is None else program.encode("utf-8")


#: The descriptor fields added in 0.3 and their defaults (what an older library assumes).
_NORMGATE_03_DEFAULTS = {"gate": 0, "placement": 0, "group_size": 0, "x_dtype": 1, "z_dtype": 1,
                         "w_dtype": 1}


def _placement(placement, gate_before_norm) -> NormgatePlacement:
    if placement is not None:
        if isinstance(placement, str):
            try:
                p = NormgatePlacement[placement.upper()]
            except KeyError:
                raise ValueError(f"placement {placement!r}: expected 'after_norm' or "
                                 "'before_norm'") from None
        elif isinstance(placement, bool) or not isinstance(placement, int):
            raise TypeError(f"placement {placement!r}: a NormgatePlacement or its int value")
        else:
            try:
                p = NormgatePlacement(placement)
            except ValueError:
                raise ValueError(f"placement {placement}: expected 0 (AFTER_NORM) or 1 "
                                 "(BEFORE_NORM)") from None
        if gate_before_norm is not None and bool(gate_before_norm) != (
                p == NormgatePlacement.BEFORE_NORM):
            raise ValueError(f"placement {p.name} and gate_before_norm={gate_before_norm} "
                             "contradict each other; give one of them")
        return p
    if gate_before_norm is None:
        return NormgatePlacement.AFTER_NORM
    if not isinstance(gate_before_norm, bool):
        raise TypeError(f"gate_before_norm {gate_before_norm!r}: True or False")
    return NormgatePlacement.BEFORE_NORM if gate_before_norm else NormgatePlacement.AFTER_NORM


def _index(name: str, value) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} {value!r}: an integer")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} {value!r}: an integer") from None


def normgate_desc(
    rows: int,
    d: int,
    *,
    eps: float = 1e-6,
    x_stride: int = 0,
    z_stride: int = 0,
    y_stride: int = 0,
    dy_stride: int = 0,
    dx_stride: int = 0,
    dz_stride: int = 0,
    package: int = NormgatePackage.DETERMINISTIC,
    dw_dtype=DType.BF16,
    flags: int = 0,
    program: str | None = None,
    gate=NormgateGate.SILU,
    placement=None,
    gate_before_norm: bool | None = None,
    group_size: int | None = 0,
    x_dtype=DType.BF16,
    z_dtype=DType.BF16,
    w_dtype=DType.BF16,
) -> NormgateDesc:
    """A cake_normgate_desc initialised by cake_normgate_desc_init(), then these fields set.

    Strides are in elements between rows (0: packed). The returned struct keeps @p program alive.
    The variant (0.3):
      gate: NormgateGate, "silu" (also "swish"), "sigmoid", "none" (or None): a(z);
      placement (NormgatePlacement, "after_norm" / "before_norm") or gate_before_norm (bool):
        AFTER_NORM y = rmsnorm_G(x) * w * a(z), BEFORE_NORM y = rmsnorm_G(x * a(z)) * w;
      group_size: columns per mean-square group, 0 or None (or d) for the whole row;
      x_dtype (x, y, dy, dx), z_dtype (z, dz), w_dtype (w), dw_dtype: DType or a dtype name.
    A library older than these fields ignores them: a non-default value for one raises
    UnavailableError then, never a silently different computation.
    """
    desc = NormgateDesc()
    _L().call("cake_normgate_desc_init", byref(desc))
    desc.rows, desc.d, desc.eps = _index("rows", rows), _index("d", d), float(eps)
    desc.x_stride, desc.z_stride, desc.y_stride = int(x_stride), int(z_stride), int(y_stride)
    desc.dy_stride, desc.dx_stride, desc.dz_stride = int(dy_stride), int(dx_stride), int(dz_stride)
    desc.package, desc.dw_dtype, desc.flags = int(package), int(DType.parse(dw_dtype)), int(flags)
    desc.program = _program(program)
    group = 0 if group_size is None else _index("group_size", group_size)
    if not -(1 << 31) <= group < (1 << 31):
        raise ValueError(f"group_size {group}: out of the int32 range")
    fields = {
        "gate": int(NormgateGate.parse(gate)),
        "placement": int(_placement(placement, gate_before_norm)),
        "group_size": group,
        "x_dtype": int(DType.parse(x_dtype)),
        "z_dtype": int(DType.parse(z_dtype)),
        "w_dtype": int(DType.parse(w_dtype)),
    }
    for name, value in fields.items():
        field = getattr(NormgateDesc, name)
        if desc.struct_size < field.offset + field.size:
            if value != _NORMGATE_03_DEFAULTS[name]:
                raise UnavailableError("cake_normgate_desc_init", _L().path,
                                       f"cake_normgate_desc.{name}")
            continue  # the library does not read it; leave the zero ctypes gave it
        setattr(desc, name, value)
    return desc


def swiglu_mxfp8_desc(m: int, k: int, orientation=Orientation.ROWWISE,
                      program: str | None = None) -> SwigluMxfp8Desc:
    """A cake_swiglu_mxfp8_desc initialised by cake_swiglu_mxfp8_desc_init(), then these set."""
    desc = SwigluMxfp8Desc()
    _L().call("cake_swiglu_mxfp8_desc_init", byref(desc))
    desc.m, desc.k = int(m), int(k)
    desc.orientation = int(Orientation.parse(orientation))
    desc.program = _program(program)
    return desc


def swiglu_mxfp8_buffer_sizes(m: int, k: int, backward: bool = False,
                              orientation=Orientation.ROWWISE) -> SwigluMxfp8Sizes:
    """cake_swiglu_mxfp8_buffer_sizes(): output sizes of the forward (O = k) or backward (O = 2k).

    Needs no handle and no device."""
    desc = swiglu_mxfp8_desc(m, k, orientation)
    sizes = _lib.SwigluMxfp8SizesStruct()
    _L().call("cake_swiglu_mxfp8_sizes_init", byref(sizes))
    _L().call("cake_swiglu_mxfp8_buffer_sizes", byref(desc), 1 if backward else 0, byref(sizes))
    return SwigluMxfp8Sizes(sizes.out_cols, sizes.q_bytes, sizes.row_s_bytes, sizes.col_s_bytes)


def swiglu_mxfp8_expected_sizes(m: int, k: int, backward: bool = False) -> SwigluMxfp8Sizes:
    """The sizes the spec defines (docs/spec/swiglu-mxfp8.md, Layouts), computed here without the
    library: used for shape inference (fake tensors) where no call may be made."""
    o = 2 * k if backward else k

    def padded(r, c):
        return ((r + 127) // 128 * 128) * ((c + 3) // 4 * 4)

    return SwigluMxfp8Sizes(o, m * o, padded(m, o // 32), padded(o, m // 32))


def swiglu_fp8_desc(m: int, k: int, orientation=Orientation.ROWWISE, scale_rule=Fp8ScaleRule.EXACT,
                    program: str | None = None) -> SwigluFp8Desc:
    """A cake_swiglu_fp8_desc initialised by cake_swiglu_fp8_desc_init(), then these set."""
    desc = SwigluFp8Desc()
    _L().call("cake_swiglu_fp8_desc_init", byref(desc))
    desc.m, desc.k = int(m), int(k)
    desc.orientation = int(Orientation.parse(orientation))
    desc.scale_rule = int(Fp8ScaleRule.parse(scale_rule))
    desc.program = _program(program)
    return desc


def swiglu_fp8_buffer_sizes(m: int, k: int, backward: bool = False) -> SwigluFp8Sizes:
    """cake_swiglu_fp8_buffer_sizes(): output sizes and scale strides of the forward (O = k) or
    backward (O = 2k). Needs no handle and no device."""
    desc = swiglu_fp8_desc(m, k)
    sizes = _lib.SwigluFp8SizesStruct()
    _L().call("cake_swiglu_fp8_sizes_init", byref(sizes))
    _L().call("cake_swiglu_fp8_buffer_sizes", byref(desc), 1 if backward else 0, byref(sizes))
    return SwigluFp8Sizes(sizes.out_cols, sizes.q_bytes, sizes.row_s_bytes, sizes.col_s_bytes,
                          sizes.row_s_stride, sizes.col_s_stride)


def swiglu_fp8_expected_sizes(m: int, k: int, backward: bool = False) -> SwigluFp8Sizes:
    """The sizes the spec defines (docs/spec/fp8-blockwise.md, Layouts), computed without the
    library (shape inference for fake tensors)."""
    o = 2 * k if backward else k
    return SwigluFp8Sizes(o, m * o, 4 * m * (o // 128), 4 * o * ((m + 127) // 128), m, o)


def swiglu_mxfp8_grouped_desc(tokens: int, k: int, experts: int, orientation=Orientation.ROWWISE,
                              program: str | None = None) -> SwigluMxfp8GroupedDesc:
    """A cake_swiglu_mxfp8_grouped_desc initialised by its init function, then these set."""
    desc = SwigluMxfp8GroupedDesc()
    _L().call("cake_swiglu_mxfp8_grouped_desc_init", byref(desc))
    desc.tokens, desc.k, desc.experts = int(tokens), int(k), int(experts)
    desc.orientation = int(Orientation.parse(orientation))
    desc.program = _program(program)
    return desc


def swiglu_fp8_grouped_desc(tokens: int, k: int, experts: int, orientation=Orientation.ROWWISE,
                            scale_rule=Fp8ScaleRule.EXACT,
                            program: str | None = None) -> SwigluFp8GroupedDesc:
    """A cake_swiglu_fp8_grouped_desc initialised by its init function, then these set."""
    desc = SwigluFp8GroupedDesc()
    _L().call("cake_swiglu_fp8_grouped_desc_init", byref(desc))
    desc.tokens, desc.k, desc.experts = int(tokens), int(k), int(experts)
    desc.orientation = int(Orientation.parse(orientation))
    desc.scale_rule = int(Fp8ScaleRule.parse(scale_rule))
    desc.program = _program(program)
    return desc


def swiglu_grouped_buffer_sizes(tokens: int, k: int, experts: int, backward: bool = False,
                                format="mxfp8") -> SwigluGroupedSizes:
    """cake_swiglu_{mxfp8,fp8}_grouped_buffer_sizes(): output sizes of the grouped forward
    (O = k) or backward (O = 2k); format "mxfp8" or "fp8_blockwise". Needs no device."""
    fmt = NormgateQuantFormat.parse(format)
    sizes = _lib.SwigluGroupedSizesStruct()
    _L().call("cake_swiglu_grouped_sizes_init", byref(sizes))
    if fmt == NormgateQuantFormat.MXFP8:
        desc = swiglu_mxfp8_grouped_desc(tokens, k, experts)
        _L().call("cake_swiglu_mxfp8_grouped_buffer_sizes", byref(desc), 1 if backward else 0,
                  byref(sizes))
    else:
        desc = swiglu_fp8_grouped_desc(tokens, k, experts)
        _L().call("cake_swiglu_fp8_grouped_buffer_sizes", byref(desc), 1 if backward else 0,
                  byref(sizes))
    return SwigluGroupedSizes(sizes.out_cols, sizes.scale_rows, sizes.q_bytes, sizes.row_s_bytes,
                              sizes.col_s_bytes)


def swiglu_grouped_expected_sizes(tokens: int, k: int, experts: int, backward: bool = False,
                                  format="mxfp8") -> SwigluGroupedSizes:
    """The sizes the spec defines (docs/spec/swiglu-grouped.md, Layouts), computed without the
    library (shape inference for fake tensors)."""
    o = 2 * k if backward else k
    p = (tokens + 127 * min(experts, tokens)) // 128 * 128
    if NormgateQuantFormat.parse(format) == NormgateQuantFormat.MXFP8:
        return SwigluGroupedSizes(o, p, tokens * o, p * ((o // 32 + 3) // 4 * 4),
                                  (o + 127) // 128 * 128 * p // 32)
    return SwigluGroupedSizes(o, p, tokens * o, 4 * p * (o // 128), 4 * o * (p // 128))


def normgate_quant_desc(format=NormgateQuantFormat.FP8_BLOCKWISE, scale_rule=Fp8ScaleRule.EXACT,
                        heads: int = 0) -> NormgateQuantDesc:
    """A cake_normgate_quant_desc initialised by cake_normgate_quant_desc_init(), then these set
    (heads: normgate rows a row of the quantized matrix holds; 0 means 1)."""
    q = NormgateQuantDesc()
    _L().call("cake_normgate_quant_desc_init", byref(q))
    q.format = int(NormgateQuantFormat.parse(format))
    q.scale_rule = int(Fp8ScaleRule.parse(scale_rule))
    q.heads = int(heads)
    return q


def normgate_quant_buffer_sizes(desc: NormgateDesc, quant: NormgateQuantDesc) -> NormgateQuantSizes:
    """cake_normgate_quant_buffer_sizes(): the quantized output's sizes. Needs no device."""
    sizes = _lib.NormgateQuantSizesStruct()
    _L().call("cake_normgate_quant_sizes_init", byref(sizes))
    _L().call("cake_normgate_quant_buffer_sizes", byref(desc), byref(quant), byref(sizes))
    return NormgateQuantSizes(sizes.q_rows, sizes.q_cols, sizes.q_bytes, sizes.s_bytes,
                              sizes.s_cols, sizes.s_stride)


def normgate_quant_expected_sizes(rows: int, d: int, format=NormgateQuantFormat.FP8_BLOCKWISE,
                                  heads: int = 0) -> NormgateQuantSizes:
    """The sizes the spec defines (docs/spec/normgate.md, "Quantized y"), computed without the
    library (shape inference for fake tensors); the arguments are assumed valid."""
    h = max(1, int(heads))
    t, k = int(rows) // h, h * int(d)
    if NormgateQuantFormat.parse(format) == NormgateQuantFormat.FP8_BLOCKWISE:
        return NormgateQuantSizes(t, k, rows * d, 4 * t * (k // 128), k // 128, t)
    c = k // 32
    return NormgateQuantSizes(t, k, rows * d, (t + 127) // 128 * 128 * ((c + 3) // 4 * 4), c, 0)


# ---- handles -------------------------------------------------------------------------------
def _ptr(value) -> int | None:
    """A device pointer argument: int address, None (NULL), or an object with data_ptr()."""
    if value is None:
        return None
    if hasattr(value, "data_ptr"):
        return value.data_ptr() or None
    return int(value) or None


def _stream(stream) -> int | None:
    if stream is None:
        return None
    for attr in ("cuda_stream", "handle", "ptr"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr)) or None
    return int(stream) or None


class Handle:
    """A Cake handle: one device, its primary context, the loaded program table.

    Use as a context manager or call close(). Device pointers are ints (or objects with
    data_ptr()); streams are ints (CUstream / cudaStream_t), None for the legacy default
    stream, or objects with a `cuda_stream` attribute (torch.cuda.Stream).
    """

    def __init__(self, device: int = 0, *, table: int | None = None, sm_count: int = 0,
                 options: _lib.HandleOptions | None = None):
        self._lib = _L()
        self._h = _lib.c_handle()
        self.device = int(device)
        if options is None and (table is not None or sm_count):
            options = _lib.HandleOptions()
            self._lib.call("cake_handle_options_init", byref(options))
            options.table = int(table or 0)
            options.sm_count = int(sm_count)
        if options is None:
            self._lib.call("cake_create", byref(self._h), self.device)
        else:
            self._lib.call("cake_create_ex", byref(self._h), self.device, byref(options))

    @property
    def ptr(self) -> int:
        """The cake_handle_t as an int (0 once closed)."""
        return self._h.value or 0

    def _live(self):
        return self._h  # a NULL handle reaches the library, which answers INVALID_HANDLE

    def close(self) -> None:
        """cake_destroy(); the handle is unusable afterwards. Idempotent."""
        if self._h.value:
            h, self._h = self._h, _lib.c_handle()
            self._lib.call("cake_destroy", h)

    def __enter__(self) -> "Handle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None and self._h.value and not sys.is_finalizing():
            try:
                self.close()
            except Exception:  # noqa: BLE001 - never raise from a finaliser
                pass

    def __repr__(self) -> str:
        return f"cake.Handle(device={self.device}, ptr={self.ptr:#x})"

    # -- queries -------------------------------------------------------------------------
    def device_info(self) -> DeviceInfo:
        s = _lib.DeviceInfoStruct()
        self._lib.call("cake_device_info_init", byref(s))
        self._lib.call("cake_device_query", self._live(), byref(s))
        return DeviceInfo(s.device_ordinal, s.cc_major, s.cc_minor, s.sm_count,
                          s.routing_sm_count, s.table, bool(s.jit), bool(s.cross_check),
                          s.program_count, _str(s.image), _str(s.device_name))

    def programs(self) -> list[str]:
        """Names of the programs in this handle's table."""
        n = self._lib.fn("cake_program_count")(self._live())
        if n < 0:
            raise InvalidHandleError(Status.INVALID_HANDLE, "CAKE_STATUS_INVALID_HANDLE",
                                     "handle: not a live Cake handle", "cake_program_count")
        name = self._lib.fn("cake_program_name")
        return [_str(name(self._live(), i)) for i in range(n)]

    def _info(self, fn: str, *args) -> ProgramInfo:
        s = _lib.ProgramInfoStruct()
        self._lib.call("cake_program_info_init", byref(s))
        self._lib.call(fn, self._live(), *args, byref(s))
        return ProgramInfo._from(s)

    # -- normgate ------------------------------------------------------------------------
    def normgate_forward(self, desc: NormgateDesc, x, z, w, y, rstd=None, stream=None) -> None:
        """cake_normgate_forward(): y = rmsnorm_G(x) * w * a(z), or rmsnorm_G(x * a(z)) * w,
        as the descriptor's gate, placement and group_size say (default: the whole row, SiLU,
        gate after the norm), in x_dtype with one rounding. Asynchronous."""
        self._lib.call("cake_normgate_forward", self._live(), byref(desc), _ptr(x), _ptr(z),
                       _ptr(w), _ptr(y), _ptr(rstd), _stream(stream))

    def normgate_forward_query(self, desc: NormgateDesc) -> ProgramInfo:
        return self._info("cake_normgate_forward_query", byref(desc))

    def normgate_forward_quantized(self, desc: NormgateDesc, quant: NormgateQuantDesc, x, z, w,
                                   q, q_scale, y=None, rstd=None, stream=None) -> None:
        """cake_normgate_forward_quantized() (0.4): the default form's y, quantized by @p quant
        into q (E4M3) and q_scale; the BF16 y too when @p y is given. Asynchronous."""
        self._lib.call("cake_normgate_forward_quantized", self._live(), byref(desc), byref(quant),
                       _ptr(x), _ptr(z), _ptr(w), _ptr(y), _ptr(rstd), _ptr(q), _ptr(q_scale),
                       _stream(stream))

    def normgate_forward_quantized_query(self, desc: NormgateDesc,
                                         quant: NormgateQuantDesc) -> ProgramInfo:
        return self._info("cake_normgate_forward_quantized_query", byref(desc), byref(quant))

    def normgate_workspace_size(self, desc: NormgateDesc) -> int:
        """Bytes of (zero-filled) workspace normgate_backward() needs for @p desc."""
        n = c_size_t(0)
        self._lib.call("cake_normgate_workspace_size", self._live(), byref(desc), byref(n))
        return n.value

    def normgate_backward(self, desc: NormgateDesc, dy, x, z, w, dx, dz, dw, workspace=None,
                          workspace_bytes: int = 0, stream=None) -> None:
        """cake_normgate_backward(): dx, dz, dw from dy, x, z, w. Asynchronous."""
        self._lib.call("cake_normgate_backward", self._live(), byref(desc), _ptr(dy), _ptr(x),
                       _ptr(z), _ptr(w), _ptr(dx), _ptr(dz), _ptr(dw), _ptr(workspace),
                       int(workspace_bytes), _stream(stream))

    def normgate_backward_query(self, desc: NormgateDesc) -> ProgramInfo:
        return self._info("cake_normgate_backward_query", byref(desc))

    # -- swiglu + mxfp8 ------------------------------------------------------------------
    def swiglu_mxfp8_forward(self, desc: SwigluMxfp8Desc, inp, row_q=None, row_s=None,
                             col_q=None, col_s=None, stream=None) -> None:
        """cake_swiglu_mxfp8_forward(). Asynchronous."""
        self._lib.call("cake_swiglu_mxfp8_forward", self._live(), byref(desc), _ptr(inp),
                       _ptr(row_q), _ptr(row_s), _ptr(col_q), _ptr(col_s), _stream(stream))

    def swiglu_mxfp8_backward(self, desc: SwigluMxfp8Desc, inp, grad, row_q=None, row_s=None,
                              col_q=None, col_s=None, stream=None) -> None:
        """cake_swiglu_mxfp8_backward(). Asynchronous."""
        self._lib.call("cake_swiglu_mxfp8_backward", self._live(), byref(desc), _ptr(inp),
                       _ptr(grad), _ptr(row_q), _ptr(row_s), _ptr(col_q), _ptr(col_s),
                       _stream(stream))

    def swiglu_mxfp8_query(self, desc: SwigluMxfp8Desc, backward: bool = False) -> ProgramInfo:
        return self._info("cake_swiglu_mxfp8_query", byref(desc), 1 if backward else 0)

    # -- swiglu + fp8 blockwise (0.4) ----------------------------------------------------
    def swiglu_fp8_forward(self, desc: SwigluFp8Desc, inp, row_q=None, row_s=None, col_q=None,
                           col_s=None, stream=None) -> None:
        """cake_swiglu_fp8_forward(). Asynchronous."""
        self._lib.call("cake_swiglu_fp8_forward", self._live(), byref(desc), _ptr(inp),
                       _ptr(row_q), _ptr(row_s), _ptr(col_q), _ptr(col_s), _stream(stream))

    def swiglu_fp8_backward(self, desc: SwigluFp8Desc, inp, grad, row_q=None, row_s=None,
                            col_q=None, col_s=None, stream=None) -> None:
        """cake_swiglu_fp8_backward(). Asynchronous."""
        self._lib.call("cake_swiglu_fp8_backward", self._live(), byref(desc), _ptr(inp),
                       _ptr(grad), _ptr(row_q), _ptr(row_s), _ptr(col_q), _ptr(col_s),
                       _stream(stream))

    def swiglu_fp8_query(self, desc: SwigluFp8Desc, backward: bool = False) -> ProgramInfo:
        return self._info("cake_swiglu_fp8_query", byref(desc), 1 if backward else 0)

    # -- grouped swiglu, both formats (0.4) ----------------------------------------------
    def swiglu_grouped_forward(self, desc, inp, offsets, row_q=None, row_s=None, col_q=None,
                               col_s=None, status=None, stream=None) -> None:
        """cake_swiglu_mxfp8_grouped_forward() or cake_swiglu_fp8_grouped_forward() (by the
        descriptor's type). offsets: the device int32 [E] end rows. Asynchronous."""
        name = "cake_swiglu_fp8_grouped_forward" if isinstance(desc, SwigluFp8GroupedDesc) \
            else "cake_swiglu_mxfp8_grouped_forward"
        self._lib.call(name, self._live(), byref(desc), _ptr(inp), _ptr(offsets), _ptr(row_q),
                       _ptr(row_s), _ptr(col_q), _ptr(col_s), _ptr(status), _stream(stream))

    def swiglu_grouped_backward(self, desc, inp, grad, offsets, row_q=None, row_s=None,
                                col_q=None, col_s=None, status=None, stream=None) -> None:
        """cake_swiglu_mxfp8_grouped_backward() or cake_swiglu_fp8_grouped_backward().
        Asynchronous."""
        name = "cake_swiglu_fp8_grouped_backward" if isinstance(desc, SwigluFp8GroupedDesc) \
            else "cake_swiglu_mxfp8_grouped_backward"
        self._lib.call(name, self._live(), byref(desc), _ptr(inp), _ptr(grad), _ptr(offsets),
                       _ptr(row_q), _ptr(row_s), _ptr(col_q), _ptr(col_s), _ptr(status),
                       _stream(stream))

    def swiglu_grouped_query(self, desc, backward: bool = False) -> ProgramInfo:
        name = "cake_swiglu_fp8_grouped_query" if isinstance(desc, SwigluFp8GroupedDesc) \
            else "cake_swiglu_mxfp8_grouped_query"
        return self._info(name, byref(desc), 1 if backward else 0)

