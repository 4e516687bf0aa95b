"""GPU tests of cake.torch's SwiGLU + FP8 blockwise (docs/spec/fp8-blockwise.md): byte-exact
against the plain-PyTorch reference quantizer where Y is exact in PyTorch too (gates of 32, where
the sigmoid is exactly 1), every form and both scale rules, programs forced; the format's error
bound on general inputs; F.scaled_mm end to end (BlockWise1x128 x BlockWise128x128 and
1x128 x 1x128) against the FP32 GEMM of the dequantized operands and against the BF16 GEMM;
the DeepSeek-style FP8 MLP block forward and backward against the BF16 block. Errors are printed
and, with $OUT set, written to $OUT/fp8_errors.json."""

import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: FP8 GPU tests skipped", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from cake.torch import fp8  # noqa: E402
from conftest import require_symbols  # noqa: E402

BF16 = torch.bfloat16
E4M3 = torch.float8_e4m3fn
DEV = torch.device("cuda", 0)
NEEDS = ("cake_swiglu_fp8_desc_init", "cake_swiglu_fp8_forward", "cake_swiglu_fp8_backward")
ERRORS = {}


@pytest.fixture(autouse=True)
def _needs():
    require_symbols(*NEEDS)


def teardown_module(module):
    print("FP8 errors:", json.dumps(ERRORS, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "fp8_errors.json"), "w") as f:
            json.dump(ERRORS, f, indent=1)


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def block_scaled(m, n, kmax, seed):
    g = torch.Generator(device=DEV).manual_seed(seed)
    x = torch.randn(m, n, device=DEV, generator=g)
    k = torch.randint(-kmax, kmax + 1, (m, n // 128), device=DEV, generator=g)
    return torch.ldexp(x, k.repeat_interleave(128, 1).float()).to(BF16)


def bytes_equal(a, b):
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def scales_equal(a, b):
    return torch.equal(a.contiguous().view(torch.int32), b.contiguous().view(torch.int32))


# ---- byte-exact where PyTorch computes the same Y ---------------------------------------------
@pytest.mark.parametrize("m,k", [(128, 128), (384, 640), (1152, 256),
                                 (33, 128), (200, 256), (129, 384)])  # any m: tail programs
@pytest.mark.parametrize("pow2", [False, True])
def test_bytes_against_the_torch_reference(m, k, pow2):
    # gate = 32: sigmoid(32) is exactly 1 in the spec's sequence (1 + 2^-46 rounds to 1), so
    # forward Y = bf16(32 * u) = 32 * u, backward dgate = bf16(grad * u), dup = 32 * grad.
    up = block_scaled(m, k, 60, 1)
    up[0, :128] = 0
    up[1, 5] = float("nan")
    up[2, min(130, k - 1)] = float("inf")
    grad = block_scaled(m, k, 30, 2)
    inp = torch.cat([torch.full_like(up, 32.0), up], dim=1)
    y = (32.0 * up.float()).to(BF16)
    dh = torch.cat([(grad.float() * up.float()).to(BF16), (32.0 * grad.float()).to(BF16)], 1)
    for which, want_y, call in (
            ("fwd", y, lambda o, prog: ct.swiglu_fp8(inp, o, pow2, prog)),
            ("bwd", dh, lambda o, prog: ct.swiglu_fp8_backward(inp, grad, o, pow2, prog))):
        rq, rs = fp8.quantize_fp8_blockwise(want_y, pow2)
        cq, cs = fp8.quantize_fp8_blockwise(want_y.t().contiguous(), pow2)
        programs = [None] + [p.name for p in cake.table_programs(cake.Arch.SM90)
                             if p.family == cake.Family.SWIGLU_FP8]
        for orient in ("rowwise", "colwise", "both"):
            for prog in programs:
                try:
                    q = call(orient, prog)
                except cake.ProgramNotFoundError:
                    continue  # a program of another form
                if orient != "colwise":
                    assert bytes_equal(q.row_q, rq), (which, orient, prog)
                    assert scales_equal(q.row_s, rs), (which, orient, prog)
                    assert q.row_s.stride() == (1, m)
                if orient != "rowwise":
                    assert bytes_equal(q.col_q, cq), (which, orient, prog)
                    assert scales_equal(q.col_s, cs), (which, orient, prog)
                    assert q.col_s.stride() == (1, want_y.shape[1])


def test_error_bound_on_general_inputs():
    m, k = 512, 1024
    g = torch.Generator(device=DEV).manual_seed(5)
    inp = (2 * torch.randn(m, 2 * k, device=DEV, generator=g)).to(BF16)
    gate, up = inp.float()[:, :k], inp.float()[:, k:]
    y64 = (gate.double() * torch.sigmoid(gate.double()) * up.double())
    for pow2 in (False, True):
        q = ct.swiglu_fp8(inp, "both", pow2)
        dr = fp8.dequantize_fp8_blockwise(q.row_q, q.row_s)
        dc = fp8.dequantize_fp8_blockwise(q.col_q, q.col_s).t()
        assert torch.equal(dr, dc) or rel(dr, dc) < 0.1  # two encodings of the same Y
        err = ((dr.double() - y64).abs() / y64.abs().clamp(min=1e-30))
        # E4M3 normals: half a step is 2^-4 of the value; plus BF16's rounding of Y
        big = y64.abs() > (q.row_s.double().repeat_interleave(128, 1) * 2 ** -6)
        assert float(err[big].max()) <= 2 ** -4 + 2 ** -8
        ERRORS[f"swiglu_fp8 vs float64, rel Frobenius, pow2={pow2}"] = rel(dr, y64)


# ---- F.scaled_mm end to end -------------------------------------------------------------------
def quant_128x128(w):
    """A weight [R, C] in 128x128 blocks (DeepSeek-V3's recipe): (q [R, C], s [R/128, C/128])."""
    r, c = w.shape
    wb = w.float().reshape(r // 128, 128, c // 128, 128)
    amax = wb.abs().amax(dim=(1, 3)).clamp(min=1e-12)
    s = amax / 448.0
    q = (wb / s[:, None, :, None]).clamp(-448, 448).to(E4M3).reshape(r, c)
    return q, s


def deq_128x128(q, s):
    r, c = q.shape
    return (q.float().reshape(r // 128, 128, c // 128, 128) * s[:, None, :, None]).reshape(r, c)


def mm_1x128_128x128(a_q, a_s, w_q, w_s):
    """a [M, K] (1x128 scales [M, K/128], strides (1, M)) @ w^T, w [N, K] in 128x128 blocks."""
    return F.scaled_mm(a_q, w_q.t(), a_s, F.ScalingType.BlockWise1x128, w_s.t(),
                       F.ScalingType.BlockWise128x128, output_dtype=BF16)


def mn_major(s):
    return s.t().contiguous().t()


def mm_1x128_1x128(a_q, a_s, bt_q, bt_s):
    """a [M, K] @ b [K, N] with b given as b^T [N, K] row-major; both 1x128 along K, scales
    [M, K/128] / [N, K/128] MN-major."""
    return F.scaled_mm(a_q, bt_q.t(), a_s, F.ScalingType.BlockWise1x128, bt_s,
                       F.ScalingType.BlockWise1x128, output_dtype=BF16)


def test_scaled_mm_forward_against_bf16_gemm():
    m, k, n = 1152, 1536, 1024
    g = torch.Generator(device=DEV).manual_seed(7)
    h = torch.randn(m, 2 * k, device=DEV, generator=g).to(BF16)
    w = (torch.randn(n, k, device=DEV, generator=g) / k ** 0.5).to(BF16)
    w_q, w_s = quant_128x128(w)
    y_bf16 = (F.silu(h[:, :k].float()) * h[:, k:].float()).to(BF16)
    ref_bf16 = y_bf16 @ w.t()
    for pow2 in (False, True):
        q = ct.swiglu_fp8(h, "rowwise", pow2)
        out = mm_1x128_128x128(q.row_q, q.row_s, w_q, w_s)
        deq = fp8.dequantize_fp8_blockwise(q.row_q, q.row_s) @ deq_128x128(w_q, w_s).t()
        e_deq, e_bf16 = rel(out, deq), rel(out, ref_bf16)
        ERRORS[f"scaled_mm(1x128 x 128x128) vs dequantized FP32 GEMM, pow2={pow2}"] = e_deq
        ERRORS[f"scaled_mm(1x128 x 128x128) vs BF16 GEMM, pow2={pow2}"] = e_bf16
        assert e_deq < 1e-2  # the layout and scales are what scaled_mm reads
        assert e_bf16 < 0.08  # FP8 quantization of both operands


def test_scaled_mm_colwise_weight_gradient():
    m, k, n = 1152, 1536, 1024
    g = torch.Generator(device=DEV).manual_seed(8)
    h = torch.randn(m, 2 * k, device=DEV, generator=g).to(BF16)
    d_out = torch.randn(m, n, device=DEV, generator=g).to(BF16)
    q = ct.swiglu_fp8(h, "colwise")
    # dW = dOut^T @ Y: [n, k], contraction over the m tokens: a = dOut^T in 1x128 blocks along
    # m, b^T = Y^T = col_q [k, m] with col_s [k, m/128].
    a_q, a_s = fp8.quantize_fp8_blockwise(d_out.t().contiguous())
    dw = mm_1x128_1x128(a_q, mn_major(a_s), q.col_q, q.col_s)
    deq = fp8.dequantize_fp8_blockwise(a_q, a_s) @ fp8.dequantize_fp8_blockwise(q.col_q, q.col_s).t()
    y_bf16 = (F.silu(h[:, :k].float()) * h[:, k:].float()).to(BF16)
    ERRORS["scaled_mm(1x128 x 1x128) dW vs dequantized"] = rel(dw, deq)
    ERRORS["scaled_mm(1x128 x 1x128) dW vs BF16"] = rel(dw, d_out.t() @ y_bf16)
    assert rel(dw, deq) < 1e-2
    assert rel(dw, d_out.t() @ y_bf16) < 0.08


# ---- the FP8 MLP block ------------------------------------------------------------------------
def test_fp8_mlp_block_forward_backward():
    """x @ W_gu^T -> SwiGLU + FP8 -> FP8 down_proj, and the backward with the backward form's
    outputs for the data-gradient GEMM (rowwise) and the weight-gradient GEMM (colwise), against
    the BF16 block (autograd). The first GEMM and dY = dOut @ W_d stay BF16 here."""
    m, hdim, k = 1152, 1024, 1536
    g = torch.Generator(device=DEV).manual_seed(9)
    x = torch.randn(m, hdim, device=DEV, generator=g).to(BF16)
    w_gu = (torch.randn(2 * k, hdim, device=DEV, generator=g) / hdim ** 0.5).to(BF16)
    w_d = (torch.randn(hdim, k, device=DEV, generator=g) / k ** 0.5).to(BF16)
    r = torch.randn(m, hdim, device=DEV, generator=g).to(BF16)  # loss = sum(out * r)

    # BF16 reference with autograd.
    xr, gur, dr = (t.clone().requires_grad_(True) for t in (x, w_gu, w_d))
    hr = xr @ gur.t()
    out_r = (F.silu(hr[:, :k]) * hr[:, k:]) @ dr.t()
    loss_r = (out_r.float() * r.float()).sum()
    loss_r.backward()

    # FP8 block.
    h = x @ w_gu.t()
    q = ct.swiglu_fp8(h, "both")
    wd_q, wd_s = quant_128x128(w_d)
    out = mm_1x128_128x128(q.row_q, q.row_s, wd_q, wd_s)
    loss = (out.float() * r.float()).sum()
    d_out = r
    d_y = d_out @ w_d  # [m, k], BF16
    a_q, a_s = fp8.quantize_fp8_blockwise(d_out.t().contiguous())  # dOut^T, blocks along m
    dw_d = mm_1x128_1x128(a_q, mn_major(a_s), q.col_q, q.col_s)  # [hdim, k]
    dh = ct.swiglu_fp8_backward(h, d_y, "both")  # [dgate | dup]
    wgu_q, wgu_s = quant_128x128(w_gu.t().contiguous())  # W_gu^T [hdim, 2k]
    dx = mm_1x128_128x128(dh.row_q, dh.row_s, wgu_q, wgu_s)  # [m, hdim]
    xq, xs = fp8.quantize_fp8_blockwise(x.t().contiguous())  # x^T [hdim, m], blocks along m
    dw_gu = mm_1x128_1x128(dh.col_q, dh.col_s, xq, mn_major(xs))  # [2k, hdim]

    errs = {
        "loss": abs(float(loss) - float(loss_r)) / abs(float(loss_r)),
        "out": rel(out, out_r),
        "dx": rel(dx, xr.grad),
        "dW_gu": rel(dw_gu, gur.grad),
        "dW_down": rel(dw_d, dr.grad),
    }
    for name, e in errs.items():
        ERRORS[f"FP8 MLP block vs BF16 block: {name}"] = e
    # Two FP8 operands per GEMM (half a step of a 3-bit mantissa, 2^-4 relative at most, about
    # 3.6% RMS each), against BF16's 2^-9: a few percent. The loss sums out * r with r of zero
    # mean, a sum that cancels to about sqrt(terms) times one term, so its relative error is of
    # the order of the elements' (4.6% measured on the H200), not smaller.
    assert errs["loss"] < 0.1
    for name in ("out", "dx", "dW_gu", "dW_down"):
        assert errs[name] < 0.1, (name, errs[name])


# ---- the norm-gate with quantized y into o_proj ------------------------------------------------
@pytest.mark.parametrize("pow2", [False, True])
def test_normgate_fp8_bytes_and_o_proj(pow2):
    require_symbols("cake_normgate_forward_quantized")
    t, heads, d, n = 1000, 32, 128, 1024  # Qwen3-Next's gated norm: [T, H, 128]
    g = torch.Generator(device=DEV).manual_seed(11)
    x = torch.randn(t, heads, d, device=DEV, generator=g).to(BF16)
    z = (2 * torch.randn(t, heads, d, device=DEV, generator=g)).to(BF16)
    w = (1 + 0.5 * torch.randn(d, device=DEV, generator=g)).to(BF16)
    y = ct.normgate(x, z, w)
    out = ct.normgate_fp8(x, z, w, pow2_scales=pow2, return_y=True)
    assert torch.equal(out.y.view(torch.int16), y.view(torch.int16))  # the plain forward's y
    q_ref, s_ref = fp8.quantize_fp8_blockwise(y.reshape(t, heads * d), pow2)
    assert bytes_equal(out.q, q_ref) and scales_equal(out.q_scale, s_ref)
    assert out.q_scale.shape == (t, heads) and out.q_scale.stride() == (1, t)
    wo = (torch.randn(n, heads * d, device=DEV, generator=g) / (heads * d) ** 0.5).to(BF16)
    wo_q, wo_s = quant_128x128(wo)
    o = mm_1x128_128x128(out.q, out.q_scale, wo_q, wo_s)
    e_bf16 = rel(o, y.reshape(t, -1) @ wo.t())
    ERRORS[f"normgate_fp8 -> scaled_mm o_proj vs BF16, pow2={pow2}"] = e_bf16
    assert e_bf16 < 0.08
    mx = ct.normgate_fp8(x, z, w, format="mxfp8")
    deq = ct.dequantize_mxfp8(mx.q, mx.q_scale)
    assert rel(deq, y.reshape(t, -1).float()) < 0.05
