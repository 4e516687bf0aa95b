"""peers.py's grouped SwiGLU rows (MoE experts, docs/spec/swiglu-grouped.md): cake-bench's
grouped shapes and their uneven splits, and the grouped reference torch.compile compiles.

Shapes are cake-bench's: "T x K / E<n>" (T tokens of [T, 2K] BF16 over n experts), --sw-shapes
grouped being T in {16384, 65536}, K in {2048, 7168}, E in {8, 64, 256}. The split is
cake-bench's too (bench/workloads.cc uneven_offsets(), seeded by the shape): the same
std::mt19937_64 draws and std::uniform_real_distribution<double> (libstdc++: one 64-bit draw / 2^64)
here in Python, so both tools time the same expert sizes.

The reference takes the offsets as a device int32 [E] tensor, as Cake does (one graph serves
every split; no host read): per token its expert e, row r within it and padded scale row
p[e] + r come from the offsets on the device. Rowwise outputs are the ungrouped reference's
(blocks within a row), the scales scattered to each expert's place; colwise blocks run along each
expert's own rows: Y is scattered to its padded rows (zeros between experts change no amax), the
ungrouped colwise quantization of that [P, O] matrix is each expert's, and the colwise bytes are
gathered or scattered into Cake's layouts. Bytes the spec leaves unwritten are zeros here."""

from references import fp8_quant_lastdim, mx_quant_lastdim, swiglu_dgrad

MASK64 = (1 << 64) - 1
TOKENS, WIDTHS, EXPERTS = (16384, 65536), (2048, 7168), (8, 64, 256)
GROUPED_SHAPES = ["%dx%d/E%d" % (t, k, e) for t in TOKENS for k in WIDTHS for e in EXPERTS]


class MT19937_64:
    """std::mt19937_64."""

    def __init__(self, seed):
        self.mt = [seed & MASK64]
        for i in range(1, 312):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.i = 312

    def __call__(self):
        mt = self.mt
        if self.i >= 312:
            for j in range(312):
                x = (mt[j] & 0xFFFFFFFF80000000) | (mt[(j + 1) % 312] & 0x7FFFFFFF)
                mt[j] = mt[(j + 156) % 312] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
            self.i = 0
        x = mt[self.i]
        self.i += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        return x ^ (x >> 43)


def canonical(rng):
    """std::uniform_real_distribution<double>(0, 1) of libstdc++ with a 64-bit engine."""
    v = float(rng()) / 18446744073709551616.0
    return v if v < 1.0 else 1.0 - 2.0 ** -53


def uneven_offsets(rows, experts, unit, seed):
    """bench/workloads.cc uneven_offsets(): end rows of a skewed split of rows into experts."""
    rng = MT19937_64(seed)
    share, total = [], 0.0
    for _ in range(experts):
        a = canonical(rng)
        b = canonical(rng)
        w = a * b * canonical(rng)
        share.append(w)
        total += w
    units = rows // unit
    out, given, end = [], 0, 0
    for e in range(experts):
        n = units - given if e + 1 == experts else int(share[e] / total * float(units))
        n = min(n, units - given)
        given += n
        end += n * unit
        if e + 1 == experts:
            end = rows
        out.append(end)
    return out


def parse_shape(s):
    """"TxK/E<n>" or "TxK/E<n>r" -> (T, K, n, ragged); "MxK" -> None (an ungrouped shape)."""
    base, _, g = s.partition("/")
    if not g:
        return None
    t, k = (int(v) for v in base.split("x"))
    ragged = g.endswith("r")
    return t, k, int(g[1:-1] if ragged else g[1:]), ragged


def shape_offsets(t, k, e, ragged=False):
    """cake-bench's split of a grouped shape (bench/workloads.cc SwigluWorkload::alloc())."""
    return uneven_offsets(t, e, 1 if ragged else 32, (t * 1000003 + k * 131 + e) & MASK64)


def grouped_reference(torch, F):
    """make(form, fmt) -> fn(inp, offs) (forward) or fn(inp, grad, offs) (backward): the grouped
    outputs of the form ("fwd_row" .. "bwd_both") in fmt ("mxfp8" or "fp8_blockwise"), as flat
    tensors in Cake's layouts (row_q, row_s, col_q, col_s of the orientations asked for)."""

    def experts(offs, t):
        """Per token: expert, row in it, its rows, its first row, padded row p[e] + r, valid;
        and the experts' padded starts p (E + 1) and rows n."""
        c = torch.clamp(torch.cummax(offs.long(), 0).values, 0, t)
        start = torch.cat([c.new_zeros(1), c[:-1]])
        n = c - start
        p = torch.cat([c.new_zeros(1), torch.cumsum((n + 127) // 128 * 128, 0)])
        m = torch.arange(t, device=offs.device)
        e = torch.clamp(torch.searchsorted(c, m, right=True), max=offs.shape[0] - 1)
        r = m - start[e]
        return e, r, n[e], start[e], p[e] + r, m < c[-1], p, n

    def swz(rows, cols, cp):
        return ((rows // 128) * (cp // 4) + cols // 4) * 512 + (rows % 32) * 16 + \
            ((rows % 128) // 32) * 4 + cols % 4

    def scatter(size, idx, valid, values, dtype):
        """A zeroed flat buffer of @p size with @p values at @p idx where @p valid."""
        out = torch.zeros(size + 1, device=values.device, dtype=dtype)
        idx = torch.where(valid, idx, torch.full_like(idx, size))
        return out.scatter(0, idx.reshape(-1), values.reshape(-1).to(dtype))[:size]

    def rows_of_experts(q, valid):
        """q's rows that belong to an expert, the others zero (the spec leaves them unwritten)."""
        return torch.where(valid[:, None], q.view(torch.uint8), 0).view(q.dtype).reshape(-1)

    def quantize(y, offs, fmt, orientation):
        t, o = y.shape
        e, r, n, start, prow, valid, p, ne = experts(offs, t)
        pcap = (t + 127 * min(offs.shape[0], t)) // 128 * 128  # P: every split's padded rows
        out = []
        vcol = valid[:, None]
        cols = torch.arange(o, device=y.device)[None, :]
        if orientation in ("row", "both"):
            if fmt == "mxfp8":
                q, s = mx_quant_lastdim(torch, y)  # s: [T, O/32] E8M0 bytes
                cp = (o // 32 + 3) // 4 * 4
                j = torch.arange(o // 32, device=y.device)[None, :]
                out += [rows_of_experts(q, valid), scatter(pcap * cp, swz(prow[:, None], j, cp),
                                               vcol.expand(-1, o // 32), s, torch.uint8)]
            else:
                q, s = fp8_quant_lastdim(torch, y)  # s: [O/128, T] (MN-major storage)
                j = torch.arange(o // 128, device=y.device)[None, :]
                idx = (prow - r)[:, None] * (o // 128) + j * n[:, None] + r[:, None]
                out += [rows_of_experts(q, valid), scatter(pcap * (o // 128), idx,
                                               vcol.expand(-1, o // 128), s.t(), torch.float32)]
        if orientation in ("col", "both"):
            # Y at its padded rows: the ungrouped colwise quantization of [P, O] is each
            # expert's (blocks start on its 128-row boundary and zeros change no amax).
            yp = torch.zeros(pcap + 1, o, device=y.device, dtype=y.dtype)
            yp = yp.index_copy(0, torch.where(valid, prow, torch.full_like(prow, pcap)), y)[:pcap]
            if fmt == "mxfp8":
                qc, sc = mx_quant_lastdim(torch, yp.t().contiguous())  # [O, P], [O, P/32]
                col_q = torch.where(valid[None, :],
                                    qc.view(torch.uint8)[:, torch.clamp(prow, max=pcap - 1)],
                                    0).view(torch.float8_e4m3fn)
                # Block column gb of the padded rows: expert eg's block b = gb - p[eg] / 32.
                gb = torch.arange(pcap // 32, device=y.device)
                eg = torch.clamp(torch.searchsorted(p[1:], gb * 32, right=True),
                                 max=offs.shape[0] - 1)
                b = gb - p[eg] // 32
                rp = (o + 127) // 128 * 128
                ce = 4 * ((ne[eg] + 127) // 128)
                idx = rp * p[eg][None, :] // 32 + swz(torch.arange(o, device=y.device)[:, None],
                                                       b[None, :], ce[None, :])
                live = (gb * 32 < p[-1])[None, :].expand(o, -1)
                out += [col_q.reshape(-1), scatter(rp * pcap // 32, idx, live, sc, torch.uint8)]
            else:
                qc, sc = fp8_quant_lastdim(torch, yp.t().contiguous())  # [O, P], [P/128, O]
                # [T, O]: token m's column of the padded transpose
                vals = qc.view(torch.uint8)[:, torch.clamp(prow, max=pcap - 1)].t()
                idx = start[:, None] * o + cols * n[:, None] + r[:, None]
                col_q = scatter(t * o, idx, vcol.expand(-1, o), vals,
                                torch.uint8).view(torch.float8_e4m3fn)
                out += [col_q, sc.reshape(-1)]
        return tuple(out)

    def make(form, fmt):
        direction, orientation = form.split("_")
        if direction == "fwd":
            def fwd(inp, offs):
                k = inp.shape[1] // 2
                g, u = inp[:, :k].float(), inp[:, k:].float()
                return quantize((F.silu(g) * u).to(torch.bfloat16), offs, fmt, orientation)
            return fwd

        def bwd(inp, grad, offs):
            return quantize(swiglu_dgrad(torch, inp, grad), offs, fmt, orientation)
        return bwd

    return make


def written_masks(torch, fmt, offsets, t, k, backward, orientation, device=None):
    """Per output of the orientation (row_q, row_s, col_q, col_s), a bool mask over its bytes:
    those the spec says the call writes (the rest Cake leaves as they were)."""
    o = 2 * k if backward else k
    counts = [b - a for a, b in zip([0] + offsets[:-1], offsets)]
    end = offsets[-1]
    p = [0]
    for n in counts:
        p.append(p[-1] + -(-n // 128) * 128)
    pcap = (t + 127 * min(len(offsets), t)) // 128 * 128
    out = []
    if orientation in ("row", "both"):
        qm = torch.zeros(t * o, dtype=torch.bool, device=device)
        qm[:end * o] = True
        if fmt == "mxfp8":
            cp = (o // 32 + 3) // 4 * 4
            sm = torch.zeros(pcap * cp, dtype=torch.bool, device=device)
            sm[:p[-1] * cp] = True
        else:
            sm = torch.zeros(4 * pcap * (o // 128), dtype=torch.bool, device=device)
            for n, pe in zip(counts, p):
                sm[4 * pe * (o // 128):4 * (pe + n) * (o // 128)] = True
        out += [qm, sm]
    if orientation in ("col", "both"):
        if fmt == "mxfp8":
            qm = torch.zeros(o, t, dtype=torch.bool, device=device)
            qm[:, :end] = True
            rp = (o + 127) // 128 * 128
            sm = torch.zeros(rp * pcap // 32, dtype=torch.bool, device=device)
            sm[:rp * p[-1] // 32] = True
            qm = qm.reshape(-1)
        else:
            qm = torch.zeros(t * o, dtype=torch.bool, device=device)
            qm[:end * o] = True
            sm = torch.zeros(4 * (pcap // 128) * o, dtype=torch.bool, device=device)
            sm[:4 * (p[-1] // 128) * o] = True
        out += [qm, sm]
    return out


def differing_bytes(torch, got, want, masks):
    """The fraction of the written bytes where two calls' outputs differ (a peer against Cake)."""
    diff = total = 0
    for a, b, m in zip(got, want, masks):
        a = a.reshape(-1).contiguous().view(torch.uint8)
        b = b.reshape(-1).contiguous().view(torch.uint8)
        diff += int(((a != b) & m).sum())
        total += int(m.sum())
    return diff / max(total, 1)
