"""Session 20 run 1: SwiGLU at the smallest shapes, Cake against torch.compile max-autotune:
kernel time (CUPTI via torch.profiler) and graph replays with events, the two graphs
alternated replay by replay, cold L2 (the peers.py flush) before every replay."""
import json, os, statistics, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "bench", "peers"))
import torch, torch.nn.functional as F
import peers as P

shapes = sys.argv[1].split(",")
forms = sys.argv[2].split(",")
reps = int(sys.argv[3])
out_json = sys.argv[4]
cake = P.load_cake()
h = cake.Handle(torch.cuda.current_device())
timer = P.GraphTimer(torch, 2.0, 1, 1, 3)
make, _ = P.sw_reference(torch, F)
gen = torch.Generator(device="cuda"); gen.manual_seed(int(time.time() * 1e6) & 0xffffffff)
def randn(*s):
    t = torch.randn(*s, device="cuda", generator=gen).to(torch.bfloat16)
    return torch.where(t == 0, torch.ones_like(t), t)
results = []
for sh in shapes:
    m, k = (int(v) for v in sh.split("x"))
    inp, grad = randn(m, 2 * k), randn(m, k)
    for form in forms:
        torch._dynamo.reset()
        c = torch.compile(make(form), mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=True)
        a = (inp,) if form.startswith("fwd") else (inp, grad)
        c(*a); torch.cuda.synchronize()
        direction, orientation = form.split("_")
        orient = {"row": "rowwise", "col": "colwise", "both": "both"}[orientation]
        desc = cake.swiglu_mxfp8_desc(m, k, orient)
        sz = cake.swiglu_mxfp8_buffer_sizes(m, k, direction == "bwd", orient)
        ron, con = orientation in ("row", "both"), orientation in ("col", "both")
        outb = tuple(torch.empty(n, device="cuda", dtype=torch.uint8) if on else None
                     for n, on in ((sz.q_bytes, ron), (sz.row_s_bytes, ron), (sz.q_bytes, con), (sz.col_s_bytes, con)))
        if direction == "bwd":
            cf = lambda: (h.swiglu_mxfp8_backward(desc, inp, grad, *outb, stream=torch.cuda.current_stream()), outb)[1]
        else:
            cf = lambda: (h.swiglu_mxfp8_forward(desc, inp, *outb, stream=torch.cuda.current_stream()), outb)[1]
        gp, _ = timer.capture(lambda: c(*a))
        gc, _ = timer.capture(cf)
        graphs = {"peer": gp, "cake": gc}
        # events, alternated replay by replay
        ev = {n: [] for n in graphs}
        for i in range(reps):
            order = ["peer", "cake"] if i % 2 == 0 else ["cake", "peer"]
            for n in order:
                timer.flush()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); graphs[n].replay(); e.record()
                ev[n].append((s, e))
        torch.cuda.synchronize()
        evt = {n: [s.elapsed_time(e) * 1e3 for s, e in v] for n, v in ev.items()}
        # kernel time: profiler over the same alternation
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(reps):
                order = ["peer", "cake"] if i % 2 == 0 else ["cake", "peer"]
                for n in order:
                    timer.flush()
                    graphs[n].replay()
            torch.cuda.synchronize()
        kern = {}
        for evn in prof.events():
            if evn.device_type != torch.autograd.DeviceType.CUDA:
                continue
            name = evn.name
            if "fill" in name or "Memset" in name or "memset" in name:
                continue
            kern.setdefault(name, []).append(evn.device_time if hasattr(evn, "device_time") else evn.cuda_time)
        row = {"shape": sh, "form": form,
               "event_us": {n: statistics.median(v) for n, v in evt.items()},
               "event_ratio_peer_over_cake": statistics.median(p / q for p, q in zip(evt["peer"], evt["cake"])),
               "kernels": {n: {"count": len(v), "median_us": statistics.median(v), "min_us": min(v)} for n, v in kern.items()}}
        results.append(row)
        print(json.dumps(row), flush=True)
        del gp, gc, graphs
json.dump(results, open(out_json, "w"), indent=1)
