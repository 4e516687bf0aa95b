"""peers.py --table variants: Cake and its peers on every variant of the norm-gate.

Per row of width D, statistics per group of G columns (G = D: the whole row), gate a(z) =
silu(z) or sigmoid(z) or none:
  gate after the norm:  y = rmsnorm_G(x) * w * a(z)   (variant "silu/after", "sigmoid/after")
  gate before the norm: y = rmsnorm_G(x * a(z)) * w   (variant "silu/before")
  no gate:              y = rmsnorm_G(x) * w          (variant "none")
"/G1024" appended: G = 1024. BF16 x, z, w, y, dy, dx, dz, dw (--vt-dtypes adds FP16 or FP32
ones, or FP32 w and dw beside BF16 activations: "/f32", "/bf16-wf32" appended); eps 1e-6.

Sets (--vt-sets, in this priority order):
  wide     rows x D of --vt-shapes (default the six wide shapes, D 512..8192), silu, both placements
  group    --vt-group-shape with G = --vt-group, silu, both placements
  sigmoid  the wide shapes, sigmoid gate after the norm (FLA's activation="sigmoid")
  d128     --ng-shapes (T x H rows of D = 128, today's set), silu gate before the norm
  nogate   the wide shapes, no gate
Peers, each only where it computes the variant (elsewhere a row with status "unsupported"):
  FLA 0.6.0 rms_norm_gated: gate after the norm, whole row, activation "swish" or "sigmoid";
  mamba_ssm 2.3.2 rmsnorm_fn: SiLU or no gate (z=None), norm_before_gate=True for "after" and
    False for "before", group_size;
  torch.compile of the FP32 formula (forward, and the backward written out): every variant.
Cake through its Python binding, the descriptor's gate, placement, group_size and dtypes
(forward; the backward in both packages, dw in w's dtype).

Every peer's and Cake's outputs (y; dx, dz, dw) are checked against a float64 autograd of the
formula on the same inputs before anything is timed; a relative L2 error above --check-tol in
any output makes the row "mismatch" (the errors in the row), never timed as if equal. Timing is
peers.py's method: graph replays, cold L2, each peer alternated round by round with Cake's graphs
on the same inputs, medians. The limit line of a row is its bytes (the table of
docs/benchmarking.md: x, z, w read, y written; dy, x, z, w read, dx, dz, dw written; no z, dz
without a gate) over the device copy's bandwidth (--copy-gbps, else measured here: 1 GiB copied
three ways, the fastest, read + write counted); frac_limit = limit us / us.

Two passes under --time-budget: Cake, FLA and mamba_ssm over every case (cheap), then
torch.compile per mode over every case (a fresh compile each: the expensive part, skipped first
when the budget runs out, and listed)."""

import time

from bookkeeping import best_table, cake_vs_best_peer, derive_fwd_bwd
from references import EPS, rel_l2

WIDE = "16384x8192,8192x5120,32768x4096,65536x1024,16384x2048,65536x512"
SETS = ("wide", "group", "sigmoid", "d128", "nogate")
FLA_NAME = "FLA rms_norm_gated"
MAMBA_NAME = "mamba_ssm rmsnorm_fn"


# -- the plan (pure Python) --------------------------------------------------------------------

DTYPES = ("bf16", "f16", "f32")
ELEM = {"bf16": 2, "f16": 2, "f32": 4}
TORCH_DTYPE = {"bf16": lambda t: t.bfloat16, "f16": lambda t: t.float16, "f32": lambda t: t.float32}


def parse_dtype(spec):
    """--vt-dtypes item: "X" (x, z, w, dw in X) or "X:W" (x, z in X; w, dw in W)."""
    x, _, w = spec.partition(":")
    w = w or x
    for t in (x, w):
        if t not in DTYPES:
            raise ValueError("dtype %r: one of %s" % (t, ", ".join(DTYPES)))
    return x, w


def variant_label(gate, placement, group, dtype="bf16", w_dtype="bf16"):
    """"silu/after", "sigmoid/after", "silu/before/G1024", "none", "none/G1024"; other dtypes
    than BF16 appended: "/f32" (everything FP32), "/bf16-wf32" (FP32 w and dw)."""
    s = "none" if gate == "none" else "%s/%s" % (gate, placement)
    s += "/G%d" % group if group else ""
    if (dtype, w_dtype) != ("bf16", "bf16"):
        s += "/" + (dtype if dtype == w_dtype else "%s-w%s" % (dtype, w_dtype))
    return s


def make_case(set_, rows, d, gate, placement, group=0, th=None, dtype="bf16", w_dtype="bf16"):
    if group and (group % 8 or d % group):
        raise ValueError("group %d: a multiple of 8 that divides D = %d" % (group, d))
    if group == d:
        group = 0  # one group is the whole row: the same function, one label
    if gate == "none":
        placement = "after"  # without a gate the placement means nothing
    return {"set": set_, "rows": rows, "d": d, "gate": gate, "placement": placement,
            "group": group, "shape": "%dx%d" % (rows, d), "th": th, "dtype": dtype,
            "w_dtype": w_dtype, "variant": variant_label(gate, placement, group, dtype, w_dtype)}


def parse_rxd(sh):
    r, d = (int(v) for v in sh.split("x"))
    return r, d


def plan(sets, wide=WIDE, th_list="", group=1024, group_shape="16384x8192", dtypes=("bf16",)):
    """The cases of the variant table, in priority order: per dtype (in the order given), the
    sets in the order given."""
    cases = []
    for spec in dtypes:
        x, w = parse_dtype(spec)
        cases += [make_case(c["set"], c["rows"], c["d"], c["gate"], c["placement"], c["group"],
                            c["th"], x, w) for c in _plan(sets, wide, th_list, group, group_shape)]
    return cases


def _plan(sets, wide, th_list, group, group_shape):
    cases = []
    wide_shapes = [parse_rxd(s) for s in wide.split(",") if s]
    for s in sets:
        if s == "wide":
            for rows, d in wide_shapes:
                for pl in ("after", "before"):
                    cases.append(make_case(s, rows, d, "silu", pl))
        elif s == "group":
            rows, d = parse_rxd(group_shape)
            for pl in ("after", "before"):
                cases.append(make_case(s, rows, d, "silu", pl, group))
        elif s == "sigmoid":
            for rows, d in wide_shapes:
                cases.append(make_case(s, rows, d, "sigmoid", "after"))
        elif s == "d128":
            for th in (t for t in th_list.split(",") if t):
                t, h = (int(v) for v in th.split("x"))
                cases.append(make_case(s, t * h, 128, "silu", "before", th=th))
        elif s == "nogate":
            for rows, d in wide_shapes:
                cases.append(make_case(s, rows, d, "none", "after"))
        else:
            raise ValueError("variant set %r: one of %s" % (s, ", ".join(SETS)))
    return cases


def peer_options(peer, case):
    """How PEER computes CASE's variant (its keyword options), or None where it cannot."""
    gate, placement, group = case["gate"], case["placement"], case["group"]
    if peer == "fla":
        if gate in ("silu", "sigmoid") and placement == "after" and not group:
            return {"activation": "swish" if gate == "silu" else "sigmoid"}
        return None
    if peer == "mamba":
        if gate in ("silu", "none"):
            return {"norm_before_gate": placement == "after", "group_size": group or None,
                    "gated": gate != "none"}
        return None
    if peer.startswith("compile:") or peer == "cake":
        return {}
    raise ValueError("peer %r" % peer)


def variant_bytes(rows, d, gated, elem=2, w_elem=2):
    """(read, write) bytes of the forward and of the backward (dw in w's dtype)."""
    tb = rows * d * elem
    wb = w_elem * d
    n = 2 if gated else 1  # x and z, or x alone
    return (n * tb + wb, tb), ((n + 1) * tb + wb, n * tb + wb)


def case_bytes(case):
    return variant_bytes(case["rows"], case["d"], case["gate"] != "none", ELEM[case["dtype"]],
                         ELEM[case["w_dtype"]])


def limit_us(bytes_rw, copy_gbps):
    """The copy limit: the row's bytes at the device copy's bandwidth (GB/s = 1e3 bytes/us)."""
    return (bytes_rw[0] + bytes_rw[1]) / (copy_gbps * 1e3) if copy_gbps and copy_gbps > 0 else None


def mismatches(errs, tol):
    """The outputs whose relative L2 error is above tol (NaN counts as above)."""
    return sorted(k for k, e in errs.items() if not (e <= tol))


def finish(results, copy_gbps):
    """frac_limit on every timed row (limit us / us), then per variant the derived fwd + bwd rows,
    the best peer per op and shape and Cake against it: (derived rows, best, versus), each row
    tagged with its variant."""
    for r in results:
        if r.get("status") == "ok" and r.get("limit_us") and "variant" in r:
            r["frac_limit"] = r["limit_us"] / r["time"]["median_us"]
    derived, best, versus = [], [], []
    variants = []
    for r in results:
        if "variant" in r and r["variant"] not in variants:
            variants.append(r["variant"])
    for v in variants:
        sub = [r for r in results if r.get("variant") == v]
        d = derive_fwd_bwd(sub)
        for row in d:
            row["variant"] = v
            th = next((q["th"] for q in sub if q["shape"] == row["shape"] and q.get("th")), None)
            if th:
                row["th"] = th
            fwd = next((q for q in sub if q["op"] == "fwdg" and q["shape"] == row["shape"]
                        and q.get("limit_us")), None)
            bwd = next((q for q in sub if q["op"] == "bwdg" and q["shape"] == row["shape"]
                        and q.get("limit_us")), None)
            if fwd and bwd:
                row["limit_us"] = fwd["limit_us"] + bwd["limit_us"]
                row["frac_limit"] = row["limit_us"] / row["time"]["median_us"]
        derived += d
        for b in best_table(sub + d):
            b["variant"] = v
            best.append(b)
        for c in cake_vs_best_peer(sub + d):
            c["variant"] = v
            versus.append(c)
    return derived, best, versus


# -- formulas (torch passed in) ------------------------------------------------------------------

def _act(torch, gate, z):
    """a(z) and a'(z)."""
    s = torch.sigmoid(z)
    if gate == "silu":
        return z * s, s * (1 + z * (1 - s))
    return s, s * (1 - s)


def _rms(torch, u, group):
    r, d = u.shape
    g = group or d
    ug = u.reshape(r, d // g, g)
    rstd = torch.rsqrt(ug.pow(2).mean(-1, keepdim=True) + EPS)
    return (ug * rstd).reshape(r, d), rstd


def _rms_bwd(gn, n, rstd, group):
    """The gradient reaching u from the gradient reaching n = u * rstd(u), per group."""
    r, d = n.shape
    g = group or d
    gg, ng = gn.reshape(r, d // g, g), n.reshape(r, d // g, g)
    return (rstd * (gg - ng * (gg * ng).mean(-1, keepdim=True))).reshape(r, d)


def formula(torch, case):
    """(fwd(x, z, w), bwd(dy, x, z, w)): the variant in FP32 with one rounding to the inputs'
    dtype, what torch.compile compiles; z is None without a gate (bwd returns dz None)."""
    gate, placement, group = case["gate"], case["placement"], case["group"]
    gated = gate != "none"

    def fwd(x, z, w):
        u = x.float()
        if gated and placement == "before":
            u = u * _act(torch, gate, z.float())[0]
        y = _rms(torch, u, group)[0] * w.float()
        if gated and placement == "after":
            y = y * _act(torch, gate, z.float())[0]
        return y.to(x.dtype)

    def bwd(dy, x, z, w):
        xf, wf, dyf = x.float(), w.float(), dy.float()
        a = da = None
        if gated:
            a, da = _act(torch, gate, z.float())
        u = xf * a if gated and placement == "before" else xf
        n, rstd = _rms(torch, u, group)
        dz = None
        if gated and placement == "after":
            gh = dyf * a             # the gradient reaching h = n * w
            dz = dyf * n * wf * da
        else:
            gh = dyf
        dw = (gh * n).sum(0)
        du = _rms_bwd(gh * wf, n, rstd, group)
        if gated and placement == "before":
            dz = du * xf * da
            du = du * a
        return du.to(x.dtype), (dz.to(z.dtype) if dz is not None else None), dw.to(w.dtype)

    return fwd, bwd


def reference64(torch, case, x, z, w, dy):
    """float64 y, dx, dz (None without a gate), dw by autograd of the variant's formula: a
    derivation independent of formula()'s written-out backward."""
    gate, placement, group = case["gate"], case["placement"], case["group"]
    gated = gate != "none"
    with torch.enable_grad():
        xd = x.double().requires_grad_(True)
        wd = w.double().requires_grad_(True)
        zd = z.double().requires_grad_(True) if gated else None
        if gated:
            act = (lambda t: t * torch.sigmoid(t)) if gate == "silu" else torch.sigmoid
        u = xd * act(zd) if gated and placement == "before" else xd
        r, d = u.shape
        g = group or d
        ug = u.reshape(r, d // g, g)
        n = (ug * torch.rsqrt(ug.pow(2).mean(-1, keepdim=True) + EPS)).reshape(r, d)
        y = n * wd
        if gated and placement == "after":
            y = y * act(zd)
        inputs = [xd, wd] + ([zd] if gated else [])
        grads = torch.autograd.grad(y, inputs, dy.double())
    out = {"y": y.detach(), "dx": grads[0], "dw": grads[1]}
    if gated:
        out["dz"] = grads[2]
    return out


def check_outputs(torch, outs, ref, tol):
    """({name: rel L2 error}, [names above tol]) for the outputs given ({name: tensor})."""
    errs = {k: rel_l2(torch, v, ref[k]) for k, v in outs.items() if v is not None and k in ref}
    return errs, mismatches(errs, tol)


# -- the GPU passes ------------------------------------------------------------------------------

def measure_copy(ctx, nbytes=1 << 30):
    """The device copy's bandwidth (read + write counted) in this harness, three ways: torch's
    copy_ (a cudaMemcpyAsync) eager with events, the same from a graph, and an elementwise kernel
    from a graph. {"gbps", "how", "all"}: the fastest and every one."""
    torch, timer = ctx.torch, ctx.timer
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(nbytes, free // 4) // 4096 * 4096
    src = torch.empty(nbytes // 4, device="cuda", dtype=torch.float32).uniform_(1.0, 2.0)
    dst = torch.empty_like(src)
    res = []
    rounds, iters = min(timer.rounds, 5), min(timer.iters, 10)
    meds = []
    for _ in range(rounds):
        ts = []
        for _ in range(iters):
            timer.flush()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        ts.sort()
        meds.append(ts[len(ts) // 2])
    meds.sort()
    res.append(("copy_ (cudaMemcpyAsync), eager", meds[len(meds) // 2]))
    for how, fn in (("copy_ (cudaMemcpyAsync), graph", lambda: dst.copy_(src)),
                    ("elementwise kernel (mul by 1), graph", lambda: torch.mul(src, 1.0, out=dst))):
        g, _ = timer.capture(fn)
        res.append((how, timer.time_graph(g)["median_us"]))
        del g
    del src, dst
    torch.cuda.empty_cache()
    allv = [{"how": h, "us": u, "gbps": 2.0 * nbytes / (u * 1e3)} for h, u in res]
    best = max(allv, key=lambda v: v["gbps"])
    return {"gbps": best["gbps"], "how": best["how"], "bytes": nbytes, "all": allv}


class VariantRunner:
    def __init__(self, ctx, copy_gbps, tol):
        self.ctx, self.copy_gbps, self.tol = ctx, copy_gbps, tol
        self.torch = ctx.torch

    def inputs(self, case):
        torch, randn, rows, d = self.torch, self.ctx.randn, case["rows"], case["d"]
        # Columns scaled from 1/2 to 2 across the row: every group's mean square then differs
        # from the row's, so a peer that ignored the groups fails the check by far (unscaled
        # normals put that error near 2% at G = 1024 of D = 8192, close to the tolerance).
        x = randn(rows, d) * torch.exp2(torch.linspace(-1.0, 1.0, d, device="cuda")).to(torch.bfloat16)
        z = randn(rows, d, scale=2.0) if case["gate"] != "none" else None
        w = randn(d, scale=0.5, offset=1.0)
        dy = randn(rows, d)
        # Other dtypes: the same BF16 values widened (exact in FP16 and FP32 at these magnitudes).
        dt, wdt = TORCH_DTYPE[case["dtype"]](torch), TORCH_DTYPE[case["w_dtype"]](torch)
        x, dy = x.to(dt), dy.to(dt)
        z = z.to(dt) if z is not None else None
        return x, z, w.to(wdt), dy

    def base(self, case, peer, op):
        row = {"family": "normgate", "op": op, "shape": case["shape"], "peer": peer,
               "variant": case["variant"], "gate": case["gate"], "placement": case["placement"],
               "group": case["group"], "set": case["set"], "dtype": case["dtype"],
               "w_dtype": case["w_dtype"]}
        if case["th"]:
            row["th"] = case["th"]
        return row

    def report(self, case, peer, status, note, ops=("fwdg", "bwdg"), **extra):
        for op in ops:
            row = self.base(case, peer, op)
            row.update(status=status, note=note, **extra)
            self.ctx.run.add(**row)

    def cake_fns(self, case, x, z, w, dy, ref):
        """Cake's checked fwdg and bwdg functions ({op: {name: fn}}), or ({}, why)."""
        torch, cake, cake_h = self.torch, self.ctx.cake, self.ctx.cake_h
        if cake is None:
            return {}, "Cake's binding not loaded"
        rows, d, gated = case["rows"], case["d"], case["gate"] != "none"
        kw = {"eps": EPS, "gate": case["gate"], "gate_before_norm": case["placement"] == "before",
              "group_size": case["group"] or None}
        if (case["dtype"], case["w_dtype"]) != ("bf16", "bf16"):  # an older binding lacks them
            kw.update(x_dtype=case["dtype"], z_dtype=case["dtype"], w_dtype=case["w_dtype"])
        y, dx = torch.empty_like(x), torch.empty_like(x)
        dz = torch.empty_like(z) if gated else None
        dw = torch.empty_like(w)  # dw in w's dtype, as the peers return it
        stream = torch.cuda.current_stream
        try:
            fdesc = cake.normgate_desc(rows, d, **kw)

            def c_fwd():
                cake_h.normgate_forward(fdesc, x, z, w, y, None, stream=stream())
                return y
            fns = {"fwdg": {"Cake": c_fwd}, "bwdg": {}}
            c_fwd()
            torch.cuda.synchronize()
            errs, bad = check_outputs(torch, {"y": y}, ref, self.tol)
            checks = {"fwdg": errs}
            for pkg, name in ((cake.NormgatePackage.NONDETERMINISTIC, "Cake nondet"),
                              (cake.NormgatePackage.DETERMINISTIC, "Cake det")):
                bdesc = cake.normgate_desc(rows, d, package=pkg, dw_dtype=case["w_dtype"], **kw)
                ws_bytes = cake_h.normgate_workspace_size(bdesc)
                ws = torch.zeros(max(ws_bytes, 16), device="cuda", dtype=torch.uint8)

                def c_bwd(bdesc=bdesc, ws=ws, ws_bytes=ws_bytes):
                    cake_h.normgate_backward(bdesc, dy, x, z, w, dx, dz, dw, ws, ws_bytes,
                                             stream=stream())
                    return dx, dz, dw
                c_bwd()
                torch.cuda.synchronize()
                e, b = check_outputs(torch, {"dx": dx, "dz": dz, "dw": dw}, ref, self.tol)
                checks[name] = e
                bad += ["%s %s" % (name, k) for k in b]
                fns["bwdg"][name] = c_bwd
        except Exception as e:  # noqa: BLE001 - a variant the library does not serve is reported
            return {}, "Cake: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if bad:
            return {}, "Cake mismatch (%s): %s" % (", ".join(bad), checks)
        self.cake_checks = checks
        return fns, None

    def time_cake(self, case, ck, fwd_b, bwd_b):
        measure = self.ctx.measure
        lim_f, lim_b = limit_us(fwd_b, self.copy_gbps), limit_us(bwd_b, self.copy_gbps)
        row = self.base(case, "Cake", "fwdg")
        row.update(is_cake=True, check_rel_l2=self.cake_checks["fwdg"], limit_us=lim_f)
        measure("normgate", "fwdg", case["shape"], "Cake", ck["fwdg"]["Cake"], fwd_b,
                {k: v for k, v in row.items() if k not in ("family", "op", "shape", "peer")})
        for name, fn in ck["bwdg"].items():
            if self.ctx.run.over_budget():
                self.ctx.run.skipped.append("variants cake %s %s %s" % (case["variant"], name, case["shape"]))
                continue
            row = self.base(case, name, "bwdg")
            row.update(is_cake=True, fwd_peer="Cake", check_rel_l2=self.cake_checks[name],
                       limit_us=lim_b)
            measure("normgate", "bwdg", case["shape"], name, fn, bwd_b,
                    {k: v for k, v in row.items() if k not in ("family", "op", "shape", "peer")})

    def peer_fns(self, which, case, x, z, w, dy):
        """(fwd, bwd) of a peer on these inputs; bwd returns (dx, dz, dw)."""
        torch, opt = self.torch, peer_options(which, case)
        if which == "fla":
            rms_norm_gated, fla_fwd, fla_bwd, _ = self.ctx.fla
            act = opt["activation"]

            def f_fwd():
                with torch.no_grad():
                    return rms_norm_gated(x, z, w, None, activation=act, eps=EPS)
            _, _, rstd, _ = fla_fwd(x=x, g=z, weight=w, bias=None, activation=act, eps=EPS,
                                    is_rms_norm=True)

            def f_bwd():
                dx, dz, dw, _, _ = fla_bwd(dy=dy, x=x, g=z, weight=w, bias=None, activation=act,
                                           eps=EPS, mean=None, rstd=rstd, is_rms_norm=True,
                                           x_dtype=x.dtype)
                return dx, dz, dw
            return f_fwd, f_bwd
        mod = self.ctx.mamba[0]
        nbg, gs = opt["norm_before_gate"], opt["group_size"]

        def m_fwd():
            with torch.no_grad():
                return mod.rmsnorm_fn(x, w, None, z=z, eps=EPS, group_size=gs, norm_before_gate=nbg)
        _, _, rstd = mod._layer_norm_fwd(x, w, None, EPS, z=z, group_size=gs, norm_before_gate=nbg,
                                         is_rms_norm=True)

        def m_bwd():
            dx, dw, _, dz = mod._layer_norm_bwd(dy, x, w, None, EPS, None, rstd, z=z, group_size=gs,
                                                norm_before_gate=nbg, is_rms_norm=True)
            return dx, dz, dw
        return m_fwd, m_bwd

    def time_peer(self, case, peer, items, ck, extra=None):
        """items: (op, fn, bytes, extra of the op). Checks each fn's outputs against the float64
        reference, then times it paired with Cake; a mismatch is reported, not timed."""
        torch, run, measure = self.torch, self.ctx.run, self.ctx.measure
        ref = self.ref
        for op, fn, nbytes, op_extra in items:
            if run.over_budget():
                run.skipped.append("variants %s %s %s %s" % (peer, case["variant"], op, case["shape"]))
                continue
            row = self.base(case, peer, op)
            row.update(extra or {})
            row.update(op_extra or {})
            try:
                out = fn()
                torch.cuda.synchronize()
                outs = {"y": out} if op == "fwdg" else {"dx": out[0], "dz": out[1], "dw": out[2]}
                errs, bad = check_outputs(torch, outs, ref, self.tol)
                del out, outs
            except Exception as e:  # noqa: BLE001
                row.update(status="error", note="%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                run.add(**row)
                continue
            row["check_rel_l2"] = errs
            if bad:
                row.update(status="mismatch", note="rel L2 above %g: %s" % (
                    self.tol, ", ".join("%s %.3g" % (k, errs[k]) for k in bad)))
                run.add(**row)
                continue
            row["limit_us"] = limit_us(nbytes, self.copy_gbps)
            measure("normgate", op, case["shape"], peer, fn, nbytes,
                    {k: v for k, v in row.items() if k not in ("family", "op", "shape", "peer")},
                    ck.get(op))

    def case_setup(self, case):
        x, z, w, dy = self.inputs(case)
        self.ref = reference64(self.torch, case, x, z, w, dy)
        ck, why = self.cake_fns(case, x, z, w, dy, self.ref)
        return (x, z, w, dy), ck, why

    def case_done(self):
        self.ref = None
        self.torch.cuda.empty_cache()

    def fast_pass(self, cases, peers):
        """Cake alone, FLA and mamba_ssm, case by case."""
        run = self.ctx.run
        for case in cases:
            if run.over_budget():
                run.skipped.append("variants cake/fla/mamba %s %s" % (case["variant"], case["shape"]))
                continue
            print("\nvariant %s, %s (%s)" % (case["variant"], case["shape"], case["set"]), flush=True)
            (x, z, w, dy), ck, why = self.case_setup(case)
            fwd_b, bwd_b = case_bytes(case)
            if ck:
                self.time_cake(case, ck, fwd_b, bwd_b)
            else:
                status = "mismatch" if "mismatch" in why else "not available"
                self.report(case, "Cake", status, why, ops=("fwdg",), is_cake=True)
                for name in ("Cake nondet", "Cake det"):
                    self.report(case, name, status, why, ops=("bwdg",), is_cake=True)
            extra = {"cake_note": why} if why else None
            for which, name, loaded in (("fla", FLA_NAME, self.ctx.fla), ("mamba", MAMBA_NAME, self.ctx.mamba)):
                if which not in peers:
                    continue
                if peer_options(which, case) is None:
                    self.report(case, name, "unsupported", "the peer does not compute this variant")
                    continue
                if loaded is None:
                    self.report(case, name, "error", "not loaded (the JSON's versions say why)")
                    continue
                try:
                    fwd, bwd = self.peer_fns(which, case, x, z, w, dy)
                except Exception as e:  # noqa: BLE001
                    self.report(case, name, "error", "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                    continue
                self.time_peer(case, name, [("fwdg", fwd, fwd_b, None), ("bwdg", bwd, bwd_b, None)],
                               ck, extra)
                del fwd, bwd
            del x, z, w, dy, ck
            self.case_done()

    def compile_pass(self, cases, mode):
        torch, run, ctx = self.torch, self.ctx.run, self.ctx
        name = "torch.compile " + mode
        for case in cases:
            if run.over_budget():
                run.skipped.append("variants compile:%s %s %s" % (mode, case["variant"], case["shape"]))
                continue
            print("\nvariant %s, %s: %s" % (case["variant"], case["shape"], name), flush=True)
            (x, z, w, dy), ck, why = self.case_setup(case)
            fwd_b, bwd_b = case_bytes(case)
            f, b = formula(torch, case)
            extra = {"cake_note": why} if why else None
            # One op at a time, compiled and timed before the next compile: ctx.compiled() resets
            # dynamo, which would leave the previous compiled function to recompile.
            for op, fn, a, nbytes in (("fwdg", f, (x, z, w), fwd_b), ("bwdg", b, (dy, x, z, w), bwd_b)):
                if run.over_budget():
                    run.skipped.append("variants compile:%s %s %s %s" % (mode, case["variant"], op, case["shape"]))
                    continue
                t0 = time.time()
                try:
                    c = ctx.compiled(fn, mode)
                    c(*a)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    row = self.base(case, name, op)
                    row.update(status="error", note="compile: %s" % str(e).splitlines()[0])
                    run.add(**row)
                    continue
                self.time_peer(case, name, [(op, (lambda c=c, a=a: c(*a)), nbytes,
                                             {"compile_s": time.time() - t0})], ck, extra)
                del c
            del x, z, w, dy, ck
            self.case_done()


def run_table(ctx, peers, modes):
    """The whole variant table: the copy reference, the fast pass, torch.compile per mode, then
    the derived rows, best peers and Cake against them in run.meta."""
    args, run = ctx.args, ctx.run
    if args.copy_gbps:
        copy = {"gbps": args.copy_gbps, "how": "given (--copy-gbps)"}
    else:
        copy = measure_copy(ctx)
    run.meta["copy"] = copy
    run.meta["check_tol"] = args.check_tol
    run.meta["best"] = []
    print("copy reference %.1f GB/s (%s, read + write counted)" % (copy["gbps"], copy["how"]), flush=True)
    cases = plan([s for s in args.vt_sets.split(",") if s], args.vt_shapes, args.ng_shapes,
                 args.vt_group, args.vt_group_shape,
                 [t for t in getattr(args, "vt_dtypes", "bf16").split(",") if t])
    run.meta["variant_cases"] = [{k: c[k] for k in ("set", "variant", "shape", "th")} for c in cases]
    vr = VariantRunner(ctx, copy["gbps"], args.check_tol)
    # Each pass's seconds in the JSON: what a --time-budget has to hold on this machine.
    run.meta["pass_s"] = {}
    t0 = time.time()
    vr.fast_pass(cases, peers)
    run.meta["pass_s"]["cake, fla, mamba"] = time.time() - t0
    if "compile" in peers:
        for mode in modes:
            t0 = time.time()
            vr.compile_pass(cases, mode)
            run.meta["pass_s"]["compile " + mode] = time.time() - t0
    print("passes (s): " + ", ".join("%s %.1f" % kv for kv in run.meta["pass_s"].items()), flush=True)
    derived, best, versus = finish(run.results, copy["gbps"])
    run.results += derived
    run.meta["best"] = best
    run.meta["cake_vs_best_peer"] = versus
    run.write()
    print_summary(run.results, versus)


def summary_lines(results, versus):
    """One line per variant, shape and op: Cake's times and fraction of the limit, each peer's
    time or why it has none, Cake's paired speedup over the best peer."""
    keys, peers = [], []
    for r in results:
        if "variant" not in r:
            continue
        k = (r["variant"], r["shape"], r["op"])
        if k not in keys:
            keys.append(k)
        if not r.get("is_cake") and r["peer"] not in peers:
            peers.append(r["peer"])
    by = {(r["variant"], r["shape"], r["op"], r["peer"]): r for r in results if "variant" in r}
    vs = {(v["variant"], v["shape"], v["op"], v["cake"]): v for v in versus}
    out = ["%-18s %-12s %-7s %-22s %-22s %s | vs best (nondet; det)" % (
        "variant", "rows x D", "op", "Cake nondet us (%lim)", "Cake det us (%lim)",
        " ".join("%-14s" % p.split()[0][:14] for p in peers))]
    for k in keys:
        def cell(name):
            r = by.get(k + (name,))
            if not r:
                return "-"
            if r.get("status") != "ok":
                return r.get("status", "?")
            lim = r.get("frac_limit")
            return "%.2f" % r["time"]["median_us"] + (" (%.0f%%)" % (100 * lim) if lim else "")
        if k[2] == "fwdg":
            nd, det = cell("Cake"), "="
            v = [vs.get(k + ("Cake",))]
        else:
            nd, det = cell("Cake nondet"), cell("Cake det")
            v = [vs.get(k + ("Cake nondet",)), vs.get(k + ("Cake det",))]
        sp = "; ".join("%.3f" % x["speedup"] if x else "-" for x in v)
        out.append("%-18s %-12s %-7s %-22s %-22s %s | %s" % (
            k[0], k[1], k[2], nd, det, " ".join("%-14s" % cell(p) for p in peers), sp))
    return out


def print_summary(results, versus):
    print("\n== variant table (us, graph replays, cold L2; %lim = copy limit / us; vs best = "
          "best peer us / Cake us, paired rounds)")
    for line in summary_lines(results, versus):
        print(line)
