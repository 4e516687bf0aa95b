"""cake_jax's grouped SwiGLU (cake_jax._grouped) without a GPU: the outputs' abstract shapes
against the library's buffer sizes, the lowering (the offsets an operand of the custom call, no
host read), the trace-time checks with Cake's words, the partitioning rule (replicated: a
row-sharded token buffer is gathered, every output replicated), vmap (mapped over the batch),
the custom_vjp's shapes and calls, and dequantize_grouped() on the spec's worked examples.
Compiles with the shim's handlers registered for the CPU platform (never run). Skips without
jax or the shim."""

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
from conftest import register_cpu_handlers, require_op  # noqa: E402

BF16 = jnp.bfloat16
I32 = jnp.int32
FORMATS = ["mxfp8", "fp8_blockwise"]
ORIENTS = ["rowwise", "colwise", "both"]


@pytest.fixture(autouse=True)
def _needs_ops():
    for op in ("swiglu_mxfp8_grouped_fwd", "swiglu_mxfp8_grouped_bwd", "swiglu_fp8_grouped_fwd",
               "swiglu_fp8_grouped_bwd"):
        require_op(op)


def call(fmt, orient, backward, **kw):
    if backward:
        return lambda a, g, o: cake_jax.swiglu_grouped_backward(a, g, o, fmt, orient, **kw)
    return lambda a, g, o: cake_jax.swiglu_grouped(a, o, fmt, orient, **kw)


def spec(t, k, e):
    return (jax.ShapeDtypeStruct((t, 2 * k), BF16), jax.ShapeDtypeStruct((t, k), BF16),
            jax.ShapeDtypeStruct((e,), I32))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("orient", ORIENTS)
@pytest.mark.parametrize("backward", [False, True])
def test_abstract_shapes_hold_the_library_sizes(fmt, orient, backward):
    t, k, e = 777, 256, 5
    out = jax.eval_shape(call(fmt, orient, backward), *spec(t, k, e))
    sizes = cake.swiglu_grouped_buffer_sizes(t, k, e, backward, fmt)
    o = sizes.out_cols
    row, col = orient != "colwise", orient != "rowwise"
    assert (out.row_q is not None) == row and (out.col_q is not None) == col
    assert out.status.shape == (1,) and out.status.dtype == I32
    scale = jnp.uint8 if fmt == "mxfp8" else jnp.float32
    if row:
        assert out.row_q.shape == (t, o) and out.row_q.dtype == jnp.float8_e4m3fn
        assert out.row_s.dtype == scale
        assert out.row_s.size * out.row_s.dtype.itemsize == sizes.row_s_bytes
    if col:
        assert out.col_q.dtype == jnp.float8_e4m3fn and out.col_q.size == sizes.q_bytes
        assert out.col_q.shape == ((o, t) if fmt == "mxfp8" else (t * o,))
        assert out.col_s.dtype == scale
        assert out.col_s.size * out.col_s.dtype.itemsize == sizes.col_s_bytes
    if fmt == "mxfp8" and row:
        assert out.row_s.shape == (sizes.scale_rows, (o + 127) // 128 * 4)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("backward", [False, True])
def test_lowering_passes_the_offsets_to_the_kernel(fmt, backward):
    # Abstract offsets: a host read of them would fail to trace.
    text = jax.jit(call(fmt, "both", backward)).lower(*spec(512, 128, 7)).as_text()
    name = "cake_swiglu_%s_grouped_%s" % ("mxfp8" if fmt == "mxfp8" else "fp8",
                                          "bwd" if backward else "fwd")
    lines = [l for l in text.splitlines() if name in l and "custom_call" in l]
    assert len(lines) == 1
    assert "tensor<7xi32>" in lines[0]
    assert "while" not in text


@pytest.mark.parametrize("t,k,e,fmt,error,words", [
    (128, 100, 4, "mxfp8", cake.UnsupportedShapeError, "desc->k = 100"),
    (128, 160, 4, "fp8_blockwise", cake.UnsupportedShapeError, "the 1x128 scale block"),
    (128, 128, 1025, "mxfp8", cake.UnsupportedShapeError, "desc->experts = 1025"),
    (128, 128, 0, "fp8_blockwise", cake.InvalidArgumentError, "experts >= 1"),
])
def test_trace_time_errors_carry_cakes_words(t, k, e, fmt, error, words):
    with pytest.raises(error, match=re.escape(words)):
        jax.jit(call(fmt, "rowwise", False)).lower(*spec(t, k, e))


def test_operand_errors():
    inp, grad, offs = spec(256, 128, 4)
    f = call("mxfp8", "rowwise", False)
    with pytest.raises(ValueError, match=re.escape("[T, 2k]")):
        jax.jit(f).lower(jax.ShapeDtypeStruct((256, 256), jnp.float32), grad, offs)
    with pytest.raises(ValueError, match="int32 \\[E\\]"):
        jax.jit(f).lower(inp, grad, jax.ShapeDtypeStruct((2, 2), I32))
    with pytest.raises(TypeError, match="int32 end rows"):
        jax.jit(f).lower(inp, grad, jax.ShapeDtypeStruct((4,), jnp.float32))
    with pytest.raises(ValueError, match=re.escape("[T, k] = [256, 128]")):
        jax.jit(call("mxfp8", "rowwise", True)).lower(
            inp, jax.ShapeDtypeStruct((256, 64), BF16), offs)
    with pytest.raises(ValueError, match="diagonal"):
        jax.jit(call("mxfp8", "diagonal", False)).lower(inp, grad, offs)
    with pytest.raises(ValueError, match="'exact' or 'pow2'"):
        jax.jit(call("fp8_blockwise", "rowwise", False, scale_rule="floor")).lower(inp, grad, offs)


# ---- partitioning and batching --------------------------------------------------------------
@pytest.fixture(scope="module")
def cpu_handlers():
    register_cpu_handlers(cake_jax)


def _calls(text, target):
    return [l for l in text.splitlines() if f'custom_call_target="{target}"' in l]


def _row_sharded(mesh, t, k, e):
    """in and grad sharded on rows over the mesh's four CPU devices, offsets replicated."""
    if len(jax.devices("cpu")) < 4:
        pytest.skip("needs 4 CPU devices")
    rows = NamedSharding(mesh, P("r", None))
    return (jax.ShapeDtypeStruct((t, 2 * k), BF16, sharding=rows),
            jax.ShapeDtypeStruct((t, k), BF16, sharding=rows),
            jax.ShapeDtypeStruct((e,), I32, sharding=NamedSharding(mesh, P())))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("backward", [False, True])
def test_row_sharded_tokens_are_replicated(cpu_handlers, mesh, fmt, backward):
    t, k, e = 1024, 256, 8
    inp, grad, offs = _row_sharded(mesh, t, k, e)
    target = "cake_swiglu_%s_grouped_%s" % ("mxfp8" if fmt == "mxfp8" else "fp8",
                                            "bwd" if backward else "fwd")
    line = _gathered_call(call(fmt, "both", backward), target, inp, grad, offs)
    assert f"bf16[{t},{2 * k}]" in line


def _gathered_call(fn, target, *args):
    """The custom call of @p target in fn's compiled program: XLA gathered the sharded rows
    first (an all-gather) and every output is replicated. Returns the call's line."""
    c = jax.jit(fn).lower(*args).compile()
    text = c.as_text()
    (line,) = _calls(text, target)
    assert "all-gather" in text
    for s in jax.tree_util.tree_leaves(c.output_shardings):
        assert s.is_fully_replicated
    return line


def test_vmap_maps_over_the_batch():
    inp = jax.ShapeDtypeStruct((3, 256, 256), BF16)
    offs = jax.ShapeDtypeStruct((3, 4), I32)
    f = jax.vmap(lambda a, o: cake_jax.swiglu_grouped(a, o, "fp8_blockwise", "both"))
    out = jax.eval_shape(f, inp, offs)
    one = jax.eval_shape(lambda a, o: cake_jax.swiglu_grouped(a, o, "fp8_blockwise", "both"),
                         jax.ShapeDtypeStruct((256, 256), BF16), jax.ShapeDtypeStruct((4,), I32))
    for a, b in zip(out, one):
        assert a.shape == (3,) + b.shape and a.dtype == b.dtype
    text = jax.jit(f).lower(inp, offs).as_text()
    assert "cake_swiglu_fp8_grouped_fwd" in text and "while" in text
    # Offsets shared by the batch are broadcast to it.
    f = jax.vmap(lambda a, o: cake_jax.swiglu_grouped(a, o, "mxfp8"), in_axes=(0, None))
    out = jax.eval_shape(f, inp, jax.ShapeDtypeStruct((4,), I32))
    assert out.row_q.shape == (3, 256, 128) and out.status.shape == (3, 1)


# ---- the custom_vjp --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("orient,bwd_orient", [("rowwise", "rowwise"), ("both", "colwise"),
                                               ("colwise", "both")])
def test_qdq_gradient_runs_the_grouped_backward(fmt, orient, bwd_orient):
    t, k, e = 384, 128, 3
    inp, _, offs = spec(t, k, e)

    def loss(a, o):
        y, g = cake_jax.swiglu_grouped_qdq(a, o, fmt, orient, bwd_orient)
        return y.astype(jnp.float32).sum()

    y, g = jax.eval_shape(lambda a, o: cake_jax.swiglu_grouped_qdq(a, o, fmt, orient), inp, offs)
    assert y.shape == (t, k) and y.dtype == BF16
    assert (g.row_q is None) == (orient == "colwise")
    d = jax.eval_shape(jax.grad(loss), inp, offs)
    assert d.shape == (t, 2 * k) and d.dtype == BF16
    text = jax.jit(jax.grad(loss)).lower(inp, offs).as_text()
    fam = "mxfp8" if fmt == "mxfp8" else "fp8"
    # The forward's outputs are not needed by the gradient (XLA drops that call); its residuals
    # are the inputs.
    assert f"cake_swiglu_{fam}_grouped_bwd" in text


# ---- dequantize_grouped on the spec's worked examples ----------------------------------------
def test_dequantize_fp8_reads_the_spec_offsets():
    # E = 2, offsets {200, 330}, T = 330, K = 256: token 250's rowwise scale of columns
    # 128..255 is row_s[692], its colwise scale at o = 7 is col_s[519], its col_q byte 52160.
    t, k = 330, 256
    sizes = cake.swiglu_grouped_expected_sizes(t, k, 2, False, "fp8_blockwise")
    one = jnp.ones((), jnp.float8_e4m3fn)
    row_s = jnp.ones((sizes.row_s_bytes // 4,), jnp.float32).at[692].set(4.0)
    col_s = jnp.ones((sizes.col_s_bytes // 4,), jnp.float32).at[519].set(8.0)
    col_q = jnp.full((t * k,), one).at[52160].set(jnp.asarray(2.0, jnp.float8_e4m3fn))
    g = cake_jax.GroupedArrays(jnp.full((t, k), one), row_s, col_q, col_s, jnp.zeros((1,), I32))
    offs = jnp.array([200, 330], I32)
    row = np.asarray(cake_jax.dequantize_grouped(g, offs, "fp8_blockwise"))
    assert row[250, 128:].tolist() == [4.0] * 128 and row[250, :128].tolist() == [1.0] * 128
    assert (row == 4.0).sum() == 128
    col = np.asarray(cake_jax.dequantize_grouped(g, offs, "fp8_blockwise", colwise=True))
    assert col[250, 7] == 16.0 and (col == 8.0).sum() + (col == 16.0).sum() == 128
    assert (col == 2.0).sum() == 0


def test_dequantize_mxfp8_reads_the_spec_offsets():
    # E = 3, offsets {33, 33, 200}, T = 256, K = 64: the colwise scale of token 100, o = 5 is
    # byte 594; rows 200..255 belong to no expert (0).
    t, k = 256, 64
    sizes = cake.swiglu_grouped_expected_sizes(t, k, 3, False, "mxfp8")
    one = jnp.ones((), jnp.float8_e4m3fn)
    col_s = jnp.full((sizes.col_s_bytes,), 127, jnp.uint8).at[594].set(129)
    row_s = jnp.full((sizes.row_s_bytes,), 127, jnp.uint8)
    g = cake_jax.GroupedArrays(jnp.full((t, k), one), row_s.reshape(sizes.scale_rows, -1),
                               jnp.full((k, t), one), col_s.reshape(128, -1),
                               jnp.zeros((1,), I32))
    offs = jnp.array([33, 33, 200], I32)
    col = np.asarray(cake_jax.dequantize_grouped(g, offs, "mxfp8", colwise=True))
    assert col[100, 5] == 4.0
    assert (col == 4.0).sum() == 32  # block 2 of expert 2: rows 97..128 of it
    assert (col[200:] == 0).all() and (col[:200][col[:200] != 4.0] == 1.0).all()
    row = np.asarray(cake_jax.dequantize_grouped(g, offs, "mxfp8"))
    assert (row[:200] == 1.0).all() and (row[200:] == 0).all()


def test_shard_map_is_expert_parallelism(cpu_handlers, mesh):
    # Each device its own token buffer and offsets: inside shard_map the call is the device's,
    # on its local rows, with no gather.
    from jax import shard_map

    if len(jax.devices("cpu")) < 4:
        pytest.skip("needs 4 CPU devices")
    t, k, e = 1024, 256, 8
    inp = jax.ShapeDtypeStruct((t, 2 * k), BF16, sharding=NamedSharding(mesh, P("r", None)))
    offs = jax.ShapeDtypeStruct((4 * e,), I32, sharding=NamedSharding(mesh, P("r")))

    def local(a, o):
        g = cake_jax.swiglu_grouped(a, o, "fp8_blockwise", "rowwise")
        return g.row_q, g.status

    f = shard_map(local, mesh=mesh, in_specs=(P("r", None), P("r")),
                  out_specs=(P("r", None), P("r")))
    text = jax.jit(f).lower(inp, offs).compile().as_text()
    (line,) = _calls(text, "cake_swiglu_fp8_grouped_fwd")
    assert f"bf16[{t // 4},{2 * k}]" in line and f"s32[{e}]" in line
    assert "all-gather" not in text


# ---- the variants ----------------------------------------------------------------------------
def _needs_grouped_variants():
    if not hasattr(cake_jax._shim, "cake_jax_swiglu_grouped_variants") or \
            not cake_jax._lib_swiglu_variants():
        pytest.skip("libcake_jax / libcake predate the grouped SwiGLU variants")


def _custom_calls(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return [line for line in text.splitlines() if "stablehlo.custom_call" in line]


@pytest.mark.parametrize("fmt,fam", [("mxfp8", "mxfp8"), ("fp8_blockwise", "fp8")])
def test_variant_calls_lower_to_the_grouped_variant_targets(fmt, fam):
    _needs_grouped_variants()
    inp, grad, offs = spec(384, 128, 3)
    prob = jax.ShapeDtypeStruct((384,), jnp.float32)
    (line,) = _custom_calls(lambda a, o, p: cake_jax.swiglu_grouped(
        a, o, fmt, "both", activation="clamped", alpha=1.5, limit=3.0, prob=p), inp, offs, prob)
    assert f"@cake_swiglu_{fam}_grouped_variant_fwd(%arg0, %arg1, %arg2)" in line
    assert "activation = 1 : i32" in line and "alpha = 1.500000e+00 : f32" in line
    assert "limit = 3.000000e+00 : f32" in line
    (line,) = _custom_calls(lambda a, g, o: cake_jax.swiglu_grouped_backward(
        a, g, o, fmt, activation="clamped"), inp, grad, offs)
    assert f"@cake_swiglu_{fam}_grouped_variant_bwd(%arg0, %arg1, %arg2)" in line  # no prob
    assert "limit = 7.000000e+00 : f32" in line  # gpt-oss's defaults
    (line,) = _custom_calls(lambda a, g, o, p: cake_jax.swiglu_grouped_backward(
        a, g, o, fmt, prob=p), inp, grad, offs, prob)
    assert f"@cake_swiglu_{fam}_grouped_variant_bwd(%arg0, %arg1, %arg2, %arg3)" in line
    assert "activation = 0 : i32" in line
    (line,) = _custom_calls(lambda a, o: cake_jax.swiglu_grouped(a, o, fmt), inp, offs)
    assert f"@cake_swiglu_{fam}_grouped_fwd(%arg0, %arg1)" in line and "activation" not in line


@pytest.mark.parametrize("prob_shape", [(384,), (384, 1)])
def test_grouped_weighted_backward_returns_dprob_in_probs_shape(prob_shape):
    _needs_grouped_variants()
    inp, grad, offs = spec(384, 128, 3)
    prob = jax.ShapeDtypeStruct(prob_shape, jnp.float32)
    for fmt in FORMATS:
        g, dp = jax.eval_shape(lambda a, d, o, p: cake_jax.swiglu_grouped_backward(
            a, d, o, fmt, "both", prob=p), inp, grad, offs, prob)
        assert g.row_q.shape == (384, 256) and g.status.shape == (1,)
        assert dp.shape == prob_shape and dp.dtype == jnp.float32


@pytest.mark.parametrize("kw,error,words", [
    ({"activation": "gelu"}, ValueError, "activation 'gelu': 'silu' or 'clamped'"),
    ({"prob": (383,)}, ValueError, "prob (383,) float32 must be float32 [m] or [m, 1] with "
     "m = 384"),
    ({"activation": "clamped", "limit": 0.0}, cake.InvalidArgumentError,
     "desc->variant.limit = 0: the clamped activation needs a limit > 0 (not NaN)"),
    ({"activation": "clamped", "alpha": float("inf")}, cake.InvalidArgumentError,
     "desc->variant.alpha = inf"),
])
def test_grouped_variant_trace_time_errors(kw, error, words):
    _needs_grouped_variants()
    inp, _, offs = spec(384, 128, 3)
    shape = kw.pop("prob", None)
    prob = None if shape is None else jax.ShapeDtypeStruct(shape, jnp.float32)
    for fmt in FORMATS:
        with pytest.raises(error, match=re.escape(words)):
            jax.jit(lambda a, o, p: cake_jax.swiglu_grouped(a, o, fmt, prob=p, **kw)).lower(
                inp, offs, prob)


def test_grouped_variant_is_replicated_under_a_mesh(cpu_handlers, mesh):
    # prob is replicated with the tokens (the offsets index the whole buffer).
    _needs_grouped_variants()
    t, k, e = 1024, 256, 8
    inp, grad, offs = _row_sharded(mesh, t, k, e)
    prob = jax.ShapeDtypeStruct((t,), jnp.float32, sharding=NamedSharding(mesh, P("r")))
    fn = lambda a, d, o, p: cake_jax.swiglu_grouped_backward(  # noqa: E731
        a, d, o, "mxfp8", "both", prob=p)
    line = _gathered_call(fn, "cake_swiglu_mxfp8_grouped_variant_bwd", inp, grad, offs, prob)
    assert f"bf16[{t},{2 * k}]" in line and f"f32[{t}]" in line  # the whole buffer and prob


@pytest.mark.parametrize("fmt", FORMATS)
def test_qdq_variant_gives_probs_cotangent(fmt):
    _needs_grouped_variants()
    t, k, e = 384, 128, 3
    inp, _, offs = spec(t, k, e)
    prob = jax.ShapeDtypeStruct((t, 1), jnp.float32)

    def loss(a, o, p):
        y, _ = cake_jax.swiglu_grouped_qdq(a, o, fmt, activation="clamped", prob=p)
        return y.astype(jnp.float32).sum()

    da, dp = jax.eval_shape(jax.grad(loss, (0, 2)), inp, offs, prob)
    assert da.shape == (t, 2 * k) and dp.shape == (t, 1) and dp.dtype == jnp.float32
    text = jax.jit(jax.grad(loss, (0, 2))).lower(inp, offs, prob).as_text()
    fam = "mxfp8" if fmt == "mxfp8" else "fp8"
    assert f"cake_swiglu_{fam}_grouped_variant_bwd" in text
