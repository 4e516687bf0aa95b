"""The partitioning and batching rules of cake_jax (cake_jax._partition), without a GPU.

Cake's custom calls are CUDA-only, and custom_partitioning partitions while XLA compiles; to see
the partitioned HLO here, the shim's handlers are also registered for the CPU platform (they are
never run: the programs are compiled, not executed) on four forced host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=4, set by conftest.py). The compiled HLO of
row-sharded calls must hold the custom call on the local rows and no all-gather or all-to-all;
the backward's only collective is dw's all-reduce (FP32). Skips without jax or the shim."""

import re

import pytest

jax = pytest.importorskip("jax")
try:
    import cake_jax
except (ImportError, OSError) as e:  # no shim built here, or no jaxlib of the shim's range
    pytest.skip(f"cake_jax not importable: {e}", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import cake  # noqa: E402

if len(jax.devices("cpu")) < 4:
    pytest.skip("needs 4 CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=4 "
                "before jax is imported)", allow_module_level=True)

from conftest import register_cpu_handlers  # noqa: E402

register_cpu_handlers(cake_jax)  # compile-only handlers for the CPU platform

BF16 = jnp.bfloat16


# The meshes: conftest.py's mesh (four CPU devices, Auto and Explicit axes) and auto_mesh.


@pytest.fixture(scope="module")
def mesh2():
    return jax.make_mesh((2, 2), ("dp", "sp"), devices=jax.devices("cpu")[:4])


def arg(shape, mesh, *spec, dtype=BF16):
    return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, P(*spec)))


def hlo(fn, *args):
    return jax.jit(fn).lower(*args).compile().as_text()


def calls(text, target):
    return [l for l in text.splitlines() if f'custom_call_target="{target}"' in l]


def collectives(text):
    return re.findall(r"\b(all-gather|all-to-all|all-reduce|collective-permute|reduce-scatter)"
                       r"(?:-start)?\(", text)


def local_shape(line):
    return re.search(r"= \(?(\w+\[[\d,]*\])", line).group(1)


@pytest.mark.parametrize("gated", [True, False])
def test_normgate_forward_rows_sharded_runs_locally(mesh, gated):
    x = arg((8, 16, 64), mesh, "r", None, None)
    w = arg((64,), mesh)
    f = (lambda x, z, w: cake_jax.normgate(x, z, w)) if gated else \
        (lambda x, z, w: cake_jax.normgate(x, None, w))
    text = hlo(f, x, x, w)
    (line,) = calls(text, "cake_normgate_fwd")
    assert local_shape(line) == "bf16[2,16,64]"
    assert collectives(text) == []


@pytest.mark.parametrize("spec", [(None, "r", None), ("r", None, None)])
def test_normgate_backward_sums_dw_once_in_fp32(mesh, spec):
    x = arg((8, 16, 64), mesh, *spec)
    w = arg((64,), mesh)
    loss = lambda x, z, w: cake_jax.normgate(x, z, w).astype(jnp.float32).sum()  # noqa: E731
    text = hlo(jax.grad(loss, argnums=(0, 1, 2)), x, x, w)
    (line,) = calls(text, "cake_normgate_bwd")
    assert "f32[64]" in line  # each device's dw in FP32
    local = "bf16[8,4,64]" if spec[1] == "r" else "bf16[2,16,64]"
    assert local in line
    assert collectives(text) == ["all-reduce"]
    assert re.search(r"f32\[64\]\{0\} all-reduce", text)


def test_normgate_backward_rows_follow_x_not_dy(mesh):
    # A replicated dy (a loss's broadcast) is sliced to x's rows; x is not gathered.
    x = arg((8, 64), mesh, "r", None)
    dy = arg((8, 64), mesh)
    w = arg((64,), mesh)
    text = hlo(lambda dy, x, w: cake_jax.normgate_backward(dy, x, x, w), dy, x, w)
    (line,) = calls(text, "cake_normgate_bwd")
    assert "bf16[2,64]" in line
    assert "all-gather" not in collectives(text)


def test_normgate_backward_without_gate(mesh):
    x = arg((8, 64), mesh, "r", None)
    w = arg((64,), mesh, dtype=jnp.float32)
    loss = lambda x, w: cake_jax.normgate(x, None, w).astype(jnp.float32).sum()  # noqa: E731
    text = hlo(jax.grad(loss, argnums=(0, 1)), x, w)
    (line,) = calls(text, "cake_normgate_bwd")
    assert "bf16[2,64]" in line and "f32[64]" in line
    assert collectives(text) == ["all-reduce"]


def test_normgate_backward_on_a_2d_mesh_sums_over_both_axes(mesh2):
    x = arg((8, 16, 64), mesh2, "dp", "sp", None)
    w = arg((64,), mesh2)
    loss = lambda x, w: cake_jax.normgate(x, x, w).astype(jnp.float32).sum()  # noqa: E731
    text = hlo(jax.grad(loss, argnums=(0, 1)), x, w)
    (line,) = calls(text, "cake_normgate_bwd")
    assert "bf16[4,8,64]" in line
    assert collectives(text) == ["all-reduce"]
    # One FP32 all-reduce over both axes (all four devices).
    (line,) = [l for l in text.splitlines() if "all-reduce(" in l]
    assert "f32[64]" in line and "{'dp','sp'}" in line


def test_shard_map_still_calls_the_kernel_per_shard(mesh):
    # Inside shard_map the operands are one device's already: the plain call, w's gradient
    # summed over the rows' axis (the binding's shard_map rule).
    from jax import shard_map

    x = arg((8, 64), mesh, "r", None)
    w = arg((64,), mesh)

    def loss(x, w):
        f = shard_map(lambda x, w: cake_jax.normgate(x, x, w), mesh=mesh,
                      in_specs=(P("r", None), P()), out_specs=P("r", None))
        return f(x, w).astype(jnp.float32).sum()

    text = hlo(jax.grad(loss, argnums=(0, 1)), x, w)
    assert "bf16[2,64]" in calls(text, "cake_normgate_bwd")[0]
    assert "all-gather" not in collectives(text)


def test_normgate_on_a_2d_mesh_rows_over_both_axes(mesh2):
    x = arg((8, 16, 64), mesh2, ("dp", "sp"), None, None)
    w = arg((64,), mesh2)
    text = hlo(lambda x, w: cake_jax.normgate(x, x, w), x, w)
    (line,) = calls(text, "cake_normgate_fwd")
    assert local_shape(line) == "bf16[2,16,64]"
    assert collectives(text) == []


def test_normgate_unsharded_dw_is_the_kernels(mesh):
    # Replicated rows: no psum, and the kernel writes dw in the asked dtype (the plain call).
    x = arg((8, 64), mesh)
    w = arg((64,), mesh)
    loss = lambda x, w: cake_jax.normgate(x, x, w).astype(jnp.float32).sum()  # noqa: E731
    text = hlo(jax.grad(loss, argnums=1), x, w)
    (line,) = calls(text, "cake_normgate_bwd")
    assert "bf16[64]" in line and "f32[64]" not in line
    assert collectives(text) == []


def test_column_sharded_input_is_replicated_on_columns_first(mesh):
    x = arg((8, 64), mesh, None, "r")
    w = arg((64,), mesh)
    text = hlo(lambda x, w: cake_jax.normgate(x, x, w), x, w)
    (line,) = calls(text, "cake_normgate_fwd")
    assert local_shape(line) == "bf16[8,64]"  # whole rows reach the kernel


@pytest.mark.parametrize("orient", ["rowwise", "colwise", "both"])
@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_rows_sharded_runs_locally(mesh, orient, backward):
    inp = arg((1024, 512), mesh, "r", None)
    grad = arg((1024, 256), mesh, "r", None)
    if backward:
        f = lambda a, g: cake_jax.swiglu_mxfp8_backward(a, g, orient)  # noqa: E731
        c = jax.jit(f).lower(inp, grad).compile()
    else:
        f = lambda a, g: cake_jax.swiglu_mxfp8(a, orient)  # noqa: E731
        c = jax.jit(f).lower(inp, grad).compile()
    text = c.as_text()
    target = "cake_swiglu_mxfp8_bwd" if backward else "cake_swiglu_mxfp8_fwd"
    (line,) = calls(text, target)
    o = 512 if backward else 256
    if orient != "colwise":
        assert f"f8e4m3fn[256,{o}]" in line
    if orient != "rowwise":
        assert f"f8e4m3fn[{o},256]" in line
    assert collectives(text) == []
    out = c.output_shardings
    if orient != "colwise":
        assert out.row_q.spec == P("r") and out.row_s.spec == P("r")
    if orient != "rowwise":
        assert out.col_q.spec == P(None, "r") and out.col_s.spec == P("r")


def test_swiglu_rows_not_in_whole_tiles_are_replicated(mesh):
    inp = arg((256, 512), mesh, "r", None)  # 64 rows per device: part of a 128-row tile
    text = hlo(lambda a: cake_jax.swiglu_mxfp8(a, "rowwise"), inp)
    (line,) = calls(text, "cake_swiglu_mxfp8_fwd")
    assert "f8e4m3fn[256,256]" in line


def test_colwise_scales_to_global_is_a_tile_permutation():
    tiles = jnp.repeat(jnp.arange(4), 512)
    glob = cake_jax.colwise_scales_to_global(tiles, 256, 256, 2).reshape(-1, 512)[:, 0]
    assert glob.tolist() == [0, 2, 1, 3]


# ---- vmap ------------------------------------------------------------------------------------
def test_vmap_folds_the_forward_into_rows():
    x = jax.ShapeDtypeStruct((5, 8, 64), BF16)
    w = jax.ShapeDtypeStruct((64,), BF16)
    f = jax.vmap(lambda x, w: cake_jax.normgate(x, x, w), in_axes=(0, None))
    text = jax.jit(f).lower(x, w).as_text()
    assert text.count("cake_normgate_fwd") == 1 and "while" not in text
    inp = jax.ShapeDtypeStruct((3, 256, 512), BF16)
    text = jax.jit(jax.vmap(lambda a: cake_jax.swiglu_mxfp8(a, "both"))).lower(inp).as_text()
    assert "cake_swiglu_mxfp8_fwd" in text and "while" not in text
    out = jax.eval_shape(jax.vmap(lambda a: cake_jax.swiglu_mxfp8(a, "both")), inp)
    assert out.row_q.shape == (3, 256, 256) and out.col_q.shape == (3, 256, 256)


def test_vmap_of_the_gradient_maps_the_backward():
    # Per-example gradients: each batch element's dw is its own, so the backward maps over the
    # batch (one kernel call per element) while the forward folds.
    x = jax.ShapeDtypeStruct((5, 8, 64), BF16)
    w = jax.ShapeDtypeStruct((64,), jnp.float32)
    loss = lambda x, w: cake_jax.normgate(x, x, w).astype(jnp.float32).sum()  # noqa: E731
    f = jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None))
    out = jax.eval_shape(f, x, w)
    assert out.shape == (5, 64) and out.dtype == jnp.float32
    text = jax.jit(f).lower(x, w).as_text()
    assert "cake_normgate_bwd" in text and "while" in text


def test_vmap_of_a_batched_w_maps_over_the_batch():
    x = jax.ShapeDtypeStruct((5, 8, 64), BF16)
    w = jax.ShapeDtypeStruct((5, 64), BF16)
    text = jax.jit(jax.vmap(lambda x, w: cake_jax.normgate(x, x, w))).lower(x, w).as_text()
    assert "cake_normgate_fwd" in text and "while" in text


# ---- trace-time checks -----------------------------------------------------------------------
@pytest.mark.parametrize("shape,kw,error,words", [
    ((4, 12), {}, cake.UnsupportedShapeError, "desc->d = 12"),
    ((4, 8200), {}, cake.UnsupportedShapeError, "desc->d = 8200"),
    ((4, 64), {"group_size": 12}, cake.UnsupportedShapeError, "group_size = 12"),
    ((4, 64), {"group_size": 48}, cake.UnsupportedShapeError, "group_size = 48"),
    ((4, 64), {"group_size": -8}, cake.InvalidArgumentError, "group_size = -8"),
    ((4, 64), {"eps": -1.0}, cake.InvalidArgumentError, "desc->eps"),
    ((4, 64), {"eps": float("nan")}, cake.InvalidArgumentError, "desc->eps"),
])
def test_normgate_trace_time_errors(shape, kw, error, words):
    x = jax.ShapeDtypeStruct(shape, BF16)
    w = jax.ShapeDtypeStruct(shape[-1:], BF16)
    with pytest.raises(error, match=re.escape(words)):
        jax.jit(lambda x, w: cake_jax.normgate(x, x, w, **kw)).lower(x, w)


@pytest.mark.parametrize("shape,error,words", [
    ((100, 192), cake.UnsupportedShapeError, "desc->m = 100"),
    ((128, 200), cake.UnsupportedShapeError, "desc->k = 100"),
    ((128, 48), cake.UnsupportedShapeError, "multiples of 32"),
    ((128, 255), ValueError, "[m, 2k]"),
])
def test_swiglu_trace_time_errors(shape, error, words):
    inp = jax.ShapeDtypeStruct(shape, BF16)
    with pytest.raises(error, match=re.escape(words)):
        jax.jit(lambda a: cake_jax.swiglu_mxfp8(a)).lower(inp)


# ---- the guide's training step (docs/distributed.md) -----------------------------------------
def _guide_blocks():
    from conftest import REPO

    text = (REPO / "docs" / "distributed.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_guides_training_step_compiles_without_gathers():
    ns = {}
    exec(compile(_guide_blocks()[0], "docs/distributed.md", "exec"), ns)  # defines train_step
    mesh, rows, whole = ns["mesh"], ns["rows"], ns["whole"]
    n = mesh.devices.size
    assert n == len(jax.devices())

    def a(shape, dtype, sharding):
        return jax.ShapeDtypeStruct(shape, dtype, sharding=sharding)

    x = a((8, 512, 1024), BF16, rows)
    params = {"w": a((1024,), jnp.float32, whole)}
    text = ns["train_step"].lower(params, x, x, a((8, 512, 1024), jnp.float32, rows)) \
        .compile().as_text()
    assert f"bf16[{8 // n},512,1024]" in calls(text, "cake_normgate_fwd")[0]
    assert f"bf16[{8 // n},512,1024]" in calls(text, "cake_normgate_bwd")[0]
    found = collectives(text)
    assert "all-gather" not in found and "all-to-all" not in found
    if n > 1:  # w's gradient, FP32 (XLA may combine it with the loss's into one all-reduce)
        assert [l for l in text.splitlines() if " all-reduce(" in l and "f32[1024]" in l]


# ---- values: the rules run on four CPU devices with a jnp stand-in for the kernels -------------
# The partition callbacks, psum, dtypes and layouts are executed for real; only the FFI call on
# one device's operands (cake_jax._ffi) is replaced by jnp code with the same contract: the
# norm-gate (SiLU gate after the norm, or none) in FP32, the SwiGLU + MXFP8 outputs as layout
# probes (every byte a function of the input row it belongs to, at the spec's swizzled offsets).
def _ng_ref(x, z, w, eps):
    xf = x.astype(jnp.float32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    y = y * w.astype(jnp.float32)
    if z is not None:
        zf = z.astype(jnp.float32)
        y = y * zf * jax.nn.sigmoid(zf)
    return y


def _swiglu_probe(inp, grad, orient, results):
    m, k2 = inp.shape
    backward = grad is not None
    o = k2 if backward else k2 // 2
    vals = inp.astype(jnp.float32)[:, :o] + (1.0 if backward else 0.0)
    out = [jnp.zeros(shape, dtype) for shape, dtype in results]  # the empty orientations
    if orient & 1:
        offs = cake_jax.swizzled_scale_offsets(m, o // 32).reshape(-1)
        out[0] = (vals % 64).astype(jnp.float8_e4m3fn)
        out[1] = out[1].at[offs].set((vals[:, ::32] % 251).astype(jnp.uint8).reshape(-1))
    if orient & 2:
        offs = cake_jax.swizzled_scale_offsets(o, m // 32).reshape(-1)
        out[2] = (vals.T % 64).astype(jnp.float8_e4m3fn)
        out[3] = out[3].at[offs].set(((vals.T[:, ::32] * 7) % 251).astype(jnp.uint8).reshape(-1))
    return out


def _swiglu_fp8_probe(inp, grad, orient, results, rule):
    # FP8 blockwise layouts: row_s [O/128, m] holds at (j, m) a function of row m's block j,
    # col_s [m/128, O] at (i, o) one of column o's block i (MN-major storage, one call's).
    m, k2 = inp.shape
    backward = grad is not None
    o = k2 if backward else k2 // 2
    vals = inp.astype(jnp.float32)[:, :o] + (1.0 if backward else 0.0) + rule
    out = [jnp.zeros(shape, dtype) for shape, dtype in results]
    if orient & 1:
        out[0] = (vals % 64).astype(jnp.float8_e4m3fn)
        out[1] = vals[:, ::128].T * 3 + 0.5
    if orient & 2:
        out[2] = (vals.T % 64).astype(jnp.float8_e4m3fn)
        out[3] = (vals[::128, :] * 5 + 0.25).reshape(m, o // 128)  # the op's [m, O/128] view
    return out


def _ffi_stand_in(target, results, args, **attrs):
    # As the real call: inside shard_map all operands vary over the same axes (else the jnp
    # code's implicit broadcast of w would transpose to a psum the kernel does not do).
    args, _ = cake_jax._match_varying(args)
    eps = float(attrs["eps"]) if "eps" in attrs else None
    if target == "cake_normgate_fwd":
        x, z, w = args
        z = None if z.size == 0 else z
        assert int(attrs.get("gate", 0)) == (0 if z is not None else 2)
        return (_ng_ref(x, z, w, eps).astype(x.dtype),)
    if target == "cake_normgate_bwd":
        dy, x, z, w = args
        z = None if z.size == 0 else z
        (_, _), (dz_shape, dz_dtype), (_, dw_dtype), (ws_shape, _) = results
        wf = w.astype(jnp.float32)  # dw summed in FP32 and rounded once, as the kernel does
        if z is None:
            _, vjp = jax.vjp(lambda x, w: _ng_ref(x, None, w, eps), x, wf)
            dx, dw = vjp(dy.astype(jnp.float32))
            dz = jnp.zeros(dz_shape, dz_dtype)
        else:
            _, vjp = jax.vjp(lambda x, z, w: _ng_ref(x, z, w, eps), x, z, wf)
            dx, dz, dw = vjp(dy.astype(jnp.float32))
        return (dx.astype(x.dtype), dz.astype(dz_dtype), dw.astype(dw_dtype),
                jnp.zeros(ws_shape, jnp.uint8))
    orient = int(attrs["orientation"])
    if target.startswith("cake_swiglu_fp8"):
        return _swiglu_fp8_probe(args[0], args[1] if len(args) > 1 else None, orient, results,
                                 int(attrs["scale_rule"]))
    if target == "cake_swiglu_mxfp8_fwd":
        return _swiglu_probe(args[0], None, orient, results)
    return _swiglu_probe(args[0], args[1], orient, results)


def _fresh_ops():
    # New op objects: JAX caches the traces of the old ones (made with the real kernel calls).
    for op in (cake_jax._normgate_fwd_op, cake_jax._normgate_bwd_op, cake_jax._swiglu_op):
        op.cache_clear()
    jax.clear_caches()


@pytest.fixture
def stand_in(monkeypatch):
    _fresh_ops()
    monkeypatch.setattr(cake_jax, "_ffi", _ffi_stand_in)
    yield
    monkeypatch.undo()
    _fresh_ops()


def _bits(a):
    import numpy as np

    return np.asarray(a).view(np.uint8)


@pytest.mark.parametrize("gated", [True, False])
@pytest.mark.parametrize("spec", [("r", None, None), (None, "r", None)])
def test_normgate_values_sharded_equal_unsharded(stand_in, auto_mesh, gated, spec):
    mesh = auto_mesh
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    x, z, dy = (jax.random.normal(kk, (8, 16, 64)).astype(BF16) for kk in k[:3])
    w = (1 + jax.random.normal(k[3], (64,)) / 4).astype(BF16)

    def step(x, z, w, dy):
        f = (lambda x, z, w: cake_jax.normgate(x, z, w)) if gated else \
            (lambda x, z, w: cake_jax.normgate(x, None, w))
        y, vjp = jax.vjp(f, x, z, w)
        return (y,) + vjp(dy)

    cpu0 = jax.devices("cpu")[0]
    plain = jax.jit(step)(*(jax.device_put(a, cpu0) for a in (x, z, w, dy)))
    rows = NamedSharding(mesh, P(*spec))
    sharded = jax.jit(step)(jax.device_put(x, rows), jax.device_put(z, rows),
                            jax.device_put(w, NamedSharding(mesh, P())), jax.device_put(dy, rows))
    assert sharded[0].sharding.is_equivalent_to(rows, 3)
    import numpy as np

    # y, dx, dz are row-local. The stand-in is XLA code, whose fusions may differ with the
    # shape, so they are compared within one BF16 rounding (the real kernel's bits are checked
    # against the plain call on the GPU); dw: four FP32 partial sums added in FP32 and rounded
    # once to BF16, against one sum: within one BF16 rounding too.
    for i in (0, 1, 2, 3):
        if i == 2 and not gated:
            continue
        a, b = np.asarray(plain[i], np.float32), np.asarray(sharded[i], np.float32)
        assert np.allclose(a, b, rtol=2 ** -7, atol=1e-6), (i, np.abs(a - b).max())


@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_values_sharded_equal_unsharded(stand_in, auto_mesh, backward):
    # An Auto mesh: the stand-in's scatters need no sharding annotations there.
    mesh = auto_mesh
    m, k = 1024, 256
    inp = jax.random.randint(jax.random.PRNGKey(1), (m, 2 * k), 0, 200).astype(BF16)
    grad = jax.random.randint(jax.random.PRNGKey(2), (m, k), 0, 200).astype(BF16)
    f = (lambda a, g: cake_jax.swiglu_mxfp8_backward(a, g, "both")) if backward else \
        (lambda a, g: cake_jax.swiglu_mxfp8(a, "both"))
    cpu0 = jax.devices("cpu")[0]
    plain = jax.jit(f)(jax.device_put(inp, cpu0), jax.device_put(grad, cpu0))
    rows = NamedSharding(mesh, P("r", None))
    sharded = jax.jit(f)(jax.device_put(inp, rows), jax.device_put(grad, rows))
    o = 2 * k if backward else k
    assert (_bits(plain.row_q) == _bits(sharded.row_q)).all()
    assert (_bits(plain.row_s) == _bits(sharded.row_s)).all()
    assert (_bits(plain.col_q) == _bits(sharded.col_q)).all()
    # col_s: shard-major; the converter gives the unsharded layout exactly.
    assert not (_bits(plain.col_s) == _bits(sharded.col_s)).all()
    glob = cake_jax.colwise_scales_to_global(jax.device_get(sharded.col_s), o, m, 4)
    assert (_bits(plain.col_s) == _bits(glob)).all()


_SWIGLU_BOTH = {  # (forward, backward) of each format, both orientations
    "mxfp8": (lambda a, g: cake_jax.swiglu_mxfp8(a, "both"),
              lambda a, g: cake_jax.swiglu_mxfp8_backward(a, g, "both")),
    "fp8": (lambda a, g: cake_jax.swiglu_fp8(a, "both"),
            lambda a, g: cake_jax.swiglu_fp8_backward(a, g, "both", "pow2")),
}


@pytest.mark.parametrize("family", sorted(_SWIGLU_BOTH))
@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_vmap_fold_equals_per_element_calls(stand_in, family, backward):
    inp = jax.random.randint(jax.random.PRNGKey(3), (3, 256, 512), 0, 200).astype(BF16)
    grad = jax.random.randint(jax.random.PRNGKey(4), (3, 256, 256), 0, 200).astype(BF16)
    f = _SWIGLU_BOTH[family][backward]
    cpu0 = jax.devices("cpu")[0]
    inp, grad = jax.device_put(inp, cpu0), jax.device_put(grad, cpu0)
    folded = jax.jit(jax.vmap(f))(inp, grad)
    for i in range(3):
        one = jax.jit(f)(inp[i], grad[i])
        for a, b in zip(one, folded):
            assert (_bits(a) == _bits(b[i])).all()


def test_normgate_vmap_values(stand_in):
    k = jax.random.split(jax.random.PRNGKey(5), 3)
    x = jax.random.normal(k[0], (3, 8, 64)).astype(BF16)
    w = (1 + jax.random.normal(k[1], (64,)) / 4).astype(jnp.float32)
    cpu0 = jax.devices("cpu")[0]
    x, w = jax.device_put(x, cpu0), jax.device_put(w, cpu0)
    y = jax.jit(jax.vmap(lambda x: cake_jax.normgate(x, x, w)))(x)
    loss = lambda x, w: cake_jax.normgate(x, x, w).astype(jnp.float32).sum()  # noqa: E731
    g = jax.jit(jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None)))(x, w)
    for i in range(3):
        assert (_bits(y[i]) == _bits(jax.jit(lambda x: cake_jax.normgate(x, x, w))(x[i]))).all()
        assert (_bits(g[i]) == _bits(jax.jit(jax.grad(loss, argnums=1))(x[i], w))).all()


def test_shard_map_values_equal_unsharded(stand_in, auto_mesh):
    # Inside shard_map the binding's own rule: per-device calls, w's gradient summed over the
    # rows' axis once (not again by the partitioning rule).
    from jax import shard_map

    k = jax.random.split(jax.random.PRNGKey(6), 4)
    x, z = (jax.random.normal(kk, (64, 128)).astype(BF16) for kk in k[:2])
    w = 1 + 0.5 * jax.random.normal(k[2], (128,), jnp.float32)
    t = jax.random.normal(k[3], (64, 128), jnp.float32)

    def loss_one(x, z, w, t):
        return jnp.sum(cake_jax.normgate(x, z, w).astype(jnp.float32) * t)

    sharded_loss = shard_map(lambda *a: jax.lax.psum(loss_one(*a), "r"), mesh=auto_mesh,
                             in_specs=(P("r"), P("r"), P(), P("r")), out_specs=P())
    cpu0 = jax.devices("cpu")[0]
    one = [jax.device_put(a, cpu0) for a in (x, z, w, t)]
    g1 = jax.jit(jax.grad(loss_one, argnums=(0, 1, 2)))(*one)
    rows, whole = NamedSharding(auto_mesh, P("r")), NamedSharding(auto_mesh, P())
    gn = jax.jit(jax.grad(sharded_loss, argnums=(0, 1, 2)))(
        jax.device_put(x, rows), jax.device_put(z, rows), jax.device_put(w, whole),
        jax.device_put(t, rows))
    import numpy as np

    for a, b in zip(g1, gn):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        assert np.linalg.norm(a - b) <= 1e-2 * np.linalg.norm(a), np.abs(a - b).max()
    # dw summed once: a second psum would give 4x.
    np.testing.assert_allclose(np.asarray(gn[2]), np.asarray(g1[2]), rtol=1e-4, atol=1e-3)


def test_eager_calls_compose(stand_in):
    # Outside jit: custom_vjp over custom_vmap over custom_partitioning, each op dispatched alone.
    import numpy as np

    cpu0 = jax.devices("cpu")[0]
    x = jax.device_put(jax.random.normal(jax.random.PRNGKey(7), (8, 64)).astype(BF16), cpu0)
    w = jax.device_put(jnp.ones((64,), jnp.float32), cpu0)
    y = cake_jax.normgate(x, x, w)
    assert np.array_equal(_bits(y), _bits(jax.jit(lambda x, w: cake_jax.normgate(x, x, w))(x, w)))
    g = jax.grad(lambda w: cake_jax.normgate(x, x, w).astype(jnp.float32).sum())(w)
    assert g.shape == (64,) and bool(jnp.isfinite(g).all())
    inp = jax.device_put(jnp.ones((128, 256), BF16), cpu0)
    q = cake_jax.swiglu_mxfp8(inp, "both")
    assert q.row_q.shape == (128, 128) and q.col_q.shape == (128, 128)


# ---- SwiGLU + FP8 blockwise: the same rules, its scale layouts ---------------------------------
@pytest.mark.parametrize("orient", ["rowwise", "colwise", "both"])
@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_fp8_rows_sharded_runs_locally(mesh, orient, backward):
    inp = arg((1024, 512), mesh, "r", None)
    grad = arg((1024, 256), mesh, "r", None)
    if backward:
        f = lambda a, g: cake_jax.swiglu_fp8_backward(a, g, orient, "pow2")  # noqa: E731
    else:
        f = lambda a, g: cake_jax.swiglu_fp8(a, orient)  # noqa: E731
    c = jax.jit(f).lower(inp, grad).compile()
    text = c.as_text()
    (line,) = calls(text, "cake_swiglu_fp8_bwd" if backward else "cake_swiglu_fp8_fwd")
    o = 512 if backward else 256
    if orient != "colwise":
        assert f"f8e4m3fn[256,{o}]" in line and f"f32[{o // 128},256]" in line
    if orient != "rowwise":
        # col_s reaches the kernel as [rows, O/128] (its [rows/128, O] bytes).
        assert f"f8e4m3fn[{o},256]" in line and f"f32[256,{o // 128}]" in line
    assert collectives(text) == []
    out = c.output_shardings
    if orient != "colwise":
        assert out.row_q.spec == P("r") and out.row_s.spec == P(None, "r")
    if orient != "rowwise":
        assert out.col_q.spec == P(None, "r") and out.col_s.spec == P("r")


def test_swiglu_fp8_rows_not_in_whole_tiles_are_replicated(mesh):
    inp = arg((256, 512), mesh, "r", None)  # 64 rows per device: part of a 128-row block
    (line,) = calls(hlo(lambda a: cake_jax.swiglu_fp8(a, "both"), inp), "cake_swiglu_fp8_fwd")
    assert "f8e4m3fn[256,256]" in line and "f32[2,256]" in line and "f32[256,2]" in line


def test_swiglu_fp8_vmap_folds_into_rows():
    inp = jax.ShapeDtypeStruct((3, 256, 512), BF16)
    f = jax.vmap(lambda a: cake_jax.swiglu_fp8(a, "both"))
    text = jax.jit(f).lower(inp).as_text()
    assert "cake_swiglu_fp8_fwd" in text and "while" not in text
    out = jax.eval_shape(f, inp)
    assert out.row_q.shape == (3, 256, 256) and out.row_s.shape == (3, 2, 256)
    assert out.col_q.shape == (3, 256, 256) and out.col_s.shape == (3, 2, 256)
    assert out.row_s.dtype == jnp.float32 and out.col_s.dtype == jnp.float32


@pytest.mark.parametrize("shape,kw,error,words", [
    ((100, 256), {}, cake.UnsupportedShapeError, "desc->m = 100"),
    ((128, 192), {}, cake.UnsupportedShapeError, "the 1x128 scale block"),
    ((128, 255), {}, ValueError, "[m, 2k]"),
    ((128, 256), {"scale_rule": "floor"}, ValueError, "'exact' or 'pow2'"),
    ((128, 256), {"orientation": "diagonal"}, ValueError, "diagonal"),
])
def test_swiglu_fp8_trace_time_errors(shape, kw, error, words):
    inp = jax.ShapeDtypeStruct(shape, BF16)
    with pytest.raises(error, match=re.escape(words)):
        jax.jit(lambda a: cake_jax.swiglu_fp8(a, **kw)).lower(inp)


@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_fp8_values_sharded_equal_unsharded(stand_in, auto_mesh, backward):
    # Every scale array is the unsharded call's bit for bit: MN-major storage shards into the
    # devices' own calls' outputs (no shard-major permutation as MXFP8's col_s needs).
    m, k = 1024, 256
    inp = jax.random.randint(jax.random.PRNGKey(8), (m, 2 * k), 0, 200).astype(BF16)
    grad = jax.random.randint(jax.random.PRNGKey(9), (m, k), 0, 200).astype(BF16)
    f = _SWIGLU_BOTH["fp8"][backward]
    cpu0 = jax.devices("cpu")[0]
    plain = jax.jit(f)(jax.device_put(inp, cpu0), jax.device_put(grad, cpu0))
    rows = NamedSharding(auto_mesh, P("r", None))
    sharded = jax.jit(f)(jax.device_put(inp, rows), jax.device_put(grad, rows))
    for a, b in zip(plain, sharded):
        assert a.shape == b.shape and (_bits(a) == _bits(b)).all()
    # The probe's values: the rule reached the kernel, and row_s[j, m] is row m's block j.
    rule = 1.0 if backward else 0.0
    vals = inp.astype(jnp.float32)[:, : 2 * k if backward else k] + rule + (1.0 if backward else 0.0)
    assert (_bits(plain.row_s) == _bits(vals[:, ::128].T * 3 + 0.5)).all()
