"""The SwiGLU variant options of cake_jax without a GPU (docs/spec/swiglu-mxfp8.md,
"Variants"): the variant calls lower to the variant targets with their attributes and operands
(the plain call keeps the plain target), the weighted backward returns dprob in prob's shape,
vmap folds prob into the rows, swiglu_dequantized's custom_vjp gives in's and prob's cotangents,
and what Cake refuses is refused while tracing with Cake's error class and words."""

import re

import pytest

jax = pytest.importorskip("jax")
try:
    import cake_jax
except (ImportError, OSError) as e:  # no shim built here, or no jaxlib of the shim's range
    pytest.skip(f"cake_jax not importable: {e}", allow_module_level=True)
if not (cake_jax._SHIM_SWIGLU_VARIANTS and cake_jax._lib_swiglu_variants()):
    pytest.skip("libcake_jax / libcake predate the SwiGLU variants", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402

import cake  # noqa: E402

BF16, F32 = jnp.bfloat16, jnp.float32


def sds(*shape, dtype=BF16):
    return jax.ShapeDtypeStruct(shape, dtype)


def custom_calls(fn, *args):
    text = jax.jit(fn).lower(*args).as_text()
    return [line for line in text.splitlines() if "stablehlo.custom_call" in line]


@pytest.mark.parametrize("fam,fwd,bwd", [
    ("mxfp8", cake_jax.swiglu_mxfp8, cake_jax.swiglu_mxfp8_backward),
    ("fp8", cake_jax.swiglu_fp8, cake_jax.swiglu_fp8_backward)])
def test_variant_calls_lower_to_the_variant_targets(fam, fwd, bwd):
    inp, grad, prob = sds(256, 512), sds(256, 256), sds(256, dtype=F32)
    (line,) = custom_calls(lambda a, p: fwd(a, activation="clamped", alpha=1.5, limit=3.0,
                                            prob=p), inp, prob)
    assert f"@cake_swiglu_{fam}_variant_fwd(%arg0, %arg1)" in line
    assert "activation = 1 : i32" in line and "alpha = 1.500000e+00 : f32" in line
    assert "limit = 3.000000e+00 : f32" in line
    (line,) = custom_calls(lambda a, g: bwd(a, g, activation="clamped"), inp, grad)
    assert f"@cake_swiglu_{fam}_variant_bwd(%arg0, %arg1)" in line  # unweighted: no prob
    assert "limit = 7.000000e+00 : f32" in line  # gpt-oss's defaults
    (line,) = custom_calls(lambda a, g, p: bwd(a, g, prob=p), inp, grad, prob)
    assert f"@cake_swiglu_{fam}_variant_bwd(%arg0, %arg1, %arg2)" in line
    assert "activation = 0 : i32" in line
    # The plain call: the plain target, no variant attribute.
    (line,) = custom_calls(lambda a: fwd(a), inp)
    assert f"@cake_swiglu_{fam}_fwd(%arg0)" in line and "activation" not in line


@pytest.mark.parametrize("prob_shape", [(256,), (256, 1)])
def test_weighted_backward_returns_dprob_in_probs_shape(prob_shape):
    inp, grad, prob = sds(256, 512), sds(256, 256), sds(*prob_shape, dtype=F32)
    for bwd in (cake_jax.swiglu_mxfp8_backward, cake_jax.swiglu_fp8_backward):
        q, dp = jax.eval_shape(lambda a, g, p: bwd(a, g, "both", prob=p), inp, grad, prob)
        assert q.row_q.shape == (256, 512) and q.col_q.shape == (512, 256)
        assert dp.shape == prob_shape and dp.dtype == F32
    q = jax.eval_shape(lambda a, p: cake_jax.swiglu_fp8(a, prob=p), inp, prob)
    assert isinstance(q, cake_jax.FP8BlockwiseArrays) and q.row_q.shape == (256, 256)


def test_vmap_folds_prob_into_the_rows():
    inp, prob = sds(3, 256, 512), sds(3, 256, dtype=F32)
    f = jax.vmap(lambda a, p: cake_jax.swiglu_mxfp8_backward(a, a[:, :256], "both", prob=p))
    q, dp = jax.eval_shape(f, inp, prob)
    assert q.row_q.shape == (3, 256, 512) and dp.shape == (3, 256)
    text = jax.jit(f).lower(inp, prob).as_text()
    assert text.count("@cake_swiglu_mxfp8_variant_bwd") == 1 and "while" not in text


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
def test_swiglu_dequantized_cotangents(fmt):
    inp, prob = sds(256, 512), sds(256, 1, dtype=F32)
    loss = lambda a, p: cake_jax.swiglu_dequantized(  # noqa: E731
        a, fmt, activation="clamped", prob=p).sum()
    da, dp = jax.eval_shape(jax.grad(loss, (0, 1)), inp, prob)
    assert da.shape == (256, 512) and da.dtype == BF16 and dp.shape == (256, 1)
    text = jax.jit(jax.value_and_grad(loss, (0, 1))).lower(inp, prob).as_text()
    fam = "mxfp8" if fmt == "mxfp8" else "fp8"
    assert f"@cake_swiglu_{fam}_variant_fwd" in text and f"@cake_swiglu_{fam}_variant_bwd" in text
    # Without prob: in's cotangent only, the plain targets.
    y = jax.eval_shape(lambda a: cake_jax.swiglu_dequantized(a, fmt), inp)
    assert y.shape == (256, 256) and y.dtype == F32
    da = jax.eval_shape(jax.grad(lambda a: cake_jax.swiglu_dequantized(a, fmt).sum()), inp)
    assert da.shape == (256, 512)


@pytest.mark.parametrize("kw,error,words", [
    ({"activation": "gelu"}, ValueError, "activation 'gelu': 'silu' or 'clamped'"),
    ({"prob": sds(255, dtype=F32)}, ValueError, "prob (255,) float32 must be float32 [m] or "
     "[m, 1] with m = 256"),
    ({"prob": sds(256, dtype=BF16)}, ValueError, "prob (256,) bfloat16"),
    ({"prob": sds(256, 2, dtype=F32)}, ValueError, "prob (256, 2)"),
    ({"activation": "clamped", "limit": 0.0}, cake.InvalidArgumentError,
     "desc->variant.limit = 0: the clamped activation needs a limit > 0 (not NaN)"),
    ({"activation": "clamped", "limit": float("nan")}, cake.InvalidArgumentError,
     "desc->variant.limit = nan"),
    ({"activation": "clamped", "alpha": float("inf")}, cake.InvalidArgumentError,
     "desc->variant.alpha = inf: the clamped activation needs a finite alpha"),
    ({"activation": "clamped", "alpha": 1e300}, cake.InvalidArgumentError,
     "desc->variant.alpha = inf"),
])
def test_variant_trace_time_errors(kw, error, words):
    inp = sds(256, 512)
    prob = kw.pop("prob", None)
    for fn in (cake_jax.swiglu_mxfp8, cake_jax.swiglu_fp8):
        with pytest.raises(error, match=re.escape(words)):
            jax.jit(lambda a, p: fn(a, prob=p, **kw)).lower(inp, prob)
    # The silu activation does not read alpha and limit (the library checks them for clamped).
    if "limit" in kw or "alpha" in kw:
        jax.jit(lambda a: cake_jax.swiglu_mxfp8(a, limit=kw.get("limit", 7.0))).lower(inp)


def test_swiglu_dequantized_refuses_an_unknown_format():
    with pytest.raises(ValueError, match="format 'nvfp4'"):
        cake_jax.swiglu_dequantized(jnp.zeros((256, 512), BF16), "nvfp4")
