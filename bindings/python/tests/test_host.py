"""Host-only tests of the Python binding: they need libcake.so but no GPU and no driver."""

import os
import re
import shutil
import subprocess
import sys
import threading

import pytest

import cake
import cake._lib as L
from conftest import HEADER, REPO, require_symbols


def header_functions(text):
    return re.findall(r"CAKE_API\s+[^;(]*?\b(cake_\w+)\s*\(", text)


def header_enum(text, prefix):
    return {m.group(1): int(m.group(2)) for m in re.finditer(rf"\b{prefix}(\w+)\s*=\s*(\d+)", text)}


# ---- loading and version -------------------------------------------------------------------
def test_library_loads(lib):
    assert lib.path.endswith((".so", ".so.0")) or ".so." in lib.path
    assert cake.library_path() == lib.path


def test_library_from_env(monkeypatch, lib, tmp_path):
    monkeypatch.setenv("CAKE_LIBRARY", lib.path)
    assert L.library_candidates() == [lib.path]
    monkeypatch.setenv("CAKE_LIBRARY", str(tmp_path))
    assert L.library_candidates() == [str(tmp_path / "libcake.so.0"), str(tmp_path / "libcake.so")]


def test_version_matches_header(header_text):
    want = tuple(int(re.search(rf"#define CAKE_VERSION_{p} (\d+)", header_text).group(1))
                 for p in ("MAJOR", "MINOR", "PATCH"))
    assert cake.version() == want
    assert cake.__version__ == "%d.%d.%d" % want


# ---- the whole ABI is declared -------------------------------------------------------------
def test_every_header_function_is_declared(header_text):
    declared = header_functions(header_text)
    assert len(declared) >= 24
    assert sorted(declared) == sorted(L.FUNCTIONS), "cake.h and cake/_lib.py FUNCTIONS differ"


def test_exported_functions_have_prototypes(lib):
    for name in L.FUNCTIONS:
        if lib.has(name):
            fn = lib.fn(name)
            assert fn.argtypes is not None and fn.restype is not None, name
        else:
            with pytest.raises(cake.UnavailableError, match=name):
                lib.fn(name)


def test_enums_match_header(header_text):
    assert header_enum(header_text, "CAKE_STATUS_") == {s.name: s.value for s in cake.Status}
    assert header_enum(header_text, "CAKE_ARCH_") == {a.name: a.value for a in cake.Arch}
    assert header_enum(header_text, "CAKE_DTYPE_") == {t.name: t.value for t in cake.DType}
    assert header_enum(header_text, "CAKE_FAMILY_") == {f.name: f.value for f in cake.Family}
    assert header_enum(header_text, "CAKE_OP_") == {n: o.value for n, o in cake.Op.__members__.items()}
    assert header_enum(header_text, "CAKE_NORMGATE_") == {
        **{p.name: p.value for p in cake.NormgatePackage},
        **{n: f.value for n, f in cake.NormgateFlags.__members__.items() if f.value},
        **{f"GATE_{g.name}": g.value for g in cake.NormgateGate},
        **{f"GATE_{p.name}": p.value for p in cake.NormgatePlacement},
        **{f"QUANT_{f.name}": f.value for f in cake.NormgateQuantFormat},
    }
    assert header_enum(header_text, "CAKE_MXFP8_") == {
        n: o.value for n, o in cake.Orientation.__members__.items()}


def test_struct_layouts_match_c_compiler(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler to compare struct layouts with")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "cake.h"', "int main(void) {"]
    for cname, st in L.STRUCTS.items():
        lines.append(f'  printf("{cname} . %zu\\n", sizeof({cname}));')
        for field, _ in st._fields_:
            lines.append(f'  printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
    lines += ["  return 0;", "}"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c99", "-DCAKE_EXPERIMENTAL_API", "-I", str(REPO / "include"), str(src), "-o", str(exe)],
                   check=True)
    got = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        s, f, v = line.split()
        got[(s, f)] = int(v)
    for cname, st in L.STRUCTS.items():
        assert got[(cname, ".")] == L.ctypes.sizeof(st), cname
        for field, _ in st._fields_:
            assert got[(cname, field)] == getattr(st, field).offset, f"{cname}.{field}"


# ---- statuses and exceptions ---------------------------------------------------------------
def test_status_strings(lib):
    for s in cake.Status:
        assert cake.status_string(s) == f"CAKE_STATUS_{s.name}"
    assert cake.status_string(9999) == "CAKE_STATUS_UNKNOWN"


def test_every_failing_status_has_its_own_exception():
    from cake.errors import ERROR_CLASSES, error_for

    classes = set()
    for s in cake.Status:
        if s == cake.Status.SUCCESS:
            continue
        err = error_for(s, f"CAKE_STATUS_{s.name}", "detail", "cake_x")
        assert type(err) is ERROR_CLASSES[s]
        assert isinstance(err, cake.CakeError)
        assert err.status == s and err.message == "detail" and err.function == "cake_x"
        assert f"CAKE_STATUS_{s.name}: detail" in str(err)
        classes.add(type(err))
    assert len(classes) == len(cake.Status) - 1
    unknown = error_for(77, "CAKE_STATUS_UNKNOWN", "m")
    assert type(unknown) is cake.CakeError and unknown.status == 77
    assert issubclass(cake.InvalidArgumentError, ValueError)
    assert issubclass(cake.ProgramNotFoundError, LookupError)


def test_init_null_raises_invalid_argument_with_message(lib):
    with pytest.raises(cake.InvalidArgumentError) as e:
        lib.call("cake_normgate_desc_init", None)
    assert e.value.message == "desc: must not be NULL"
    assert e.value.function == "cake_normgate_desc_init"
    assert e.value.status == cake.Status.INVALID_ARGUMENT


def test_bad_handle_options_raise_before_the_driver():
    with pytest.raises(cake.InvalidArgumentError, match=r"options.sm_count = -1: must be >= 0"):
        cake.Handle(0, sm_count=-1)
    with pytest.raises(cake.InvalidArgumentError, match=r"options.table = 55"):
        cake.Handle(0, table=55)
    opts = L.HandleOptions()
    opts.struct_size = 4
    with pytest.raises(cake.InvalidArgumentError, match="smaller than its first version"):
        cake.Handle(0, options=opts)


def test_create_without_gpu_or_with_one():
    try:
        h = cake.Handle(0)
    except (cake.DriverUnavailableError, cake.NoDeviceError, cake.ArchUnsupportedError) as e:
        assert e.message, "a failing create must say why"
        return
    with h:
        info = h.device_info()
        assert info.device_ordinal == 0 and info.sm_count > 0
        assert len(h.programs()) == info.program_count
    assert h.ptr == 0
    h.close()  # idempotent


def test_null_handle_calls_raise_invalid_handle():
    h = cake.Handle.__new__(cake.Handle)  # a Handle that holds NULL, as after close()
    h._lib, h._h, h.device = L.load(), L.c_handle(), 0
    desc = cake.normgate_desc(rows=16, d=128)
    with pytest.raises(cake.InvalidHandleError, match="handle: must not be NULL"):
        h.normgate_forward(desc, 16, 16, 16, 16)
    with pytest.raises(cake.InvalidHandleError):
        h.normgate_forward_query(desc)
    with pytest.raises(cake.InvalidHandleError):
        h.device_info()
    with pytest.raises(cake.InvalidHandleError):
        h.programs()


def test_normgate_backward_null_handle():
    require_symbols("cake_normgate_workspace_size", "cake_normgate_backward")
    h = cake.Handle.__new__(cake.Handle)
    h._lib, h._h, h.device = L.load(), L.c_handle(), 0
    desc = cake.normgate_desc(rows=16, d=128, package=cake.NormgatePackage.NONDETERMINISTIC)
    with pytest.raises(cake.InvalidHandleError, match="handle"):
        h.normgate_workspace_size(desc)
    with pytest.raises(cake.InvalidHandleError, match="handle"):
        h.normgate_backward(desc, 16, 16, 16, 16, 16, 16, 16)


def test_messages_are_per_thread(lib):
    seen = {}

    def fail(name):
        try:
            lib.call("cake_program_info_init", None)
        except cake.InvalidArgumentError as e:
            seen[name] = e.message

    t = threading.Thread(target=fail, args=("t",))
    t.start()
    t.join()
    assert seen["t"] == "info: must not be NULL"
    lib.call("cake_normgate_desc_init", L.ctypes.byref(L.NormgateDesc()))
    assert cake.last_error_message() == ""


def test_normgate_desc_defaults_and_fields():
    d = cake.normgate_desc(rows=7, d=64, eps=1e-5, z_stride=128, program="sm90.x")
    assert d.struct_size == L.ctypes.sizeof(L.NormgateDesc)
    assert (d.rows, d.d, d.z_stride, d.x_stride) == (7, 64, 128, 0)
    assert abs(d.eps - 1e-5) < 1e-12
    assert d.package == cake.NormgatePackage.DETERMINISTIC and d.dw_dtype == cake.DType.BF16
    assert d.program == b"sm90.x"
    assert cake.normgate_desc(rows=1, d=8).eps == pytest.approx(1e-6)


def test_normgate_desc_layout_of_the_variant_fields():
    # The offsets cake.h documents for the fields added in 0.3 (the C-compiler test above
    # checks every field against the header itself; this pins the documented numbers).
    st = L.NormgateDesc
    assert L.ctypes.sizeof(st) == 120
    assert [(f, getattr(st, f).offset) for f in ("gate", "placement", "group_size", "x_dtype",
                                                  "z_dtype", "w_dtype")] == [
        ("gate", 96), ("placement", 100), ("group_size", 104), ("x_dtype", 108),
        ("z_dtype", 112), ("w_dtype", 116)]


def test_normgate_desc_variant_defaults_come_from_the_library():
    raw = L.NormgateDesc()
    L.load().call("cake_normgate_desc_init", L.ctypes.byref(raw))
    if raw.struct_size < 120:
        pytest.skip(f"{L.load().path} predates the 0.3 descriptor fields")
    assert (raw.gate, raw.placement, raw.group_size) == (0, 0, 0)
    assert (raw.x_dtype, raw.z_dtype, raw.w_dtype) == (1, 1, 1)
    d = cake.normgate_desc(rows=4, d=128)
    assert d.struct_size == 120
    assert (d.gate, d.placement, d.group_size) == (cake.NormgateGate.SILU,
                                                   cake.NormgatePlacement.AFTER_NORM, 0)
    assert (d.x_dtype, d.z_dtype, d.w_dtype, d.dw_dtype) == (cake.DType.BF16,) * 4


def test_normgate_desc_variant_fields():
    if L.ctypes.sizeof(L.NormgateDesc) > cake.normgate_desc(rows=1, d=8).struct_size:
        pytest.skip("the loaded library predates the 0.3 descriptor fields")
    d = cake.normgate_desc(rows=4, d=128, gate="sigmoid", gate_before_norm=True, group_size=64,
                           x_dtype="float16", z_dtype=cake.DType.F32, w_dtype=3,
                           dw_dtype="f16")
    assert (d.gate, d.placement, d.group_size) == (1, 1, 64)
    assert (d.x_dtype, d.z_dtype, d.w_dtype, d.dw_dtype) == (3, 2, 3, 3)
    assert cake.normgate_desc(rows=1, d=8, gate=None).gate == cake.NormgateGate.NONE
    assert cake.normgate_desc(rows=1, d=8, gate="swish").gate == cake.NormgateGate.SILU
    assert cake.normgate_desc(rows=1, d=8, gate="NONE").gate == cake.NormgateGate.NONE
    assert cake.normgate_desc(rows=1, d=8, gate=cake.NormgateGate.SIGMOID).gate == 1
    assert cake.normgate_desc(rows=1, d=8, placement="before_norm").placement == 1
    assert cake.normgate_desc(rows=1, d=8, placement=cake.NormgatePlacement.BEFORE_NORM,
                              gate_before_norm=True).placement == 1
    assert cake.normgate_desc(rows=1, d=8, gate_before_norm=False).placement == 0
    assert cake.normgate_desc(rows=1, d=8, group_size=None).group_size == 0
    # dtypes by the names other stacks print them with
    assert cake.DType.parse("torch.bfloat16") == cake.DType.BF16
    assert cake.DType.parse("half") == cake.DType.F16
    assert cake.DType.parse(type("NumpyLike", (), {"name": "float32"})()) == cake.DType.F32


@pytest.mark.parametrize("kwargs, error, match", [
    ({"gate": "relu"}, ValueError, "gate 'relu'"),
    ({"gate": 7}, ValueError, "gate 7"),
    ({"gate": 1.0}, TypeError, "gate 1.0"),
    ({"gate": True}, TypeError, "gate True"),
    ({"placement": "middle"}, ValueError, "placement 'middle'"),
    ({"placement": 2}, ValueError, "placement 2"),
    ({"placement": 1, "gate_before_norm": False}, ValueError, "contradict"),
    ({"placement": "after_norm", "gate_before_norm": True}, ValueError, "contradict"),
    ({"gate_before_norm": 1}, TypeError, "gate_before_norm 1"),
    ({"group_size": 64.0}, TypeError, "group_size 64.0"),
    ({"group_size": 1 << 40}, ValueError, "int32"),
    ({"x_dtype": "float64"}, TypeError, "float64"),
    ({"z_dtype": 9}, ValueError, "dtype 9"),
    ({"w_dtype": "int8"}, TypeError, "int8"),
    ({"dw_dtype": "fp8"}, TypeError, "fp8"),
])
def test_normgate_desc_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        cake.normgate_desc(rows=4, d=128, **kwargs)


def test_normgate_desc_refuses_variant_fields_an_older_library_ignores(monkeypatch):
    real = L.load()

    class Older:
        """The loaded library, with the cake_normgate_desc_init() of a 0.2 build (the struct
        ended at program: 96 bytes)."""

        path = "libcake-0.2.so"

        def call(self, name, *args):
            real.call(name, *args)
            if name == "cake_normgate_desc_init":
                args[0]._obj.struct_size = L.NormgateDesc.gate.offset

    monkeypatch.setattr(cake, "_L", lambda: Older())
    d = cake.normgate_desc(rows=4, d=128, gate="silu", gate_before_norm=False, group_size=0,
                           x_dtype="bf16")  # defaults only: fine, nothing is dropped
    assert d.struct_size == 96
    for kwargs, field in (({"gate": "sigmoid"}, "gate"), ({"gate_before_norm": True}, "placement"),
                          ({"group_size": 64}, "group_size"), ({"x_dtype": "f32"}, "x_dtype"),
                          ({"z_dtype": "f16"}, "z_dtype"), ({"w_dtype": "f32"}, "w_dtype")):
        with pytest.raises(cake.UnavailableError, match=rf"predates cake_normgate_desc\.{field}"):
            cake.normgate_desc(rows=4, d=128, **kwargs)


def test_program_tables_without_a_device():
    require_symbols("cake_table_counts", "cake_table_program_get", "cake_table_route_get")
    for arch in (cake.Arch.SM90, cake.Arch.SM100, cake.Arch.SM103, cake.Arch.SM107):
        programs = cake.table_programs(arch)
        routes = cake.table_routes(arch)
        assert programs and routes, arch
        names = {p.name for p in programs}
        assert len(names) == len(programs)
        assert all(r.program in names for r in routes), arch
        assert all(p.family in (cake.Family.NORMGATE, cake.Family.SWIGLU_MXFP8,
                                cake.Family.SWIGLU_FP8) for p in programs)
        assert all(len(p.knobs) == 8 and len(p.knobs_ext) == 8 for p in programs)
    lanes = {p.name: p.knobs_ext[0] for p in cake.table_programs(cake.Arch.SM90)}
    assert lanes["sm90.sw_fwd_both_st2_128x128w_p2"] == 8  # col_lanes, the ninth knob
    assert lanes["sm90.sw_fwd_row_st2_r8"] == 0
    slots = {p.name: p.knobs_ext[1] for p in cake.table_programs(cake.Arch.SM90)}
    assert slots["sm90.sw_bwd_row_t32s8"] == 8  # slot_cols, the tenth knob
    assert slots["sm90.sw_bwd_col_t32"] == 0
    late = {p.name: p.knobs_ext[2] for p in cake.table_programs(cake.Arch.SM90)}
    assert late["sm90.sw_bwd_both_t32s8r"] == 1  # row_from_tile, the eleventh knob
    waves = [r for r in cake.table_routes(cake.Arch.SM90) if r.wave_rows]
    assert sorted((r.d, r.wave_rows, r.program) for r in waves) == [
        (64, 128, "sm90.ng_bwd_det_d64_ct_t512p4"), (64, 128, "sm90.ng_bwd_nd_d64_t512p4"),
        (128, 64, "sm90.ng_bwd_det_d128_ct_t512p4"), (128, 64, "sm90.ng_bwd_nd_d128_t512p4"),
        (256, 32, "sm90.ng_bwd_det_d256_ct_t512p4")]
    assert all((r.waves_lo, r.waves_hi, r.frac_lo, r.frac_hi) == (200, 500, 15, 50) for r in waves)
    with pytest.raises(cake.InvalidArgumentError) as e:
        cake.table_programs(55)
    assert e.value.message


def test_orientation_parse():
    assert cake.Orientation.parse("both") == cake.Orientation.BOTH
    assert cake.Orientation.parse(2) == cake.Orientation.COLWISE
    with pytest.raises(ValueError):
        cake.Orientation.parse("diagonal")


# ---- SwiGLU + MXFP8 sizes (no handle needed) -----------------------------------------------
def test_swiglu_sizes_spec_example():
    # docs/spec/swiglu-mxfp8.md: M=256, K=512 forward.
    s = cake.swiglu_mxfp8_expected_sizes(256, 512)
    assert (s.out_cols, s.q_bytes, s.row_s_bytes, s.col_s_bytes) == (512, 256 * 512, 4096, 4096)
    b = cake.swiglu_mxfp8_expected_sizes(128, 128, backward=True)
    assert (b.out_cols, b.q_bytes) == (256, 128 * 256)
    assert b.row_s_bytes == 128 * 8 and b.col_s_bytes == 256 * 4


def test_swiglu_buffer_sizes_match_the_spec():
    require_symbols("cake_swiglu_mxfp8_desc_init", "cake_swiglu_mxfp8_sizes_init",
                    "cake_swiglu_mxfp8_buffer_sizes")
    for m in (128, 256, 384, 1024, 32, 96, 544):  # multiples of 32: padded scale tiles
        for k in (128, 256, 640, 7168, 32, 160):
            for bwd in (False, True):
                got = cake.swiglu_mxfp8_buffer_sizes(m, k, bwd, "both")
                assert got == cake.swiglu_mxfp8_expected_sizes(m, k, bwd), (m, k, bwd)


def test_swiglu_grouped_sizes_match_the_spec():
    require_symbols("cake_swiglu_grouped_sizes_init", "cake_swiglu_mxfp8_grouped_buffer_sizes",
                    "cake_swiglu_fp8_grouped_buffer_sizes")
    # docs/spec/swiglu-grouped.md's examples: P = 512 for both.
    s = cake.swiglu_grouped_buffer_sizes(256, 64, 3)
    assert (s.scale_rows, s.row_s_bytes, s.col_s_bytes) == (512, 512 * 4, 128 * 512 // 32)
    f = cake.swiglu_grouped_buffer_sizes(330, 256, 2, format="fp8_blockwise")
    assert (f.scale_rows, f.q_bytes, f.row_s_bytes, f.col_s_bytes) == (512, 330 * 256, 4096, 4096)
    for fmt, ks in (("mxfp8", (32, 160, 2048)), ("fp8_blockwise", (128, 384, 7168))):
        for t in (1, 33, 16384):
            for e in (1, 8, 256, cake.SWIGLU_GROUPED_MAX_EXPERTS):
                for k in ks:
                    for bwd in (False, True):
                        got = cake.swiglu_grouped_buffer_sizes(t, k, e, bwd, fmt)
                        want = cake.swiglu_grouped_expected_sizes(t, k, e, bwd, fmt)
                        assert got == want, (fmt, t, k, e, bwd)
    with pytest.raises(cake.UnsupportedShapeError):
        cake.swiglu_grouped_buffer_sizes(256, 64, cake.SWIGLU_GROUPED_MAX_EXPERTS + 1)
    with pytest.raises(cake.UnsupportedShapeError):
        cake.swiglu_grouped_buffer_sizes(256, 64, 4, format="fp8_blockwise")
    with pytest.raises(cake.InvalidArgumentError):
        cake.swiglu_grouped_buffer_sizes(0, 64, 4)


def test_swiglu_buffer_sizes_validation():
    require_symbols("cake_swiglu_mxfp8_desc_init", "cake_swiglu_mxfp8_sizes_init",
                    "cake_swiglu_mxfp8_buffer_sizes")
    for m, k in ((100, 128), (128, 100), (0, 128), (-128, 128)):
        with pytest.raises((cake.UnsupportedShapeError, cake.InvalidArgumentError)) as e:
            cake.swiglu_mxfp8_buffer_sizes(m, k)
        assert e.value.message, "validation failures carry a message"
    with pytest.raises(cake.CakeError):
        cake.swiglu_mxfp8_buffer_sizes(1 << 40, 1 << 40, True)  # bytes overflow 64 bits


def test_swiglu_null_handle():
    require_symbols("cake_swiglu_mxfp8_desc_init", "cake_swiglu_mxfp8_forward")
    h = cake.Handle.__new__(cake.Handle)
    h._lib, h._h, h.device = L.load(), L.c_handle(), 0
    desc = cake.swiglu_mxfp8_desc(128, 128)
    with pytest.raises(cake.InvalidHandleError):
        h.swiglu_mxfp8_forward(desc, 16, 16, 16)


def test_torch_layer_imports_without_gpu():
    torch = pytest.importorskip("torch")
    import cake.torch as ct

    assert hasattr(torch.ops.cake, "normgate_fwd") and hasattr(torch.ops.cake, "swiglu_mxfp8_fwd")
    assert ct.swizzled_scale_offsets(256, 16)[161, 300 // 32].item() == 3093
    assert ct.swizzled_scale_offsets(512, 8)[300, 200 // 32].item() == 2758


def _jaxlib_module():
    """bindings/jax/cake_jax/_jaxlib.py on its own (cake_jax's __init__ needs jax)."""
    import importlib.util

    path = REPO / "bindings" / "jax" / "cake_jax" / "_jaxlib.py"
    spec = importlib.util.spec_from_file_location("cake_jax_jaxlib_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_package_metadata():
    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^name = "cake-kernels"$', text, re.M)
    assert re.search(r'^version = "%s"' % re.escape(cake.__version__), text, re.M)
    assert HEADER.exists()
    # The [jax] extra declares the range the shim is built for, in both places alike.
    j = _jaxlib_module()
    extra = re.search(r"^jax = \[(.*)\]$", text, re.M).group(1)
    assert extra == f'"jax{j.REQUIREMENT}", "jaxlib{j.REQUIREMENT}"'
    assert j.in_range(j.BUILT_AGAINST)
    fetch = (REPO / "bindings" / "jax" / "fetch-headers.sh").read_text()
    assert f'version="${{1:-{j.BUILT_AGAINST}}}"' in fetch


def test_jaxlib_range():
    j = _jaxlib_module()
    assert j.in_range("0.11.2") and j.in_range("0.11.10")
    assert not j.in_range("0.11.1") and not j.in_range("0.12.0") and not j.in_range("0.12.0rc1")
    assert not j.in_range("1.0")


def test_candidates_name_only_existing_paths(monkeypatch):
    monkeypatch.delenv("CAKE_LIBRARY", raising=False)
    for c in L.library_candidates():
        assert "/" not in c or os.path.exists(c), c


def test_another_abi_is_refused_with_what_was_found(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    (tmp_path / "v.c").write_text("int cake_version(void) { return 10203; }\n")
    so = tmp_path / "libcake.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(tmp_path / "v.c")], check=True)
    code = "import cake; cake.version()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "CAKE_LIBRARY": str(so),
                            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode != 0
    assert "LibraryNotFoundError" in last and f"{so} is libcake 1.2.3 (ABI 1)" in last, last
    assert "needs ABI 0 (libcake.so.0" in last, last


def test_normgate_quant_sizes_match_the_spec():
    # [T, H, 128] heads as [T, H*128] (T = 100, H = 32), and MXFP8's padded swizzled matrix.
    for rows, d, fmt, heads in ((3200, 128, "fp8_blockwise", 32), (77, 256, "fp8", 0),
                                (77, 64, "mxfp8", 0), (300, 128, "mxfp8", 3), (10, 5120, "mxfp8", 1)):
        desc = cake.normgate_desc(rows=rows, d=d)
        got = cake.normgate_quant_buffer_sizes(desc, cake.normgate_quant_desc(fmt, heads=heads))
        assert got == cake.normgate_quant_expected_sizes(rows, d, fmt, heads), (rows, d, fmt)
    got = cake.normgate_quant_buffer_sizes(cake.normgate_desc(rows=3200, d=128),
                                           cake.normgate_quant_desc("fp8", heads=32))
    assert (got.q_rows, got.q_cols, got.s_cols, got.s_stride, got.s_bytes) == (100, 4096, 32, 100, 12800)


@pytest.mark.parametrize("d,fmt,heads,error,match", [
    (64, "fp8_blockwise", 0, cake.UnsupportedShapeError, "multiple of 128"),
    (48, "mxfp8", 0, cake.UnsupportedShapeError, "multiple of 32"),
    (96, "mxfp8", 2, cake.UnsupportedShapeError, "several heads"),
    (128, "fp8", 3, cake.InvalidArgumentError, "does not divide"),
])
def test_normgate_quant_validation(d, fmt, heads, error, match):
    desc = cake.normgate_desc(rows=64, d=d)
    with pytest.raises(error, match=match):
        cake.normgate_quant_buffer_sizes(desc, cake.normgate_quant_desc(fmt, heads=heads))
    with pytest.raises(ValueError, match="'fp8_blockwise' or 'mxfp8'"):
        cake.normgate_quant_desc("int8")
