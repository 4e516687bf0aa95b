"""Session 20 run 2: what a cold instruction fetch costs the smallest SwiGLU launches.
Per form and shape, for Cake and torch.compile max-autotune, CUPTI kernel time (torch.profiler)
of the timed launch under three conditions, alternated launch by launch:
  cold      : flush (2x L2) -> timed graph                      (code and data cold)
  warmcode  : flush -> the same op's graph on other buffers -> timed graph (code warm, data cold)
  warm      : timed graph right after itself, no flush          (code and data warm)"""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "bench", "peers"))
import torch, torch.nn.functional as F
import peers as P
from torch.profiler import profile, ProfilerActivity

shapes, forms, reps, out_json = sys.argv[1].split(","), sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
cake = P.load_cake()
h = cake.Handle(torch.cuda.current_device())
timer = P.GraphTimer(torch, 2.0, 1, 1, 3)
make, _ = P.sw_reference(torch, F)
gen = torch.Generator(device="cuda"); gen.manual_seed(int(time.time() * 1e6) & 0xffffffff)
def randn(*s):
    t = torch.randn(*s, device="cuda", generator=gen).to(torch.bfloat16)
    return torch.where(t == 0, torch.ones_like(t), t)
def cake_fn(m, k, form, inp, grad):
    direction, orientation = form.split("_")
    orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
    desc = cake.swiglu_mxfp8_desc(m, k, orient)
    sz = cake.swiglu_mxfp8_buffer_sizes(m, k, direction == "bwd", orient)
    ron, con = orientation in ("row", "both"), orientation in ("col", "both")
    outb = tuple(torch.empty(n, device="cuda", dtype=torch.uint8) if on else None
                 for n, on in ((sz.q_bytes, ron), (sz.row_s_bytes, ron), (sz.q_bytes, con), (sz.col_s_bytes, con)))
    if direction == "bwd":
        return lambda: (h.swiglu_mxfp8_backward(desc, inp, grad, *outb, stream=torch.cuda.current_stream()), outb)[1]
    return lambda: (h.swiglu_mxfp8_forward(desc, inp, *outb, stream=torch.cuda.current_stream()), outb)[1]
results = []
for sh in shapes:
    m, k = (int(v) for v in sh.split("x"))
    ins = [(randn(m, 2 * k), randn(m, k)) for _ in range(2)]
    for form in forms:
        torch._dynamo.reset()
        c = torch.compile(make(form), mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=True)
        args = [(i,) if form.startswith("fwd") else (i, g) for i, g in ins]
        c(*args[0]); torch.cuda.synchronize()
        g = {}
        for who in ("peer", "cake"):
            for j in range(2):
                fn = (lambda a=args[j]: c(*a)) if who == "peer" else cake_fn(m, k, form, *ins[j])
                g[who, j] = timer.capture(fn)[0]
        conds = ("cold", "warmcode", "warm")
        seq = []  # (who, cond) of every timed launch, in order
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(reps):
                for who in (("peer", "cake") if i % 2 == 0 else ("cake", "peer")):
                    for cond in conds:
                        if cond != "warm":
                            timer.flush()
                        if cond == "warmcode":
                            g[who, 1].replay()
                        if cond == "warm":
                            g[who, 0].replay()
                        g[who, 0].replay()
                        seq.append((who, cond))
            torch.cuda.synchronize()
        evs = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and "Fill" not in e.name), key=lambda e: e.time_range.start)
        # group kernels into launches: a graph replay's kernels are consecutive
        names = {}
        for e in evs:
            names.setdefault(e.name, 0); names[e.name] += 1
        per = {"peer": [n for n in names if not n.startswith("cake")], "cake": [n for n in names if n.startswith("cake")]}
        # walk the event list: every launch emits len(per[who]) kernels; warm/warmcode emit two launches
        out = {(w, cnd): [] for w in per for cnd in conds}
        idx = 0
        for who, cond in seq:
            nk = len(per[who])
            launches = 1 if cond == "cold" else 2
            chunk = evs[idx: idx + nk * launches]
            idx += nk * launches
            timed = chunk[-nk:]
            out[who, cond].append(sum(e.device_time if hasattr(e, "device_time") else e.cuda_time for e in timed))
        row = {"shape": sh, "form": form, "kernels": per,
               "kernel_us": {"%s/%s" % k: {"median": statistics.median(v), "min": min(v), "n": len(v)} for k, v in out.items()}}
        results.append(row)
        print(sh, form, " ".join("%s/%s %.2f" % (k[0], k[1], statistics.median(v)) for k, v in out.items()), flush=True)
        del g
json.dump(results, open(out_json, "w"), indent=1)
