"""Host tests of cake.torch's FP8 blockwise functions (no GPU): the fake implementations give the
shapes, dtypes and scaled_mm strides; the plain-PyTorch reference quantizer follows the spec
(docs/spec/fp8-blockwise.md) on its fixed points, on NaN/Inf/zero blocks and against a float64
nearest-value E4M3 search; the sizes the binding computes without the library equal the
library's."""

import math

import pytest

torch = pytest.importorskip("torch")

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from cake.torch import fp8  # noqa: E402

E4M3_POS = sorted({(m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
                   for e in range(16) for m in range(8) if not (e == 15 and m == 7)})


def e4m3_nearest(x: float) -> float:
    """Round to nearest E4M3 value, ties to the even code, saturating at 448 (float64 search)."""
    if math.isnan(x):
        return math.nan
    a = min(abs(x), 448.0)
    best = min(range(len(E4M3_POS)), key=lambda i: (abs(E4M3_POS[i] - a), i % 2))
    return math.copysign(E4M3_POS[best], x)


def test_fakes_shapes_and_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        inp = torch.empty(256, 768, dtype=torch.bfloat16)
        grad = torch.empty(256, 384, dtype=torch.bfloat16)
        rq, rs, cq, cs = torch.ops.cake.swiglu_fp8_fwd(inp, 3, 1)
        assert rq.shape == (256, 384) and rq.dtype == torch.float8_e4m3fn
        assert rs.shape == (3, 256) and rs.dtype == torch.float32
        assert cq.shape == (384, 256) and cs.shape == (2, 384)
        q = fp8._wrap((rq, rs, cq, cs), cake.Orientation.BOTH)
        assert q.row_s.shape == (256, 3) and q.row_s.stride() == (1, 256)
        assert q.col_s.shape == (384, 2) and q.col_s.stride() == (1, 384)
        rq, rs, cq, cs, dp = torch.ops.cake.swiglu_fp8_bwd(inp, grad, 1, 0)
        assert rq.shape == (256, 768) and rs.shape == (6, 256) and cq.numel() == 0
        assert dp.numel() == 0
        with pytest.raises(ValueError, match="scale_rule"):
            torch.ops.cake.swiglu_fp8_fwd(inp, 1, 2)
        with pytest.raises(Exception, match="must be a multiple of 128 \\(the 1x128 scale block\\)"):
            torch.ops.cake.swiglu_fp8_fwd(torch.empty(200, 640, dtype=torch.bfloat16), 1, 0)
        # Any m: col_s holds ceil(m / 128) block rows.
        rq, rs, cq, cs = torch.ops.cake.swiglu_fp8_fwd(torch.empty(200, 768, dtype=torch.bfloat16), 3, 0)
        assert rq.shape == (200, 384) and rs.shape == (3, 200)
        assert cq.shape == (384, 200) and cs.shape == (2, 384)


def test_sizes_without_the_library_match():
    for m, k in ((128, 128), (384, 640), (4096, 7168), (1, 128), (200, 256), (129, 384)):
        for bwd in (False, True):
            assert cake.swiglu_fp8_buffer_sizes(m, k, bwd) == cake.swiglu_fp8_expected_sizes(m, k, bwd)


def test_reference_fixed_points():
    y = torch.zeros(3, 384, dtype=torch.bfloat16)
    y[0, :128] = torch.linspace(-448, 448, 128).to(torch.bfloat16)  # amax 448: s = 1
    y[1, 128] = float("nan")                                          # NaN block
    y[1, 256 + 5] = float("-inf")                                     # Inf block
    y[2, :128] = 450.0                                                # pow2: s = 2
    for pow2 in (False, True):
        q, s = fp8.quantize_fp8_blockwise(y, pow2)
        b = q.view(torch.uint8)
        assert s[0, 0] == (1.0 if not pow2 else 1.0)
        assert torch.equal(q[0, :128].float(), y[0, :128].float().clamp(-448, 448)
                           .to(torch.float8_e4m3fn).float())
        assert s[0, 1] == 2.0 ** -126 and int(b[0, 128:256].max()) == 0  # all-zero block
        assert math.isnan(s[1, 1]) and bool((b[1, 128:256] == 0x7F).all())
        assert math.isnan(s[1, 2]) and bool((b[1, 256:] == 0x7F).all())
        want = 2.0 if pow2 else float(torch.tensor(450.0) / torch.tensor(448.0))
        assert float(s[2, 0]) == want
        if pow2:
            assert int(b[2, 0]) == 0x76  # 450 / 2 = 225 -> E4M3 224 (0x76)
        else:
            assert int(b[2, 0]) == 0x7E  # 448


def test_reference_against_float64_nearest():
    g = torch.Generator().manual_seed(3)
    m, o = 4, 512
    x = torch.randn(m, o, generator=g)
    # one exponent per block over [-100, 100], a jitter every 16 values
    k = torch.randint(-100, 101, (m, o // 128), generator=g).repeat_interleave(128, 1)
    j = torch.randint(-4, 5, (m, o // 16), generator=g).repeat_interleave(16, 1)
    y = torch.ldexp(x, (k + j).float()).to(torch.bfloat16)
    for pow2 in (False, True):
        q, s = fp8.quantize_fp8_blockwise(y, pow2)
        for r in range(m):
            for blk in range(o // 128):
                v = [float(t) for t in y[r, blk * 128:(blk + 1) * 128].float()]
                amax = max(abs(t) for t in v)
                a = max(amax, 448.0 * 2.0 ** -126)
                if pow2:
                    want_s = 2.0 ** math.ceil(math.log2(a / 448.0))
                    rr = 1.0 / want_s
                else:
                    want_s = float(torch.tensor(a, dtype=torch.float32) / 448.0)
                    rr = float(torch.tensor(448.0) / torch.tensor(a, dtype=torch.float32))
                assert float(s[r, blk]) == want_s
                for i, t in enumerate(v):
                    prod = float(torch.tensor(t, dtype=torch.float32) *
                                 torch.tensor(rr, dtype=torch.float32))  # FP32 product
                    got = float(q[r, blk * 128 + i].float())
                    assert got == e4m3_nearest(prod), (r, blk, i, t, prod, got)


def test_reference_partial_last_block():
    # O not a multiple of 128 (the colwise blocks of a call whose m is not): the last block
    # takes the amax of its own values, as zeros padding it to 128 would give.
    g = torch.Generator().manual_seed(5)
    y = (torch.randn(3, 200, generator=g) * 3).to(torch.bfloat16)
    pad = torch.zeros(3, 256, dtype=torch.bfloat16)
    pad[:, :200] = y
    for pow2 in (False, True):
        q, s = fp8.quantize_fp8_blockwise(y, pow2)
        qp, sp = fp8.quantize_fp8_blockwise(pad, pow2)
        assert q.shape == (3, 200) and s.shape == (3, 2)
        assert torch.equal(q.view(torch.uint8), qp[:, :200].view(torch.uint8))
        assert torch.equal(s, sp)
        if not pow2:
            a = y[:, 128:].float().abs().amax(dim=1)
            assert torch.equal(s[:, 1], torch.div(a, torch.full_like(a, 448.0)))
        d = fp8.dequantize_fp8_blockwise(q, s)
        assert d.shape == (3, 200)


def test_dequantize_round_trip_error():
    y = torch.randn(2, 256).to(torch.bfloat16)
    q, s = fp8.quantize_fp8_blockwise(y)
    d = fp8.dequantize_fp8_blockwise(q, s)
    rel = ((d - y.float()).abs() / y.float().abs().clamp(min=1e-3)).max()
    assert rel <= 2 ** -4 + 1e-6


def test_normgate_fp8_fakes_shapes_and_strides():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(300, 32, 128, dtype=torch.bfloat16)
        w = torch.empty(128, dtype=torch.bfloat16)
        q, s, y = torch.ops.cake.normgate_fwd_quant(x, x, w, 1, 0, 32, True)
        assert q.shape == (300, 4096) and q.dtype == torch.float8_e4m3fn
        assert s.shape == (32, 300) and s.dtype == torch.float32 and y.shape == x.shape
        g = ct.normgate_fp8(x, x, w)  # heads from x's shape: [T, H, d] -> [T, H*d]
        assert g.q.shape == (300, 4096) and g.y is None
        assert g.q_scale.shape == (300, 32) and g.q_scale.stride() == (1, 300)
        x2 = torch.empty(77, 64, dtype=torch.bfloat16)
        w2 = torch.empty(64, dtype=torch.bfloat16)
        g = ct.normgate_fp8(x2, x2, w2, format="mxfp8", return_y=True)
        assert g.q.shape == (77, 64) and g.q_scale.shape == (512,) and g.y.shape == (77, 64)
        assert g.q_scale.dtype == torch.uint8
        with pytest.raises(cake.UnsupportedShapeError, match="multiple of 128"):
            ct.normgate_fp8(x2, x2, w2)
        with pytest.raises(cake.UnsupportedShapeError, match="several heads"):
            ct.normgate_fp8(x2, x2, w2, format="mxfp8", heads=7)
        x3 = torch.empty(77, 128, dtype=torch.bfloat16)
        with pytest.raises(cake.InvalidArgumentError, match="does not divide"):
            ct.normgate_fp8(x3, x3, w, heads=2)
        with pytest.raises(cake.InvalidArgumentError, match="default form only"):
            ct.normgate_fp8(x.float(), x, w)
        with pytest.raises(ValueError, match="format 3"):
            torch.ops.cake.normgate_fwd_quant(x, x, w, 3)


def test_normgate_fp8_sizes_without_the_library_match():
    for rows, d, fmt, heads in ((3200, 128, 1, 32), (77, 64, 2, 1), (300, 256, 2, 3), (9, 5120, 1, 1)):
        desc = cake.normgate_desc(rows=rows, d=d)
        assert cake.normgate_quant_buffer_sizes(desc, cake.normgate_quant_desc(fmt, heads=heads)) \
            == cake.normgate_quant_expected_sizes(rows, d, fmt, heads)
