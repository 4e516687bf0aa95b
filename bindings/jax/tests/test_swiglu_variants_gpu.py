"""cake_jax's SwiGLU variants on the GPU (docs/spec/swiglu-mxfp8.md, "Variants"): both
activations, weighted and not, both formats, against float64: swiglu_dequantized's forward and
its custom_vjp (in's cotangent and prob's, the backward's dprob), and the backward ops' dprob
(the same bits from both families). Fresh random inputs each run. Skips without a GPU."""

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
try:
    import cake_jax
except Exception as e:  # noqa: BLE001 - the shim not built, or libcake.so missing
    pytest.skip(f"cake_jax unavailable: {e}", allow_module_level=True)
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("no GPU visible to JAX: cake_jax GPU tests skipped", allow_module_level=True)
if not (cake_jax._SHIM_SWIGLU_VARIANTS and cake_jax._lib_swiglu_variants()):
    pytest.skip("libcake_jax / libcake predate the SwiGLU variants", allow_module_level=True)

import secrets  # noqa: E402

import numpy as np  # noqa: E402

from reference_np import f64, rel_l2, swiglu_variant64  # noqa: E402

QUANT_REL = 0.04  # one E4M3 rounding of every value, in relative L2


def inputs(m, k, prob_shape):
    kx, kg, kp = jax.random.split(jax.random.key(secrets.randbits(31)), 3)
    inp = (jax.random.normal(kx, (m, 2 * k)) * 4).astype(jnp.bfloat16)
    dy = jax.random.normal(kg, (m, k), jnp.float32)
    prob = None if prob_shape is None else jax.random.uniform(kp, prob_shape, jnp.float32)
    return inp, dy, prob


def check_dprob(got, want64):
    got = f64(got).reshape(-1)
    assert np.isfinite(got).all()
    err = np.abs(got - want64).max()
    assert err <= 1e-4 * max(1.0, np.abs(want64).max()), f"dprob: max error {err:.3e}"


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
@pytest.mark.parametrize("activation", ["silu", "clamped"])
@pytest.mark.parametrize("prob_shape", [None, (256,), (256, 1)])
def test_dequantized_forward_and_cotangents(fmt, activation, prob_shape):
    inp, dy, prob = inputs(256, 256, prob_shape)
    f = jax.jit(lambda a, p: cake_jax.swiglu_dequantized(a, fmt, activation=activation,
                                                         prob=p))
    y, vjp = jax.vjp(f, inp, prob)
    da, dp = vjp(dy)
    y64, da64, dp64 = swiglu_variant64(inp, dy.astype(jnp.bfloat16), activation, prob=prob)
    assert rel_l2(y, y64) <= QUANT_REL, f"y: {rel_l2(y, y64):.3e}"
    assert rel_l2(da, da64) <= QUANT_REL, f"dinp: {rel_l2(da, da64):.3e}"
    if prob is not None:
        assert dp.shape == prob.shape
        check_dprob(dp, dp64)


@pytest.mark.parametrize("activation", ["silu", "clamped"])
def test_backward_ops_return_dprob(activation):
    inp, dy, prob = inputs(256, 256, (256,))
    grad = dy.astype(jnp.bfloat16)
    _, _, dp64 = swiglu_variant64(inp, grad, activation, prob=prob)
    _, dp = cake_jax.swiglu_mxfp8_backward(inp, grad, "both", activation=activation, prob=prob)
    check_dprob(dp, dp64)
    _, dp8 = cake_jax.swiglu_fp8_backward(inp, grad, "both", activation=activation, prob=prob)
    assert np.array_equal(np.asarray(dp), np.asarray(dp8))
