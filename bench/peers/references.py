"""peers.py's references and byte counts: the norm-gate reference formula (FP32, the one
torch.compile compiles; float64, the one every peer is checked against), the SwiGLU + MXFP8
reference, the bytes each SwiGLU form reads and writes, and the relative L2 error."""

EPS = 1e-6


def ng_reference(torch, F):
    def fwd(x, z, w):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        return (xf * rstd * w.float() * F.silu(z.float())).to(torch.bfloat16)

    def bwd(dy, x, z, w):
        xf, zf, wf, dyf = x.float(), z.float(), w.float(), dy.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
        n = xf * rstd
        s = torch.sigmoid(zf)
        a = dyf * zf * s           # gradient reaching h = n * w
        g = a * wf                 # gradient reaching n
        dz = dyf * (n * wf) * s * (1 + zf * (1 - s))
        dx = rstd * (g - n * (g * n).mean(-1, keepdim=True))
        dw = (a * n).sum(0)
        return dx.to(torch.bfloat16), dz.to(torch.bfloat16), dw.to(torch.bfloat16)

    return fwd, bwd


def ng_reference64(torch, x, z, w, dy):
    xd, zd, wd, dyd = x.double(), z.double(), w.double(), dy.double()
    rstd = torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS)
    n = xd * rstd
    s = torch.sigmoid(zd)
    y = n * wd * zd * s
    a = dyd * zd * s
    g = a * wd
    dz = dyd * (n * wd) * s * (1 + zd * (1 - s))
    dx = rstd * (g - n * (g * n).mean(-1, keepdim=True))
    dw = (a * n).sum(0)
    return y, dx, dz, dw


def rel_l2(torch, got, ref):
    got = got.double()
    den = torch.linalg.vector_norm(ref).item()
    return torch.linalg.vector_norm(got - ref).item() / den if den > 0 else float("nan")


def mx_quant_lastdim(torch, y):
    """y: BF16 [R, C], C % 32 == 0 -> (E4M3 [R, C], E8M0 scale bytes [R, C/32]): per 32 values
    amax -> E8M0 RCEIL scale -> E4M3 (docs/spec/swiglu-mxfp8.md)."""
    r, c = y.shape
    blk = y.reshape(r, c // 32, 32)
    amax = blk.abs().amax(dim=-1).float()
    bits = amax.view(torch.int32)
    s = torch.clamp(((bits + 0x001F0000) >> 23) - 8, min=0)
    s = torch.where(torch.isfinite(amax), s, torch.full_like(s, 255))
    scale = torch.exp2((127 - s).float())
    v = (blk.float() * scale.unsqueeze(-1)).to(torch.bfloat16).float()
    q = torch.clamp(v, -448.0, 448.0).to(torch.float8_e4m3fn).reshape(r, c)
    return q, s.to(torch.uint8)


FP8_SCALE_FLOOR = 448.0 * 2.0 ** -126


def swiglu_dgrad(torch, inp, grad):
    """[dgate | dup] in BF16 [M, 2K] from in [M, 2K] and grad = dL/dY [M, K], FP32 inside."""
    k = inp.shape[1] // 2
    g, u, gr = inp[:, :k].float(), inp[:, k:].float(), grad.float()
    s = torch.sigmoid(g)
    a = g * s
    dgate = ((a * (1 - s) + s) * gr * u).to(torch.bfloat16)
    dup = (a * gr).to(torch.bfloat16)
    return torch.cat([dgate, dup], dim=1)


def fp8_quant_lastdim(torch, y):
    """y: BF16 [R, C], C % 128 == 0 -> (E4M3 [R, C], FP32 scales [C/128, R] MN-major): per 128
    values amax -> s = max(amax, 448 * 2^-126) / 448, the values times 448 / a to E4M3 (NaN/Inf
    blocks: NaN scale, 0x7F) (docs/spec/fp8-blockwise.md)."""
    r, c = y.shape
    blk = y.reshape(r, c // 128, 128)
    amax = blk.abs().amax(dim=-1).float()
    bad = ~torch.isfinite(amax)
    a = amax.clamp(min=FP8_SCALE_FLOOR)
    c448 = torch.full_like(a, 448.0)
    s = torch.where(bad, torch.full_like(a, float("nan")), a / c448)
    q = (blk.float() * (c448 / a).unsqueeze(-1)).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)
    q = torch.where(bad.unsqueeze(-1), torch.full_like(q.view(torch.uint8), 0x7F),
                    q.view(torch.uint8)).view(torch.float8_e4m3fn).reshape(r, c)
    return q, s.t().contiguous()


def sw_reference(torch, F):
    def quant_lastdim(y):
        return mx_quant_lastdim(torch, y)

    def swizzle(s):
        """Scale bytes [R, C] (R % 128 == 0, C % 4 == 0) -> the swizzled 128x4 layout, flat."""
        r, c = s.shape
        return s.view(r // 128, 4, 32, c // 4, 4).permute(0, 3, 2, 1, 4).reshape(-1)

    def quantize(y, orientation):
        out = []
        if orientation in ("row", "both"):
            q, s = quant_lastdim(y)
            out += [q, swizzle(s)]
        if orientation in ("col", "both"):
            q, s = quant_lastdim(y.t())  # col_q is the transpose, stored row-major [O, M]
            out += [q, swizzle(s)]
        return tuple(out)

    def make(form):
        direction, orientation = form.split("_")
        if direction == "fwd":
            def fwd(inp):
                k = inp.shape[1] // 2
                g, u = inp[:, :k].float(), inp[:, k:].float()
                y = (F.silu(g) * u).to(torch.bfloat16)
                return quantize(y, orientation)
            return fwd

        def bwd(inp, grad):
            k = inp.shape[1] // 2
            g, u, gr = inp[:, :k].float(), inp[:, k:].float(), grad.float()
            s = torch.sigmoid(g)
            a = g * s
            dact = a * (1 - s) + s
            dgate = (dact * gr * u).to(torch.bfloat16)
            dup = (a * gr).to(torch.bfloat16)
            return quantize(torch.cat([dgate, dup], dim=1), orientation)
        return bwd

    return make, swizzle


def sw_bytes(m, k, form):
    direction, orientation = form.split("_")
    o = 2 * k if direction == "bwd" else k
    rd = m * 2 * k * 2 + (m * k * 2 if direction == "bwd" else 0)
    def sb(r, c):
        return ((r + 127) // 128 * 128) * ((c + 3) // 4 * 4)
    wr = 0
    if orientation in ("row", "both"):
        wr += m * o + sb(m, o // 32)
    if orientation in ("col", "both"):
        wr += m * o + sb(o, m // 32)
    return rd, wr


def sw8_reference(torch, F):
    """SwiGLU + FP8 blockwise 1x128 (docs/spec/fp8-blockwise.md) in plain PyTorch: the MXFP8
    reference's Y, then per 128 values amax -> s = max(amax, 448 * 2^-126) / 448 (FP32), the
    values times 448 / a to E4M3 (NaN/Inf blocks: NaN scale, 0x7F), scales MN-major."""
    def quant_lastdim(y):
        return fp8_quant_lastdim(torch, y)

    def quantize(y, orientation):
        out = []
        if orientation in ("row", "both"):
            out += list(quant_lastdim(y))
        if orientation in ("col", "both"):
            out += list(quant_lastdim(y.t()))
        return tuple(out)

    def make(form):
        direction, orientation = form.split("_")
        if direction == "fwd":
            def fwd(inp):
                k = inp.shape[1] // 2
                g, u = inp[:, :k].float(), inp[:, k:].float()
                return quantize((F.silu(g) * u).to(torch.bfloat16), orientation)
            return fwd

        def bwd(inp, grad):
            return quantize(swiglu_dgrad(torch, inp, grad), orientation)
        return bwd

    return make


def sw8_bytes(m, k, form):
    direction, orientation = form.split("_")
    o = 2 * k if direction == "bwd" else k
    rd = m * 2 * k * 2 + (m * k * 2 if direction == "bwd" else 0)
    one = m * o + 4 * m * o // 128  # E4M3 data and FP32 scales of one orientation
    return rd, one * (2 if orientation == "both" else 1)
