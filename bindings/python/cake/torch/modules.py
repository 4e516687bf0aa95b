"""Drop-in nn.Modules of the gated RMSNorms other libraries ship, computed by Cake.

    from cake.torch import FusedRMSNormGated, RMSNormGated
    norm = FusedRMSNormGated(128, eps=1e-5, activation="swish")      # as fla.modules
    norm = RMSNormGated(1024, group_size=256, norm_before_gate=False)  # as mamba_ssm's RMSNorm

Each has its peer's constructor (names, order, defaults), parameter names (so state dicts load
either way) and forward, and computes its peer's formula with Cake's normgate (FP32 inside, one
rounding to x's dtype). What Cake cannot compute exactly raises a ValueError naming the
argument; nothing is silently computed differently.

Besides the peer's arguments each module has three attributes read at every call, passed to
cake.torch.normgate: `deterministic` (True: the deterministic dw package), `dw_dtype` (None:
the weight's dtype) and `program` (None: routed).
"""

import sys
from typing import Optional

import torch
from torch import nn

__all__ = ["FusedRMSNormGated", "RMSNormGated"]

# cake.torch itself (being imported when this module is: it re-exports these classes). Its
# normgate is looked up at each call, an attribute read torch.compile traces through, so a
# replacement of cake.torch.normgate (a reference in tests) takes effect.
_package = sys.modules[__package__]


def _normgate():
    return _package.normgate


def _same_rows(x: torch.Tensor, z: torch.Tensor, what: str) -> torch.Tensor:
    """@p z viewed with x's shape when the peer accepts it (same last dimension, same element
    count: the peers flatten both to [rows, d]); ValueError otherwise."""
    if z.shape == x.shape:
        return z
    if z.dim() >= 1 and x.dim() >= 1 and z.shape[-1] == x.shape[-1] and z.numel() == x.numel():
        return z.reshape(x.shape)
    raise ValueError(f"{what}: x {tuple(x.shape)} and the gate {tuple(z.shape)} must hold the "
                     "same rows of width d")


class _CakeKnobs:
    """The Cake options every module here passes through (see the module docstring)."""

    deterministic: bool = True
    dw_dtype: Optional[torch.dtype] = None
    program: Optional[str] = None

    def _knobs(self) -> dict:
        return {"deterministic": self.deterministic, "dw_dtype": self.dw_dtype,
                "program": self.program}


class FusedRMSNormGated(_CakeKnobs, nn.Module):
    """fla.modules.FusedRMSNormGated (flash-linear-attention) on Cake.

    y = rmsnorm(x [+ residual]) * weight * act(g) over the last dimension (FLA flattens x and g
    to [rows, hidden_size]; there is no per-head grouping), act "swish" / "silu" (g*sigmoid(g))
    or "sigmoid"; FP32 inside, y in x's dtype.

    residual / prenorm / residual_in_fp32 do what FLA's kernel does, with torch ops around
    Cake: the sum s = x + residual is formed in FP32 and normalised in FP32 (Cake takes FP32
    x); the residual output is s in residual's dtype (FP32 with residual_in_fp32 and no
    residual; x itself without either), returned as (y, residual_out) when prenorm.
    elementwise_affine=False normalises without a weight (Cake multiplies by ones, exactly).
    FLA's FusedRMSNormGated has no bias (its `bias` is a None parameter); neither has this.
    """

    def __init__(
        self,
        hidden_size: int,
        elementwise_affine: bool = True,
        eps: float = 1e-5,
        activation: str = "swish",
        device: Optional[torch.device] = None,
        dtype: Optional[torch.dtype] = None,
    ) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.hidden_size = hidden_size
        self.elementwise_affine = elementwise_affine
        self.eps = eps
        self.activation = activation
        if self.activation not in ["swish", "silu", "sigmoid"]:
            raise ValueError(f"Unsupported activation: {self.activation}")
        if elementwise_affine:
            self.weight = nn.Parameter(torch.empty(hidden_size, **factory_kwargs))
        else:
            self.register_parameter("weight", None)
        self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            nn.init.ones_(self.weight)

    def __repr__(self) -> str:
        s = f"{self.__class__.__name__}({self.hidden_size}"
        if not self.elementwise_affine:
            s += f", elementwise_affine={self.elementwise_affine}"
        s += f", eps={self.eps}"
        s += f", activation={self.activation}"
        s += ")"
        return s

    def _gate(self) -> str:
        if self.activation in ("swish", "silu"):
            return "silu"
        if self.activation == "sigmoid":
            return "sigmoid"
        raise ValueError(f"FusedRMSNormGated: activation {self.activation!r}: Cake computes "
                         "'swish', 'silu' or 'sigmoid'")

    def _weight(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is not None:
            raise ValueError("FusedRMSNormGated: bias is set; Cake's normgate has no bias term")
        if self.weight is not None:
            return self.weight
        return torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)

    def forward(
        self,
        x: torch.Tensor,
        g: torch.Tensor,
        residual: Optional[torch.Tensor] = None,
        prenorm: bool = False,
        residual_in_fp32: bool = False,
    ):
        if g is None:
            raise ValueError("FusedRMSNormGated: g (the gate) is required, as in FLA")
        g = _same_rows(x, g, "FusedRMSNormGated")
        w = self._weight(x)
        op = _normgate()
        if residual is None and (not residual_in_fp32 or not prenorm):
            # residual_in_fp32 without prenorm changes nothing visible: FLA normalises the FP32
            # values of x either way and its residual output is not returned.
            y = op(x, g, w, self.eps, gate=self._gate(), **self._knobs())
            return (y, x) if prenorm else y
        if residual is not None:
            if residual.shape != x.shape:
                raise ValueError(f"FusedRMSNormGated: residual {tuple(residual.shape)} must have "
                                 f"x's shape {tuple(x.shape)}")
            s = x.float() + residual.float()
            residual_out = s.to(residual.dtype)
        else:
            s = x.float()
            residual_out = s
        y = op(s, g, w, self.eps, gate=self._gate(), **self._knobs()).to(x.dtype)
        return (y, residual_out) if prenorm else y


class RMSNormGated(_CakeKnobs, nn.Module):
    """mamba_ssm.ops.triton.layernorm_gated.RMSNorm (mamba_ssm 2.3.2) on Cake.

    norm_before_gate=True (mamba's default): y = rmsnorm_G(x) * weight * silu(z);
    norm_before_gate=False: y = rmsnorm_G(x * silu(z)) * weight; z=None: y = rmsnorm_G(x) *
    weight. G = group_size columns per mean square (None: the whole row). FP32 inside, y in x's
    dtype. Note the names: mamba's norm_before_gate=True is Cake's gate_before_norm=False.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-5, group_size: Optional[int] = None,
                 norm_before_gate: bool = True, device=None, dtype=None) -> None:
        factory_kwargs = {"device": device, "dtype": dtype}
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(hidden_size, **factory_kwargs))
        self.register_parameter("bias", None)
        self.group_size = group_size
        self.norm_before_gate = norm_before_gate
        self.reset_parameters()

    def reset_parameters(self) -> None:
        torch.nn.init.ones_(self.weight)

    def extra_repr(self) -> str:
        return (f"{tuple(self.weight.shape)}, eps={self.eps}, group_size={self.group_size}, "
                f"norm_before_gate={self.norm_before_gate}")

    def forward(self, x: torch.Tensor, z: Optional[torch.Tensor] = None) -> torch.Tensor:
        if self.bias is not None:
            raise ValueError("RMSNormGated: bias is set; Cake's normgate has no bias term")
        if z is not None:
            if z.shape != x.shape:  # mamba asserts this too
                raise ValueError(f"RMSNormGated: z {tuple(z.shape)} must have x's shape "
                                 f"{tuple(x.shape)}")
        d = x.shape[-1]
        if self.group_size is not None and (self.group_size <= 0 or d % self.group_size):
            raise ValueError(f"RMSNormGated: group_size {self.group_size} must divide the row "
                             f"width {d}")
        return _normgate()(x, z, self.weight, self.eps, gate="silu",
                           gate_before_norm=not self.norm_before_gate,
                           group_size=self.group_size, **self._knobs())
