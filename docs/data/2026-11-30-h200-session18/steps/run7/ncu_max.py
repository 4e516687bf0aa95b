# session 18 run 7 helper: torch.compile max-autotune's rowwise SwiGLU kernels at 128x128 against
# Cake's under Nsight Compute (launch shape, registers, duration).
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
for form in ("fwd_row", "bwd_row"):
    torch._dynamo.reset()
    c = torch.compile(make(form), mode="max-autotune-no-cudagraphs", dynamic=False, fullgraph=True)
    a = (inp,) if form.startswith("fwd") else (inp, grad)
    c(*a); torch.cuda.synchronize()
    bwd = form.startswith("bwd")
    desc = cake.swiglu_mxfp8_desc(m, k, "rowwise"); sz = cake.swiglu_mxfp8_buffer_sizes(m, k, bwd, "rowwise")
    q = torch.empty(sz.q_bytes, device="cuda", dtype=torch.uint8); s = torch.empty(sz.row_s_bytes, device="cuda", dtype=torch.uint8)
    if bwd:
        cf = lambda: h.swiglu_mxfp8_backward(desc, inp, grad, q, s, None, None, stream=torch.cuda.current_stream())
    else:
        cf = lambda: h.swiglu_mxfp8_forward(desc, inp, q, s, None, None, stream=torch.cuda.current_stream())
    cf(); torch.cuda.synchronize()
    calls += [(lambda c=c, a=a: c(*a)), cf]
torch.cuda.profiler.start()
for rep in range(3):
    for f in calls:
        flush.fill_(rep + 1)
        f()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
