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
SwiGLU + FP8 blockwise 1x128 (--family swiglu_fp8, six forms): torch.compile of the same Y
quantized per 128 values (FP32 scale amax / 448, MN-major): the peer a Hopper user would write.
Grouped SwiGLU for MoE experts (--sw-shapes grouped, or shapes "TxK/E<n>", either family):
torch.compile of the grouped reference (bench/peers/grouped.py: each expert's SwiGLU and its
quantization in Cake's grouped layouts, the offsets a device tensor) over cake-bench's uneven
split of the same shape, paired with Cake's grouped launch; its written bytes are compared with
Cake's once per form (check_bytes_differ).
Cake in the same harness (when its Python binding loads: bindings/python, libcake.so from
$CAKE_LIBRARY or the build): every peer's graph alternates round by round with Cake's graph of
the same op on the same inputs (row["paired_cake"]: Cake's time and the speedup peer us / Cake
us, median and range over the rounds), so both share the machine's state and drift: a phase
timed minutes after another moved small shapes by 2-3% on the H200. --peers ...,cake also times
Cake alone (rows with "is_cake": true, never a "best peer"), to set beside cake-bench's numbers.
The script ends with Cake against the best peer of every op and shape, from the paired rounds.

--table variants times every variant of the norm-gate instead (gate after or before the norm,
SiLU, sigmoid or no gate, statistics per group of G columns; wide rows): bench/peers/variants.py
says what it runs, checks and writes. Its default time budget (220 s after start-up) keeps the
whole table near 4 minutes of GPU time on an H200; what the budget skipped is listed.

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
import os
import sys
import time

from bookkeeping import Run, best_table, cake_vs_best_peer, derive_fwd_bwd
from graph_timer import GraphTimer
from grouped import GROUPED_SHAPES
from harness import Context
from peer_loaders import ROOT, load_peers
from phases import run_phases
from references import ng_reference
from variants import SETS as VT_SETS, WIDE as VT_WIDE, run_table as run_variant_table

NG_DEFAULT = "3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48"
SW_DEFAULT = "128x128,4096x2048,4096x7168,16384x7168,131072x8192"
SW_FORMS = ["fwd_row", "fwd_col", "fwd_both", "bwd_row", "bwd_col", "bwd_both"]
COMPILE_MODES = ["default", "max-autotune-no-cudagraphs"]
VT_BUDGET = 220.0  # seconds after start-up: the variant table in about 4 minutes of GPU time
VT_QUICK = "8192x5120,65536x512"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--table", default="ops", choices=["ops", "variants"],
                   help="ops: today's norm-gate and SwiGLU tables; variants: every norm-gate "
                        "variant (bench/peers/variants.py)")
    p.add_argument("--quick", action="store_true", help="2 shapes per family, 3 rounds x 10")
    p.add_argument("--family", default="all", choices=["all", "normgate", "swiglu", "swiglu_fp8"])
    p.add_argument("--ng-shapes", default=None, help="T x H list (D = --d), e.g. 3534x48,260x48")
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--sw-shapes", default=None,
                   help="M x K list, e.g. 4096x7168; T x K / E<n> grouped shapes, e.g. "
                        "16384x2048/E8; or grouped: cake-bench's grouped set")
    p.add_argument("--forms", default=",".join(SW_FORMS))
    p.add_argument("--peers", default="fla,mamba,compile",
                   help="fla, mamba (normgate), compile (torch.compile, both families), cake "
                        "(Cake alone through its Python binding; it is paired with every peer "
                        "whenever the binding loads)")
    p.add_argument("--modes", default=None,
                   help="torch.compile modes (default: %s; --table variants: default)" % ",".join(COMPILE_MODES))
    p.add_argument("--no-pair", action="store_true",
                   help="time the peers alone (no Cake graph alternating with each peer)")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--flush-mult", type=float, default=2.0)
    p.add_argument("--inputs", default="normal", help="swiglu: normal | blockscaled[:R]")
    p.add_argument("--peers-dir", default=os.path.join(ROOT, ".peers", "site"))
    p.add_argument("--time-budget", type=float, default=None,
                   help="seconds; 0: no limit (default 0; --table variants: %g)" % VT_BUDGET)
    p.add_argument("--vt-sets", default=",".join(VT_SETS),
                   help="variant sets, in priority order: " + ", ".join(VT_SETS))
    p.add_argument("--vt-shapes", default=None, help="rows x D of the wide sets (default %s)" % VT_WIDE)
    p.add_argument("--vt-group", type=int, default=1024, help="G of the group set")
    p.add_argument("--vt-group-shape", default="16384x8192", help="rows x D of the group set")
    p.add_argument("--vt-dtypes", default="bf16",
                   help="variants: dtypes, each X (x, z, w, dw) or X:W (w and dw in W), X and W "
                        "of bf16, f16, f32; e.g. bf16,f32,bf16:f32 (every case per dtype)")
    p.add_argument("--check-tol", type=float, default=1e-2,
                   help="variants: largest relative L2 error against float64 of a peer timed")
    p.add_argument("--copy-gbps", type=float, default=0,
                   help="variants: the device copy's GB/s for the limit line (cake-bench's "
                        "reference); 0: measured here")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    variants = a.table == "variants"
    if a.time_budget is None:
        a.time_budget = VT_BUDGET if variants else 0.0
    if a.modes is None:
        a.modes = "default" if variants else ",".join(COMPILE_MODES)
    if a.quick:
        a.vt_shapes = a.vt_shapes or VT_QUICK
        a.ng_shapes = a.ng_shapes or "3534x48,260x48"
        a.sw_shapes = a.sw_shapes or "128x128,4096x2048"
        a.rounds = min(a.rounds, 3)
        a.iters = min(a.iters, 10)
    a.ng_shapes = a.ng_shapes or NG_DEFAULT
    a.sw_shapes = a.sw_shapes or SW_DEFAULT
    if a.sw_shapes == "grouped":
        a.sw_shapes = ",".join(GROUPED_SHAPES)
    a.vt_shapes = a.vt_shapes or VT_WIDE
    return a


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

    if args.table == "variants":
        # Cake is in every row of the variant table (its fraction of the limit line).
        fla, mamba, cake, cake_h = load_peers(torch, args, peers | {"cake"}, run)
        ctx = Context(torch, F, args, run, timer, gen, ref_fwd, ref_bwd, fla, mamba, cake, cake_h)
        run.meta["tool"] = "cake-bench peers variants"
        run_variant_table(ctx, peers, modes)
        if run.skipped:
            print("skipped for time: " + "; ".join(run.skipped))
        print("elapsed %.1f s" % (time.time() - run.t0))
        if args.json:
            print("wrote " + args.json)
        return 0
    fla, mamba, cake, cake_h = load_peers(torch, args, peers, run)
    ctx = Context(torch, F, args, run, timer, gen, ref_fwd, ref_bwd, fla, mamba, cake, cake_h)
    run_phases(ctx, peers, modes)

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
