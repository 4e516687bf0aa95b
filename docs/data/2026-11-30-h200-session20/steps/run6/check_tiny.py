"""The experimental tiny-tile rowwise programs against sm90.sw_*_row_t32s8, byte for byte,
poisoned outputs, fresh random inputs."""
import os, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "bindings", "python"))
import torch, cake
h = cake.Handle(0)
gen = torch.Generator(device="cuda"); gen.manual_seed(int(time.time() * 1e6) & 0xffffffff)
bad = 0
for (m, k) in [(128, 128), (256, 256), (384, 640), (1152, 256), (4096, 2048)]:
    inp = torch.randn(m, 2 * k, device="cuda", generator=gen).to(torch.bfloat16) * 3
    grad = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    for direction in ("fwd", "bwd"):
        outs = {}
        for prog in ("t32s8", "t8s8", "t16s8"):
            name = "sm90.sw_%s_row_%s" % (direction, prog)
            desc = cake.swiglu_mxfp8_desc(m, k, "rowwise", program=name)
            sz = cake.swiglu_mxfp8_buffer_sizes(m, k, direction == "bwd", "rowwise")
            q = torch.full((sz.q_bytes,), 0xA5, dtype=torch.uint8, device="cuda")
            s = torch.full((sz.row_s_bytes,), 0x5A, dtype=torch.uint8, device="cuda")
            if direction == "bwd":
                h.swiglu_mxfp8_backward(desc, inp, grad, q, s, None, None)
            else:
                h.swiglu_mxfp8_forward(desc, inp, q, s, None, None)
            torch.cuda.synchronize()
            outs[prog] = (q.cpu(), s.cpu())
        for prog in ("t8s8", "t16s8"):
            same = torch.equal(outs[prog][0], outs["t32s8"][0]) and torch.equal(outs[prog][1], outs["t32s8"][1])
            bad += not same
            print("%dx%d %s %s vs t32s8: %s" % (m, k, direction, prog, "identical" if same else "DIFFERENT"))
print("mismatches:", bad)
sys.exit(1 if bad else 0)
