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
Cake in the same harness (when its Python binding loads: bindings/python, libcake.so from
$CAKE_LIBRARY or the build): every peer's graph alternates round by round with Cake's graph of
the same op on the same inputs (row["paired_cake"]: Cake's time and the speedup peer us / Cake
us, median and range over the rounds), so both share the machine's state and drift: a phase
timed minutes after another moved small shapes by 2-3% on the H200. --peers ...,cake also times
Cake alone (rows with "is_cake": true, never a "best peer"), to set beside cake-bench's numbers.
The script ends with Cake against the best peer of every op and shape, from the paired rounds.

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
                   help="fla, mamba (normgate), compile (torch.compile, both families), cake "
                        "(Cake alone through its Python binding; it is paired with every peer "
                        "whenever the binding loads)")
    p.add_argument("--modes", default=",".join(COMPILE_MODES), help="torch.compile modes")
    p.add_argument("--no-pair", action="store_true",
                   help="time the peers alone (no Cake graph alternating with each peer)")
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
        return self.time_graphs([g])[0]

    def time_graphs(self, graphs):
        """Graphs alternated round by round (a round: --iters replays of one graph, then of the
        next; the order reversed every other round), so that a peer and Cake's paired graph share
        the machine's state and drift."""
        torch = self.torch
        for g in graphs:
            for _ in range(self.warmup):
                self.flush()
                g.replay()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iters)]
        per_graph = [[] for _ in graphs]
        for rnd in range(self.rounds):
            # Odd rounds run the graphs in reverse order: neither goes first every time.
            order = range(len(graphs)) if rnd % 2 == 0 else range(len(graphs) - 1, -1, -1)
            for j in order:
                medians, g = per_graph[j], graphs[j]
                for i in range(self.iters):
                    self.flush()
                    starts[i].record()
                    g.replay()
                    ends[i].record()
                torch.cuda.synchronize()
                medians.append(statistics.median(starts[i].elapsed_time(ends[i]) * 1e3
                                                 for i in range(self.iters)))
        out = []
        for medians in per_graph:
            med = statistics.median(medians)
            out.append({"median_us": med, "lo_us": min(medians), "hi_us": max(medians),
                        "spread_pct": 100.0 * (max(medians) - min(medians)) / med,
                        "round_medians_us": medians, "timer": "events (graph replay)"})
        return out


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


def load_cake():
    """Cake's Python binding from this checkout (bindings/python); libcake.so from $CAKE_LIBRARY
    (a file or a directory) or the build directory (bindings/python/cake/_lib.py)."""
    path = os.path.join(ROOT, "bindings", "python")
    if path not in sys.path:
        sys.path.insert(0, path)
    import cake
    return cake


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
        for name, pc in (row.get("paired_cake") or {}).items():
            print("  %-8s %-9s %-12s   paired %-25s %10.3f us, peer / Cake %.3f [%.3f, %.3f]" % (
                "", "", "", name, pc["time"]["median_us"], pc["speedup"], pc["speedup_lo"],
                pc["speedup_hi"]), flush=True)
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
        if r.get("status") != "ok" or r.get("is_cake"):
            continue
        key = (r["family"], r["op"], r["shape"])
        if key not in best or r["time"]["median_us"] < best[key]["us"]:
            best[key] = {"family": r["family"], "op": r["op"], "shape": r["shape"],
                         "peer": r["peer"], "us": r["time"]["median_us"]}
    return list(best.values())


def derive_fwd_bwd(results):
    """fwd + bwd rows (normgate) from each peer's fwdg and bwdg rows: the sums of their times.
    Cake's two backward packages pair with its one forward (a bwdg row's "fwd_peer")."""
    derived = []
    for b in results:
        if b["family"] == "normgate" and b["op"] == "bwdg" and b.get("status") == "ok":
            fwd_peer = b.get("fwd_peer", b["peer"])
            r = next((q for q in results if q["family"] == "normgate" and q["op"] == "fwdg"
                      and q["shape"] == b["shape"] and q["peer"] == fwd_peer and q.get("status") == "ok"), None)
            if r:
                row = {"family": "normgate", "op": "fwd+bwd", "shape": b["shape"], "peer": b["peer"],
                       "status": "ok", "time": {"median_us": r["time"]["median_us"] + b["time"]["median_us"],
                                                "lo_us": r["time"]["lo_us"] + b["time"]["lo_us"],
                                                "hi_us": r["time"]["hi_us"] + b["time"]["hi_us"],
                                                "spread_pct": None, "timer": "derived"}}
                if b.get("is_cake"):
                    row["is_cake"] = True
                derived.append(row)
    return derived


def cake_vs_best_peer(results):
    """Cake against the best peer of every op and shape, from the rounds where Cake's graph
    alternated with that peer's ("paired_cake"): the median and range of the per-round speedups
    (peer us / Cake us); fwd + bwd: the sums of the best peer's and its paired Cake's fwdg and
    bwdg medians. Sorted by family, op, shape, Cake's name."""
    def row_of(family, op, shape, peer):
        return next((q for q in results if (q["family"], q["op"], q["shape"], q["peer"]) ==
                     (family, op, shape, peer) and q.get("status") == "ok"), None)

    def paired(family, op, shape, peer):
        return (row_of(family, op, shape, peer) or {}).get("paired_cake") or {}

    versus = []
    for b in best_table(results):
        if b["op"] == "fwd+bwd":
            pf = paired(b["family"], "fwdg", b["shape"], b["peer"])
            pb = paired(b["family"], "bwdg", b["shape"], b["peer"])
            f = row_of(b["family"], "fwdg", b["shape"], b["peer"])
            g = row_of(b["family"], "bwdg", b["shape"], b["peer"])
            if "Cake" in pf and f and g:
                for name, pc in pb.items():
                    cake_us = pf["Cake"]["time"]["median_us"] + pc["time"]["median_us"]
                    peer_us = f["time"]["median_us"] + g["time"]["median_us"]
                    versus.append({"family": b["family"], "op": b["op"], "shape": b["shape"],
                                   "cake": name, "cake_us": cake_us, "peer": b["peer"],
                                   "peer_us": peer_us, "speedup": peer_us / cake_us,
                                   "speedup_lo": None, "speedup_hi": None})
            continue
        for name, pc in paired(b["family"], b["op"], b["shape"], b["peer"]).items():
            versus.append({"family": b["family"], "op": b["op"], "shape": b["shape"], "cake": name,
                           "cake_us": pc["time"]["median_us"], "peer": b["peer"], "peer_us": b["us"],
                           "speedup": pc["speedup"], "speedup_lo": pc["speedup_lo"],
                           "speedup_hi": pc["speedup_hi"]})
    versus.sort(key=lambda v: (v["family"], v["op"], v["shape"], v["cake"]))
    return versus


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
    # This harness's floor: a graph of one one-element kernel (cake-bench's empty-kernel replay).
    tiny = torch.zeros(1, device="cuda")
    g, _ = timer.capture(lambda: tiny.add_(1.0))
    run.meta["floor_graph"] = timer.time_graph(g)
    del g
    print("floor (graph of a one-element kernel): %.3f us" % run.meta["floor_graph"]["median_us"],
          flush=True)
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

    cake = cake_h = None
    if not args.no_pair or "cake" in peers:
        try:
            cake = load_cake()
            cake_h = cake.Handle(torch.cuda.current_device())
            run.meta["versions"]["cake"] = "%d.%d.%d" % tuple(cake.version())
            run.meta["cake_library"] = cake.library_path()
        except Exception as e:  # noqa: BLE001
            print("peers: Cake's Python binding not loaded: %r" % e, flush=True)
            run.meta["versions"]["cake"] = "not loaded: %r" % e
            cake = None

    def measure(family, op, shape, peer, fn, bytes_rw=None, extra=None, cake_fns=None):
        """Times fn's graph; with cake_fns ({name: fn}, Cake on the same inputs) each of them too,
        alternated with the peer round by round: row["paired_cake"][name] holds its time and the
        speedup (peer us / Cake us) over the rounds."""
        if args.no_pair:
            cake_fns = None
        row = {"family": family, "op": op, "shape": shape, "peer": peer}
        if extra:
            row.update(extra)
        if bytes_rw:
            row["read_bytes"], row["write_bytes"] = bytes_rw
        try:
            g, out = timer.capture(fn)
            graphs, names = [g], []
            for name, cf in (cake_fns or {}).items():
                graphs.append(timer.capture(cf)[0])
                names.append(name)
            stats = timer.time_graphs(graphs)
            row["time"] = stats[0]
            if names:
                row["paired_cake"] = {}
                for name, st in zip(names, stats[1:]):
                    ratios = [a / b for a, b in zip(stats[0]["round_medians_us"], st["round_medians_us"])]
                    row["paired_cake"][name] = {"time": st, "speedup": statistics.median(ratios),
                                                "speedup_lo": min(ratios), "speedup_hi": max(ratios)}
            row["status"] = "ok"
            del g, out, graphs
        except Exception as e:  # noqa: BLE001
            row["status"] = "error"
            row["note"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            traceback.print_exc(limit=2)
        run.add(**row)
        return row

    def compiled(fn, mode):
        torch._dynamo.reset()
        return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=False, fullgraph=True)

    def cake_normgate_fns(rows, d, x, z, w, dy):
        """Cake's fwdg and bwdg (both packages, BF16 dw) on these inputs, as cake-bench calls
        them: {op: {name: fn}}, own outputs and zeroed workspaces."""
        if cake is None:
            return {}
        y, dx, dz = (torch.empty_like(x) for _ in range(3))
        dw = torch.empty(d, device="cuda", dtype=torch.bfloat16)
        fdesc = cake.normgate_desc(rows, d, eps=EPS)

        def c_fwd():
            cake_h.normgate_forward(fdesc, x, z, w, y, None, stream=torch.cuda.current_stream())
            return y
        fns = {"fwdg": {"Cake": c_fwd}, "bwdg": {}}
        for pkg, name in ((cake.NormgatePackage.NONDETERMINISTIC, "Cake nondet"),
                          (cake.NormgatePackage.DETERMINISTIC, "Cake det")):
            bdesc = cake.normgate_desc(rows, d, eps=EPS, package=pkg, dw_dtype=cake.DType.BF16)
            ws_bytes = cake_h.normgate_workspace_size(bdesc)
            ws = torch.zeros(max(ws_bytes, 16), device="cuda", dtype=torch.uint8)

            def c_bwd(bdesc=bdesc, ws=ws, ws_bytes=ws_bytes):
                cake_h.normgate_backward(bdesc, dy, x, z, w, dx, dz, dw, ws, ws_bytes,
                                         stream=torch.cuda.current_stream())
                return dx, dz, dw
            fns["bwdg"][name] = c_bwd
        return fns

    def cake_swiglu_fn(m, k, form, inp, grad):
        """Cake's SwiGLU + MXFP8 form on these inputs, with its own output buffers, or None."""
        if cake is None:
            return None
        direction, orientation = form.split("_")
        orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
        backward = direction == "bwd"
        desc = cake.swiglu_mxfp8_desc(m, k, orient)
        sz = cake.swiglu_mxfp8_buffer_sizes(m, k, backward, orient)
        row_on, col_on = orientation in ("row", "both"), orientation in ("col", "both")
        out = tuple(torch.empty(n, device="cuda", dtype=torch.uint8) if on else None
                    for n, on in ((sz.q_bytes, row_on), (sz.row_s_bytes, row_on),
                                  (sz.q_bytes, col_on), (sz.col_s_bytes, col_on)))
        if backward:
            def fn():
                cake_h.swiglu_mxfp8_backward(desc, inp, grad, *out, stream=torch.cuda.current_stream())
                return out
        else:
            def fn():
                cake_h.swiglu_mxfp8_forward(desc, inp, *out, stream=torch.cuda.current_stream())
                return out
        return fn

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
            ck = cake_normgate_fns(rows, d, x, z, w, dy)  # paired with every peer below
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
                        {"check_rel_l2": check} if check else None, ck.get("fwdg"))
                measure("normgate", "bwdg", shape, "FLA rms_norm_gated", f_bwd, bwd_bytes,
                        cake_fns=ck.get("bwdg"))
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
                        {"check_rel_l2": check} if check else None, ck.get("fwdg"))
                measure("normgate", "bwdg", shape, "mamba_ssm rmsnorm_fn", m_bwd, bwd_bytes,
                        cake_fns=ck.get("bwdg"))
            elif which == "cake" and cake is not None:
                # Cake alone in this harness (its numbers beside cake-bench's).
                if ref is not None:
                    y = ck["fwdg"]["Cake"]()
                    check = {"y": rel_l2(torch, y, ref[0])}
                measure("normgate", "fwdg", shape, "Cake", ck["fwdg"]["Cake"], fwd_bytes,
                        {"is_cake": True, "check_rel_l2": check} if check else {"is_cake": True})
                for name, c_bwd in ck["bwdg"].items():
                    extra = {"is_cake": True, "fwd_peer": "Cake"}
                    if ref is not None:
                        dx, dz, dw = c_bwd()
                        extra["check_rel_l2"] = {"dx": rel_l2(torch, dx, ref[1]),
                                                 "dz": rel_l2(torch, dz, ref[2]),
                                                 "dw": rel_l2(torch, dw, ref[3])}
                    measure("normgate", "bwdg", shape, name, c_bwd, bwd_bytes, extra)
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
                            (lambda c=c, a=args_: c(*a)), nbytes, extra, ck.get(op))
            del x, z, dy, w, ck

    def swiglu_cake_phase():
        orient_of = {"row": "rowwise", "col": "colwise", "both": "both"}
        for sh in args.sw_shapes.split(","):
            m, k = (int(v) for v in sh.split("x"))
            if run.over_budget():
                run.skipped.append("swiglu cake %s" % sh)
                continue
            inp = randn(m, 2 * k)
            grad = randn(m, k)
            for form in args.forms.split(","):
                fn = cake_swiglu_fn(m, k, form, inp, grad)
                measure("swiglu", form, sh, "Cake", fn, sw_bytes(m, k, form), {"is_cake": True})
                del fn
            del inp, grad
            torch.cuda.empty_cache()

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
                cf = cake_swiglu_fn(m, k, form, inp, grad)
                measure("swiglu", form, sh, "torch.compile " + mode, (lambda c=c, a=a: c(*a)),
                        sw_bytes(m, k, form), {"compile_s": time.time() - t0},
                        {"Cake": cf} if cf else None)
                del cf
            del inp, grad
            torch.cuda.empty_cache()

    phases = []
    if cake is not None and "cake" in peers:  # first: never skipped for time
        if args.family in ("all", "normgate"):
            phases.append(("normgate", "cake"))
        if args.family in ("all", "swiglu"):
            phases.append(("swiglu", "cake"))
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
        elif which == "cake":
            swiglu_cake_phase()
        else:
            swiglu_phase(which)

    # fwd + bwd (fwdg + bwdg) per normgate peer, derived.
    run.results += derive_fwd_bwd(run.results)
    versus = cake_vs_best_peer(run.results)
    run.meta["cake_vs_best_peer"] = versus
    run.write()
    if versus:
        print("\n== Cake against the best peer, alternated round by round in this harness "
              "(speedup = peer us / Cake us: median [min, max] of the rounds)")
        print("%-8s %-9s %-12s %-12s %10s %10s %8s %17s  %s" % (
            "family", "op", "shape", "cake", "cake us", "peer us", "speedup", "rounds", "peer"))
        for v in versus:
            rng = ("[%.3f, %.3f]" % (v["speedup_lo"], v["speedup_hi"])
                   if v["speedup_lo"] is not None else "(sums)")
            print("%-8s %-9s %-12s %-12s %10.3f %10.3f %8.3f %17s  %s" % (
                v["family"], v["op"], v["shape"], v["cake"], v["cake_us"], v["peer_us"],
                v["speedup"], rng, v["peer"]))

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
