# session 18 run 6 helper: do torch.compile's kernels keep their inputs in L2 across the flush
# (Inductor's eviction_policy="evict_last" loads)? Each graph timed (a) as usual and (b) with the
# driver's cuCtxResetPersistingL2Cache after every flush (all graphs get the same sync+reset).
import ctypes, os, statistics, sys, torch, torch.nn.functional as F
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import peers as P
import cake
cu = ctypes.CDLL("libcuda.so.1")
h = cake.Handle(0)
make, _ = P.sw_reference(torch, F)
fwd_ref, _ = P.ng_reference(torch, F)
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")
count = [0]
def run(graph, reset, iters=30):
    st = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        count[0] = count[0] % 250 + 1
        flush.fill_(count[0])
        if reset:
            torch.cuda.synchronize()
            assert cu.cuCtxResetPersistingL2Cache() == 0
        st[i].record(); graph.replay(); en[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in zip(st, en))
def cap(fn):
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn(); fn()
    torch.cuda.current_stream().wait_stream(s); torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize(); return g
def report(name, graphs):
    for reset in (False, True):
        res = {k: [] for k in graphs}
        for _ in range(8):
            for k, g in graphs.items():
                res[k].append(run(g, reset))
        print(name, "reset" if reset else "plain", "  ".join("%s %.3f" % (k, statistics.median(v)) for k, v in res.items()), flush=True)
m = k = 128
inp = torch.randn(m, 2 * k, device="cuda").bfloat16(); grad = torch.randn(m, k, device="cuda").bfloat16()
for form in ("fwd_row", "bwd_row"):
    graphs = {}
    for mode in ("default", "max-autotune-no-cudagraphs"):
        torch._dynamo.reset()
        c = torch.compile(make(form), mode=None if mode == "default" else mode, dynamic=False, fullgraph=True)
        a = (inp,) if form == "fwd_row" else (inp, grad)
        c(*a); torch.cuda.synchronize()
        graphs["tc_" + mode[:7]] = cap(lambda c=c, a=a: c(*a))
    bwd = form == "bwd_row"
    desc = cake.swiglu_mxfp8_desc(m, k, "rowwise"); sz = cake.swiglu_mxfp8_buffer_sizes(m, k, bwd, "rowwise")
    q = torch.empty(sz.q_bytes, device="cuda", dtype=torch.uint8); s = torch.empty(sz.row_s_bytes, device="cuda", dtype=torch.uint8)
    if bwd:
        graphs["cake"] = cap(lambda: h.swiglu_mxfp8_backward(desc, inp, grad, q, s, None, None, stream=torch.cuda.current_stream()))
    else:
        graphs["cake"] = cap(lambda: h.swiglu_mxfp8_forward(desc, inp, q, s, None, None, stream=torch.cuda.current_stream()))
    inp2 = inp.clone(); grad2 = grad.clone()
    if bwd:
        graphs["cake_own_inputs"] = cap(lambda: h.swiglu_mxfp8_backward(desc, inp2, grad2, q, s, None, None, stream=torch.cuda.current_stream()))
    else:
        graphs["cake_own_inputs"] = cap(lambda: h.swiglu_mxfp8_forward(desc, inp2, q, s, None, None, stream=torch.cuda.current_stream()))
    report("128x128 " + form, graphs)
rows, d = 1031 * 48, 128
x = torch.randn(rows, d, device="cuda").bfloat16(); z = (2 * torch.randn(rows, d, device="cuda")).bfloat16(); w = (1 + 0.5 * torch.randn(d, device="cuda")).bfloat16()
y = torch.empty_like(x); dsc = cake.normgate_desc(rows, d, eps=1e-6)
graphs = {}
torch._dynamo.reset()
c = torch.compile(fwd_ref, mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=True); c(x, z, w); torch.cuda.synchronize()
graphs["tc_max"] = cap(lambda: c(x, z, w))
graphs["cake"] = cap(lambda: h.normgate_forward(dsc, x, z, w, y, None, stream=torch.cuda.current_stream()))
x2, z2 = x.clone(), z.clone()
graphs["cake_own_inputs"] = cap(lambda: h.normgate_forward(dsc, x2, z2, w, y, None, stream=torch.cuda.current_stream()))
report("1031x48 fwdg", graphs)
