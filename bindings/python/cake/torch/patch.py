"""patch_transformers(): swap the gated RMSNorms of a transformers model for Cake-backed ones.

    import cake.torch
    replaced = cake.torch.patch_transformers(model)
    for name, old_class, variant in replaced:
        print(name, old_class, variant)

A module is recognised by what its forward computes, not by its class name. A candidate is a
leaf module with a 1-D `weight` parameter, a float eps attribute (`variance_epsilon` or `eps`)
and a forward taking (hidden_states, gate). Its attributes narrow the variants it may compute
(`group_size`, or `n_groups` -> d / n_groups; `norm_before_gate`; `activation`); then a copy of
it, on the CPU in float64 with a random weight, is run on random inputs at two scales (unit, and
mean square near eps, so eps itself is checked) and compared with the float64 formula of each
remaining variant:

    gate after the norm:   y = rmsnorm_G(x) * w * a(z)
    gate before the norm:  y = rmsnorm_G(x * a(z)) * w          a = silu or sigmoid

Exactly one variant must match (relative error below 1e-4: the modules compute in FP32), and
Cake must serve it (row width and group a multiple of 8, width 8..8192). The output dtype rule is
probed too (bf16 input with an FP32 weight: transformers' Mamba-family norms return
weight * hidden.to(input dtype), promoted; the others the input's dtype), and whether the module
accepts gate=None (then: y = rmsnorm_G(x) * w, checked the same way).

Refusal policy: a candidate that computes no variant Cake serves (a 1+weight offset, a bias,
another activation, a width Cake does not take, ...) is refused. strict=True (the default)
raises GatedNormPatchError naming every such module and why, before anything is replaced;
strict=False skips them and lists them in the returned list's `.skipped`. A module whose
forward takes no gate (a plain RMSNorm) is not a gated norm and is left alone without mention.

The replacement (CakeGatedRMSNorm) shares the original's weight Parameter (optimizer state and
tied references stay valid), keeps its simple attributes (variance_epsilon, group_size, ... that
model code may read), binds the original forward's argument names, and computes with
cake.torch.normgate: FP32 inside, one rounding (the originals round the normalised value to
the input dtype before the weight multiply; outputs agree within that rounding). Hooks
registered on the original module are not carried over.
"""

import copy
import dataclasses
import inspect
import math
import sys
from typing import List, Optional, Tuple

import torch
from torch import nn

__all__ = ["patch_transformers", "CakeGatedRMSNorm", "GatedNormVariant", "GatedNormPatchError",
           "PatchReport", "detect_gated_norm", "gated_rmsnorm_f64"]

#: Widths Cake's normgate serves (cake.h: d a multiple of 8, 8..8192; group_size likewise).
_D_MIN, _D_MAX = 8, 8192
#: Relative error allowed between a module (FP32 inside) and the float64 formula.
_RTOL = 1e-4


class GatedNormPatchError(ValueError):
    """Gated norms patch_transformers(strict=True) cannot replace; `.skipped` lists them as
    (qualified name, class name, reason)."""

    def __init__(self, skipped):
        self.skipped = list(skipped)
        lines = "; ".join(f"{n} ({c}): {r}" for n, c, r in self.skipped)
        super().__init__(f"cake.torch.patch_transformers: {len(self.skipped)} gated norm(s) Cake "
                         f"cannot compute: {lines}. Nothing was replaced; pass strict=False to "
                         "replace the others and skip these")


@dataclasses.dataclass(frozen=True)
class GatedNormVariant:
    """What a gated norm computes. group_size None: the whole row. out_dtype "input": y in the
    input's dtype; "promote": in torch.promote_types(input dtype, weight dtype)."""

    gate: str  # "silu" | "sigmoid"
    gate_before_norm: bool
    group_size: Optional[int]
    eps: float
    out_dtype: str = "input"
    gate_optional: bool = True  # forward(x) without a gate works (then: no gate)

    def __str__(self) -> str:
        where = "before" if self.gate_before_norm else "after"
        group = "row" if self.group_size is None else f"group {self.group_size}"
        return f"{self.gate} gate {where} norm, {group}, eps {self.eps:g}"


class PatchReport(list):
    """The replaced modules as (qualified name, old class name, GatedNormVariant); `.skipped`:
    the refused ones as (qualified name, class name, reason) (only with strict=False)."""

    def __init__(self, replaced=(), skipped=()):
        super().__init__(replaced)
        self.skipped = list(skipped)


def gated_rmsnorm_f64(x, z, w, eps, gate="silu", gate_before_norm=False, group_size=None):
    """The float64 formula of a gated RMSNorm variant (z None: no gate); float64 out."""
    x, w = x.double(), w.double()
    a = None
    if z is not None:
        z = z.double()
        a = z * torch.sigmoid(z) if gate == "silu" else torch.sigmoid(z)
    h = x * a if (a is not None and gate_before_norm) else x
    d = h.shape[-1]
    g = d if group_size is None else group_size
    hg = h.reshape(*h.shape[:-1], d // g, g)
    n = (hg * torch.rsqrt(hg.pow(2).mean(-1, keepdim=True) + eps)).reshape(h.shape)
    y = n * w
    if a is not None and not gate_before_norm:
        y = y * a
    return y


_package = sys.modules[__package__]  # cake.torch (see modules.py)


def _normgate():
    return _package.normgate


def _eps_of(module) -> Tuple[Optional[str], Optional[float]]:
    for attr in ("variance_epsilon", "eps"):
        v = getattr(module, attr, None)
        if isinstance(v, (float, int)) and not isinstance(v, bool):
            return attr, float(v)
    return None, None


def _gate_params(module) -> Optional[List[inspect.Parameter]]:
    """The forward's parameters when it takes (hidden_states, gate) and nothing else
    required; None otherwise."""
    try:
        params = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(positional) < 2:
        return None
    rest = [p for p in params if p not in positional[:2]
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if any(p.default is p.empty for p in rest):
        return None
    return positional[:2]


def _is_candidate(module) -> bool:
    w = getattr(module, "weight", None)
    if not isinstance(w, nn.Parameter) or w.dim() != 1:
        return False
    if any(True for _ in module.children()):
        return False
    return _eps_of(module)[1] is not None and _gate_params(module) is not None


def _probe_copy(module, weight: torch.Tensor, dtype=torch.float64):
    """A CPU copy of @p module in @p dtype with weight @p weight (the original is untouched;
    a module on the meta device gets real storage)."""
    probe = copy.deepcopy(module)
    if any(p.is_meta for p in probe.parameters()) or any(b.is_meta for b in probe.buffers()):
        probe = probe.to_empty(device="cpu")
    probe = probe.to(device="cpu", dtype=dtype)
    probe._forward_hooks.clear()
    probe._forward_pre_hooks.clear()
    with torch.no_grad():
        probe.weight.copy_(weight.to(dtype))
    return probe


def _rel_err(got: torch.Tensor, want: torch.Tensor) -> float:
    if got.shape != want.shape:
        return math.inf
    scale = want.abs().max().item()
    diff = (got.double() - want).abs().max().item()
    return diff / scale if scale > 0 else diff


def detect_gated_norm(module) -> Tuple[Optional[GatedNormVariant], str]:
    """(variant, "") when @p module computes one variant Cake serves, else (None, reason)."""
    if not _is_candidate(module):
        return None, "not a gated norm (needs a 1-D weight, an eps attribute, forward(x, gate))"
    d = module.weight.shape[0]
    if getattr(module, "bias", None) is not None:
        return None, "has a bias; Cake's normgate has none"
    others = [n for n, _ in module.named_parameters() if n != "weight"]
    if others:
        return None, f"has parameters besides weight ({', '.join(others)})"
    _, eps = _eps_of(module)

    # ---- the variants its attributes allow --------------------------------------------------
    groups = [None]
    gs = getattr(module, "group_size", None)
    ng = getattr(module, "n_groups", None)
    if isinstance(gs, int) and not isinstance(gs, bool):
        groups = [None if gs == d else gs]
    elif isinstance(ng, int) and not isinstance(ng, bool):
        if ng <= 0 or d % ng:
            return None, f"n_groups {ng} does not divide the width {d}"
        groups = [None if ng == 1 else d // ng]
    nbg = getattr(module, "norm_before_gate", None)
    placements = [not nbg] if isinstance(nbg, bool) else [False, True]
    act = getattr(module, "activation", None)
    if isinstance(act, str):
        if act.lower() in ("silu", "swish"):
            gates = ["silu"]
        elif act.lower() == "sigmoid":
            gates = ["sigmoid"]
        else:
            return None, f"activation {act!r}; Cake gates with silu or sigmoid"
    else:
        gates = ["silu", "sigmoid"]

    # ---- probe a float64 CPU copy ------------------------------------------------------------
    gen = torch.Generator().manual_seed(0x6A7E)
    w = torch.randn(d, generator=gen, dtype=torch.float64)
    try:
        probe = _probe_copy(module, w)
    except Exception as e:  # noqa: BLE001 - any failure to copy is a reason to refuse
        return None, f"could not be copied for a CPU check ({type(e).__name__}: {e})"
    shape = (2, 3, d)
    x = torch.randn(shape, generator=gen, dtype=torch.float64)
    z = 1.5 * torch.randn(shape, generator=gen, dtype=torch.float64)
    scales = (1.0, math.sqrt(eps) if eps > 0 else 1e-3)
    outs = []
    try:
        with torch.no_grad():
            for s in scales:
                outs.append(probe(x * s, z))
    except Exception as e:  # noqa: BLE001
        return None, f"its forward failed on a CPU float64 input ({type(e).__name__}: {e})"
    matches = []
    for gate in gates:
        for before in placements:
            for group in groups:
                if all(_rel_err(o, gated_rmsnorm_f64(x * s, z, w, eps, gate, before, group))
                       < _RTOL for o, s in zip(outs, scales)):
                    matches.append((gate, before, group))
    if not matches:
        return None, ("its output matches no variant Cake computes (gate silu/sigmoid before or "
                      f"after rmsnorm, groups {groups}, eps {eps:g}): e.g. a 1+weight offset, "
                      "another activation or another eps")
    if len(matches) > 1:
        return None, f"its output matches several variants ({matches}); cannot tell which"
    gate, before, group = matches[0]
    if group is not None and (group % 8 or d % group or group < _D_MIN):
        return None, f"group_size {group}: Cake needs a multiple of 8 that divides the width {d}"
    if d % 8 or not _D_MIN <= d <= _D_MAX:
        return None, f"width {d}: Cake needs a multiple of 8 in {_D_MIN}..{_D_MAX}"

    # ---- gate=None, and the output dtype ---------------------------------------------------
    gate_optional = True
    try:
        with torch.no_grad():
            plain = probe(x, None)
        if _rel_err(plain, gated_rmsnorm_f64(x, None, w, eps, gate, before, group)) >= _RTOL:
            return None, "its output without a gate matches no plain rmsnorm * w"
    except Exception:  # noqa: BLE001 - gate=None fails in the original: it stays required
        gate_optional = False
    try:
        mixed = _probe_copy(module, w, torch.float32)
        with torch.no_grad():
            out = mixed(x.to(torch.bfloat16), z.to(torch.bfloat16))
    except Exception as e:  # noqa: BLE001
        return None, f"its forward failed on bfloat16 input ({type(e).__name__}: {e})"
    if out.dtype == torch.bfloat16:
        out_dtype = "input"
    elif out.dtype == torch.float32:
        out_dtype = "promote"
    else:
        return None, f"bfloat16 input with a float32 weight gives {out.dtype}"
    return GatedNormVariant(gate, before, group, eps, out_dtype, gate_optional), ""


_KEEP_TYPES = (bool, int, float, str, type(None))


class CakeGatedRMSNorm(nn.Module):
    """A detected gated RMSNorm computed by cake.torch.normgate (see the module docstring).

    Built by patch_transformers() from the original module; `weight` is the original's
    Parameter. Attributes `deterministic`, `dw_dtype` and `program` pass through to Cake."""

    def __init__(self, original: nn.Module, variant: GatedNormVariant):
        super().__init__()
        for k, v in vars(original).items():  # variance_epsilon, group_size, n_groups, ...
            if not k.startswith("_") and k != "training" and isinstance(v, _KEEP_TYPES):
                setattr(self, k, v)
        self.weight = original.weight
        self.variant = variant
        self.original_class = type(original).__name__
        params = _gate_params(original)
        self._x_name, self._g_name = params[0].name, params[1].name
        self.deterministic = True
        self.dw_dtype = None
        self.program = None

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, {self.variant}, from {self.original_class}"

    def forward(self, *args, **kwargs):
        names = [self._x_name, self._g_name]
        if len(args) > 2:
            raise TypeError(f"{self.original_class} (Cake): forward takes "
                            f"({self._x_name}, {self._g_name})")
        got = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in got:
                raise TypeError(f"{self.original_class} (Cake): unexpected argument {k!r}")
            got[k] = v
        if self._x_name not in got:
            raise TypeError(f"{self.original_class} (Cake): {self._x_name} is required")
        x, z = got[self._x_name], got.get(self._g_name)
        v = self.variant
        if z is None and not v.gate_optional:
            raise TypeError(f"{self.original_class} (Cake): {self._g_name} is required, as in "
                            "the original")
        if z is not None and z.shape != x.shape:
            raise ValueError(f"{self.original_class} (Cake): {self._g_name} {tuple(z.shape)} "
                             f"must have {self._x_name}'s shape {tuple(x.shape)}")
        y = _normgate()(x, z, self.weight, v.eps, gate=v.gate, gate_before_norm=v.gate_before_norm,
                        group_size=v.group_size, deterministic=self.deterministic,
                        dw_dtype=self.dw_dtype, program=self.program)
        if v.out_dtype == "promote":
            out = torch.promote_types(x.dtype, self.weight.dtype)
            if y.dtype != out:
                y = y.to(out)
        return y


def patch_transformers(model: nn.Module, *, strict: bool = True) -> PatchReport:
    """Replace every gated RMSNorm of @p model with a CakeGatedRMSNorm sharing its weight.

    Returns a PatchReport: a list of (qualified name, old class name, GatedNormVariant), in
    model.named_modules() order, and `.skipped`. A candidate Cake cannot compute raises
    GatedNormPatchError before anything changes (strict=True), or is skipped and listed
    (strict=False). Works on any device (the check runs on a CPU copy of each norm); an
    already patched module is left as it is."""
    found, skipped = [], []
    for name, module in model.named_modules():
        if isinstance(module, CakeGatedRMSNorm) or not _is_candidate(module):
            continue
        if module is model:
            skipped.append((name, type(module).__name__, "it is the model itself; patch its "
                            "parent, or build a CakeGatedRMSNorm from it"))
            continue
        variant, why = detect_gated_norm(module)
        if variant is None:
            skipped.append((name, type(module).__name__, why))
        else:
            found.append((name, module, variant))
    if skipped and strict:
        raise GatedNormPatchError(skipped)
    new = {id(m): CakeGatedRMSNorm(m, v) for _, m, v in found}
    # Every place a replaced module is held (a module shared by two parents is held twice).
    for parent in list(model.modules()):
        for child_name, child in list(parent._modules.items()):
            if child is not None and id(child) in new:
                parent._modules[child_name] = new[id(child)]
    return PatchReport([(n, type(m).__name__, v) for n, m, v in found], skipped)
