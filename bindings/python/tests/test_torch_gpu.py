"""GPU tests of cake.torch against float64 PyTorch references (skip without torch or CUDA; an
op's tests skip while libcake.so lacks its symbol)."""

import pytest

torch = pytest.importorskip("torch")
import torch.utils.checkpoint  # noqa: E402
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: cake.torch GPU tests skipped", allow_module_level=True)

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from conftest import require_symbols  # noqa: E402
from reference import (  # noqa: E402
    bf16_ordinal,
    check_dw,
    check_grad,
    check_mxfp8,
    check_y,
    f32_ordinal,
    normgate_bwd64,
    normgate_fwd64,
    quantize_rows,
    rel_l2,
    swiglu_y64,
)

BF16 = torch.bfloat16
DEV = torch.device("cuda", 0)
EPS = 1e-6
NEEDS_BWD = ("cake_normgate_workspace_size", "cake_normgate_backward")
NEEDS_SWIGLU = ("cake_swiglu_mxfp8_desc_init", "cake_swiglu_mxfp8_sizes_init",
                "cake_swiglu_mxfp8_buffer_sizes", "cake_swiglu_mxfp8_forward")


def make(rows, d, seed=0, z_pad=None):
    """x, z (z a strided view into a wider buffer when z_pad is given), w, dy."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    x = torch.randn(rows, d, device=DEV, generator=g).to(BF16)
    if z_pad is None:
        z = (2 * torch.randn(rows, d, device=DEV, generator=g)).to(BF16)
    else:
        fused = (2 * torch.randn(rows, d + z_pad, device=DEV, generator=g)).to(BF16)
        z = fused[:, z_pad:]
    w = (1 + 0.5 * torch.randn(d, device=DEV, generator=g)).to(BF16)
    dy = torch.randn(rows, d, device=DEV, generator=g).to(BF16)
    return x, z, w, dy


# ---- the operators' implementation -----------------------------------------------------------
def test_operators_come_from_the_native_library():
    """Every test of this file runs through libcake_torch unless CAKE_TORCH_NATIVE=0 asks for the
    Python operators (the device script runs the file both ways)."""
    import os

    want = "python" if os.environ.get("CAKE_TORCH_NATIVE") == "0" else "native"
    assert ct.backend() == want


def test_cpu_and_mixed_device_tensors_get_cakes_message():
    x, z, w, _ = make(16, 64, seed=21)
    with pytest.raises(ValueError, match="Cake runs on CUDA tensors"):
        ct.normgate(x.cpu(), z.cpu(), w.cpu())
    with pytest.raises(ValueError, match="one CUDA device"):
        ct.normgate(x, z, w.cpu())
    with pytest.raises(ValueError, match="Cake runs on CUDA tensors"):
        ct.swiglu_mxfp8(torch.zeros(128, 256, dtype=BF16))


def test_capture_that_needs_a_new_workspace_is_refused():
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(64 * 1024 + 8, 256, seed=22)  # a workspace larger than any test before
    s = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="before capturing"):
        with torch.cuda.graph(g, stream=s):
            torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 2)
    torch.cuda.synchronize()
    # After one eager call on the stream, the same capture works and replays equal eager.
    with torch.cuda.stream(s):
        want = torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 2)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        got = torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 2)
    g.replay()
    torch.cuda.synchronize()
    for a, b in zip(want, got):
        assert torch.equal(a, b)


# ---- norm-gate forward -----------------------------------------------------------------------
@pytest.mark.parametrize("rows,d", [(1, 128), (37, 64), (4096, 128), (20000, 128), (1000, 256),
                                    (513, 96)])
def test_normgate_forward(rows, d):
    x, z, w, _ = make(rows, d, seed=rows + d)
    y = ct.normgate(x, z, w, EPS)
    check_y(y, normgate_fwd64(x, z, w, EPS))


def test_normgate_forward_strided_and_3d():
    t, h, d = 300, 8, 128
    xz = torch.randn(t, h, 2 * d, device=DEV).to(BF16)
    x, z = xz[..., :d], xz[..., d:]  # views of a fused projection: row stride 2d
    w = torch.rand(d, device=DEV).to(BF16) + 0.5
    y = ct.normgate(x, z, w)
    assert y.shape == (t, h, d) and y.dtype == BF16
    check_y(y, normgate_fwd64(x, z, w, EPS))
    # the op works on views without copying them: same bits as on packed copies
    assert torch.equal(y, ct.normgate(x.contiguous(), z.contiguous(), w))


def test_normgate_forward_validation_messages():
    x, z, w, _ = make(16, 128)
    with pytest.raises(TypeError, match="bfloat16, float16 or float32"):
        ct.normgate(x.double(), z, w)
    with pytest.raises(ValueError, match="gate"):
        ct.normgate(x, z, w, gate="relu")
    with pytest.raises(ValueError, match="pass z exactly when there is a gate"):
        torch.ops.cake.normgate_fwd(x, None, w, EPS, 0)
    with pytest.raises(ValueError, match="must be \\[d\\]"):
        ct.normgate(x, z, w[:64])
    x12, z12 = torch.zeros(4, 12, device=DEV, dtype=BF16), torch.zeros(4, 12, device=DEV,
                                                                         dtype=BF16)
    with pytest.raises(cake.UnsupportedShapeError, match="desc->d = 12"):
        ct.normgate(x12, z12, torch.ones(12, device=DEV, dtype=BF16))
    with pytest.raises(cake.ProgramNotFoundError, match="no-such-program"):
        ct.normgate(x, z, w, program="no-such-program")


def test_normgate_forward_runs_on_current_stream():
    x, z, w, _ = make(8192, 128, seed=3)
    want = ct.normgate(x, z, w)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        got = ct.normgate(x, z, w)
    torch.cuda.current_stream().wait_stream(s)
    assert torch.equal(got, want)


# ---- norm-gate backward ----------------------------------------------------------------------
@pytest.mark.parametrize("rows,d", [(1, 128), (37, 64), (4096, 128), (20000, 128), (1000, 256)])
@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("dw_dtype", [torch.bfloat16, torch.float32])
def test_normgate_backward(rows, d, deterministic, dw_dtype):
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(rows, d, seed=7 * rows + d, z_pad=16)
    w_param = w.to(dw_dtype)  # an FP32 master weight gives an FP32 dw
    xr, zr, wr = (t.detach().clone().requires_grad_() for t in (x, z, w_param))
    y = ct.normgate(xr, zr, wr, EPS, deterministic=deterministic)
    y.backward(dy)
    dx64, dz64, dw64 = normgate_bwd64(dy, x, z, w, EPS)
    check_grad("dx", xr.grad, dx64)
    check_grad("dz", zr.grad, dz64)
    assert wr.grad.dtype == dw_dtype
    check_dw(wr.grad, dw64)


def test_normgate_backward_packages_and_repeats():
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(33000, 128, seed=11)
    runs = [torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 2) for _ in range(5)]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        runs.append(torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 2))
    torch.cuda.current_stream().wait_stream(s)
    for dx, dz, dw in runs[1:]:  # deterministic: bitwise, across repeats and streams
        assert torch.equal(dx, runs[0][0]) and torch.equal(dz, runs[0][1])
        assert torch.equal(dw.view(torch.int32), runs[0][2].view(torch.int32))
    ndx, ndz, ndw = torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, False, 2)
    assert torch.equal(ndx, runs[0][0]) and torch.equal(ndz, runs[0][1])
    assert (f32_ordinal(ndw) - f32_ordinal(runs[0][2])).abs().max().item() <= 1
    _, _, ndw16 = torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, False, 1)
    _, _, ddw16 = torch.ops.cake.normgate_bwd(dy, x, z, w, EPS, 0, False, 0, True, 1)
    assert (bf16_ordinal(ndw16) - bf16_ordinal(ddw16)).abs().max().item() <= 1


@pytest.mark.parametrize("rows,d", [(4096, 128), (1000, 256)])
def test_normgate_backward_leaves_workspace_zeroed(rows, d):
    """The library's contract that the cached workspace relies on (cake.h)."""
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(rows, d, seed=13)
    h = ct.handle(DEV)
    bad = []
    for package in (cake.NormgatePackage.DETERMINISTIC, cake.NormgatePackage.NONDETERMINISTIC):
        for dw_dtype, flags in ((cake.DType.BF16, 0), (cake.DType.F32, 0),
                                (cake.DType.F32, cake.NormgateFlags.DW_ACCUMULATE),
                                (cake.DType.BF16, cake.NormgateFlags.DW_SKIP)):
            desc = cake.normgate_desc(rows, d, package=package, dw_dtype=dw_dtype, flags=flags)
            n = h.normgate_workspace_size(desc)
            ws = torch.zeros(max(n, 1), dtype=torch.uint8, device=DEV)
            dx, dz = torch.empty_like(x), torch.empty_like(z)
            dw = torch.zeros(d, device=DEV,
                             dtype=torch.float32 if dw_dtype == cake.DType.F32 else BF16)
            for _ in range(2):
                h.normgate_backward(desc, dy, x, z, w, dx, dz, dw, ws, n,
                                    torch.cuda.current_stream())
                torch.cuda.synchronize()
                left = int(ws[:n].count_nonzero())
                if left:
                    bad.append(f"{package.name} dw {dw_dtype.name} flags {int(flags)}: "
                               f"{left} of {n} bytes left non-zero")
                    ws.zero_()
    assert not bad, "; ".join(bad)


def test_normgate_main_grad_accumulate_and_skip():
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(2048, 128, seed=5)
    main = torch.randn(128, device=DEV)
    start = main.clone()
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    ct.normgate(xr, z, wr, main_grad=main).backward(dy)
    assert wr.grad is None
    _, _, dw64 = normgate_bwd64(dy, x, z, w, EPS)
    assert rel_l2(main - start, dw64) <= 1e-5
    dx64 = normgate_bwd64(dy, x, z, w, EPS)[0]
    check_grad("dx", xr.grad, dx64)
    # w not requiring grad: the DW_SKIP path
    xr2 = x.clone().requires_grad_()
    ct.normgate(xr2, z, w).backward(dy)
    assert torch.equal(xr2.grad, xr.grad)


def test_normgate_op_autograd_registration():
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(512, 128, seed=9)
    xr, zr, wr = (t.clone().requires_grad_() for t in (x, z, w))
    torch.ops.cake.normgate_fwd(xr, zr, wr, EPS).backward(dy)
    xf, zf, wf = (t.clone().requires_grad_() for t in (x, z, w))
    ct.normgate(xf, zf, wf).backward(dy)
    assert torch.equal(xr.grad, xf.grad) and torch.equal(zr.grad, zf.grad)
    assert torch.equal(wr.grad, wf.grad)


def test_normgate_opcheck():
    x, z, w, dy = make(256, 128, seed=2)
    torch.library.opcheck(torch.ops.cake.normgate_fwd.default, (x, z, w, EPS))
    if cake.has("cake_normgate_backward"):
        torch.library.opcheck(torch.ops.cake.normgate_bwd.default,
                              (dy, x, z, w, EPS, 0, False, 0, True, 2))


def test_normgate_torch_compile():
    require_symbols(*NEEDS_BWD)
    x, z, w, dy = make(1024, 128, seed=4)

    def loss_fn(x, z, w):
        return (ct.normgate(x, z, w).float() * dy.float()).sum()

    def loss_op(x, z, w):
        return (torch.ops.cake.normgate_fwd(x, z, w, EPS).float() * dy.float()).sum()

    for fn in (loss_fn, loss_op):
        compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
        ins_e = [t.clone().requires_grad_() for t in (x, z, w)]
        ins_c = [t.clone().requires_grad_() for t in (x, z, w)]
        fn(*ins_e).backward()
        compiled(*ins_c).backward()
        for a, b in zip(ins_e, ins_c):
            assert torch.equal(a.grad, b.grad)


# ---- a training step with activation checkpointing -------------------------------------------
class GatedNormBlock(torch.nn.Module):
    """proj -> (x, z) views of one fused output -> norm-gate per head -> out."""

    def __init__(self, dm, heads, d, use_cake):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.heads, self.d, self.use_cake = heads, d, use_cake
        self.proj = torch.nn.Parameter((torch.randn(2 * heads * d, dm, generator=g) / dm**0.5)
                                       .to(BF16))
        self.w = torch.nn.Parameter(1 + 0.1 * torch.randn(d, generator=g))  # FP32 master
        self.out = torch.nn.Parameter((torch.randn(dm, heads * d, generator=g) /
                                       (heads * d)**0.5).to(BF16))

    def forward(self, h):
        t = h.shape[0]
        xz = (h @ self.proj.t()).view(t, self.heads, 2 * self.d)
        x, z = xz[..., :self.d], xz[..., self.d:]
        if self.use_cake:
            y = ct.normgate(x, z, self.w, EPS)
        else:  # unfused PyTorch, FP32 inside
            xf, zf = x.float(), z.float()
            rstd = torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
            y = (xf * rstd * self.w * zf * torch.sigmoid(zf)).to(BF16)
        return y.reshape(t, -1) @ self.out.t()


def train_step(use_cake, checkpoint):
    torch.manual_seed(0)
    model = GatedNormBlock(256, 4, 128, use_cake).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator(device=DEV).manual_seed(1)
    h = torch.randn(512, 256, device=DEV, generator=g).to(BF16)
    target = torch.randn(512, 256, device=DEV, generator=g)
    if checkpoint:
        out = torch.utils.checkpoint.checkpoint(model, h, use_reentrant=False)
    else:
        out = model(h)
    loss = (out.float() - target).square().mean()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    opt.step()
    return loss.item(), grads, {n: p.detach().clone() for n, p in model.named_parameters()}


def test_training_step_with_activation_checkpointing():
    require_symbols(*NEEDS_BWD)
    loss_c, grads_c, params_c = train_step(use_cake=True, checkpoint=True)
    loss_p, grads_p, params_p = train_step(use_cake=True, checkpoint=False)
    # Checkpointing recomputes the same forward: bit-identical step (deterministic package).
    assert loss_c == loss_p
    for n in grads_c:
        assert torch.equal(grads_c[n], grads_p[n]), n
        assert torch.equal(params_c[n], params_p[n]), n
    loss_u, grads_u, params_u = train_step(use_cake=False, checkpoint=False)
    assert abs(loss_c - loss_u) <= 1e-2 * abs(loss_u)
    for n in grads_c:
        assert grads_c[n].dtype == grads_u[n].dtype, n
        assert rel_l2(grads_c[n], grads_u[n]) <= 2e-2, (n, rel_l2(grads_c[n], grads_u[n]))
        assert rel_l2(params_c[n], params_u[n]) <= 1e-2, n


# ---- SwiGLU + MXFP8 --------------------------------------------------------------------------
def swiglu_inputs(m, k, seed=0, specials=False):
    g = torch.Generator(device=DEV).manual_seed(seed)
    inp = (3 * torch.randn(m, 2 * k, device=DEV, generator=g)).to(BF16)
    if specials:
        inp[0, :32] = 0  # an all-zero block
        inp[1, 5] = float("nan")  # a NaN block (rowwise) / column block (colwise)
        inp[2, :32] *= 2.0**-100  # tiny values
    grad = torch.randn(m, k, device=DEV, generator=g).to(BF16)
    return inp, grad


def check_form(name, out, y, orientation):
    m, o = y.shape
    if orientation & cake.Orientation.ROWWISE:
        q_ref, s_ref = quantize_rows(y)
        assert out.row_q.shape == (m, o) and out.row_q.dtype == torch.float8_e4m3fn
        check_mxfp8(f"{name} rowwise", out.row_q, out.row_s, q_ref, s_ref, m, o)
    else:
        assert out.row_q is None and out.row_s is None
    if orientation & cake.Orientation.COLWISE:
        q_ref, s_ref = quantize_rows(y.t().contiguous())
        assert out.col_q.shape == (o, m)
        check_mxfp8(f"{name} colwise", out.col_q, out.col_s, q_ref, s_ref, o, m)
    else:
        assert out.col_q is None and out.col_s is None


@pytest.mark.parametrize("m,k", [(256, 512), (384, 1152), (1024, 2048)])
@pytest.mark.parametrize("orientation", ["rowwise", "colwise", "both"])
def test_swiglu_mxfp8_forward(m, k, orientation):
    require_symbols(*NEEDS_SWIGLU)
    inp, _ = swiglu_inputs(m, k, seed=m + k, specials=(m == 256))
    out = ct.swiglu_mxfp8(inp, orientation)
    orient = cake.Orientation.parse(orientation)
    check_form("forward", out, swiglu_y64(inp), orient)
    y = swiglu_y64(inp).float()
    if out.row_q is not None and m != 256:
        assert rel_l2(ct.dequantize_mxfp8(out.row_q, out.row_s), y) <= 0.05
    if out.col_q is not None and m != 256:
        assert rel_l2(ct.dequantize_mxfp8(out.col_q, out.col_s, colwise=True), y) <= 0.05


@pytest.mark.parametrize("m,k", [(256, 512), (512, 1280)])
@pytest.mark.parametrize("orientation", ["rowwise", "colwise", "both"])
def test_swiglu_mxfp8_backward(m, k, orientation):
    require_symbols(*NEEDS_SWIGLU, "cake_swiglu_mxfp8_backward")
    inp, grad = swiglu_inputs(m, k, seed=3 * m + k)
    out = ct.swiglu_mxfp8_backward(inp, grad, orientation)
    check_form("backward", out, swiglu_y64(inp, grad), cake.Orientation.parse(orientation))


def test_swiglu_both_is_rowwise_plus_colwise():
    require_symbols(*NEEDS_SWIGLU, "cake_swiglu_mxfp8_backward")
    inp, grad = swiglu_inputs(512, 768, seed=21)
    for fn, args in ((ct.swiglu_mxfp8, (inp,)), (ct.swiglu_mxfp8_backward, (inp, grad))):
        both, row, col = (fn(*args, o) for o in ("both", "rowwise", "colwise"))
        u8 = lambda t: t.view(torch.uint8)  # noqa: E731
        assert torch.equal(u8(both.row_q), u8(row.row_q)) and torch.equal(both.row_s, row.row_s)
        assert torch.equal(u8(both.col_q), u8(col.col_q)) and torch.equal(both.col_s, col.col_s)


def test_swiglu_validation_and_compile():
    require_symbols(*NEEDS_SWIGLU)
    inp, _ = swiglu_inputs(256, 256)
    with pytest.raises((cake.UnsupportedShapeError, cake.InvalidArgumentError)) as e:
        ct.swiglu_mxfp8(inp[:100])
    assert e.value.message
    torch.library.opcheck(torch.ops.cake.swiglu_mxfp8_fwd.default, (inp, 3, None),
                          test_utils=("test_schema", "test_faketensor"))
    compiled = torch.compile(lambda t: torch.ops.cake.swiglu_mxfp8_fwd(t, 3, None),
                             backend="aot_eager", fullgraph=True)
    got, want = compiled(inp), ct.swiglu_mxfp8(inp, "both")
    assert all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(got, want))
