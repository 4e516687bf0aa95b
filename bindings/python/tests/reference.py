"""PyTorch float64 references and the spec's comparison rules (docs/spec/normgate.md,
docs/spec/swiglu-mxfp8.md), shared by the GPU tests and the examples' checks."""

import torch

BF16 = torch.bfloat16


# ---- norm-gate -----------------------------------------------------------------------------
def normgate_fwd64(x, z, w, eps):
    x, z, w = x.double(), z.double(), w.double()
    rstd = torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)
    return x * rstd * w * z * torch.sigmoid(z)


def normgate_bwd64(dy, x, z, w, eps):
    """(dx, dz, dw) in float64, from the spec's formulas."""
    dy, x, z, w = dy.double(), x.double(), z.double(), w.double()
    d = x.shape[-1]
    rstd = torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)
    n = x * rstd
    s = torch.sigmoid(z)
    a = dy * z * s
    g = a * w
    dz = dy * n * w * s * (1 + z * (1 - s))
    dx = rstd * (g - n * (g * n).mean(-1, keepdim=True))
    dw = (a * n).reshape(-1, d).sum(0)
    return dx, dz, dw


def bf16_ordinal(t):
    """Sign-magnitude BF16 bits as ordered integers (adjacent values differ by 1; +-0 are 0)."""
    b = t.contiguous().view(torch.int16).to(torch.int32)
    return torch.where(b < 0, -(b & 0x7FFF), b)


def f32_ordinal(t):
    b = t.contiguous().view(torch.int32).to(torch.int64)
    return torch.where(b < 0, -(b & 0x7FFFFFFF), b)


def rel_l2(got, want):
    got, want = got.double(), want.double()
    return ((got - want).norm() / want.norm().clamp_min(1e-300)).item()


def check_y(y, ref64):
    """Every element is the float64 value rounded to BF16 or one of its neighbours; rel L2."""
    dist = (bf16_ordinal(y) - bf16_ordinal(ref64.to(BF16))).abs()
    assert dist.max().item() <= 1, f"y: {int((dist > 1).sum())} elements off by more than 1 ulp"
    assert rel_l2(y, ref64) <= 2e-3


def bf16_ulp(ref64):
    _, e = torch.frexp(ref64)
    return torch.ldexp(torch.ones_like(ref64), e - 8)  # BF16 has 8 significant bits


def check_grad(name, got, ref64):
    """Within 1 BF16 ulp of the float64 value, or 2^-10 x the row's largest |value|; rel L2."""
    d = ref64.shape[-1]
    g, r = got.double().reshape(-1, d), ref64.reshape(-1, d)
    err = (g - r).abs()
    row_max = r.abs().amax(-1, keepdim=True)
    ok = (err <= bf16_ulp(r)) | (err <= row_max * 2.0**-10)
    assert bool(ok.all()), f"{name}: {int((~ok).sum())} elements outside the spec's bound"
    assert rel_l2(got, ref64) <= 2e-3, f"{name}: relative L2 {rel_l2(got, ref64):.2e}"


def check_dw(dw, ref64):
    if dw.dtype == torch.float32:
        assert rel_l2(dw, ref64) <= 1e-5, f"dw fp32: relative L2 {rel_l2(dw, ref64):.2e}"
    else:
        dist = (bf16_ordinal(dw) - bf16_ordinal(ref64.to(BF16))).abs()
        assert dist.max().item() <= 1, f"dw bf16: {int((dist > 1).sum())} elements off > 1 ulp"


# ---- SwiGLU + MXFP8 ------------------------------------------------------------------------
def swiglu_y64(inp, grad=None):
    """BF16 [m, O]: the forward's Y, or the backward's [dgate | dup], from float64."""
    k = inp.shape[1] // 2
    g, u = inp[:, :k].double(), inp[:, k:].double()
    s = torch.sigmoid(g)
    a = g * s
    if grad is None:
        return (a * u).to(BF16)
    gr = grad.double()
    dact = a * (1 - s) + s
    return torch.cat([(dact * gr * u).to(BF16), (a * gr).to(BF16)], dim=1)


def swizzle(rows, cols, device):
    r = torch.arange(rows, device=device).view(-1, 1)
    c = torch.arange(cols, device=device).view(1, -1)
    cp = (cols + 3) // 4 * 4
    return ((r // 128) * (cp // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def quantize_rows(v):
    """MXFP8 of BF16 [R, N] along rows (blocks of 32 columns): (E4M3 [R, N], swizzled scales)."""
    rows, n = v.shape
    blocks = v.float().view(rows, n // 32, 32)
    amax = blocks.abs().amax(-1)  # NaN-propagating
    bits = amax.view(torch.int32).to(torch.int64)
    s = ((bits + 0x001F0000) >> 23) - 8
    s = s.clamp_min(0)
    s = torch.where(torch.isfinite(amax), s, torch.full_like(s, 255))
    scale = torch.exp2((127 - s).clamp(max=127).double()).unsqueeze(-1)
    scaled = (blocks.double() * scale).to(BF16)  # exact power-of-two scaling, then RNE to BF16
    q = scaled.float().to(torch.float8_e4m3fn).view(torch.uint8)
    q = torch.where((s == 255).unsqueeze(-1), torch.full_like(q, 0x7F), q).view(rows, n)
    cp = (n // 32 + 3) // 4 * 4
    rp = (rows + 127) // 128 * 128
    buf = torch.zeros(rp * cp, dtype=torch.uint8, device=v.device)
    buf[swizzle(rows, n // 32, v.device).reshape(-1)] = s.to(torch.uint8).reshape(-1)
    return q, buf


def e4m3_ordinal(q):
    b = q.view(torch.uint8).to(torch.int32)
    return torch.where(b >= 128, -(b & 0x7F), b)


def check_mxfp8(name, q, s, q_ref, s_ref, rows, cols):
    """FlashInfer's test policy against the float64 formula: scale gap <= 1, E4M3 ordinal gap
    <= 1 where the scales agree, at most max(8, 1e-5 n) differing bytes."""
    s, s_ref = s.view(torch.uint8).to(torch.int32), s_ref.to(torch.int32)
    assert s.shape == s_ref.shape, f"{name}: scale buffer {s.shape} vs {s_ref.shape}"
    gap = (s - s_ref).abs()
    assert gap.max().item() <= 1, f"{name}: scale gap {gap.max().item()}"
    n_s = int((gap != 0).sum())
    assert n_s <= max(2, 1e-4 * s.numel()), f"{name}: {n_s} scales differ"
    offs = swizzle(rows, cols // 32, q.device)
    same_scale = (gap.view(-1)[offs] == 0).repeat_interleave(32, dim=1)
    qo, ro = e4m3_ordinal(q).view(rows, cols), e4m3_ordinal(q_ref).view(rows, cols)
    qgap = (qo - ro).abs()
    assert qgap[same_scale].max().item() <= 1, f"{name}: E4M3 ordinal gap {qgap.max().item()}"
    n_q = int((qgap[same_scale] != 0).sum())
    assert n_q <= max(8, 1e-5 * q.numel()), f"{name}: {n_q} data bytes differ"


def swiglu_variant64(inp, grad, activation="silu", alpha=1.702, limit=7.0, prob=None):
    """float64 (y [m, k], [dgate | dup] [m, 2k], dprob [m] or None) of the SwiGLU variants
    (docs/spec/swiglu-mxfp8.md, "Variants") by autograd: the clamps' gradient passes at the
    bounds, as the spec's. grad: dL/dY [m, k]."""
    k = inp.shape[1] // 2
    x = inp.double().clone().requires_grad_()
    g, u = x[:, :k], x[:, k:]
    if activation == "clamped":
        gc = g.clamp(max=limit)
        y = gc * torch.sigmoid(alpha * gc) * (u.clamp(-limit, limit) + 1)
    else:
        y = g * torch.sigmoid(g) * u
    p = None
    if prob is not None:
        p = prob.double().reshape(-1, 1).clone().requires_grad_()
        y = y * p
    y.backward(grad.double())
    dprob = None if p is None else p.grad.reshape(-1)
    return y.detach(), x.grad, dprob
