"""Host tests (no GPU) of the SwiGLU variant options of cake.torch (docs/spec/swiglu-mxfp8.md,
"Variants"): the fake implementations of the six SwiGLU operators take activation, alpha, limit
and prob, give the weighted backwards' dprob, and refuse what the real operators refuse with
their error class and words; the wrappers' options; the schema defaults are the library's."""

import ctypes
import re

import pytest

torch = pytest.importorskip("torch")

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from cake.torch import _schemas as S  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

ops = torch.ops.cake
BF16, F16, F32, I32 = torch.bfloat16, torch.float16, torch.float32, torch.int32
CLAMPED = (S.ACT_CLAMPED, S.ALPHA, S.LIMIT)


@pytest.fixture
def fake():
    with FakeTensorMode() as mode:
        yield mode


def t(*shape, dtype=BF16, device="cuda"):
    return torch.empty(*shape, dtype=dtype, device=device)


def test_schema_defaults_are_the_librarys():
    desc = cake.swiglu_mxfp8_desc(32, 32)
    assert desc.variant.activation == S.ACT_SILU and desc.variant.weighted == 0
    assert desc.variant.alpha == ctypes.c_float(S.ALPHA).value
    assert desc.variant.limit == ctypes.c_float(S.LIMIT).value
    for schema in (S.SWIGLU_MXFP8_FWD, S.SWIGLU_FP8_BWD, S.SWIGLU_GROUPED_FWD):
        assert f"float alpha={S.ALPHA}, float limit={S.LIMIT}" in schema


# ---- what is accepted: the outputs, dprob -----------------------------------------------------
@pytest.mark.parametrize("prob_shape", [(256,), (256, 1)])
def test_ungrouped_weighted_shapes(fake, prob_shape):
    inp, grad, prob = t(256, 512), t(256, 256), t(*prob_shape, dtype=F32)
    rq, rs, cq, cs = ops.swiglu_mxfp8_fwd(inp, 3, None, *CLAMPED, prob)
    assert rq.shape == (256, 256) and cq.shape == (256, 256)
    *q, dp = ops.swiglu_mxfp8_bwd(inp, grad, 1, None, *CLAMPED, prob)
    assert q[0].shape == (256, 512) and dp.shape == (256,) and dp.dtype == F32
    rq, rs, cq, cs = ops.swiglu_fp8_fwd(t(200, 512), 1, 0, None, 0, 1.0, 1.0, t(200, dtype=F32))
    assert rq.shape == (200, 256) and rs.shape == (2, 200)
    *q, dp = ops.swiglu_fp8_bwd(t(200, 512), t(200, 256), 2, 1, None, 0, 1.0, 1.0,
                                t(200, 1, dtype=F32))
    assert q[2].shape == (512, 200) and dp.shape == (200,)
    # Unweighted (clamped only): an empty dprob.
    *_, dp = ops.swiglu_fp8_bwd(t(200, 512), t(200, 256), 1, 0, None, *CLAMPED)
    assert dp.shape == (0,)


@pytest.mark.parametrize("fmt", [1, 2])
def test_grouped_weighted_shapes(fake, fmt):
    inp, grad, offs = t(300, 512), t(300, 256), t(4, dtype=I32)
    prob = t(300, dtype=F32)
    out = ops.swiglu_grouped_fwd(inp, offs, fmt, 3, 0, None, *CLAMPED, prob)
    assert len(out) == 5 and out[0].shape == (300, 256) and out[4].shape == (1,)
    out = ops.swiglu_grouped_bwd(inp, grad, offs, fmt, 1, 0, None, *CLAMPED, prob)
    assert len(out) == 6 and out[0].shape == (300, 512) and out[5].shape == (300,)
    assert ops.swiglu_grouped_bwd(inp, grad, offs, fmt, 1)[5].shape == (0,)


def test_wrappers_return_dprob_in_probs_shape(fake):
    inp, grad = t(256, 512), t(256, 256)
    for prob in (t(256, dtype=F32), t(256, 1, dtype=F32)):
        q, dp = ct.swiglu_mxfp8_backward(inp, grad, "both", activation="clamped", prob=prob)
        assert isinstance(q, ct.MXFP8Tensors) and dp.shape == prob.shape
        q, dp = ct.swiglu_fp8_backward(inp, grad, prob=prob)
        assert isinstance(q, ct.FP8Tensors) and dp.shape == prob.shape
        g, dp = ct.swiglu_grouped_backward(inp, grad, t(3, dtype=I32), "fp8_blockwise",
                                           prob=prob)
        assert isinstance(g, ct.GroupedTensors) and dp.shape == prob.shape
    # Without prob: the tensors alone, as before.
    assert isinstance(ct.swiglu_mxfp8_backward(inp, grad, activation="clamped"), ct.MXFP8Tensors)
    assert isinstance(ct.swiglu_grouped(inp, t(3, dtype=I32), prob=t(256, dtype=F32)),
                      ct.GroupedTensors)
    assert ct.swiglu_fp8(inp, "colwise", activation="clamped", alpha=1.0, limit=3.0).col_q \
        .shape == (256, 256)


def test_silu_ignores_alpha_and_limit(fake):
    # The library checks alpha and limit for the clamped activation only.
    ops.swiglu_mxfp8_fwd(t(128, 256), 1, None, S.ACT_SILU, float("nan"), 0.0)


# ---- what is refused ----------------------------------------------------------------------------
def m():
    return t(128, 256)


def g():
    return t(128, 128)


def offs():
    return t(2, dtype=I32)


def p():
    return t(128, dtype=F32)


# Built under FakeTensorMode (each case makes its tensors when called).
REFUSED = [
    (lambda: ops.swiglu_mxfp8_fwd(m(), 1, None, 2), ValueError, "activation 2: 0 (silu) or 1"),
    (lambda: ops.swiglu_fp8_bwd(m(), g(), 1, 0, None, -1), ValueError, "activation -1"),
    (lambda: ops.swiglu_grouped_fwd(m(), offs(), 2, 1, 0, None, 3), ValueError, "activation 3"),
    (lambda: ops.swiglu_mxfp8_fwd(m(), 1, None, 0, 1.0, 1.0, t(128, dtype=F16)), ValueError,
     "prob ((128,), torch.float16"),
    (lambda: ops.swiglu_mxfp8_bwd(m(), g(), 1, None, 0, 1.0, 1.0, t(127, dtype=F32)),
     ValueError, "must be float32 [m] or [m, 1] with m = 128"),
    (lambda: ops.swiglu_fp8_fwd(m(), 1, 0, None, 0, 1.0, 1.0, t(128, 2, dtype=F32)),
     ValueError, "prob ((128, 2)"),
    (lambda: ops.swiglu_fp8_fwd(m(), 1, 0, None, 0, 1.0, 1.0, t(1, 128, dtype=F32)),
     ValueError, "prob ((1, 128)"),
    (lambda: ops.swiglu_grouped_bwd(m(), g(), offs(), 1, 1, 0, None, 0, 1.0, 1.0,
                                    t(128, dtype=F32, device="cpu")), ValueError,
     "prob ((128,), torch.float32, cpu)"),
    (lambda: ops.swiglu_mxfp8_fwd(m(), 1, None, 1, 1.702, 0.0), cake.InvalidArgumentError,
     "desc->variant.limit = 0: the clamped activation needs a limit > 0"),
    (lambda: ops.swiglu_fp8_fwd(m(), 1, 0, None, 1, 1.702, -1.0), cake.InvalidArgumentError,
     "desc->variant.limit = -1"),
    (lambda: ops.swiglu_fp8_bwd(m(), g(), 1, 0, None, 1, 1.702, float("nan"), p()),
     cake.InvalidArgumentError, "desc->variant.limit = nan"),
    (lambda: ops.swiglu_grouped_fwd(m(), offs(), 1, 1, 0, None, 1, float("inf"), 7.0),
     cake.InvalidArgumentError, "desc->variant.alpha = inf: the clamped activation needs a "
     "finite alpha"),
    # A double beyond FP32's range is the descriptor's inf.
    (lambda: ops.swiglu_mxfp8_bwd(m(), g(), 1, None, 1, 1e300, 7.0), cake.InvalidArgumentError,
     "desc->variant.alpha = inf"),
    (lambda: ct.swiglu_mxfp8(m(), activation="gelu"), ValueError,
     "activation 'gelu': 'silu' or 'clamped'"),
    (lambda: ct.swiglu_grouped_backward(m(), g(), offs(), prob=p(), activation=1), ValueError,
     "activation 1"),
    (lambda: ct.swiglu_dequantized(m(), "nvfp4"), ValueError, "format 'nvfp4'"),
]


@pytest.mark.parametrize("case,error,words", REFUSED)
def test_variant_refused(fake, case, error, words):
    with pytest.raises(error, match=re.escape(words)):
        case()


def test_cpu_tensor_gets_cakes_message():
    x = torch.zeros(128, 256, dtype=BF16)
    with pytest.raises((ValueError, RuntimeError), match="Cake runs on CUDA tensors"):
        ct.swiglu_fp8(x, prob=torch.zeros(128), activation="clamped")
