"""Cake from PyTorch: the norm-gate forward and backward (autograd, with activation
checkpointing) and the SwiGLU + MXFP8 forward, each checked against plain PyTorch. Exits 0 when
every check passes.

    PYTHONPATH=bindings/python python3 examples/python/cake_torch_demo.py
(needs libcake.so: the CMake build's build/lib is found from a checkout, else set CAKE_LIBRARY).
"""

import sys
from pathlib import Path

import torch
import torch.utils.checkpoint

try:
    import cake.torch as ct
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bindings" / "python"))
    import cake.torch as ct

import cake


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


def main() -> bool:
    if not torch.cuda.is_available():
        print("cake_torch_demo: no CUDA device", file=sys.stderr)
        return False
    dev = torch.device("cuda")
    ok = True
    h = ct.handle(dev)
    info = h.device_info()
    print(f"Cake {'.'.join(map(str, cake.version()))} on {info.device_name} "
          f"(table sm{info.table}, {info.program_count} programs)")

    # A Gated DeltaNet output norm: x and z are views into one fused projection.
    t, heads, d = 4096, 16, 128
    xz = torch.randn(t, heads, 2 * d, device=dev, dtype=torch.bfloat16)
    x, z = xz[..., :d], xz[..., d:]
    w = (1 + 0.5 * torch.randn(d, device=dev)).requires_grad_()  # FP32 master weight
    y = ct.normgate(x, z, w)
    e = rel(y, ct.normgate_reference(x, z, w))
    print(f"normgate forward   {t}x{heads}x{d}  rel. difference to PyTorch {e:.1e}")
    ok &= e < 5e-3

    if cake.has("cake_normgate_backward"):
        dy = torch.randn_like(y)
        xr, zr = x.detach().clone().requires_grad_(), z.detach().clone().requires_grad_()
        # checkpointed: the forward is recomputed in the backward, from x and z only
        yc = torch.utils.checkpoint.checkpoint(ct.normgate, xr, zr, w, use_reentrant=False)
        yc.backward(dy)
        got = (xr.grad, zr.grad, w.grad.clone())
        xr.grad = zr.grad = w.grad = None
        ct.normgate_reference(xr, zr, w).backward(dy)
        for name, a, b in zip(("dx", "dz", "dw"), got, (xr.grad, zr.grad, w.grad)):
            e = rel(a, b)
            print(f"normgate backward  {name} ({a.dtype})  rel. difference {e:.1e}")
            ok &= e < 1e-2
    else:
        print("normgate backward  skipped: this libcake.so has no cake_normgate_backward yet")

    if cake.has("cake_swiglu_mxfp8_forward"):
        m, k = 2048, 1024
        inp = 3 * torch.randn(m, 2 * k, device=dev, dtype=torch.bfloat16)
        q = ct.swiglu_mxfp8(inp, "both")
        yref = torch.nn.functional.silu(inp[:, :k].float()) * inp[:, k:].float()
        er = rel(ct.dequantize_mxfp8(q.row_q, q.row_s), yref)
        ec = rel(ct.dequantize_mxfp8(q.col_q, q.col_s, colwise=True), yref)
        print(f"swiglu+mxfp8 fwd   {m}x{2 * k} -> E4M3 {tuple(q.row_q.shape)} + "
              f"{tuple(q.col_q.shape)}; dequantized rel. error {er:.1e} / {ec:.1e}")
        ok &= er < 0.05 and ec < 0.05
    else:
        print("swiglu+mxfp8 fwd   skipped: this libcake.so has no cake_swiglu_mxfp8_forward yet")
    print("all checks passed" if ok else "CHECKS FAILED")
    return bool(ok)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
