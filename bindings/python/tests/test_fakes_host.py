"""The fake implementations of the cake:: operators apply every argument rule the real operators
apply (bindings/torch/*_ops.cc, then the library's lib/api/*.cc), under FakeTensorMode (CPU
torch; fake CUDA tensors need no GPU). Each case below is refused by the real operator; each is
checked to be refused at trace time with the real operator's error class and words."""

import math

import pytest

torch = pytest.importorskip("torch")

import cake  # noqa: E402
import cake.torch  # noqa: E402,F401  (registers the operators and their fakes)
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

ops = torch.ops.cake
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


@pytest.fixture
def fake():
    with FakeTensorMode() as mode:
        yield mode


def t(*shape, dtype=BF16, device="cuda"):
    return torch.empty(*shape, dtype=dtype, device=device)


def fwd(x, z, w, eps=1e-6, gate=None, before=False, group=0):
    gate = (0 if z is not None else 2) if gate is None else gate
    return ops.normgate_fwd(x, z, w, eps, gate, before, group)


def bwd(dy, x, z, w, eps=1e-6, gate=None, group=0, dw_mode=-1):
    gate = (0 if z is not None else 2) if gate is None else gate
    return ops.normgate_bwd(dy, x, z, w, eps, gate, False, group, True, dw_mode)


# ---- what is accepted, and the output shapes --------------------------------------------------
@pytest.mark.parametrize("dtypes", [(BF16, BF16, BF16), (F16, F32, BF16), (F32, F16, F32)])
def test_normgate_shapes(fake, dtypes):
    x = t(2, 3, 64, dtype=dtypes[0])
    z = t(2, 3, 64, dtype=dtypes[1])
    w = t(64, dtype=dtypes[2])
    y = fwd(x, z, w, gate=1, before=True, group=16)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device.type == "cuda"
    dx, dz, dw = bwd(x.clone(), x, z, w, dw_mode=2)
    assert dx.shape == x.shape and dz.dtype == z.dtype and dw.shape == (64,) and dw.dtype == F32
    dx, dz, dw = bwd(x.clone(), x, None, w, dw_mode=0)
    assert dz.shape == (0,) and dw.shape == (0,)


def test_empty_rows_reach_no_library_rule(fake):
    # The real operators return before calling the library for an empty x: no d rule applies.
    x = t(0, 12)
    assert fwd(x, x, t(12)).shape == (0, 12)


@pytest.mark.parametrize("orient,row,col", [(1, True, False), (2, False, True), (3, True, True)])
def test_swiglu_shapes(fake, orient, row, col):
    inp = t(256, 512)
    sizes = cake.swiglu_mxfp8_expected_sizes(256, 256, False)
    rq, rs, cq, cs = ops.swiglu_mxfp8_fwd(inp, orient)
    assert rq.shape == ((256, 256) if row else (0,)) and rq.dtype == torch.float8_e4m3fn
    assert rs.shape == ((sizes.row_s_bytes,) if row else (0,)) and rs.dtype == torch.uint8
    assert cq.shape == ((256, 256) if col else (0,))
    assert cs.shape == ((sizes.col_s_bytes,) if col else (0,))
    rq, rs, cq, cs, dp = ops.swiglu_mxfp8_bwd(inp, t(256, 256), orient)
    assert rq.shape == ((256, 512) if row else (0,))
    assert cq.shape == ((512, 256) if col else (0,))
    assert dp.shape == (0,)  # unweighted: no dprob


# ---- what is refused ----------------------------------------------------------------------------
NORMGATE_REFUSED = [
    # (case, error class, words of the real message: test_fakes_gpu.py checks the real operator
    # gives them too, so they avoid what the C++ and Python operators print differently, e.g.
    # dtype names and shape brackets)
    (lambda: fwd(t(4, 12), t(4, 12), t(12)), cake.UnsupportedShapeError, "desc->d = 12"),
    (lambda: fwd(t(4, 8200), t(4, 8200), t(8200)), cake.UnsupportedShapeError, "desc->d = 8200"),
    (lambda: fwd(t(4, 4), t(4, 4), t(4)), cake.UnsupportedShapeError, "desc->d = 4"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), group=12), cake.UnsupportedShapeError,
     "group_size = 12"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), group=48), cake.UnsupportedShapeError,
     "group_size = 48"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), group=-8), cake.InvalidArgumentError,
     "group_size = -8"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), eps=math.nan), cake.InvalidArgumentError,
     "desc->eps"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), eps=-1.0), cake.InvalidArgumentError, "desc->eps"),
    (lambda: fwd(t(4, 64), t(4, 32), t(64)), ValueError, "must have one shape"),
    (lambda: fwd(t(4, 64), t(4, 64), t(32)), ValueError, "must be [d]"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64, 1)), ValueError, "must be [d]"),
    (lambda: fwd(t(4, 64), None, t(64), gate=0), ValueError, "needs z"),
    (lambda: fwd(t(4, 64), t(4, 64), t(64), gate=2), ValueError, "with a z tensor"),
    (lambda: fwd(t(4, 64, dtype=torch.float64), None, t(64)), TypeError, "Cake takes bfloat16"),
    (lambda: fwd(t(4, 64), t(4, 64, dtype=torch.int32), t(64)), TypeError, "Cake takes bfloat16"),
    (lambda: fwd(t(4, 64), None, t(64, dtype=torch.float8_e4m3fn)), TypeError, "Cake takes"),
    (lambda: fwd(t(4, 64), None, t(64, device="cpu")), ValueError, "one CUDA device"),
    (lambda: fwd(t(4, 64), t(4, 64, device="cuda:1"), t(64)), ValueError, "one CUDA device"),
    (lambda: fwd(t(()), None, t(1)), ValueError, "must be [..., d]"),
    (lambda: bwd(t(4, 64, dtype=F32), t(4, 64), t(4, 64), t(64)), ValueError, "dy"),
    (lambda: bwd(t(4, 32), t(4, 64), t(4, 64), t(64)), ValueError, "dy"),
    (lambda: bwd(t(4, 64), t(4, 64), t(4, 64), t(64), dw_mode=7), ValueError, "dw_mode 7"),
    (lambda: bwd(t(4, 24), t(4, 24), t(4, 24), t(24), group=16), cake.UnsupportedShapeError,
     "group_size = 16"),
]


@pytest.mark.parametrize("case,error,words", NORMGATE_REFUSED)
def test_normgate_refused(fake, case, error, words):
    if words == "one CUDA device" and torch.cuda.is_available() and torch.cuda.device_count() < 2:
        pytest.skip("a fake cuda:1 tensor needs a second device where CUDA is initialised")
    with pytest.raises(error, match=_re(words)):
        case()


def acc(dw, x=None):
    x = t(4, 64) if x is None else x
    return ops.normgate_bwd_accumulate(x.clone(), x, x.clone(), t(x.shape[-1]), dw, 1e-6, 0,
                                       False, 0, True)


MAIN_GRAD_REFUSED = [
    (lambda: t(32, dtype=F32), "main_grad"),
    (lambda: t(64, 1, dtype=F32), "main_grad"),
    (lambda: t(64, dtype=torch.float64), "main_grad"),
    (lambda: t(64, dtype=F32, device="cpu"), "main_grad"),
    (lambda: t(128, dtype=F32)[::2], "contiguous"),
]


@pytest.mark.parametrize("dw,words", MAIN_GRAD_REFUSED)
def test_main_grad_refused(fake, dw, words):
    with pytest.raises(ValueError, match=words):
        acc(dw())


def test_main_grad_accepted(fake):
    dx, dz = acc(t(64, dtype=F32))
    assert dx.shape == (4, 64) and dz.shape == (4, 64)


SWIGLU_REFUSED = [
    # The case the fakes used to let through: m = 100 is no multiple of 32.
    (lambda: ops.swiglu_mxfp8_fwd(t(100, 192), 1), cake.UnsupportedShapeError, "desc->m = 100"),
    (lambda: ops.swiglu_mxfp8_fwd(t(128, 200), 1), cake.UnsupportedShapeError, "desc->k = 100"),
    (lambda: ops.swiglu_mxfp8_fwd(t(0, 256), 1), cake.InvalidArgumentError, "must be > 0"),
    (lambda: ops.swiglu_mxfp8_fwd(t(128, 255), 1), ValueError, "must be [m, 2k]"),
    (lambda: ops.swiglu_mxfp8_fwd(t(2, 128, 256), 1), ValueError, "must be [m, 2k]"),
    (lambda: ops.swiglu_mxfp8_fwd(t(128, 256, dtype=F16), 1), TypeError, "bfloat16"),
    (lambda: ops.swiglu_mxfp8_fwd(t(128, 256), 0), ValueError, "orientation 0"),
    (lambda: ops.swiglu_mxfp8_fwd(t(128, 256), 4), ValueError, "orientation 4"),
    (lambda: ops.swiglu_mxfp8_bwd(t(128, 256), t(128, 256), 1), ValueError, "grad"),
    (lambda: ops.swiglu_mxfp8_bwd(t(128, 256), t(128, 128, dtype=F32), 1), ValueError, "grad"),
    (lambda: ops.swiglu_mxfp8_bwd(t(128, 256), t(128, 128, device="cpu"), 1), ValueError,
     "grad"),
]


@pytest.mark.parametrize("case,error,words", SWIGLU_REFUSED)
def test_swiglu_refused(fake, case, error, words):
    with pytest.raises(error, match=_re(words)):
        case()


def _re(words):
    import re

    return re.escape(words)


def test_meta_device_traces():
    # A model built on the meta device infers its shapes through the fakes too.
    x = torch.empty(4, 64, dtype=BF16, device="meta")
    assert fwd(x, x, torch.empty(64, dtype=BF16, device="meta")).device.type == "meta"
    with pytest.raises(cake.UnsupportedShapeError):
        ops.swiglu_mxfp8_fwd(torch.empty(100, 192, dtype=BF16, device="meta"), 1)


def test_cpu_tensor_gets_cakes_message():
    # A real CPU tensor reaches the real operator, which names the device (no dispatcher list).
    x = torch.zeros(4, 64, dtype=BF16)
    with pytest.raises((ValueError, RuntimeError), match="Cake runs on CUDA tensors"):
        fwd(x, x, torch.zeros(64, dtype=BF16))
    with pytest.raises((ValueError, RuntimeError), match="Cake runs on CUDA tensors"):
        ops.swiglu_mxfp8_fwd(torch.zeros(128, 256, dtype=BF16), 1)
