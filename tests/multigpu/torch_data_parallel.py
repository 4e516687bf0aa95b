#!/usr/bin/env python3
"""Multi-GPU training steps with Cake under torch.distributed (NCCL, one process per GPU).

A small block (projection -> per-head norm-gate -> SwiGLU + MXFP8 MLP -> loss), trained a few
steps:
  1. DDP over all local GPUs vs the same steps on one GPU with the whole batch: every step's
     loss and the final parameters agree within the reduction-order error (the sum of the
     ranks' gradients is taken in NCCL's order, the one-GPU run sums rows in Cake's order);
  2. the deterministic package's dw is bit-identical on every rank for the same rows;
  3. FSDP2 (fully_shard) of the same block: the same losses as DDP within that error;
  4. the DDP run repeated gives bit-identical losses.
Skips (exit 0, says so) with fewer than two GPUs (--min-gpus 1 runs it on one, as a check of
the script: then DDP and FSDP2 are one-rank groups).

    python3 tests/multigpu/torch_data_parallel.py [--steps 4] [--json OUT]
"""

import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

BF16 = torch.bfloat16


class SwiGLUMXFP8(torch.autograd.Function):
    """silu(gate) * up through Cake's SwiGLU + MXFP8 forward, its gradient through the backward
    form; the quantized values are dequantized here (Hopper has no MXFP8 GEMM)."""

    @staticmethod
    def forward(ctx, h):
        import cake.torch as ct
        q = ct.swiglu_mxfp8(h, "rowwise")
        ctx.save_for_backward(h)
        return ct.dequantize_mxfp8(q.row_q, q.row_s).to(BF16)

    @staticmethod
    def backward(ctx, g):
        import cake.torch as ct
        (h,) = ctx.saved_tensors
        q = ct.swiglu_mxfp8_backward(h, g.contiguous().to(BF16), "rowwise")
        return ct.dequantize_mxfp8(q.row_q, q.row_s).to(BF16)


class Block(torch.nn.Module):
    def __init__(self, dm=256, heads=4, d=128, ff=512):
        super().__init__()
        g = torch.Generator().manual_seed(1234)
        self.heads, self.d = heads, d
        self.proj = torch.nn.Parameter((torch.randn(2 * heads * d, dm, generator=g) / dm**0.5).to(BF16))
        self.norm_w = torch.nn.Parameter((1 + 0.1 * torch.randn(d, generator=g)).to(BF16))
        self.up = torch.nn.Parameter((torch.randn(2 * ff, heads * d, generator=g) / (heads * d)**0.5).to(BF16))
        self.down = torch.nn.Parameter((torch.randn(dm, ff, generator=g) / ff**0.5).to(BF16))

    def forward(self, h):
        import cake.torch as ct
        t = h.shape[0]
        xz = (h @ self.proj.t()).view(t, 2, self.heads, self.d)
        y = ct.normgate(xz[:, 0], xz[:, 1], self.norm_w)  # x, z: strided views, deterministic
        u = y.reshape(t, self.heads * self.d) @ self.up.t()
        return SwiGLUMXFP8.apply(u.contiguous()) @ self.down.t()


def batch(step, tokens, dm, device):
    g = torch.Generator(device=device).manual_seed(100 + step)
    h = torch.randn(tokens, dm, device=device, generator=g).to(BF16)
    target = torch.randn(tokens, dm, device=device, generator=g)
    return h, target


def train(model, steps, tokens, rank, world, device, wrap=None):
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=0.05)
    losses = []
    for step in range(steps):
        h, target = batch(step, tokens, 256, device)
        if world > 1:  # this rank's rows
            rows = tokens // world
            h, target = h[rank * rows:(rank + 1) * rows], target[rank * rows:(rank + 1) * rows]
        out = (wrap or model)(h)
        loss = (out.float() - target).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        l = loss.detach().clone()
        if world > 1:
            dist.all_reduce(l)
            l /= world
        losses.append(l.item())
    return losses


def full_params(model):
    out = []
    for p in model.parameters():
        t = p.full_tensor() if hasattr(p, "full_tensor") else p
        out.append(t.detach().float().clone())
    return out


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def worker(rank, world, args, result_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    from torch.nn.parallel import DistributedDataParallel as DDP
    import cake.torch as ct
    res = {"world": world, "backend": ct.backend()}

    one = Block().to(device)
    res["one_gpu"] = train(one, args.steps, args.tokens, 0, 1, device)
    one_params = full_params(one)

    runs = []
    for _ in range(2):
        m = Block().to(device)
        ddp = DDP(m, device_ids=[rank])
        runs.append((train(m, args.steps, args.tokens, rank, world, device, ddp), full_params(m)))
    res["ddp"] = runs[0][0]
    res["ddp_repeat_bitwise"] = runs[0][0] == runs[1][0] and all(
        torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
    res["ddp_vs_one_loss_max_rel"] = max(abs(a - b) / abs(b) for a, b in zip(res["ddp"], res["one_gpu"]))
    res["ddp_vs_one_param_max_rel"] = max(rel(a, b) for a, b in zip(runs[0][1], one_params))

    # The same rows on every rank: the deterministic package's dw must be the same bits.
    m = Block().to(device)
    h, _ = batch(0, args.tokens // world, 256, device)
    m(h).float().square().mean().backward()
    dw = m.norm_w.grad  # BF16: NCCL gathers it as is; the bits are compared after
    gathered = [torch.empty_like(dw) for _ in range(world)]
    dist.all_gather(gathered, dw)
    bits = [g.view(torch.int16) for g in gathered]
    res["det_dw_identical_across_ranks"] = all(torch.equal(b, bits[0]) for b in bits)

    try:
        from torch.distributed.fsdp import fully_shard
        m = Block().to(device)
        fully_shard(m)
        res["fsdp2"] = train(m, args.steps, args.tokens, rank, world, device)
        res["fsdp2_vs_ddp_loss_max_rel"] = max(abs(a - b) / abs(b) for a, b in zip(res["fsdp2"], res["ddp"]))
    except Exception as e:  # noqa: BLE001 - reported in the results
        res["fsdp2_error"] = repr(e)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(res, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--json", default="torch_data_parallel.json")
    p.add_argument("--tolerance", type=float, default=2e-2,
                   help="largest relative loss/parameter difference accepted vs one GPU")
    p.add_argument("--min-gpus", type=int, default=2,
                   help="1 runs the same code on one GPU (a check of the script itself)")
    args = p.parse_args()
    world = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if world < max(args.min_gpus, 1):
        print(f"torch_data_parallel: skipped: needs {args.min_gpus} or more GPUs, found {world}")
        return 0
    mp.spawn(worker, args=(world, args, args.json), nprocs=world, join=True)
    res = json.load(open(args.json))
    print(json.dumps(res, indent=1))
    ok = (res["ddp_repeat_bitwise"] and res["det_dw_identical_across_ranks"]
          and res["ddp_vs_one_loss_max_rel"] <= args.tolerance
          and res["ddp_vs_one_param_max_rel"] <= args.tolerance
          and res.get("fsdp2_vs_ddp_loss_max_rel", 1.0) <= args.tolerance)
    print("torch_data_parallel:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
