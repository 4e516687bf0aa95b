"""NumPy float64 references and the spec's comparison rules, for the JAX tests and examples."""

import ml_dtypes
import numpy as np

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn


def f64(a):
    return np.asarray(a).astype(np.float64)


def sigmoid(v):
    return 0.5 * (1.0 + np.tanh(0.5 * v))  # no overflow warnings for large |v|


def normgate_fwd64(x, z, w, eps):
    x, z, w = f64(x), f64(z), f64(w)
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return x * rstd * w * z * sigmoid(z)


def normgate_bwd64(dy, x, z, w, eps):
    dy, x, z, w = f64(dy), f64(x), f64(z), f64(w)
    d = x.shape[-1]
    rstd = 1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    n = x * rstd
    s = sigmoid(z)
    a = dy * z * s
    g = a * w
    dz = dy * n * w * s * (1 + z * (1 - s))
    dx = rstd * (g - n * np.mean(g * n, axis=-1, keepdims=True))
    dw = (a * n).reshape(-1, d).sum(0)
    return dx, dz, dw


def bf16_ordinal(a):
    b = np.asarray(a).astype(BF16).view(np.int16).astype(np.int32)
    return np.where(b < 0, -(b & 0x7FFF), b)


def rel_l2(got, want):
    got, want = f64(got), f64(want)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def check_y(y, ref64):
    dist = np.abs(bf16_ordinal(y) - bf16_ordinal(ref64.astype(BF16)))
    assert dist.max() <= 1, f"y: {(dist > 1).sum()} elements off by more than 1 ulp"
    assert rel_l2(y, ref64) <= 2e-3


def check_grad(name, got, ref64):
    d = ref64.shape[-1]
    g, r = f64(got).reshape(-1, d), ref64.reshape(-1, d)
    err = np.abs(g - r)
    _, e = np.frexp(r)
    ulp = np.ldexp(1.0, e - 8)
    ok = (err <= ulp) | (err <= np.abs(r).max(-1, keepdims=True) * 2.0**-10)
    assert ok.all(), f"{name}: {(~ok).sum()} elements outside the spec's bound"
    assert rel_l2(got, ref64) <= 2e-3, f"{name}: relative L2 {rel_l2(got, ref64):.2e}"


def swiglu_y64(inp, grad=None):
    inp = f64(inp)
    k = inp.shape[1] // 2
    g, u = inp[:, :k], inp[:, k:]
    s = sigmoid(g)
    a = g * s
    if grad is None:
        return (a * u).astype(BF16)
    gr = f64(grad)
    dact = a * (1 - s) + s
    return np.concatenate([(dact * gr * u).astype(BF16), (a * gr).astype(BF16)], axis=1)


def swizzle(rows, cols):
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    cp = (cols + 3) // 4 * 4
    return ((r // 128) * (cp // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def quantize_rows(v):
    """MXFP8 of BF16 [R, N] along rows: (uint8 E4M3 [R, N], uint8 swizzled scales)."""
    rows, n = v.shape
    f = np.asarray(v).astype(np.float32).reshape(rows, n // 32, 32)
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(f), axis=-1)
    bits = amax.view(np.int32).astype(np.int64)
    s = np.maximum(((bits + 0x001F0000) >> 23) - 8, 0)
    s[~np.isfinite(amax)] = 255
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = (f.astype(np.float64) * np.exp2(127.0 - s)[..., None]).astype(BF16)
        q = scaled.astype(np.float32).astype(E4M3).view(np.uint8).copy()
    q[s == 255] = 0x7F
    cp = (n // 32 + 3) // 4 * 4
    rp = (rows + 127) // 128 * 128
    buf = np.zeros(rp * cp, dtype=np.uint8)
    buf[swizzle(rows, n // 32).reshape(-1)] = s.astype(np.uint8).reshape(-1)
    return q.reshape(rows, n), buf


def e4m3_ordinal(q):
    b = np.asarray(q).view(np.uint8).astype(np.int32)
    return np.where(b >= 128, -(b & 0x7F), b)


def check_mxfp8(name, q, s, q_ref, s_ref, rows, cols):
    """Scale gap <= 1, E4M3 ordinal gap <= 1 where scales agree, few differing bytes."""
    s = np.asarray(s).astype(np.int32)
    gap = np.abs(s - s_ref.astype(np.int32))
    assert gap.max() <= 1, f"{name}: scale gap {gap.max()}"
    assert (gap != 0).sum() <= max(2, 1e-4 * s.size), f"{name}: {(gap != 0).sum()} scales differ"
    same = np.repeat(gap[swizzle(rows, cols // 32)] == 0, 32, axis=1)
    qgap = np.abs(e4m3_ordinal(q).reshape(rows, cols) - e4m3_ordinal(q_ref))
    assert qgap[same].max() <= 1, f"{name}: E4M3 ordinal gap {qgap[same].max()}"
    assert (qgap[same] != 0).sum() <= max(8, 1e-5 * qgap.size), f"{name}: data bytes differ"


def gated_rmsnorm64(x, z, w, eps, gate="silu", gate_before_norm=False, group_size=None):
    """Every normgate variant in float64: y = rmsnorm_G(x) * w * a(z), or rmsnorm_G(x * a(z)) * w
    with gate_before_norm; a = silu or sigmoid; z None: no gate; G = group_size (None: row)."""
    h, w = f64(x), f64(w)
    a = None
    if z is not None:
        zf = f64(z)
        a = zf * sigmoid(zf) if gate == "silu" else sigmoid(zf)
        if gate_before_norm:
            h = h * a
    d = h.shape[-1]
    g = d if group_size is None else group_size
    hg = h.reshape(*h.shape[:-1], d // g, g)
    n = (hg / np.sqrt(np.mean(hg * hg, axis=-1, keepdims=True) + eps)).reshape(h.shape)
    y = n * w
    if a is not None and not gate_before_norm:
        y = y * a
    return y


def quantize_blockwise_rows(v, rule="exact"):
    """FP8 blockwise 1x128 of BF16 [R, N] along rows (docs/spec/fp8-blockwise.md): (uint8 E4M3
    [R, N], float32 scales [N/128, R] in the MN-major storage)."""
    rows, n = v.shape
    f = np.asarray(v).astype(np.float32).reshape(rows, n // 128, 128)
    with np.errstate(invalid="ignore"):
        amax = np.max(np.abs(f), axis=-1)
    a = np.maximum(amax, np.float32(448 * 2.0**-126))
    if rule == "pow2":
        s = np.exp2(np.ceil(np.log2(a.astype(np.float64) / 448))).astype(np.float32)
        r = (1 / s.astype(np.float64)).astype(np.float32)
    else:
        s = (a / np.float32(448)).astype(np.float32)
        r = (np.float32(448) / a).astype(np.float32)
    bad = ~np.isfinite(amax)
    s[bad] = np.nan
    with np.errstate(invalid="ignore", over="ignore"):
        q = (f * r[..., None]).astype(np.float32).astype(E4M3).view(np.uint8).copy()
    q[np.broadcast_to(bad[..., None], q.shape)] = 0x7F
    return q.reshape(rows, n), np.ascontiguousarray(s.T)


def check_blockwise(name, q, s, q_ref, s_ref):
    """Scales within 2^-7 relatively (the BF16 amax of a Y whose sigmoid differs in an ulp),
    E4M3 ordinals within 1 where the scales agree, few differing bytes."""
    s, s_ref = np.asarray(s, np.float64), np.asarray(s_ref, np.float64)
    assert s.shape == s_ref.shape, f"{name}: scales {s.shape}, want {s_ref.shape}"
    rel = np.abs(s - s_ref) / s_ref
    assert np.nanmax(rel) <= 2.0**-7, f"{name}: scale gap {np.nanmax(rel):.3g}"
    assert (rel != 0).sum() <= max(2, 1e-4 * s.size), f"{name}: {(rel != 0).sum()} scales differ"
    same = np.repeat((rel == 0).T, 128, axis=1)
    qgap = np.abs(e4m3_ordinal(q).reshape(same.shape) - e4m3_ordinal(q_ref))
    assert qgap[same].max() <= 1, f"{name}: E4M3 ordinal gap {qgap[same].max()}"
    assert (qgap[same] != 0).sum() <= max(8, 1e-5 * qgap.size), f"{name}: data bytes differ"


def swiglu_variant64(inp, grad, activation="silu", alpha=1.702, limit=7.0, prob=None):
    """float64 (y [m, k], [dgate | dup] [m, 2k], dprob [m] or None) of the SwiGLU variants
    (docs/spec/swiglu-mxfp8.md, "Variants"); the clamps' gradient passes at the bounds."""
    x, gr = f64(inp), f64(grad)
    k = x.shape[1] // 2
    g, u = x[:, :k], x[:, k:]
    if activation == "clamped":
        gc, b = np.minimum(g, limit), np.clip(u, -limit, limit) + 1
        pass_g, pass_u = g <= limit, np.abs(u) <= limit
    else:
        gc, b, alpha = g, u, 1.0
        pass_g = pass_u = np.ones_like(g, dtype=bool)
    s = sigmoid(alpha * gc)
    a = gc * s
    w = np.ones((x.shape[0], 1)) if prob is None else f64(prob).reshape(-1, 1)
    q = gr * w
    dg = np.where(pass_g, q * b * (s + alpha * gc * s * (1 - s)), 0.0)
    du = np.where(pass_u, q * a, 0.0)
    dprob = None if prob is None else (gr * a * b).sum(axis=1)
    return a * b * w, np.concatenate([dg, du], axis=1), dprob
