"""cake_jax.normgate_fp8 on the GPU: every output byte equal to the host model of the spec
(docs/spec/normgate.md, "Quantized y": the plain forward's BF16 y, viewed [T, K], encoded by the
format's block rule) on random non-zero inputs, both formats and scale rules, several heads and
layouts; y equal to cake_jax.normgate's bits; a one-device mesh and a vmap fold equal to the
plain call. Skips without jax, the shim, a GPU or the op."""

import functools

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
try:
    import cake_jax
except Exception as e:  # noqa: BLE001 - the shim not built, or libcake.so missing
    pytest.skip(f"cake_jax unavailable: {e}", allow_module_level=True)
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("no GPU visible to JAX: cake_jax GPU tests skipped", allow_module_level=True)

import numpy as np  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

from conftest import require_op  # noqa: E402
from reference_np import (  # noqa: E402
    normgate_fwd64,
    quantize_blockwise_rows,
    quantize_rows,
    rel_l2,
)

GPU = [d for d in jax.devices() if d.platform == "gpu"][:1]


def bits(a):
    return np.asarray(jax.device_get(a)).view(np.uint8)


def inputs(shape, seed):
    """Random non-zero BF16 x, z, w (no exact zeros: an unwritten zero byte would pass)."""
    kx, kz, kw = jax.random.split(jax.random.key(seed), 3)
    x = jax.random.normal(kx, shape, jnp.float32)
    x = jnp.where(x == 0, 0.5, x).astype(jnp.bfloat16)
    z = 2 * jax.random.normal(kz, shape, jnp.float32)
    z = jnp.where(z == 0, 0.75, z).astype(jnp.bfloat16)
    w = (1 + jax.random.uniform(kw, shape[-1:], jnp.float32)).astype(jnp.bfloat16)
    return x, z, w


def poison(nbytes, value):
    """Fill and free device memory so that the next results land on poisoned bytes (XLA's
    allocator reuses the freed blocks): a byte the kernel does not write then differs from the
    model in one of two runs with different values."""
    jax.block_until_ready(jnp.full((nbytes,), value, jnp.uint8)).delete()


def model(y, heads, fmt, rule):
    """(q bytes, scale bytes) of the spec from the BF16 y."""
    d = y.shape[-1]
    m = np.asarray(jax.device_get(y)).reshape(-1, heads * d)
    if fmt == "mxfp8":
        q, s = quantize_rows(m)
    else:
        q, s = quantize_blockwise_rows(m, rule)
    return np.asarray(q).view(np.uint8).reshape(-1), np.asarray(s).view(np.uint8).reshape(-1)


CASES = [  # shape, heads (None: the default), format, rule
    ((777, 128), None, "fp8_blockwise", "exact"),
    ((777, 128), None, "fp8_blockwise", "pow2"),
    ((300, 8, 128), None, "fp8_blockwise", "exact"),
    ((2, 50, 4, 256), None, "fp8_blockwise", "pow2"),
    ((96, 512), 4, "fp8_blockwise", "exact"),
    ((777, 64), None, "mxfp8", "exact"),
    ((300, 8, 128), None, "mxfp8", "exact"),
    ((4096, 4, 256), None, "mxfp8", "exact"),
    ((1000, 96), None, "mxfp8", "exact"),
]


@pytest.mark.parametrize("shape,heads,fmt,rule", CASES)
def test_bytes_equal_the_host_model(shape, heads, fmt, rule):
    require_op("normgate_fwd_quant")
    x, z, w = inputs(shape, hash(shape) % 1000)
    h = heads or (shape[-2] if len(shape) >= 3 else 1)
    y = jax.jit(cake_jax.normgate)(x, z, w)
    q_ref, s_ref = model(y, h, fmt, rule)
    f = jax.jit(functools.partial(cake_jax.normgate_fp8, format=fmt, scale_rule=rule,
                                  heads=heads, return_y=True))
    g = jax.jit(functools.partial(cake_jax.normgate_fp8, format=fmt, scale_rule=rule,
                                  heads=heads))
    nbytes = 4 * x.size
    for value in (0xA5, 0x5A):
        poison(nbytes, value)
        out = jax.block_until_ready(f(x, z, w))
        assert np.array_equal(bits(out.q).reshape(-1), q_ref), f"q differs (poison {value:#x})"
        assert np.array_equal(bits(out.q_scale).reshape(-1), s_ref), f"scales differ ({value:#x})"
        assert np.array_equal(bits(out.y), bits(y)), "y is not the plain forward's"
        poison(nbytes, value)
        no_y = jax.block_until_ready(g(x, z, w))
        assert no_y.y is None
        assert np.array_equal(bits(no_y.q), bits(out.q))
        assert np.array_equal(bits(no_y.q_scale), bits(out.q_scale))


@pytest.mark.parametrize("fmt", ["fp8_blockwise", "mxfp8"])
def test_dequantized_is_close_to_float64(fmt):
    require_op("normgate_fwd_quant")
    x, z, w = inputs((512, 4, 128), 7)
    out = jax.jit(functools.partial(cake_jax.normgate_fp8, format=fmt))(x, z, w)
    k = out.q.shape[-1]
    q2 = out.q.reshape(-1, k)
    if fmt == "fp8_blockwise":
        deq = cake_jax.dequantize_fp8_blockwise(q2, out.q_scale.reshape(k // 128, -1))
    else:
        deq = cake_jax.dequantize_mxfp8(q2, out.q_scale)
    want = normgate_fwd64(x, z, w, 1e-6).reshape(-1, k)
    assert rel_l2(deq, want) <= 0.05


@pytest.mark.parametrize("fmt", ["fp8_blockwise", "mxfp8"])
def test_one_device_mesh_and_vmap_are_the_plain_call(fmt):
    require_op("normgate_fwd_quant")
    mesh = jax.make_mesh((1,), ("r",), devices=GPU)
    x, z, w = inputs((3, 256, 2, 128), 11)
    f = jax.jit(functools.partial(cake_jax.normgate_fp8, format=fmt, return_y=True))
    plain = f(x[0], z[0], w)
    rows = NamedSharding(mesh, P("r"))
    sharded = f(jax.device_put(x[0], rows), jax.device_put(z[0], rows),
                jax.device_put(w, NamedSharding(mesh, P())))
    for a, b in zip(plain, sharded):
        assert np.array_equal(bits(a), bits(b))
    folded = jax.jit(jax.vmap(functools.partial(cake_jax.normgate_fp8, format=fmt,
                                                return_y=True), in_axes=(0, 0, None)))(x, z, w)
    for i in range(3):
        one = f(x[i], z[i], w)
        for a, b in zip(one, folded):
            assert np.array_equal(bits(a), bits(b[i]))


def test_errors_carry_cake_message():
    require_op("normgate_fwd_quant")
    x, z, w = inputs((16, 128), 1)
    with pytest.raises(Exception, match="CAKE_STATUS_PROGRAM_NOT_FOUND") as e:
        jax.block_until_ready(jax.jit(functools.partial(
            cake_jax.normgate_fp8, program="sm90.no-such-program"))(x, z, w))
    assert "no-such-program" in str(e.value)
