# session 18 run 4 helper: torch.compile's SwiGLU kernels against Cake's at 128x128 under ncu.
import os, sys, torch, torch.nn.functional as F
ROOT = os.getcwd()
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import peers as P
import cake
h = cake.Handle(0)
make, _ = P.sw_reference(torch, F)
flush = torch.empty(120 << 20, dtype=torch.uint8, device="cuda")
m, k = 128, 128
inp = torch.randn(m, 2 * k, device="cuda").bfloat16(); grad = torch.randn(m, k, device="cuda").bfloat16()
calls = []
for form in ("fwd_row", "bwd_row", "bwd_both"):
    c = torch.compile(make(form), dynamic=False, fullgraph=True)
    a = (inp,) if form.startswith("fwd") else (inp, grad)
    c(*a); torch.cuda.synchronize()
    o = {"row": "rowwise", "col": "colwise", "both": "both"}[form.split("_")[1]]
    bwd = form.startswith("bwd")
    desc = cake.swiglu_mxfp8_desc(m, k, o); sz = cake.swiglu_mxfp8_buffer_sizes(m, k, bwd, o)
    row, col = o != "colwise", o != "rowwise"
    bufs = [torch.empty(n, device="cuda", dtype=torch.uint8) if on else None
            for n, on in ((sz.q_bytes, row), (sz.row_s_bytes, row), (sz.q_bytes, col), (sz.col_s_bytes, col))]
    if bwd:
        cf = lambda desc=desc, b=bufs: h.swiglu_mxfp8_backward(desc, inp, grad, *b, stream=torch.cuda.current_stream())
    else:
        cf = lambda desc=desc, b=bufs: h.swiglu_mxfp8_forward(desc, inp, *b, stream=torch.cuda.current_stream())
    cf(); torch.cuda.synchronize()
    calls += [(lambda c=c, a=a: c(*a)), cf]
torch.cuda.profiler.start()
for rep in range(3):
    for f in calls:
        flush.fill_(rep + 1)
        f()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
