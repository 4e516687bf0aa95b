"""cake_jax.normgate_fp8 (the norm-gate forward with quantized y) without a GPU: the library's
rules at trace time, the partitioned HLO on four forced CPU devices (the handlers registered for
the CPU platform, compiled, never run: see test_sharding_host.py), vmap, and the partitioning
and folding rules executed with a jnp stand-in for the kernel whose outputs probe the layouts.
Skips without jax or the shim."""

import re

import pytest

jax = pytest.importorskip("jax")
try:
    import cake_jax
except (ImportError, OSError) as e:  # no shim built here, or no jaxlib of the shim's range
    pytest.skip(f"cake_jax not importable: {e}", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import cake  # noqa: E402
from conftest import register_cpu_handlers  # noqa: E402

if len(jax.devices("cpu")) < 4:
    pytest.skip("needs 4 CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4 "
                "before jax is imported)", allow_module_level=True)
if not cake_jax.has_op("normgate_fwd_quant"):
    pytest.skip("libcake.so or libcake_jax.so predates the quantized norm-gate forward",
                allow_module_level=True)

register_cpu_handlers(cake_jax)
BF16 = jnp.bfloat16
TARGET = "cake_normgate_fwd_quant"
# mesh (Auto and Explicit axes) and auto_mesh: four CPU devices on one axis (conftest.py).


def arg(shape, mesh=None, *spec, dtype=BF16):
    if mesh is None:
        return jax.ShapeDtypeStruct(shape, dtype)
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, P(*spec)))


def quant_call(text):
    (line,) = [l for l in text.splitlines() if f'custom_call_target="{TARGET}"' in l]
    return line


def collectives(text):
    return re.findall(r"\b(all-gather|all-to-all|all-reduce|collective-permute|reduce-scatter)"
                      r"(?:-start)?\(", text)


def fp8(fmt="fp8_blockwise", **kw):
    return lambda x, z, w: cake_jax.normgate_fp8(x, z, w, format=fmt, **kw)


# ---- trace-time checks: the library's rules and words -----------------------------------------
@pytest.mark.parametrize("shape,kw,error,words", [
    ((4, 64), {}, cake.UnsupportedShapeError,
     "desc->d = 64: FP8 blockwise y needs a multiple of 128"),
    ((4, 48), {"format": "mxfp8"}, cake.UnsupportedShapeError,
     "desc->d = 48: MXFP8 y needs a multiple of 32"),
    ((8, 64), {"format": "mxfp8", "heads": 2}, cake.UnsupportedShapeError,
     "MXFP8 y of several heads needs d a multiple of 128"),
    ((8, 128), {"heads": 3}, cake.InvalidArgumentError, "quant->heads = 3: does not divide"),
    ((8, 128), {"heads": -1}, cake.InvalidArgumentError, "quant->heads = -1"),
    ((4, 12), {}, cake.UnsupportedShapeError, "desc->d = 12"),
    ((4, 128), {"eps": -1.0}, cake.InvalidArgumentError, "desc->eps"),
    ((4, 128), {"scale_rule": "floor"}, ValueError, "'exact' or 'pow2'"),
    ((4, 128), {"format": "nvfp4"}, ValueError, "'fp8_blockwise' or 'mxfp8'"),
])
def test_trace_time_errors(shape, kw, error, words):
    x, w = arg(shape), arg(shape[-1:])
    with pytest.raises(error, match=re.escape(words)):
        jax.jit(lambda x, w: cake_jax.normgate_fp8(x, x, w, **kw)).lower(x, w)


@pytest.mark.parametrize("dtypes", [(jnp.float16, BF16, BF16), (BF16, jnp.float32, BF16),
                                    (BF16, BF16, jnp.float32)])
def test_the_default_form_only(dtypes):
    x, z, w = arg((4, 128), dtype=dtypes[0]), arg((4, 128), dtype=dtypes[1]), \
        arg((128,), dtype=dtypes[2])
    with pytest.raises(cake.InvalidArgumentError, match="serves the default form only"):
        jax.jit(fp8()).lower(x, z, w)
    with pytest.raises(ValueError, match="z is required"):
        cake_jax.normgate_fp8(x, None, w)
    with pytest.raises(ValueError, match="must be one shape"):
        jax.jit(fp8()).lower(arg((4, 128)), arg((8, 128)), arg((128,)))


# ---- shapes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,heads,q,fp8_s,mx_s", [
    ((512, 8, 128), None, (512, 1024), (8, 512), 512 * 32),  # [T, H, d]: heads H
    ((2, 96, 4, 256), None, (2, 96, 1024), (8, 2, 96), 256 * 32),  # [B, S, H, d]
    ((300, 128), None, (300, 128), (1, 300), 384 * 4),  # heads 1: x's shape
    ((512, 128), 4, (128, 512), (4, 128), 128 * 16),  # [rows, d] viewed [T, 4, d]
    ((0, 4, 128), None, (0, 512), (4, 0), 0),  # no rows: no call
])
def test_output_shapes(shape, heads, q, fp8_s, mx_s):
    x, w = arg(shape), arg(shape[-1:])
    for fmt, s_shape, s_dtype in (("fp8_blockwise", fp8_s, jnp.float32),
                                  ("mxfp8", (mx_s,), jnp.uint8)):
        out = jax.eval_shape(lambda x, w: cake_jax.normgate_fp8(
            x, x, w, format=fmt, heads=heads, return_y=True), x, w)
        assert out.q.shape == q and out.q.dtype == jnp.float8_e4m3fn
        assert out.q_scale.shape == s_shape and out.q_scale.dtype == s_dtype
        assert out.y.shape == shape and out.y.dtype == BF16
        sizes = cake.normgate_quant_expected_sizes(int(np.prod(shape[:-1])), shape[-1], fmt,
                                                   heads or (shape[-2] if len(shape) >= 3 else 1))
        assert int(np.prod(q)) == sizes.q_bytes
        assert int(np.prod(s_shape)) * jnp.dtype(s_dtype).itemsize == sizes.s_bytes
    assert jax.eval_shape(fp8(), x, x, w).y is None


# ---- partitioned HLO: rows stay where they are --------------------------------------------------
@pytest.mark.parametrize("fmt", ["fp8_blockwise", "mxfp8"])
@pytest.mark.parametrize("return_y", [False, True])
def test_rows_sharded_run_locally(mesh, fmt, return_y):
    x, w = arg((512, 8, 128), mesh, "r", None, None), arg((128,), mesh)
    c = jax.jit(fp8(fmt, return_y=return_y)).lower(x, x, w).compile()
    text = c.as_text()
    line = quant_call(text)
    assert "f8e4m3fn[128,1024]" in line  # each device: its 128 tokens
    assert ("f32[8,128]" if fmt == "fp8_blockwise" else "u8[4096]") in line
    assert ("bf16[128,8,128]" in line.split("custom-call")[0]) == return_y
    assert collectives(text) == []
    out = c.output_shardings
    assert out.q.spec == P("r")
    assert out.q_scale.spec == (P(None, "r") if fmt == "fp8_blockwise" else P("r"))
    if return_y:
        assert out.y.spec == P("r")


def test_fp8_blockwise_any_leading_dimension_shards(mesh):
    # [B, S, H, d] sharded on the sequence: q [B, S/4, K], scales [K/128, B, S/4] a device.
    x, w = arg((2, 96, 4, 256), mesh, None, "r", None, None), arg((256,), mesh)
    c = jax.jit(fp8(return_y=True)).lower(x, x, w).compile()
    text = c.as_text()
    line = quant_call(text)
    assert "f8e4m3fn[2,24,1024]" in line and "f32[8,2,24]" in line
    assert collectives(text) == []
    assert c.output_shardings.q_scale.spec == P(None, None, "r")


def test_heads_given_for_two_dimensional_rows(mesh):
    x, w = arg((4096, 128), mesh, "r", None), arg((128,), mesh)
    for fmt, s in (("fp8_blockwise", "f32[8,128]"), ("mxfp8", "u8[4096]")):
        text = jax.jit(fp8(fmt, heads=8)).lower(x, x, w).compile().as_text()
        line = quant_call(text)
        assert "f8e4m3fn[128,1024]" in line and s in line
        assert collectives(text) == []


def test_mxfp8_rows_not_in_whole_tiles_are_replicated(mesh):
    # 64 tokens a device: part of a 128-row scale tile, so each device quantizes all the rows.
    x, w = arg((256, 4, 128), mesh, "r", None, None), arg((128,), mesh)
    line = quant_call(jax.jit(fp8("mxfp8")).lower(x, x, w).compile().as_text())
    assert "f8e4m3fn[256,512]" in line
    line = quant_call(jax.jit(fp8()).lower(x, x, w).compile().as_text())
    assert "f8e4m3fn[64,512]" in line  # FP8 blockwise has no tile: any split


def test_column_sharded_input_reaches_the_kernel_whole(mesh):
    x, w = arg((512, 8, 128), mesh, None, "r", None), arg((128,), mesh)
    line = quant_call(jax.jit(fp8()).lower(x, x, w).compile().as_text())
    assert "f8e4m3fn[512,1024]" in line  # heads and columns replicated: whole rows


def test_vmap_folds_into_rows():
    x, w = arg((3, 256, 4, 128)), arg((128,))
    for fmt, s_shape in (("fp8_blockwise", (3, 4, 256)), ("mxfp8", (3, 256 * 16))):
        f = jax.vmap(lambda x: cake_jax.normgate_fp8(x, x, jnp.ones((128,), BF16), format=fmt))
        text = jax.jit(f).lower(x).as_text()
        assert text.count(TARGET) == 1 and "while" not in text
        out = jax.eval_shape(f, x)
        assert out.q.shape == (3, 256, 512) and out.q_scale.shape == s_shape
    # MXFP8 rows that are not whole tiles: one call per batch element.
    f = jax.vmap(lambda x: cake_jax.normgate_fp8(x, x, jnp.ones((128,), BF16), format="mxfp8"))
    assert "while" in jax.jit(f).lower(arg((3, 100, 4, 128))).as_text()


# ---- values: the rules executed with a jnp stand-in for the kernel -----------------------------
# Every output element is a function of the input row it belongs to, at the spec's offsets: q
# (t, k) of the [T, K] matrix, the FP8 blockwise scale of block j of row t at j * T + t, the MXFP8
# scale byte of (t, c) at its swizzled offset; y a function of x and w.
def _probe(x, z, w, results, heads, fmt, rule):
    (q_shape, _), (s_shape, s_dtype), (y_shape, y_dtype) = results
    d = x.shape[-1]
    t = x.size // d // heads
    vals = (x.astype(jnp.float32) + 2 * z.astype(jnp.float32)).reshape(t, heads * d) + rule
    q = (vals % 64).astype(jnp.float8_e4m3fn).reshape(q_shape)
    if fmt == int(cake.NormgateQuantFormat.FP8_BLOCKWISE):
        s = (vals[:, ::128].T * 3 + 0.5).reshape(s_shape)
    else:
        offs = cake_jax.swizzled_scale_offsets(t, heads * d // 32).reshape(-1)
        s = jnp.zeros(s_shape, s_dtype).at[offs].set(
            (vals[:, ::32] % 251).astype(jnp.uint8).reshape(-1))
    y = jnp.zeros(y_shape, y_dtype) if y_shape == (0,) else \
        (x.astype(jnp.float32) * w.astype(jnp.float32)).astype(y_dtype)
    return q, s, y


_real_ffi = cake_jax._ffi


def _ffi_stand_in(target, results, args, **attrs):
    if target != TARGET:
        return _real_ffi(target, results, args, **attrs)
    args, _ = cake_jax._match_varying(args)
    return _probe(*args, results, int(attrs["heads"]), int(attrs["format"]),
                  int(attrs["scale_rule"]))


@pytest.fixture
def stand_in(monkeypatch):
    cake_jax._normgate_quant_op.cache_clear()
    jax.clear_caches()
    monkeypatch.setattr(cake_jax, "_ffi", _ffi_stand_in)
    yield
    monkeypatch.undo()
    cake_jax._normgate_quant_op.cache_clear()
    jax.clear_caches()


def _bits(a):
    return np.asarray(a).view(np.uint8)


def _inputs(shape, seed):
    k = jax.random.split(jax.random.PRNGKey(seed), 3)
    x = jax.random.randint(k[0], shape, 0, 200).astype(BF16)
    z = jax.random.randint(k[1], shape, 0, 200).astype(BF16)
    w = jax.random.randint(k[2], shape[-1:], 1, 50).astype(BF16)
    return x, z, w


CASES = [  # shape, x's spec, heads, format
    ((512, 4, 128), ("r", None, None), None, "fp8_blockwise"),
    ((512, 4, 128), ("r", None, None), None, "mxfp8"),
    ((2, 64, 2, 256), (None, "r", None, None), None, "fp8_blockwise"),
    ((1024, 128), ("r", None), 2, "mxfp8"),
    ((256, 4, 128), ("r", None, None), None, "mxfp8"),  # not whole tiles: replicated rows
]


@pytest.mark.parametrize("shape,spec,heads,fmt", CASES)
def test_sharded_values_equal_unsharded(stand_in, auto_mesh, shape, spec, heads, fmt):
    x, z, w = _inputs(shape, 1)
    f = jax.jit(lambda x, z, w: cake_jax.normgate_fp8(x, z, w, format=fmt, scale_rule="pow2",
                                                      heads=heads, return_y=True))
    cpu0 = jax.devices("cpu")[0]
    plain = f(*(jax.device_put(a, cpu0) for a in (x, z, w)))
    rows = NamedSharding(auto_mesh, P(*spec))
    sharded = f(jax.device_put(x, rows), jax.device_put(z, rows),
                jax.device_put(w, NamedSharding(auto_mesh, P())))
    for a, b in zip(plain, sharded):
        assert a.shape == b.shape and (_bits(a) == _bits(b)).all()
    # The plain call's layout is the spec's: the storage [K/128, T] (or the swizzled bytes).
    h = heads or shape[-2]
    d = shape[-1]
    t = int(np.prod(shape[:-1])) // h
    vals = (x.astype(jnp.float32) + 2 * z.astype(jnp.float32)).reshape(t, h * d) + 1
    if fmt == "fp8_blockwise":
        want = vals[:, ::128].T * 3 + 0.5
        assert (_bits(plain.q_scale.reshape(h * d // 128, t)) == _bits(want)).all()
    else:
        offs = np.asarray(cake_jax.swizzled_scale_offsets(t, h * d // 32))
        got = np.asarray(plain.q_scale)[offs]
        assert (got == np.asarray((vals[:, ::32] % 251).astype(jnp.uint8))).all()


@pytest.mark.parametrize("fmt,rows", [("fp8_blockwise", 100), ("mxfp8", 256), ("mxfp8", 100)])
def test_vmap_fold_equals_per_element_calls(stand_in, fmt, rows):
    x, z, w = _inputs((3, rows, 2, 128), 2)
    cpu0 = jax.devices("cpu")[0]
    x, z, w = (jax.device_put(a, cpu0) for a in (x, z, w))
    f = lambda x, z: cake_jax.normgate_fp8(x, z, w, format=fmt, return_y=True)  # noqa: E731
    folded = jax.jit(jax.vmap(f))(x, z)
    for i in range(3):
        one = jax.jit(f)(x[i], z[i])
        for a, b in zip(one, folded):
            assert (_bits(a) == _bits(b[i])).all()


def test_shard_map_calls_the_kernel_per_shard(stand_in, auto_mesh):
    # Inside shard_map each device quantizes its own tokens: FP8 blockwise scales concatenate on
    # their rows' dimension into the unsharded call's.
    from jax import shard_map

    x, z, w = _inputs((512, 2, 128), 3)
    f = shard_map(lambda x, z, w: tuple(cake_jax.normgate_fp8(x, z, w)[:2]), mesh=auto_mesh,
                  in_specs=(P("r"), P("r"), P()), out_specs=(P("r"), P(None, "r")))
    rows = NamedSharding(auto_mesh, P("r"))
    q, s = jax.jit(f)(jax.device_put(x, rows), jax.device_put(z, rows),
                      jax.device_put(w, NamedSharding(auto_mesh, P())))
    cpu0 = jax.devices("cpu")[0]
    plain = jax.jit(fp8())(*(jax.device_put(a, cpu0) for a in (x, z, w)))
    assert (_bits(q) == _bits(plain.q)).all() and (_bits(s) == _bits(plain.q_scale)).all()
