"""GPU tests of cake.torch's drop-in modules and patch_transformers() with the real Cake op
(skip without torch or CUDA): each module against the float64 formula of its peer, forward and
backward, for several shapes and dtypes; a few training steps of each transformers family,
patched vs unpatched; state dict round trips."""

import io

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: cake.torch module GPU tests skipped", allow_module_level=True)

import cake.torch as ct  # noqa: E402
from cake.torch import modules as M  # noqa: E402
from cake.torch import patch as P  # noqa: E402
from test_modules_host import FAMILIES, build, fla_reference, mamba_reference  # noqa: E402

DEV = torch.device("cuda")
#: One rounding to the output dtype (Cake: FP32 inside), with room for FP32 sums of the row.
REL = {torch.bfloat16: 2.0 ** -7, torch.float16: 2.0 ** -10, torch.float32: 1e-5}


def assert_close_rounded(got, want64, dtype, what=""):
    """|got - want| within a couple of ulps of dtype at |want|, plus a floor for values near
    zero (cancellation in the gate)."""
    rel = REL[dtype]
    err = (got.double() - want64).abs()
    bound = rel * want64.abs() + rel * 1e-2 * want64.abs().max()
    worst = (err - bound).max().item()
    assert worst <= 0, f"{what}: max error {err.max().item():.3e} exceeds the bound by {worst:.3e}"


def assert_close_norm(got, want64, tol, what=""):
    num = (got.double() - want64).norm().item()
    den = want64.norm().item()
    assert num <= tol * max(den, 1e-30), f"{what}: relative error {num / max(den, 1e-30):.3e}"


@pytest.fixture
def counted(monkeypatch):
    """Count the calls reaching the real cake.torch.normgate (so a test cannot pass by never
    using Cake)."""
    real = ct.normgate
    n = [0]

    def op(*args, **kwargs):
        n[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(ct, "normgate", op)
    return n


DTYPES = [torch.bfloat16, torch.float16, torch.float32]


# ---- FusedRMSNormGated ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4096, 128), (2, 333, 64), (7, 3, 512), (1, 8)])
@pytest.mark.parametrize("activation", ["swish", "sigmoid"])
def test_fused_rmsnorm_gated_forward_backward(counted, dtype, shape, activation):
    torch.manual_seed(11)
    d = shape[-1]
    m = M.FusedRMSNormGated(d, eps=1e-5, activation=activation, device=DEV, dtype=dtype)
    with torch.no_grad():
        m.weight.uniform_(-1.5, 1.5)
    x = torch.randn(shape, device=DEV).to(dtype).requires_grad_()
    g = (1.5 * torch.randn(shape, device=DEV)).to(dtype).requires_grad_()
    y = m(x, g)
    assert y.dtype == dtype and y.shape == x.shape and counted[0] == 1
    x64, g64 = x.detach().double().requires_grad_(), g.detach().double().requires_grad_()
    w64 = m.weight.detach().double().requires_grad_()
    y64 = fla_reference(x64, g64, w64, 1e-5, activation)
    assert_close_rounded(y, y64.detach(), dtype, "y")
    dy = torch.randn(shape, device=DEV).to(dtype)
    y.backward(dy)
    y64.backward(dy.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3 if dtype == torch.float16 else 1e-4
    assert_close_norm(x.grad, x64.grad, tol, "dx")
    assert_close_norm(g.grad, g64.grad, tol, "dg")
    assert_close_norm(m.weight.grad, w64.grad, tol, "dw")
    assert m.weight.grad.dtype == dtype


@pytest.mark.parametrize("res_dtype", [torch.bfloat16, torch.float32, "fp32_flag"])
def test_fused_rmsnorm_gated_residual_prenorm(res_dtype):
    torch.manual_seed(12)
    m = M.FusedRMSNormGated(256, device=DEV, dtype=torch.bfloat16)
    x = torch.randn(64, 256, device=DEV).to(torch.bfloat16)
    g = torch.randn(64, 256, device=DEV).to(torch.bfloat16)
    kw = {"prenorm": True}
    if res_dtype == "fp32_flag":
        kw["residual_in_fp32"] = True
    else:
        kw["residual"] = torch.randn(64, 256, device=DEV).to(res_dtype)
    y, res = m(x, g, **kw)
    y_want, res_want = fla_reference(x, g, m.weight, m.eps, m.activation, **kw)
    assert res.dtype == res_want.dtype and torch.equal(res, res_want)
    s = (x.float() + (kw["residual"].float() if "residual" in kw else 0)).double()
    want64 = fla_reference(s, g, m.weight, m.eps, m.activation)  # float64 of the FP32 sum
    assert y.dtype == torch.bfloat16
    assert_close_rounded(y, want64, torch.bfloat16, "y")


def test_fused_rmsnorm_gated_mixed_dtypes_and_no_affine():
    torch.manual_seed(13)
    m = M.FusedRMSNormGated(128, elementwise_affine=False, device=DEV)
    x = torch.randn(32, 128, device=DEV).to(torch.bfloat16)
    g = torch.randn(32, 128, device=DEV)  # an FP32 gate with a BF16 x
    y = m(x, g)
    assert y.dtype == torch.bfloat16
    assert_close_rounded(y, fla_reference(x.double(), g.double(), None, m.eps, m.activation),
                         torch.bfloat16, "y")


def test_fused_rmsnorm_gated_against_installed_fla():
    fla = pytest.importorskip("fla.modules")
    torch.manual_seed(14)
    ours = M.FusedRMSNormGated(128, device=DEV, dtype=torch.bfloat16)
    theirs = fla.FusedRMSNormGated(128, device=DEV, dtype=torch.bfloat16)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(512, 128, device=DEV).to(torch.bfloat16)
    g = torch.randn(512, 128, device=DEV).to(torch.bfloat16)
    a, b = ours(x, g), theirs(x, g)
    assert (a.float() - b.float()).abs().max().item() <= 2 ** -6 * b.float().abs().max().item()


# ---- RMSNormGated --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d, group_size", [(1024, None), (1024, 256), (512, 64), (4096, 512),
                                           (96, 8)])
@pytest.mark.parametrize("norm_before_gate", [True, False])
@pytest.mark.parametrize("with_z", [True, False])
def test_rmsnorm_gated_forward_backward(counted, dtype, d, group_size, norm_before_gate, with_z):
    torch.manual_seed(21)
    m = M.RMSNormGated(d, eps=1e-5, group_size=group_size, norm_before_gate=norm_before_gate,
                       device=DEV, dtype=dtype)
    with torch.no_grad():
        m.weight.uniform_(-1.5, 1.5)
    x = torch.randn(3, 77, d, device=DEV).to(dtype).requires_grad_()
    z = torch.randn(3, 77, d, device=DEV).to(dtype).requires_grad_() if with_z else None
    y = m(x, z)
    assert y.dtype == dtype and counted[0] == 1
    x64 = x.detach().double().requires_grad_()
    z64 = z.detach().double().requires_grad_() if with_z else None
    w64 = m.weight.detach().double().requires_grad_()
    y64 = mamba_reference(x64, w64, z64, 1e-5, group_size, norm_before_gate)
    assert_close_rounded(y, y64.detach(), dtype, "y")
    dy = torch.randn_like(y)
    y.backward(dy)
    y64.backward(dy.double())
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3 if dtype == torch.float16 else 1e-4
    assert_close_norm(x.grad, x64.grad, tol, "dx")
    if with_z:
        assert_close_norm(z.grad, z64.grad, tol, "dz")
    assert_close_norm(m.weight.grad, w64.grad, tol, "dw")


def test_rmsnorm_gated_against_installed_mamba_ssm():
    mod = pytest.importorskip("mamba_ssm.ops.triton.layernorm_gated")
    torch.manual_seed(22)
    for group_size in (None, 256):
        for nbg in (True, False):
            ours = M.RMSNormGated(1024, group_size=group_size, norm_before_gate=nbg, device=DEV,
                                  dtype=torch.bfloat16)
            theirs = mod.RMSNorm(1024, group_size=group_size, norm_before_gate=nbg, device=DEV,
                                 dtype=torch.bfloat16)
            with torch.no_grad():
                ours.weight.uniform_(0.5, 1.5)
            theirs.load_state_dict(ours.state_dict())
            x = torch.randn(2, 100, 1024, device=DEV).to(torch.bfloat16)
            z = torch.randn(2, 100, 1024, device=DEV).to(torch.bfloat16)
            a, b = ours(x, z), theirs(x, z)
            assert (a.float() - b.float()).abs().max().item() <= (
                2 ** -6 * b.float().abs().max().item()), (group_size, nbg)


def test_module_state_dict_round_trip():
    for make in (lambda: M.FusedRMSNormGated(64, device=DEV),
                 lambda: M.RMSNormGated(64, group_size=32, device=DEV)):
        a, b = make(), make()
        with torch.no_grad():
            a.weight.uniform_(0.5, 1.5)
        buf = io.BytesIO()
        torch.save(a.state_dict(), buf)
        buf.seek(0)
        b.load_state_dict(torch.load(buf))
        x = torch.randn(8, 64, device=DEV)
        z = torch.randn(8, 64, device=DEV)
        assert torch.equal(a(x, z), b(x, z))


# ---- transformers families: training steps, patched vs unpatched --------------------------
def train_steps(model, steps, dtype, seed=7):
    """(losses, global grad norms, per-norm-weight grad norms) of @p steps AdamW steps."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, norms = [], []
    for _ in range(steps):
        ids = torch.randint(0, 64, (4, 32), generator=gen).to(DEV)
        out = model(ids, labels=ids)
        out.loss.backward()
        grads = [p.grad.float().norm() for p in model.parameters() if p.grad is not None]
        norms.append(torch.stack(grads).norm().item())
        losses.append(out.loss.item())
        opt.step()
        opt.zero_grad(set_to_none=True)
    return losses, norms


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("family", FAMILIES)
def test_transformers_family_training(counted, family, dtype):
    base, norm_class, _, count = build(family, dtype=dtype, seed=3)
    patched, _, _, _ = build(family, dtype=dtype, seed=3)
    patched.load_state_dict(base.state_dict())
    base, patched = base.to(DEV).train(), patched.to(DEV).train()
    report = P.patch_transformers(patched)
    assert len(report) == count and report.skipped == []
    assert set(base.state_dict()) == set(patched.state_dict())
    l0, n0 = train_steps(base, 3, dtype)
    assert counted[0] == 0
    l1, n1 = train_steps(patched, 3, dtype)
    assert counted[0] == 3 * count, "the patched norms did not run through Cake"
    tol = 2e-3 if dtype == torch.float32 else 3e-2
    for step, (a, b) in enumerate(zip(l0, l1)):
        assert abs(a - b) <= tol * max(1.0, abs(a)), (step, l0, l1)
    for step, (a, b) in enumerate(zip(n0, n1)):
        assert abs(a - b) <= 5 * tol * max(1.0, abs(a)), (step, n0, n1)


@pytest.mark.parametrize("family", FAMILIES)
def test_transformers_patched_state_dict_round_trip(family):
    model, _, _, _ = build(family, seed=4)
    model = model.to(DEV).eval()
    P.patch_transformers(model)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    fresh, _, _, _ = build(family, seed=5)
    fresh = fresh.to(DEV).eval()
    fresh.load_state_dict(torch.load(buf))  # the unpatched class takes the patched dict
    ids = torch.randint(0, 64, (2, 16), device=DEV)
    with torch.no_grad():
        a = model(ids).logits
        b = fresh(ids).logits
        P.patch_transformers(fresh)
        c = fresh(ids).logits
    assert (a - c).abs().max().item() <= 1e-6 * max(1.0, a.abs().max().item())  # same weights
    assert (a - b).abs().max().item() <= 1e-3 * max(1.0, b.abs().max().item())


def test_modules_under_torch_compile():
    torch.manual_seed(31)
    for m, args in (
        (M.FusedRMSNormGated(256, device=DEV, dtype=torch.bfloat16),
         (torch.randn(64, 256, device=DEV).to(torch.bfloat16),
          torch.randn(64, 256, device=DEV).to(torch.bfloat16))),
        (M.RMSNormGated(256, group_size=64, norm_before_gate=False, device=DEV,
                        dtype=torch.bfloat16),
         (torch.randn(4, 16, 256, device=DEV).to(torch.bfloat16),
          torch.randn(4, 16, 256, device=DEV).to(torch.bfloat16))),
    ):
        eager = m(*args)
        compiled = torch.compile(m, fullgraph=False)(*args)
        assert torch.equal(eager, compiled), type(m).__name__
