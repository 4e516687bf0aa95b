"""The SwiGLU variant options of the cake.torch wrappers (docs/spec/swiglu-mxfp8.md,
"Variants") as the cake:: operators' trailing arguments: activation "silu" or "clamped"
(gpt-oss's, with alpha and limit), prob the weighted SwiGLU's router probabilities."""

from typing import Optional

import torch

from . import _schemas as S

_ACTIVATIONS = {"silu": S.ACT_SILU, "clamped": S.ACT_CLAMPED}


def args(op: str, activation, alpha: float, limit: float, prob: Optional[torch.Tensor]):
    """(activation, alpha, limit, prob) for an operator, or () for the plain SwiGLU with the
    defaults: the common call then passes fewer arguments to the dispatcher (its host cost)."""
    if activation == "silu" and prob is None:
        return ()
    act = _ACTIVATIONS.get(activation) if isinstance(activation, str) else None
    if act is None:
        raise ValueError(f"cake {op}: activation {activation!r}: 'silu' or 'clamped'")
    return (act, float(alpha), float(limit), prob)


def dprob_like(dprob: torch.Tensor, prob: torch.Tensor) -> torch.Tensor:
    """The backward's dprob (FP32 [rows]) in prob's shape ([rows] or [rows, 1])."""
    return dprob.view(prob.shape)
