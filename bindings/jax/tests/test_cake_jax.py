"""cake_jax on the GPU: jax.jit and jax.grad against pure-JAX and float64 references, the
SwiGLU + MXFP8 forms, errors, and the shard_map example."""

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

from conftest import require_op  # noqa: E402
from reference_np import (  # noqa: E402
    check_blockwise,
    check_grad,
    check_mxfp8,
    check_y,
    normgate_bwd64,
    normgate_fwd64,
    quantize_blockwise_rows,
    quantize_rows,
    rel_l2,
    swiglu_y64,
)

EPS = 1e-6


def inputs(rows, d, seed=0, w_dtype=jnp.bfloat16):
    kx, kz, kw, kt = jax.random.split(jax.random.key(seed), 4)
    x = jax.random.normal(kx, (rows, d), jnp.float32).astype(jnp.bfloat16)
    z = (2 * jax.random.normal(kz, (rows, d), jnp.float32)).astype(jnp.bfloat16)
    w = (1 + 0.5 * jax.random.normal(kw, (d,), jnp.float32)).astype(jnp.bfloat16).astype(w_dtype)
    t = jax.random.normal(kt, (rows, d), jnp.float32)
    return x, z, w, t


def normgate_pure_jax(x, z, w, eps=EPS):
    xf, zf = x.astype(jnp.float32), z.astype(jnp.float32)
    rstd = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (xf * rstd * w.astype(jnp.float32) * zf * jax.nn.sigmoid(zf)).astype(jnp.bfloat16)


@pytest.mark.parametrize("rows,d", [(1, 128), (4096, 128), (3000, 256), (777, 64)])
def test_forward_jit(rows, d):
    x, z, w, _ = inputs(rows, d, seed=rows)
    y = jax.jit(cake_jax.normgate)(x, z, w)
    check_y(np.asarray(y), normgate_fwd64(x, z, w, EPS))
    assert rel_l2(y, jax.jit(normgate_pure_jax)(x, z, w)) <= 4e-3


def test_forward_3d_and_eager():
    kx = jax.random.key(1)
    x = jax.random.normal(kx, (64, 8, 128)).astype(jnp.bfloat16)
    z = (x * 3).astype(jnp.bfloat16)
    w = jnp.ones((128,), jnp.bfloat16)
    y = cake_jax.normgate(x, z, w)  # eager dispatch
    assert y.shape == x.shape and y.dtype == jnp.bfloat16
    check_y(np.asarray(y), normgate_fwd64(x, z, w, EPS))


@pytest.mark.parametrize("w_dtype", [jnp.bfloat16, jnp.float32])
@pytest.mark.parametrize("deterministic", [True, False])
def test_grad_matches_pure_jax(w_dtype, deterministic):
    require_op("normgate_bwd")
    x, z, w, t = inputs(4096, 128, seed=7, w_dtype=w_dtype)

    def loss(fn):
        return lambda x, z, w: jnp.sum(fn(x, z, w).astype(jnp.float32) * t)

    cake_loss = loss(lambda x, z, w: cake_jax.normgate(x, z, w, deterministic=deterministic))
    dx, dz, dw = jax.jit(jax.grad(cake_loss, argnums=(0, 1, 2)))(x, z, w)
    rx, rz, rw = jax.jit(jax.grad(loss(normgate_pure_jax), argnums=(0, 1, 2)))(x, z, w)
    assert dx.dtype == jnp.bfloat16 and dz.dtype == jnp.bfloat16 and dw.dtype == w_dtype
    assert rel_l2(dx, rx) <= 1e-2 and rel_l2(dz, rz) <= 1e-2 and rel_l2(dw, rw) <= 1e-2
    dy = np.asarray(t.astype(jnp.bfloat16))  # the cotangent reaching y
    dx64, dz64, dw64 = normgate_bwd64(dy, x, z, w, EPS)
    check_grad("dx", dx, dx64)
    check_grad("dz", dz, dz64)
    assert rel_l2(dw, dw64) <= (1e-5 if w_dtype == jnp.float32 else 4e-3)


def test_deterministic_bits_and_value_and_grad():
    require_op("normgate_bwd")
    x, z, w, t = inputs(20000, 128, seed=3, w_dtype=jnp.float32)
    f = jax.jit(jax.value_and_grad(lambda x, z, w: jnp.sum(
        cake_jax.normgate(x, z, w).astype(jnp.float32) * t), argnums=(0, 1, 2)))
    first = f(x, z, w)
    for _ in range(3):
        again = f(x, z, w)
        for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(again)):
            assert np.array_equal(np.asarray(a), np.asarray(b))


def test_errors_carry_cake_message():
    x, z, w, _ = inputs(16, 128)
    with pytest.raises(ValueError, match="must be \\[d\\]"):
        cake_jax.normgate(x, z, w[:64])
    with pytest.raises(Exception, match="CAKE_STATUS_PROGRAM_NOT_FOUND") as e:
        jax.block_until_ready(jax.jit(lambda x, z, w: cake_jax.normgate(
            x, z, w, program="no-such-program"))(x, z, w))
    assert "no-such-program" in str(e.value)
    x12 = jnp.zeros((4, 12), jnp.bfloat16)
    with pytest.raises(Exception, match="CAKE_STATUS_UNSUPPORTED_SHAPE"):
        jax.block_until_ready(cake_jax.normgate(x12, x12, jnp.ones((12,), jnp.bfloat16)))


def swiglu_inputs(m, k, seed=0):
    ki, kg = jax.random.split(jax.random.key(seed))
    inp = (3 * jax.random.normal(ki, (m, 2 * k))).astype(jnp.bfloat16)
    grad = jax.random.normal(kg, (m, k)).astype(jnp.bfloat16)
    return inp, grad


def check_form(name, out, y, orientation):
    m, o = y.shape
    if orientation in ("rowwise", "both"):
        q_ref, s_ref = quantize_rows(y)
        assert out.row_q.shape == (m, o) and out.row_q.dtype == jnp.float8_e4m3fn
        check_mxfp8(name + " rowwise", np.asarray(out.row_q), np.asarray(out.row_s), q_ref,
                    s_ref, m, o)
    else:
        assert out.row_q is None
    if orientation in ("colwise", "both"):
        q_ref, s_ref = quantize_rows(np.ascontiguousarray(y.T))
        assert out.col_q.shape == (o, m)
        check_mxfp8(name + " colwise", np.asarray(out.col_q), np.asarray(out.col_s), q_ref,
                    s_ref, o, m)
    else:
        assert out.col_q is None


@pytest.mark.parametrize("orientation", ["rowwise", "colwise", "both"])
def test_swiglu_mxfp8_forward_and_backward(orientation):
    require_op("swiglu_mxfp8_fwd")
    inp, grad = swiglu_inputs(256, 512, seed=5)
    out = jax.jit(cake_jax.swiglu_mxfp8, static_argnums=1)(inp, orientation)
    check_form("forward", out, swiglu_y64(inp), orientation)
    if orientation == "rowwise":
        deq = cake_jax.dequantize_mxfp8(out.row_q, out.row_s)
        assert rel_l2(deq, swiglu_y64(inp)) <= 0.05
    require_op("swiglu_mxfp8_bwd")
    bwd = jax.jit(cake_jax.swiglu_mxfp8_backward, static_argnums=2)(inp, grad, orientation)
    check_form("backward", bwd, swiglu_y64(inp, grad), orientation)


@pytest.mark.parametrize("orientation", ["rowwise", "colwise", "both"])
@pytest.mark.parametrize("rule", ["exact", "pow2"])
def test_swiglu_fp8_forward_and_backward(orientation, rule):
    require_op("swiglu_fp8_fwd")
    inp, grad = swiglu_inputs(384, 640, seed=6)
    for backward in (False, True):
        if backward:
            require_op("swiglu_fp8_bwd")
            out = jax.jit(cake_jax.swiglu_fp8_backward, static_argnums=(2, 3))(
                inp, grad, orientation, rule)
            y = swiglu_y64(inp, grad)
        else:
            out = jax.jit(cake_jax.swiglu_fp8, static_argnums=(1, 2))(inp, orientation, rule)
            y = swiglu_y64(inp)
        m, o = y.shape
        if orientation != "colwise":
            assert out.row_q.shape == (m, o) and out.row_s.shape == (o // 128, m)
            assert out.row_s.dtype == jnp.float32
            q_ref, s_ref = quantize_blockwise_rows(y, rule)
            check_blockwise("rowwise", np.asarray(out.row_q), out.row_s, q_ref, s_ref)
            deq = cake_jax.dequantize_fp8_blockwise(out.row_q, out.row_s)
            assert rel_l2(deq, y) <= 0.05
        else:
            assert out.row_q is None and out.row_s is None
        if orientation != "rowwise":
            assert out.col_q.shape == (o, m) and out.col_s.shape == (m // 128, o)
            q_ref, s_ref = quantize_blockwise_rows(np.ascontiguousarray(y.T), rule)
            check_blockwise("colwise", np.asarray(out.col_q), out.col_s, q_ref, s_ref)
        else:
            assert out.col_q is None and out.col_s is None
        if rule == "pow2" and out.row_s is not None:
            e = np.log2(np.asarray(out.row_s, np.float64))
            assert np.array_equal(e, np.round(e))


def test_shard_map_example_matches_one_gpu():
    require_op("normgate_bwd")
    import shard_map_normgate

    assert shard_map_normgate.main(rows_per_device=2048, verbose=False)
