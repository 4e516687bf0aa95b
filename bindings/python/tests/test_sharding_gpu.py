"""GPU: the cake:: operators on DTensors of a one-rank process group (NCCL, else gloo; world
size 1, a CUDA mesh) equal the plain calls bit for bit: norm-gate forward and gradients (rows
sharded on each leading dim), SwiGLU + MXFP8 and SwiGLU + FP8 blockwise forward and backward in
every orientation (the weighted backward's dprob too), the quantized norm-gate forward."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import Replicate, Shard, distribute_tensor  # noqa: E402
from torch.distributed.tensor.debug import CommDebugMode  # noqa: E402

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402

BF16 = torch.bfloat16


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    store = dist.FileStore(str(tmp_path_factory.mktemp("pg") / "store"), 1)
    backend = "nccl" if dist.is_nccl_available() else "gloo"
    dist.init_process_group(backend, store=store, rank=0, world_size=1)
    yield init_device_mesh("cuda", (1,))
    dist.destroy_process_group()


def same(a, b):
    return a.shape == b.shape and torch.equal(a.view(torch.uint8), b.view(torch.uint8))


@pytest.mark.parametrize("kw", [{}, {"gate": "sigmoid", "group_size": 64},
                                {"gate_before_norm": True}])
@pytest.mark.parametrize("dim", [0, 1])
def test_normgate_dtensor_is_the_plain_call(mesh, kw, dim):
    g = torch.Generator("cuda").manual_seed(0)
    x, z, dy = (torch.randn(4, 64, 256, device="cuda", generator=g).to(BF16) for _ in range(3))
    w = (1 + torch.randn(256, device="cuda", generator=g) / 4).to(BF16)
    xr, zr, wr = (t.clone().requires_grad_() for t in (x, z, w))
    try:
        ct.normgate(xr, zr, wr, **kw).backward(dy)
    except cake.UnsupportedShapeError as e:  # a libcake from before the norm-gate variants
        pytest.skip(f"this libcake has no such variant: {e}")
    yr = ct.normgate(x, z, w, **kw)
    xs = distribute_tensor(x, mesh, [Shard(dim)]).requires_grad_()
    zs = distribute_tensor(z, mesh, [Shard(dim)]).requires_grad_()
    ws = distribute_tensor(w, mesh, [Replicate()]).requires_grad_()
    dys = distribute_tensor(dy, mesh, [Shard(dim)])
    with CommDebugMode() as comm:
        ys = ct.normgate(xs, zs, ws, **kw)
        ys.backward(dys)
    assert comm.get_total_counts() == 0
    assert same(ys.full_tensor(), yr)
    assert same(xs.grad.full_tensor(), xr.grad) and same(zs.grad.full_tensor(), zr.grad)
    assert same(ws.grad.full_tensor(), wr.grad)


@pytest.mark.parametrize("orient", ["rowwise", "colwise", "both"])
def test_swiglu_dtensor_is_the_plain_call(mesh, orient):
    g = torch.Generator("cuda").manual_seed(1)
    inp = torch.randn(512, 512, device="cuda", generator=g).to(BF16)
    grad = torch.randn(512, 256, device="cuda", generator=g).to(BF16)
    di, dg = distribute_tensor(inp, mesh, [Shard(0)]), distribute_tensor(grad, mesh, [Shard(0)])
    for plain, sharded in ((ct.swiglu_mxfp8(inp, orient), ct.swiglu_mxfp8(di, orient)),
                           (ct.swiglu_mxfp8_backward(inp, grad, orient),
                            ct.swiglu_mxfp8_backward(di, dg, orient))):
        for a, b in zip(plain, sharded):
            assert (a is None) == (b is None)
            if a is not None:
                # One rank holds the whole tensor (and a collective of float8 is not needed).
                assert b.shape == a.shape and same(b.to_local(), a)


def _same_outputs(plain, sharded):
    for a, b in zip(plain, sharded):
        assert b.shape == a.shape and same(b.to_local(), a)


@pytest.mark.parametrize("orient", [1, 2, 3])
def test_swiglu_fp8_dtensor_is_the_plain_call(mesh, orient):
    g = torch.Generator("cuda").manual_seed(2)
    inp = torch.randn(512, 512, device="cuda", generator=g).to(BF16)
    grad = torch.randn(512, 256, device="cuda", generator=g).to(BF16)
    prob = torch.rand(512, device="cuda", generator=g)
    di, dg, dp = (distribute_tensor(t, mesh, [Shard(0)]) for t in (inp, grad, prob))
    ops = torch.ops.cake
    with CommDebugMode() as comm:
        fwd = ops.swiglu_fp8_fwd(di, orient)
        bwd = ops.swiglu_fp8_bwd(di, dg, orient, 0, None, 1, 1.702, 7.0, dp)
    assert comm.get_total_counts() == 0
    _same_outputs(ops.swiglu_fp8_fwd(inp, orient), fwd)
    _same_outputs(ops.swiglu_fp8_bwd(inp, grad, orient, 0, None, 1, 1.702, 7.0, prob), bwd)


@pytest.mark.parametrize("fmt", [1, 2])
def test_normgate_quant_dtensor_is_the_plain_call(mesh, fmt):
    g = torch.Generator("cuda").manual_seed(3)
    x, z = (torch.randn(256, 512, device="cuda", generator=g).to(BF16) for _ in range(2))
    w = (1 + torch.randn(512, device="cuda", generator=g) / 4).to(BF16)
    dx, dz = (distribute_tensor(t, mesh, [Shard(0)]) for t in (x, z))
    dw = distribute_tensor(w, mesh, [Replicate()])
    with CommDebugMode() as comm:
        out = torch.ops.cake.normgate_fwd_quant(dx, dz, dw, fmt, 0, 2, True)
    assert comm.get_total_counts() == 0
    _same_outputs(torch.ops.cake.normgate_fwd_quant(x, z, w, fmt, 0, 2, True), out)
