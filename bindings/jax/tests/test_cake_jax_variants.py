"""cake_jax's normgate variants on the GPU (gate silu / sigmoid / none, the gate before or after
the norm, group statistics, BF16 / F16 / F32 operands) against float64 and pure-JAX autodiff,
and the FFI attributes' backward compatibility."""

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
try:
    import cake_jax
except Exception as e:  # noqa: BLE001 - the shim not built, or libcake.so missing
    pytest.skip(f"cake_jax unavailable: {e}", allow_module_level=True)
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("no GPU visible to JAX: cake_jax GPU tests skipped", allow_module_level=True)
if not (cake_jax._SHIM_VARIANTS and cake_jax._LIB_VARIANTS):
    pytest.skip("libcake / libcake_jax predate the normgate variants", allow_module_level=True)

import numpy as np  # noqa: E402

from conftest import require_op  # noqa: E402
from reference_np import f64, gated_rmsnorm64, rel_l2  # noqa: E402

EPS = 1e-5
#: One rounding to the output dtype, FP32 inside.
REL = {jnp.dtype(jnp.bfloat16): 2.0 ** -7, jnp.dtype(jnp.float16): 2.0 ** -10,
       jnp.dtype(jnp.float32): 1e-5}


def inputs(shape, x_dtype, z_dtype, w_dtype, seed=0):
    kx, kz, kw, kt = jax.random.split(jax.random.key(seed), 4)
    x = jax.random.normal(kx, shape, jnp.float32).astype(x_dtype)
    z = (1.5 * jax.random.normal(kz, shape, jnp.float32)).astype(z_dtype)
    w = jax.random.uniform(kw, (shape[-1],), jnp.float32, -1.5, 1.5).astype(w_dtype)
    t = jax.random.normal(kt, shape, jnp.float32)
    return x, z, w, t


def check_rounded(y, want, dtype, what="y"):
    rel = REL[jnp.dtype(dtype)]
    err = np.abs(f64(y) - want)
    bound = rel * np.abs(want) + rel * 1e-2 * np.abs(want).max()
    assert (err <= bound).all(), f"{what}: max error {err.max():.3e}"


def pure_jax(x, z, w, gate, before, group):
    """The formula in FP32 JAX ops, for autodiff references."""
    h = x.astype(jnp.float32)
    a = None
    if z is not None:
        zf = z.astype(jnp.float32)
        a = zf * jax.nn.sigmoid(zf) if gate == "silu" else jax.nn.sigmoid(zf)
        if before:
            h = h * a
    d = h.shape[-1]
    g = d if group is None else group
    hg = h.reshape(*h.shape[:-1], d // g, g)
    n = (hg * jax.lax.rsqrt(jnp.mean(hg * hg, axis=-1, keepdims=True) + EPS)).reshape(h.shape)
    y = n * w.astype(jnp.float32)
    if a is not None and not before:
        y = y * a
    return y.astype(x.dtype)


VARIANTS = [(g, b, G) for g in ("silu", "sigmoid") for b in (False, True) for G in (None, 64)]
DTYPES = [(jnp.bfloat16, jnp.bfloat16, jnp.bfloat16), (jnp.float16, jnp.float16, jnp.float32),
          (jnp.float32, jnp.bfloat16, jnp.float32), (jnp.bfloat16, jnp.float32, jnp.float16)]


@pytest.mark.parametrize("gate, before, group", VARIANTS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=lambda t: "-".join(jnp.dtype(d).name for d in t))
def test_variant_forward(gate, before, group, dtypes):
    x, z, w, _ = inputs((777, 256), *dtypes, seed=3)
    y = jax.jit(lambda x, z, w: cake_jax.normgate(x, z, w, EPS, gate=gate, gate_before_norm=before,
                                                  group_size=group))(x, z, w)
    assert y.dtype == x.dtype and y.shape == x.shape
    check_rounded(y, gated_rmsnorm64(x, z, w, EPS, gate, before, group), x.dtype)


@pytest.mark.parametrize("group", [None, 32])
def test_no_gate(group):
    x, _, w, _ = inputs((64, 8, 128), jnp.bfloat16, jnp.bfloat16, jnp.float32, seed=4)
    y = cake_jax.normgate(x, None, w, EPS, group_size=group)
    check_rounded(y, gated_rmsnorm64(x, None, w, EPS, group_size=group), x.dtype)


@pytest.mark.parametrize("gate, before, group", VARIANTS + [("silu", False, 128)])
@pytest.mark.parametrize("dtypes", DTYPES[:2], ids=["bf16", "f16-f32w"])
def test_variant_grad(gate, before, group, dtypes):
    require_op("normgate_bwd")
    x, z, w, t = inputs((2048, 128), *dtypes, seed=5)

    def loss(fn):
        return lambda x, z, w: jnp.sum(fn(x, z, w).astype(jnp.float32) * t)

    ours = loss(lambda x, z, w: cake_jax.normgate(x, z, w, EPS, gate=gate, gate_before_norm=before,
                                                  group_size=group))
    ref = loss(lambda x, z, w: pure_jax(x, z, w, gate, before, group))
    got = jax.jit(jax.grad(ours, argnums=(0, 1, 2)))(x, z, w)
    want = jax.jit(jax.grad(ref, argnums=(0, 1, 2)))(x, z, w)
    for name, a, b, like in zip(("dx", "dz", "dw"), got, want, (x, z, w)):
        assert a.dtype == like.dtype, name
        assert rel_l2(a, b) <= 2e-2, name


def test_no_gate_grad():
    require_op("normgate_bwd")
    x, _, w, t = inputs((512, 128), jnp.bfloat16, jnp.bfloat16, jnp.bfloat16, seed=6)
    g = jax.grad(lambda x, w: jnp.sum(cake_jax.normgate(x, None, w).astype(jnp.float32) * t),
                 argnums=(0, 1))(x, w)
    r = jax.grad(lambda x, w: jnp.sum(pure_jax(x, None, w, "silu", False, None).astype(
        jnp.float32) * t), argnums=(0, 1))(x, w)
    assert rel_l2(g[0], r[0]) <= 2e-2 and rel_l2(g[1], r[1]) <= 2e-2


def test_first_handlers_attributes_still_decode():
    """A call traced by the first cake_jax (eps and program only, BF16) runs as before."""
    x, z, w, _ = inputs((256, 128), jnp.bfloat16, jnp.bfloat16, jnp.bfloat16, seed=7)
    cake_jax.prepare()
    call = jax.ffi.ffi_call("cake_normgate_fwd", (jax.ShapeDtypeStruct(x.shape, jnp.bfloat16),),
                            vmap_method="sequential")
    (y,) = call(x, z, w, eps=np.float32(EPS), program="")
    check_rounded(y, gated_rmsnorm64(x, z, w, EPS), jnp.bfloat16)
    assert np.array_equal(np.asarray(y), np.asarray(cake_jax.normgate(x, z, w, EPS)))


def test_variant_argument_errors():
    x, z, w, _ = inputs((16, 96), jnp.bfloat16, jnp.bfloat16, jnp.bfloat16)
    with pytest.raises(ValueError, match="group_size = 40: must be 0"):  # at trace time
        cake_jax.normgate(x, z, w, group_size=40)
    with pytest.raises(ValueError, match="gate 'relu'"):
        cake_jax.normgate(x, z, w, gate="relu")
    with pytest.raises(ValueError, match="z=None"):
        cake_jax.normgate(x, z, w, gate="none")
    with pytest.raises(TypeError, match="gate_before_norm"):
        cake_jax.normgate(x, z, w, gate_before_norm="yes")
    with pytest.raises(TypeError, match="float64|int32"):
        cake_jax.normgate(x.astype(jnp.int32), z, w)
    with pytest.raises(Exception, match="CAKE_STATUS_"):  # the library names the bad group
        jax.block_until_ready(cake_jax.normgate(x, z, w, group_size=12))
