"""Host tests of cake.torch's drop-in modules and patch_transformers() (CPU torch; skip without
torch or transformers). Cake's op is replaced by an independent float64 reference with
cake.torch.normgate's signature, so the patched models run on the CPU and are compared with
the unpatched ones."""

import copy
import inspect
import math

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import cake.torch as ct  # noqa: E402
from cake.torch import modules as M  # noqa: E402
from cake.torch import patch as P  # noqa: E402


# ---- a float64 stand-in for cake.torch.normgate --------------------------------------------
def normgate_f64(x, z, w, eps=1e-6, *, gate="silu", gate_before_norm=False, group_size=None,
                 deterministic=True, dw_dtype=None, main_grad=None, program=None):
    """cake.torch.normgate's contract computed in float64 with autograd (y in x's dtype)."""
    assert gate in ("silu", "sigmoid"), gate
    assert isinstance(gate_before_norm, bool)
    d = x.shape[-1]
    g = d if group_size is None else group_size
    assert d % g == 0, (d, g)
    assert w.shape == (d,)
    h = x.double()
    if z is not None:
        assert z.shape == x.shape
        zd = z.double()
        act = torch.sigmoid(zd) * (zd if gate == "silu" else 1.0)
        if gate_before_norm:
            h = h * act
    hg = h.reshape(-1, d // g, g)
    ms = (hg * hg).mean(-1, keepdim=True)
    y = (hg / torch.sqrt(ms + eps)).reshape(x.shape) * w.double()
    if z is not None and not gate_before_norm:
        y = y * act
    return y.to(x.dtype)


@pytest.fixture
def calls(monkeypatch):
    """Replace cake.torch.normgate with the reference; the list records each call's options."""
    seen = []

    def op(x, z, w, eps=1e-6, **kw):
        seen.append({"eps": eps, "x_dtype": x.dtype, "z": z is not None, **kw})
        return normgate_f64(x, z, w, eps, **kw)

    monkeypatch.setattr(ct, "normgate", op)
    return seen


def close(a, b, tol=1e-5):
    return (a.double() - b.double()).abs().max().item() <= tol * max(1.0, b.abs().max().item())


# ---- FusedRMSNormGated: FLA's interface ----------------------------------------------------
def test_fused_rmsnorm_gated_signature_and_defaults():
    sig = inspect.signature(M.FusedRMSNormGated.__init__)
    assert [(p.name, p.default) for p in list(sig.parameters.values())[1:]] == [
        ("hidden_size", inspect.Parameter.empty), ("elementwise_affine", True), ("eps", 1e-5),
        ("activation", "swish"), ("device", None), ("dtype", None)]
    fwd = inspect.signature(M.FusedRMSNormGated.forward)
    assert [(p.name, p.default) for p in list(fwd.parameters.values())[1:]] == [
        ("x", inspect.Parameter.empty), ("g", inspect.Parameter.empty), ("residual", None),
        ("prenorm", False), ("residual_in_fp32", False)]
    m = M.FusedRMSNormGated(64)
    assert (m.hidden_size, m.elementwise_affine, m.eps, m.activation) == (64, True, 1e-5, "swish")
    assert m.bias is None and torch.equal(m.weight, torch.ones(64))
    assert list(m.state_dict()) == ["weight"]
    assert repr(m) == "FusedRMSNormGated(64, eps=1e-05, activation=swish)"
    m = M.FusedRMSNormGated(32, elementwise_affine=False, activation="sigmoid",
                            dtype=torch.bfloat16)
    assert m.weight is None and list(m.state_dict()) == []
    assert repr(m) == "FusedRMSNormGated(32, elementwise_affine=False, eps=1e-05, activation=sigmoid)"
    assert M.FusedRMSNormGated(8, dtype=torch.bfloat16).weight.dtype == torch.bfloat16


def test_fused_rmsnorm_gated_matches_the_installed_fla():
    fla = pytest.importorskip("fla.modules")
    ours, theirs = M.FusedRMSNormGated, fla.FusedRMSNormGated
    for fn in ("__init__", "forward"):
        a = inspect.signature(getattr(ours, fn)).parameters
        b = inspect.signature(getattr(theirs, fn)).parameters
        assert [(p.name, p.default) for p in a.values()] == [
            (p.name, p.default) for p in b.values()], fn
    assert list(ours(16).state_dict()) == list(theirs(16).state_dict())


def test_fused_rmsnorm_gated_unsupported_arguments():
    with pytest.raises(ValueError, match="Unsupported activation: relu"):
        M.FusedRMSNormGated(64, activation="relu")
    m = M.FusedRMSNormGated(64)
    m.bias = nn.Parameter(torch.zeros(64))
    with pytest.raises(ValueError, match="bias"):
        m(torch.randn(2, 64), torch.randn(2, 64))
    m = M.FusedRMSNormGated(64)
    with pytest.raises(ValueError, match="gate"):
        m(torch.randn(2, 64), None)
    with pytest.raises(ValueError, match="same rows"):
        m(torch.randn(2, 64), torch.randn(2, 32))
    with pytest.raises(ValueError, match="residual"):
        m(torch.randn(2, 64), torch.randn(2, 64), residual=torch.randn(4, 64))


def fla_reference(x, g, w, eps, activation, residual=None, prenorm=False, residual_in_fp32=False):
    """FLA's rms_norm_gated in float64, as its kernel computes: the FP32 sum x + residual is
    normalised; the residual output is stored in residual's dtype (FP32 with
    residual_in_fp32 and no residual; x itself otherwise)."""
    s = x.float() + (residual.float() if residual is not None else 0)
    sd, gd = s.double(), g.double()
    y = sd * torch.rsqrt(sd.pow(2).mean(-1, keepdim=True) + eps)
    if w is not None:
        y = y * w.double()
    y = y * gd * torch.sigmoid(gd) if activation in ("swish", "silu") else y * torch.sigmoid(gd)
    y = y.to(x.dtype)
    if residual is not None:
        res = s.to(residual.dtype)
    elif residual_in_fp32:
        res = s
    else:
        res = x
    return (y, res) if prenorm else y


@pytest.mark.parametrize("activation", ["swish", "silu", "sigmoid"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("res", [None, "bf16", "f32", "fp32_flag"])
@pytest.mark.parametrize("prenorm", [False, True])
def test_fused_rmsnorm_gated_forward(calls, activation, affine, res, prenorm):
    torch.manual_seed(1)
    m = M.FusedRMSNormGated(64, elementwise_affine=affine, eps=1e-5, activation=activation)
    if affine:
        with torch.no_grad():
            m.weight.normal_()
    x = torch.randn(3, 5, 64).to(torch.bfloat16)
    g = torch.randn(3, 5, 64).to(torch.bfloat16)
    kw = {"prenorm": prenorm}
    if res == "bf16":
        kw["residual"] = torch.randn(3, 5, 64).to(torch.bfloat16)
    elif res == "f32":
        kw["residual"] = torch.randn(3, 5, 64)
    elif res == "fp32_flag":
        kw["residual_in_fp32"] = True
    got = m(x, g, **kw)
    want = fla_reference(x, g, m.weight, 1e-5, activation, **kw)
    if prenorm:
        assert isinstance(got, tuple) and len(got) == 2
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape
        assert close(got[0], want[0], 1e-2)  # y: bf16 of the same FP32 value, both ways
        assert torch.equal(got[1], want[1])  # the residual output: the same torch ops
    else:
        assert got.dtype == torch.bfloat16 and close(got, want, 1e-2)
    assert calls and all(c["gate"] == ("sigmoid" if activation == "sigmoid" else "silu")
                         for c in calls)
    assert all(c["eps"] == 1e-5 and "group_size" not in c and "gate_before_norm" not in c
               for c in calls)
    if res in ("bf16", "f32") or (res == "fp32_flag" and prenorm):
        assert calls[-1]["x_dtype"] == torch.float32  # the FP32 sum is what Cake normalises


def test_fused_rmsnorm_gated_backward_through_the_residual(calls):
    torch.manual_seed(2)
    m = M.FusedRMSNormGated(32)
    with torch.no_grad():
        m.weight.normal_()
    x = torch.randn(4, 32, requires_grad=True)
    r = torch.randn(4, 32, requires_grad=True)
    g = torch.randn(4, 32, requires_grad=True)
    y, res = m(x, g, residual=r, prenorm=True)
    (y.sum() + (res * res).sum()).backward()
    # float64 autograd of the same formula on the same values
    x2, r2, g2 = (t.detach().double().requires_grad_() for t in (x, r, g))
    w2 = m.weight.detach().double().requires_grad_()
    s = x2 + r2
    y2 = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + m.eps) * w2 * g2 * torch.sigmoid(g2)
    (y2.sum() + (s * s).sum()).backward()
    for a, b in ((x.grad, x2.grad), (r.grad, r2.grad), (g.grad, g2.grad), (m.weight.grad, w2.grad)):
        assert close(a, b, 1e-5)


# ---- RMSNormGated: mamba_ssm's interface ---------------------------------------------------
def test_rmsnorm_gated_signature_and_defaults():
    sig = inspect.signature(M.RMSNormGated.__init__)
    assert [(p.name, p.default) for p in list(sig.parameters.values())[1:]] == [
        ("hidden_size", inspect.Parameter.empty), ("eps", 1e-5), ("group_size", None),
        ("norm_before_gate", True), ("device", None), ("dtype", None)]
    fwd = inspect.signature(M.RMSNormGated.forward)
    assert [(p.name, p.default) for p in list(fwd.parameters.values())[1:]] == [
        ("x", inspect.Parameter.empty), ("z", None)]
    m = M.RMSNormGated(128)
    assert (m.eps, m.group_size, m.norm_before_gate, m.bias) == (1e-5, None, True, None)
    assert torch.equal(m.weight, torch.ones(128)) and list(m.state_dict()) == ["weight"]
    m2 = M.RMSNormGated(128, group_size=64, norm_before_gate=False)
    m2.load_state_dict({"weight": torch.arange(128.0)})
    assert torch.equal(m2.weight, torch.arange(128.0))


def test_rmsnorm_gated_matches_the_installed_mamba_ssm():
    mod = pytest.importorskip("mamba_ssm.ops.triton.layernorm_gated")
    for fn in ("__init__", "forward"):
        a = inspect.signature(getattr(M.RMSNormGated, fn)).parameters
        b = inspect.signature(getattr(mod.RMSNorm, fn)).parameters
        assert [(p.name, p.default) for p in a.values()] == [
            (p.name, p.default) for p in b.values()], fn


def mamba_reference(x, w, z, eps, group_size, norm_before_gate):
    """mamba_ssm's rms_norm_ref, in float64."""
    x, w = x.double(), w.double()
    z = z.double() if z is not None else None
    if z is not None and not norm_before_gate:
        x = x * z * torch.sigmoid(z)
    d = x.shape[-1]
    g = d if group_size is None else group_size
    xg = x.reshape(*x.shape[:-1], d // g, g)
    out = (xg / torch.sqrt(xg.square().mean(-1, keepdim=True) + eps)).reshape(x.shape) * w
    if z is not None and norm_before_gate:
        out = out * z * torch.sigmoid(z)
    return out


@pytest.mark.parametrize("group_size", [None, 32, 64])
@pytest.mark.parametrize("norm_before_gate", [True, False])
@pytest.mark.parametrize("with_z", [True, False])
def test_rmsnorm_gated_forward(calls, group_size, norm_before_gate, with_z):
    torch.manual_seed(3)
    m = M.RMSNormGated(128, eps=1e-5, group_size=group_size,
                       norm_before_gate=norm_before_gate).double()
    with torch.no_grad():
        m.weight.normal_()
    x = torch.randn(2, 7, 128, dtype=torch.float64)
    z = torch.randn(2, 7, 128, dtype=torch.float64) if with_z else None
    got = m(x, z)
    assert close(got, mamba_reference(x, m.weight, z, 1e-5, group_size, norm_before_gate), 1e-12)
    # mamba's norm_before_gate=True is Cake's gate after the norm.
    assert calls[-1]["gate_before_norm"] is (not norm_before_gate)
    assert calls[-1]["group_size"] == group_size and calls[-1]["gate"] == "silu"
    if not with_z:
        # Without z the placement changes nothing.
        other = mamba_reference(x, m.weight, None, 1e-5, group_size, not norm_before_gate)
        assert close(got, other, 1e-12)


def test_rmsnorm_gated_unsupported_arguments():
    m = M.RMSNormGated(96, group_size=40)
    with pytest.raises(ValueError, match="group_size 40 must divide the row width 96"):
        m(torch.randn(2, 96))
    m = M.RMSNormGated(64)
    with pytest.raises(ValueError, match="z"):
        m(torch.randn(2, 64), torch.randn(2, 32))
    m.bias = nn.Parameter(torch.zeros(64))
    with pytest.raises(ValueError, match="bias"):
        m(torch.randn(2, 64))


def test_knobs_pass_through(calls):
    m = M.RMSNormGated(64)
    m.deterministic, m.dw_dtype, m.program = False, torch.float32, "sm90.x"
    m(torch.randn(2, 64), torch.randn(2, 64))
    assert (calls[-1]["deterministic"], calls[-1]["dw_dtype"], calls[-1]["program"]) == (
        False, torch.float32, "sm90.x")


# ---- patch_transformers --------------------------------------------------------------------
def small_families():
    """Small random configs of each transformers family with a gated norm:
    name -> (config, model class, gated-norm class name, expected variant fields)."""
    T = pytest.importorskip("transformers")
    out = {
        "mamba2": (T.Mamba2Config(vocab_size=64, hidden_size=32, state_size=8,
                                  num_hidden_layers=2, num_heads=8, head_dim=8, n_groups=2,
                                  expand=2, chunk_size=8),
                   T.Mamba2ForCausalLM, "MambaRMSNormGated", ("silu", True, None), 2),
        "bamba": (T.BambaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                attn_layer_indices=[1], mamba_n_heads=8, mamba_d_head=8,
                                mamba_n_groups=2, mamba_d_state=8, mamba_chunk_size=8,
                                max_position_embeddings=64),
                  T.BambaForCausalLM, "BambaRMSNormGated", ("silu", True, None), 1),
        "granitemoehybrid": (
            T.GraniteMoeHybridConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     num_key_value_heads=2, layer_types=["mamba", "attention"],
                                     num_local_experts=4, num_experts_per_tok=2,
                                     shared_intermediate_size=32, mamba_n_heads=8,
                                     mamba_d_head=8, mamba_n_groups=2, mamba_d_state=8,
                                     mamba_chunk_size=8, max_position_embeddings=64),
            T.GraniteMoeHybridForCausalLM, "GraniteMoeHybridRMSNormGated", ("silu", True, None),
            1),
        "nemotron_h": (T.NemotronHConfig(vocab_size=64, hidden_size=32,
                                         layers_block_type=["mamba", "attention", "mlp"],
                                         num_attention_heads=4, num_key_value_heads=2,
                                         head_dim=8, intermediate_size=64, ssm_state_size=8,
                                         mamba_num_heads=8, mamba_head_dim=8, n_groups=2,
                                         chunk_size=8, use_mamba_kernels=False,
                                         max_position_embeddings=64),
                       T.NemotronHForCausalLM, "Zamba2RMSNormGated", ("silu", True, 32), 1),
        "zamba2": (T.Zamba2Config(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                  layers_block_type=["mamba", "hybrid"], mamba_d_state=8,
                                  mamba_ngroups=2, n_mamba_heads=8, num_attention_heads=4,
                                  chunk_size=8, use_mamba_kernels=False,
                                  max_position_embeddings=64, adapter_rank=8),
                   T.Zamba2ForCausalLM, "Zamba2RMSNormGated", ("silu", True, 32), 2),
        "qwen3_next": (T.Qwen3NextConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, head_dim=8,
                                         linear_key_head_dim=8, linear_value_head_dim=16,
                                         linear_num_key_heads=2, linear_num_value_heads=4,
                                         moe_intermediate_size=16,
                                         shared_expert_intermediate_size=16, num_experts=4,
                                         num_experts_per_tok=2,
                                         layer_types=["linear_attention", "full_attention"],
                                         max_position_embeddings=64),
                       T.Qwen3NextForCausalLM, "Qwen3NextRMSNormGated", ("silu", False, None),
                       1),
    }
    for nbg in (True, False):
        out[f"falcon_h1_norm_before_gate_{nbg}"] = (
            T.FalconH1Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             mamba_d_ssm=64, mamba_n_heads=8, mamba_d_head=8, mamba_n_groups=2,
                             mamba_d_state=8, mamba_chunk_size=8, mamba_norm_before_gate=nbg,
                             mamba_rms_norm=True, max_position_embeddings=64),
            T.FalconH1ForCausalLM, "FalconH1RMSNormGated", ("silu", not nbg, 32), 2)
    return out


FAMILIES = ["mamba2", "bamba", "granitemoehybrid", "nemotron_h", "zamba2", "qwen3_next",
            "falcon_h1_norm_before_gate_True", "falcon_h1_norm_before_gate_False"]


def build(family, dtype=torch.float32, seed=0):
    cfg, cls, norm_class, variant, count = small_families()[family]
    torch.manual_seed(seed)
    model = cls(cfg).to(dtype)
    # Non-trivial norm weights, so a weight mix-up cannot hide behind ones.
    with torch.no_grad():
        for m in model.modules():
            if type(m).__name__ == norm_class:
                m.weight.uniform_(0.5, 1.5)
    return model, norm_class, variant, count


@pytest.mark.parametrize("family", FAMILIES)
def test_patch_transformers_family(calls, family):
    model, norm_class, (gate, before, group), count = build(family)
    gated = {n: m for n, m in model.named_modules() if type(m).__name__ == norm_class}
    assert len(gated) == count  # the config makes this many (a check of the test itself)
    weights = {n: m.weight for n, m in gated.items()}
    ids = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(5))
    model.train()  # the eval/train switch changes nothing here; gradients are compared below
    out0 = model(ids, labels=ids)
    out0.loss.backward()
    grads0 = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()

    replaced = P.patch_transformers(model)
    assert sorted(n for n, _, _ in replaced) == sorted(gated)
    assert replaced.skipped == []
    for name, old_class, variant in replaced:
        assert old_class == norm_class
        assert (variant.gate, variant.gate_before_norm, variant.group_size) == (gate, before,
                                                                                group)
        new = model.get_submodule(name)
        assert isinstance(new, P.CakeGatedRMSNorm)
        assert new.weight is weights[name]  # the same Parameter, not a copy
        assert math.isclose(variant.eps, gated[name].variance_epsilon)
        assert new.variance_epsilon == gated[name].variance_epsilon  # attributes carried over
    # Nothing but the gated norms changed.
    assert sum(isinstance(m, P.CakeGatedRMSNorm) for m in model.modules()) == count
    assert not any(type(m).__name__ == norm_class for m in model.modules())
    n_calls = len(calls)
    out1 = model(ids, labels=ids)
    assert len(calls) - n_calls == count  # every gated norm ran through the op
    assert close(out1.logits, out0.logits, 1e-4)
    assert abs(out1.loss.item() - out0.loss.item()) < 1e-4
    out1.loss.backward()
    for n, p in model.named_parameters():
        if n in grads0:
            assert p.grad is not None and close(p.grad, grads0[n], 1e-3), n
    # A second call finds nothing left to replace.
    assert list(P.patch_transformers(model)) == []


@pytest.mark.parametrize("family", FAMILIES)
def test_patched_norm_output_dtype_and_arguments(calls, family):
    model, norm_class, _, _ = build(family)
    originals = {n: m for n, m in model.named_modules() if type(m).__name__ == norm_class}
    kept = {n: copy.deepcopy(m) for n, m in originals.items()}
    P.patch_transformers(model)
    for name, old in kept.items():
        new = model.get_submodule(name)
        d = old.weight.shape[0]
        x = torch.randn(2, 3, d).to(torch.bfloat16)
        z = torch.randn(2, 3, d).to(torch.bfloat16)
        for wdtype in (torch.float32, torch.bfloat16):
            old.to(wdtype), new.to(wdtype)
            a, b = old(x, z), new(x, z)
            assert a.dtype == b.dtype and a.shape == b.shape, (name, wdtype)
            assert close(b.float(), a.float(), 2e-2), (name, wdtype)
        # The original's argument names bind as keywords too.
        names = list(inspect.signature(old.forward).parameters)
        assert close(new(**{names[0]: x, names[1]: z}).float(), old(x, z).float(), 2e-2)
        # gate=None: as the original (a plain grouped rmsnorm, or an error where it has one).
        try:
            want = old(x, None)
        except Exception:  # noqa: BLE001
            with pytest.raises(TypeError, match="required"):
                new(x, None)
        else:
            assert close(new(x, None).float(), want.float(), 2e-2)


def test_patch_transformers_on_the_meta_device(calls):
    T = pytest.importorskip("transformers")
    cfg = small_families()["zamba2"][0]
    with torch.device("meta"):
        model = T.Zamba2ForCausalLM(cfg)
    replaced = P.patch_transformers(model)
    assert len(replaced) == 2 and all(v.group_size == 32 for _, _, v in replaced)
    assert all(model.get_submodule(n).weight.is_meta for n, _, _ in replaced)


# ---- refusals: modules that look like gated norms but compute something else ---------------
class OffsetGatedNorm(nn.Module):
    """A gated norm with a 1 + weight offset (Gemma style): not what Cake computes."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(d))
        self.variance_epsilon = eps

    def forward(self, hidden_states, gate=None):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return ((1 + self.weight) * h * torch.nn.functional.silu(gate.float())).to(
            hidden_states.dtype)


class TanhGatedNorm(OffsetGatedNorm):
    def forward(self, hidden_states, gate=None):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return (self.weight * h * torch.tanh(gate.float())).to(hidden_states.dtype)


class WrongEpsGatedNorm(OffsetGatedNorm):
    """Says eps 1e-6 but adds 1e-2: the probe at the eps scale catches it."""

    def forward(self, hidden_states, gate=None):
        h = hidden_states.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-2)
        return (self.weight * h * torch.nn.functional.silu(gate.float())).to(hidden_states.dtype)


class GoodGatedNorm(OffsetGatedNorm):
    """Sigmoid gate after the norm, weight in FP32 (like Kimi's), eps attribute named eps."""

    def __init__(self, d, eps=1e-5):
        super().__init__(d)
        del self.variance_epsilon
        self.eps = eps

    def forward(self, x, g):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight.float() * h * torch.sigmoid(g.float())).to(x.dtype)


class PlainNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.variance_epsilon = 1e-6

    def forward(self, hidden_states):
        return hidden_states


def test_patch_refuses_what_cake_does_not_compute(calls):
    model = nn.ModuleDict({"a": OffsetGatedNorm(64), "b": TanhGatedNorm(64),
                           "c": WrongEpsGatedNorm(64), "d": GoodGatedNorm(64),
                           "e": PlainNorm(64), "f": GoodGatedNorm(60),
                           "g": nn.Linear(4, 4)})
    with pytest.raises(P.GatedNormPatchError) as e:
        P.patch_transformers(model)
    assert sorted(n for n, _, _ in e.value.skipped) == ["a", "b", "c", "f"]
    assert "matches no variant" in str(e.value) and "width 60" in str(e.value)
    assert "Nothing was replaced" in str(e.value)
    assert type(model["d"]) is GoodGatedNorm  # strict: nothing changed
    with torch.no_grad():
        model["d"].weight.uniform_(0.5, 1.5)
    original_d = copy.deepcopy(model["d"])
    report = P.patch_transformers(model, strict=False)
    assert [(n, c) for n, c, _ in report] == [("d", "GoodGatedNorm")]
    v = report[0][2]
    assert (v.gate, v.gate_before_norm, v.group_size, v.eps, v.out_dtype) == (
        "sigmoid", False, None, 1e-5, "input")
    assert not v.gate_optional  # its forward has no default for g
    assert sorted(n for n, _, _ in report.skipped) == ["a", "b", "c", "f"]
    assert type(model["e"]) is PlainNorm and type(model["a"]) is OffsetGatedNorm
    x, g = torch.randn(3, 64), torch.randn(3, 64)
    assert close(model["d"](x, g), original_d(x, g), 1e-5)
    with pytest.raises(TypeError, match="required"):
        model["d"](x, None)


def test_patch_replaces_a_shared_module_everywhere(calls):
    shared = GoodGatedNorm(32)
    model = nn.ModuleDict({"p": nn.ModuleDict({"norm": shared}), "q": nn.ModuleDict({"n": shared})})
    report = P.patch_transformers(model)
    assert len(report) == 1
    assert model["p"]["norm"] is model["q"]["n"]
    assert isinstance(model["q"]["n"], P.CakeGatedRMSNorm)


def test_patch_refuses_the_root_module():
    with pytest.raises(P.GatedNormPatchError, match="the model itself"):
        P.patch_transformers(GoodGatedNorm(32))


def test_detect_reports_plain_modules():
    v, why = P.detect_gated_norm(PlainNorm(16))
    assert v is None and "not a gated norm" in why


# The other gated norms transformers ships, as modules: what the detection finds in each.
OTHER_NORMS = [
    # (module path, class, constructor kwargs, gate, gate required)
    ("kimi_linear.modeling_kimi_linear", "KimiLinearRMSNormGated", {}, "sigmoid", True),
    ("glm5_next.modeling_glm5_next", "Glm5NextTextRMSNormGated", {}, "sigmoid", True),
    ("olmo_hybrid.modeling_olmo_hybrid", "OlmoHybridRMSNormGated", {}, "silu", True),
    ("qwen3_5.modeling_qwen3_5", "Qwen3_5RMSNormGated", {}, "silu", True),
    ("qwen3_5_moe.modeling_qwen3_5_moe", "Qwen3_5MoeRMSNormGated", {}, "silu", True),
    ("qwen4_exp.modeling_qwen4_exp", "Qwen4ExpTextRMSNormGated", {"activation": "sigmoid"},
     "sigmoid", True),
]


@pytest.mark.parametrize("path, name, kwargs, gate, required", OTHER_NORMS,
                         ids=[n for _, n, *_ in OTHER_NORMS])
def test_patch_other_transformers_gated_norms(calls, path, name, kwargs, gate, required):
    import importlib

    try:
        cls = getattr(importlib.import_module(f"transformers.models.{path}"), name)
    except (ImportError, AttributeError) as e:
        pytest.skip(f"transformers has no {name}: {e}")
    norm = cls(96, eps=1e-5, **kwargs)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    model = nn.ModuleDict({"block": nn.ModuleDict({"norm": norm})})
    report = P.patch_transformers(model)
    assert [(n, c) for n, c, _ in report] == [("block.norm", name)]
    v = report[0][2]
    assert (v.gate, v.gate_before_norm, v.group_size, v.eps) == (gate, False, None, 1e-5)
    assert v.out_dtype == "input" and v.gate_optional is (not required)
    x = torch.randn(5, 96).to(torch.bfloat16)
    z = torch.randn(5, 96).to(torch.bfloat16)
    got, want = model["block"]["norm"](x, z), norm(x, z)
    assert got.dtype == want.dtype and close(got.float(), want.float(), 2e-2)


def test_patch_leaves_gated_norms_with_a_learned_gate_alone():
    T = pytest.importorskip("transformers")
    axk2 = getattr(getattr(T.models, "axk2", None), "modeling_axk2", None)
    if axk2 is None:
        pytest.skip("transformers has no AXK2")
    # Its gate is an MLP of the normalised value: not a (x, z) gated norm; its inner RMSNorm
    # takes no gate. Nothing is a candidate, nothing is refused.
    cfg = T.AXK2Config() if hasattr(T, "AXK2Config") else None
    if cfg is None:
        pytest.skip("no AXK2Config")
    try:
        cfg.hidden_size = 64
        module = axk2.AXK2GatedRMSNorm(cfg)
    except Exception as e:  # noqa: BLE001 - the config needs more than a width
        pytest.skip(f"AXK2GatedRMSNorm not constructible small: {e}")
    report = P.patch_transformers(nn.ModuleDict({"n": module}))
    assert list(report) == [] and report.skipped == []
