#!/usr/bin/env python3
"""Cake's peers, timed on the GPU with cake-bench's method (docs/benchmarking.md).

Norm-gate, y = rmsnorm(x) * w * silu(z) over rows of width D (BF16, eps 1e-6):
  - FLA 0.6.0 rms_norm_gated (fla.modules.fused_norm_gate): the public forward; the backward is
    layer_norm_gated_bwd, the function its autograd backward calls (with the rstd the forward
    saved).
  - mamba_ssm 2.3.2 rmsnorm_fn (mamba_ssm/ops/triton/layernorm_gated.py, norm_before_gate=True,
    which is norm(x) * w * silu(z)); backward: _layer_norm_bwd, what its autograd backward calls.
  - torch.compile of the FP32 reference formula, forward and backward (the backward written out),
    in the modes "default" and "max-autotune-no-cudagraphs" (one fresh compile per shape).
SwiGLU + MXFP8 (six forms): torch.compile of the reference (silu(g) * u in FP32 -> BF16 ->
per-32 amax -> E8M0 RCEIL scale -> E4M3), scales in the swizzled 128x4 layout.

Method, as cake-bench's graph ops: each op captured once in a CUDA graph; before every replay a
buffer of max(2, --flush-mult) x the L2 size is overwritten (cold L2); CUDA events around the
replay; per round the median of --iters replays; reported: the median of --rounds round medians
and the spread (max - min of the round medians over their median). Random inputs, fresh for
every shape, never zeros. Each peer's outputs are checked against a float64 reference once.

FLA and mamba_ssm are not installed on the GPU machine: their pure-Python sources are read from
--peers-dir (default: .peers/site in the repository root, filled by bench/peers/fetch.sh; never
committed). Writes JSON (--json) and prints a table; --time-budget stops early, and every result
so far is kept.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NG_DEFAULT = "3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48"
SW_DEFAULT = "128x128,4096x2048,4096x7168,16384x7168,131072x8192"
SW_FORMS = ["fwd_row", "fwd_col", "fwd_both", "bwd_row", "bwd_col", "bwd_both"]
COMPILE_MODES = ["default", "max-autotune-no-cudagraphs"]
EPS = 1e-6


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="2 shapes per family, 3 rounds x 10")
    p.add_argument("--family", default="all", choices=["all", "normgate", "swiglu"])
    p.add_argument("--ng-shapes", default=None, help="T x H list (D = --d), e.g. 3534x48,260x48")
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--sw-shapes", default=None, help="M x K list, e.g. 4096x7168")
    p.add_argument("--forms", default=",".join(SW_FORMS))
    p.add_argument("--peers", default="fla,mamba,compile",
                   help="normgate peers: fla, mamba, compile (torch.compile)")
    p.add_argument("--modes", default=",".join(COMPILE_MODES), help="torch.compile modes")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--flush-mult", type=float, default=2.0)
    p.add_argument("--inputs", default="normal", help="swiglu: normal | blockscaled[:R]")
    p.add_argument("--peers-dir", default=os.path.join(ROOT, ".peers", "site"))
    p.add_argument("--time-budget", type=float, default=0, help="seconds; 0: no limit")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    if a.quick:
        a.ng_shapes = a.ng_shapes or "3534x48,260x48"
        a.sw_shapes = a.sw_shapes or "128x128,4096x2048"
        a.rounds = min(a.rounds, 3)
        a.iters = min(a.iters, 10)
    a.ng_shapes = a.ng_shapes or NG_DEFAULT
    a.sw_shapes = a.sw_shapes or SW_DEFAULT
    return a


# ------------------------------------------------------------------------------------------
# Timing


class GraphTimer:
    """Graph capture and cold-L2 event timing, the way cake-bench times its graph ops."""

    def __init__(self, torch, flush_mult, rounds, iters, warmup):
        self.torch = torch
        props = torch.cuda.get_device_properties(0)
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
        self.flush_bytes = int(max(2.0, flush_mult) * self.l2)
        self.flush_buf = torch.empty(self.flush_bytes, dtype=torch.uint8, device="cuda")
        self.rounds, self.iters, self.warmup = rounds, iters, warmup
        self.count = 0

    def flush(self):
        self.count = self.count % 250 + 1
        self.flush_buf.fill_(self.count)

    def capture(self, fn):
        """Returns (graph, outputs): fn() captured once after warm-up on a side stream."""
        torch = self.torch
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fn()
        torch.cuda.synchronize()
        return g, out

    def time_graph(self, g):
        torch = self.torch
        for _ in range(self.warmup):
            self.flush()
            g.replay()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        medians = []
        for _ in range(self.rounds):
            for i in range(self.iters):
                self.flush()
                starts[i].record()
                g.replay()
                ends[i].record()
            torch.cuda.synchronize()
            medians.append(statistics.median(starts[i].elapsed_time(ends[i]) * 1e3
                                             for i in range(self.iters)))
        med = statistics.median(medians)
        return {"median_us": med, "lo_us": min(medians), "hi_us": max(medians),
                "spread_pct": 100.0 * (max(medians) - min(medians)) / med,
                "round_medians_us": medians, "timer": "events (graph replay)"}


# ------------------------------------------------------------------------------------------
# Norm-gate peers


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


def load_fla(peers_dir):
    if peers_dir not in sys.path:
        sys.path.insert(0, peers_dir)
    from fla.modules.fused_norm_gate import layer_norm_gated_bwd, layer_norm_gated_fwd, rms_norm_gated
    import fla
    return rms_norm_gated, layer_norm_gated_fwd, layer_norm_gated_bwd, getattr(fla, "__version__", "?")


def load_mamba(peers_dir):
    import importlib.util
    path = os.path.join(peers_dir, "mamba_ssm_peer", "layernorm_gated.py")
    spec = importlib.util.spec_from_file_location("mamba_ssm_layernorm_gated", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    version = "?"
    vfile = os.path.join(peers_dir, "mamba_ssm_peer", "VERSION")
    if os.path.exists(vfile):
        version = open(vfile).read().strip()
    return mod, version


# ------------------------------------------------------------------------------------------
# SwiGLU + MXFP8 reference (torch)


def sw_reference(torch, F):
    def quant_lastdim(y):
        """y: BF16 [R, C], C % 32 == 0 -> (E4M3 [R, C], E8M0 scale bytes [R, C/32])."""
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


# ------------------------------------------------------------------------------------------


class Run:
    def __init__(self, args):
        self.args = args
        self.t0 = time.time()
        self.results = []
        self.skipped = []
        self.meta = {}

    def over_budget(self):
        return self.args.time_budget > 0 and time.time() - self.t0 > self.args.time_budget

    def add(self, **row):
        self.results.append(row)
        t = row.get("time") or {}
        status = row.get("status", "ok")
        print("  %-8s %-9s %-12s %-34s %s" % (
            row["family"], row["op"], row["shape"], row["peer"],
            ("%10.3f us (spread %.1f%%)" % (t["median_us"], t["spread_pct"])) if status == "ok"
            else status + ": " + row.get("note", "")), flush=True)
        self.write()

    def write(self):
        if not self.args.json:
            return
        doc = dict(self.meta)
        doc["results"] = self.results
        doc["skipped_for_time"] = self.skipped
        doc["best"] = best_table(self.results)
        doc["elapsed_s"] = time.time() - self.t0
        tmp = self.args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, self.args.json)


def best_table(results):
    best = {}
    for r in results:
        if r.get("status") != "ok":
            continue
        key = (r["family"], r["op"], r["shape"])
        if key not in best or r["time"]["median_us"] < best[key]["us"]:
            best[key] = {"family": r["family"], "op": r["op"], "shape": r["shape"],
                         "peer": r["peer"], "us": r["time"]["median_us"]}
    return list(best.values())


def main():
    args = parse_args()
    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print("peers.py: no CUDA device", file=sys.stderr)
        return 2
    run = Run(args)
    props = torch.cuda.get_device_properties(0)
    timer = GraphTimer(torch, args.flush_mult, args.rounds, args.iters, args.warmup)
    import triton
    run.meta = {
        "tool": "cake-bench peers", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device": {"name": props.name, "cc": "%d.%d" % (props.major, props.minor),
                   "sm_count": props.multi_processor_count, "l2_bytes": timer.l2},
        "versions": {"torch": torch.__version__, "triton": triton.__version__,
                     "cuda": torch.version.cuda, "python": sys.version.split()[0]},
        "method": {"rounds": args.rounds, "iters": args.iters, "warmup": args.warmup,
                   "flush_bytes": timer.flush_bytes,
                   "timer": "CUDA events around CUDA-graph replays, cold L2"},
    }
    print("peers: %s, torch %s, triton %s; %d rounds x %d replays, flush %.1f MiB" % (
        props.name, torch.__version__, triton.__version__, args.rounds, args.iters,
        timer.flush_bytes / 2**20), flush=True)
    peers = set(args.peers.split(","))
    modes = [m for m in args.modes.split(",") if m]
    ref_fwd, ref_bwd = ng_reference(torch, F)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(time.time() * 1e6) & 0xFFFFFFFF)

    def randn(*shape, scale=1.0, offset=0.0):
        t = torch.randn(*shape, device="cuda", dtype=torch.float32, generator=gen) * scale + offset
        t = t.to(torch.bfloat16)
        return torch.where(t == 0, torch.full_like(t, scale), t)  # never zeros

    fla = mamba = None
    if args.family in ("all", "normgate") and "fla" in peers:
        try:
            fla = load_fla(args.peers_dir)
            run.meta["versions"]["fla"] = fla[3]
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            print("peers: FLA not loaded: %r" % e, flush=True)
            run.meta["versions"]["fla"] = "not loaded: %r" % e
    if args.family in ("all", "normgate") and "mamba" in peers:
        try:
            mamba = load_mamba(args.peers_dir)
            run.meta["versions"]["mamba_ssm"] = mamba[1]
        except Exception as e:  # noqa: BLE001
            print("peers: mamba_ssm not loaded: %r" % e, flush=True)
            run.meta["versions"]["mamba_ssm"] = "not loaded: %r" % e

    def measure(family, op, shape, peer, fn, bytes_rw=None, extra=None):
        row = {"family": family, "op": op, "shape": shape, "peer": peer}
        if extra:
            row.update(extra)
        if bytes_rw:
            row["read_bytes"], row["write_bytes"] = bytes_rw
        try:
            g, out = timer.capture(fn)
            row["time"] = timer.time_graph(g)
            row["status"] = "ok"
            del g, out
        except Exception as e:  # noqa: BLE001
            row["status"] = "error"
            row["note"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            traceback.print_exc(limit=2)
        run.add(**row)
        return row

    def compiled(fn, mode):
        torch._dynamo.reset()
        return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=False, fullgraph=True)

    # Phases in priority order; each stops when the time budget is spent.
    def normgate_phase(which):
        for sh in args.ng_shapes.split(","):
            t, h = (int(v) for v in sh.split("x"))
            rows, d = t * h, args.d
            shape = sh if d == 128 else "%s:%d" % (sh, d)
            if run.over_budget():
                run.skipped.append("normgate %s %s" % (which, shape))
                continue
            x, z, dy = randn(rows, d), randn(rows, d, scale=2.0), randn(rows, d)
            w = randn(d, scale=0.5, offset=1.0)
            tb = rows * d * 2
            fwd_bytes = (2 * tb + 2 * d, tb)
            bwd_bytes = (3 * tb + 2 * d, 2 * tb + 2 * d)
            check = {}
            ref = ng_reference64(torch, x, z, w, dy) if shape == args.ng_shapes.split(",")[0] else None
            if which == "fla" and fla is not None:
                rms_norm_gated, fla_fwd, fla_bwd, _ = fla

                def f_fwd():
                    with torch.no_grad():
                        return rms_norm_gated(x, z, w, None, activation="swish", eps=EPS)
                _, _, rstd, _ = fla_fwd(x=x, g=z, weight=w, bias=None, activation="swish", eps=EPS,
                                        is_rms_norm=True)

                def f_bwd():
                    dx, dz, dw, _, _ = fla_bwd(dy=dy, x=x, g=z, weight=w, bias=None, activation="swish",
                                               eps=EPS, mean=None, rstd=rstd, is_rms_norm=True,
                                               x_dtype=x.dtype)
                    return dx, dz, dw
                if ref is not None:
                    y = f_fwd()
                    dx, dz, dw = f_bwd()
                    check = {"y": rel_l2(torch, y, ref[0]), "dx": rel_l2(torch, dx, ref[1]),
                             "dz": rel_l2(torch, dz, ref[2]), "dw": rel_l2(torch, dw, ref[3])}
                measure("normgate", "fwdg", shape, "FLA rms_norm_gated", f_fwd, fwd_bytes,
                        {"check_rel_l2": check} if check else None)
                measure("normgate", "bwdg", shape, "FLA rms_norm_gated", f_bwd, bwd_bytes)
            elif which == "mamba" and mamba is not None:
                mod = mamba[0]

                def m_fwd():
                    with torch.no_grad():
                        return mod.rmsnorm_fn(x, w, None, z=z, eps=EPS, norm_before_gate=True)
                _, _, rstd = mod._layer_norm_fwd(x, w, None, EPS, z=z, norm_before_gate=True,
                                                 is_rms_norm=True)

                def m_bwd():
                    dx, dw, _, dz = mod._layer_norm_bwd(dy, x, w, None, EPS, None, rstd, z=z,
                                                        norm_before_gate=True, is_rms_norm=True)
                    return dx, dz, dw
                if ref is not None:
                    y = m_fwd()
                    dx, dz, dw = m_bwd()
                    check = {"y": rel_l2(torch, y, ref[0]), "dx": rel_l2(torch, dx, ref[1]),
                             "dz": rel_l2(torch, dz, ref[2]), "dw": rel_l2(torch, dw, ref[3])}
                measure("normgate", "fwdg", shape, "mamba_ssm rmsnorm_fn", m_fwd, fwd_bytes,
                        {"check_rel_l2": check} if check else None)
                measure("normgate", "bwdg", shape, "mamba_ssm rmsnorm_fn", m_bwd, bwd_bytes)
            elif which.startswith("compile:"):
                mode = which.split(":", 1)[1]
                for op, fn, args_, nbytes in (("fwdg", ref_fwd, (x, z, w), fwd_bytes),
                                              ("bwdg", ref_bwd, (dy, x, z, w), bwd_bytes)):
                    if run.over_budget():
                        run.skipped.append("normgate %s %s %s" % (which, op, shape))
                        continue
                    c = compiled(fn, mode)
                    t0 = time.time()
                    try:
                        out = c(*args_)
                        torch.cuda.synchronize()
                    except Exception as e:  # noqa: BLE001
                        run.add(family="normgate", op=op, shape=shape, peer="torch.compile " + mode,
                                status="error", note="compile: %s" % e)
                        continue
                    extra = {"compile_s": time.time() - t0}
                    if ref is not None:
                        if op == "fwdg":
                            extra["check_rel_l2"] = {"y": rel_l2(torch, out, ref[0])}
                        else:
                            extra["check_rel_l2"] = {"dx": rel_l2(torch, out[0], ref[1]),
                                                     "dz": rel_l2(torch, out[1], ref[2]),
                                                     "dw": rel_l2(torch, out[2], ref[3])}
                    measure("normgate", op, shape, "torch.compile " + mode,
                            (lambda c=c, a=args_: c(*a)), nbytes, extra)
            del x, z, dy, w

    def swiglu_phase(mode):
        make, _ = sw_reference(torch, F)
        block_exp = 0
        if args.inputs.startswith("blockscaled"):
            block_exp = int(args.inputs.split(":")[1]) if ":" in args.inputs else 100
        for sh in args.sw_shapes.split(","):
            m, k = (int(v) for v in sh.split("x"))
            need = m * 2 * k * 2 + m * k * 2 + 6 * m * k
            free, _ = torch.cuda.mem_get_info()
            if need * 3 > free:
                run.add(family="swiglu", op="*", shape=sh, peer="torch.compile " + mode,
                        status="skipped", note="needs about %.1f GiB" % (3 * need / 2**30))
                continue
            inp = randn(m, 2 * k)
            grad = randn(m, k)
            if block_exp:
                e = torch.randint(-block_exp, block_exp + 1, (m, 2 * k // 32), device="cuda",
                                  generator=gen).float()
                inp = (inp.float().view(m, -1, 32) * torch.exp2(e).unsqueeze(-1)).view(m, 2 * k).to(torch.bfloat16)
            for form in args.forms.split(","):
                if run.over_budget():
                    run.skipped.append("swiglu compile:%s %s %s" % (mode, form, sh))
                    continue
                c = compiled(make(form), mode)
                a = (inp,) if form.startswith("fwd") else (inp, grad)
                t0 = time.time()
                try:
                    c(*a)
                    torch.cuda.synchronize()
                except Exception as e:  # noqa: BLE001
                    run.add(family="swiglu", op=form, shape=sh, peer="torch.compile " + mode,
                            status="error", note="compile: %s" % str(e).splitlines()[0])
                    continue
                measure("swiglu", form, sh, "torch.compile " + mode, (lambda c=c, a=a: c(*a)),
                        sw_bytes(m, k, form), {"compile_s": time.time() - t0})
            del inp, grad
            torch.cuda.empty_cache()

    phases = []
    if args.family in ("all", "normgate"):
        phases += [("normgate", "fla"), ("normgate", "mamba")]
        if "compile" in peers and "default" in modes:
            phases.append(("normgate", "compile:default"))
    if args.family in ("all", "swiglu") and "default" in modes:
        phases.append(("swiglu", "default"))
    for m in modes:
        if m == "default":
            continue
        if args.family in ("all", "normgate") and "compile" in peers:
            phases.append(("normgate", "compile:" + m))
        if args.family in ("all", "swiglu"):
            phases.append(("swiglu", m))
    for fam, which in phases:
        if run.over_budget():
            run.skipped.append("%s %s (all shapes)" % (fam, which))
            continue
        print("\n%s: %s" % (fam, which), flush=True)
        if fam == "normgate":
            normgate_phase(which)
        else:
            swiglu_phase(which)

    # fwd + bwd (fwdg + bwdg) per normgate peer, derived.
    derived = []
    for r in run.results:
        if r["family"] == "normgate" and r["op"] == "fwdg" and r.get("status") == "ok":
            b = next((q for q in run.results if q["family"] == "normgate" and q["op"] == "bwdg"
                      and q["shape"] == r["shape"] and q["peer"] == r["peer"] and q.get("status") == "ok"), None)
            if b:
                derived.append({"family": "normgate", "op": "fwd+bwd", "shape": r["shape"], "peer": r["peer"],
                                "status": "ok", "time": {"median_us": r["time"]["median_us"] + b["time"]["median_us"],
                                                         "lo_us": r["time"]["lo_us"] + b["time"]["lo_us"],
                                                         "hi_us": r["time"]["hi_us"] + b["time"]["hi_us"],
                                                         "spread_pct": None, "timer": "derived"}})
    run.results += derived
    run.write()

    print("\n== best peer per op and shape (us: median of round medians, graph replay, cold L2)")
    print("%-8s %-9s %-12s %10s  %s" % ("family", "op", "shape", "us", "peer"))
    for b in sorted(best_table(run.results), key=lambda b: (b["family"], b["op"], b["shape"])):
        print("%-8s %-9s %-12s %10.3f  %s" % (b["family"], b["op"], b["shape"], b["us"], b["peer"]))
    if run.skipped:
        print("skipped for time: " + "; ".join(run.skipped))
    print("elapsed %.1f s" % (time.time() - run.t0))
    if args.json:
        print("wrote " + args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
