# session 18 run 4 helper: Cake's forward with y allocated outside the captured function (as
# peers.py and cake-bench do) or inside it (the graph's pool, as FLA's own forward does), and
# FLA's forward, in peers.py's GraphTimer, interleaved round by round.
import os, sys, statistics, torch
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, ".peers", "site"))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import peers as P
from fla.modules.fused_norm_gate import rms_norm_gated
import cake
h = cake.Handle(0)
EPS = 1e-6
timer = P.GraphTimer(torch, 2.0, 1, 30, 3)
for sh in ("1031x48", "260x48", "3534x48"):
    t, hh = (int(v) for v in sh.split("x")); rows, d = t * hh, 128
    x = torch.randn(rows, d, device="cuda").bfloat16(); z = (2 * torch.randn(rows, d, device="cuda")).bfloat16()
    w = (1 + 0.5 * torch.randn(d, device="cuda")).bfloat16(); y = torch.empty_like(x)
    dsc = cake.normgate_desc(rows, d, eps=EPS)
    def cake_out():
        h.normgate_forward(dsc, x, z, w, y, None, stream=torch.cuda.current_stream()); return y
    def cake_in():
        yy = torch.empty_like(x)
        h.normgate_forward(dsc, x, z, w, yy, None, stream=torch.cuda.current_stream()); return yy
    def cake_in_rstd():
        yy = torch.empty_like(x); rs = torch.empty(rows, device="cuda", dtype=torch.float32)
        h.normgate_forward(dsc, x, z, w, yy, rs, stream=torch.cuda.current_stream()); return yy
    def fla():
        with torch.no_grad():
            return rms_norm_gated(x, z, w, None, activation="swish", eps=EPS)
    fns = {"cake y outside": cake_out, "cake y inside": cake_in, "cake y+rstd inside": cake_in_rstd, "FLA": fla}
    graphs = {k: timer.capture(f)[0] for k, f in fns.items()}
    res = {k: [] for k in fns}
    for rnd in range(12):
        for k, g in graphs.items():
            res[k].append(timer.time_graph(g)["median_us"])
    for k, v in res.items():
        print("%-8s %-20s median of 12 round medians %.3f us  [%.3f, %.3f]" % (sh, k, statistics.median(v), min(v), max(v)), flush=True)
