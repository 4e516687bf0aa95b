"""Fake implementations of the cake:: operators (torch.compile, FakeTensor and meta tracing):
output shapes and dtypes, after every argument check the real operators make that needs no
device (cake.torch._checks: the operators' rules, then the library's), so that a traced call
fails where the real one would, with the same error class. Registered for whichever
implementation is loaded (the C++ library names this module with set_python_module)."""

import torch

import cake as _cake

from . import _checks, _schemas as S


def _dz(z, x):
    return z.new_empty(z.shape) if z is not None else x.new_empty(0)


def _normgate_inputs(op, dy, x, z, w, eps, gate, group_size):
    _checks.normgate(op, x, z, w, gate, group_size, eps)
    _checks.device(op, x, "x", ("z", z), ("w", w))
    if dy is not None:
        _checks.dy(dy, x)


@torch.library.register_fake("cake::normgate_fwd")
def _normgate_fwd(x, z, w, eps=1e-6, gate=0, gate_before_norm=False, group_size=0,
                  deterministic=True, dw_mode=-1, main_grad=None, program=None):
    _normgate_inputs("normgate", None, x, z, w, eps, gate, group_size)
    return x.new_empty(x.shape)


@torch.library.register_fake("cake::normgate_bwd")
def _normgate_bwd(dy, x, z, w, eps, gate, gate_before_norm, group_size, deterministic, dw_mode,
                  program=None):
    _normgate_inputs("normgate backward", dy, x, z, w, eps, gate, group_size)
    if dw_mode == S.DW_SKIP:
        dw = w.new_empty(0, dtype=torch.bfloat16)
    else:
        dw = w.new_empty(x.shape[-1], dtype=_checks.dw_dtype(dw_mode, w))
    return x.new_empty(x.shape), _dz(z, x), dw


@torch.library.register_fake("cake::normgate_bwd_accumulate")
def _normgate_bwd_accumulate(dy, x, z, w, dw, eps, gate, gate_before_norm, group_size,
                             deterministic, program=None):
    # The operator checks its inputs, then main_grad, then (non-empty x) the library's rules.
    _checks.normgate("normgate backward", x, z, w, gate, group_size)
    _checks.device("normgate backward", x, "x", ("z", z), ("w", w))
    _checks.dy(dy, x)
    _checks.main_grad(dw, x)
    _checks.normgate("normgate backward", x, z, w, gate, group_size, eps)
    return x.new_empty(x.shape), _dz(z, x)


def _with_dprob(out, inp, grad, variant):
    """The backwards' outputs end with dprob."""
    return out if grad is None else tuple(out) + (_checks.dprob(inp, True, variant[3]),)


def _swiglu(op, inp, grad, orientation, variant):
    _checks.device(op, inp, "in", ("grad", grad))
    orient = _checks.swiglu(op, inp, grad, orientation, variant=variant)
    m, k2 = inp.shape
    sizes = _cake.swiglu_mxfp8_expected_sizes(m, k2 // 2, grad is not None)
    return _with_dprob(_checks.swiglu_outputs(inp, orient, grad is not None, sizes), inp, grad,
                       variant)


@torch.library.register_fake("cake::swiglu_mxfp8_fwd")
def _swiglu_fwd(inp, orientation, program=None, activation=S.ACT_SILU, alpha=S.ALPHA,
                limit=S.LIMIT, prob=None):
    return _swiglu("swiglu_mxfp8", inp, None, orientation, (activation, alpha, limit, prob))


@torch.library.register_fake("cake::swiglu_mxfp8_bwd")
def _swiglu_bwd(inp, grad, orientation, program=None, activation=S.ACT_SILU, alpha=S.ALPHA,
                limit=S.LIMIT, prob=None):
    return _swiglu("swiglu_mxfp8 backward", inp, grad, orientation,
                   (activation, alpha, limit, prob))


def _swiglu_fp8(op, inp, grad, orientation, scale_rule, variant):
    _checks.swiglu(op, inp, grad, shape=_checks.FP8_SHAPE, variant=variant)
    _checks.scale_rule(op, scale_rule)
    out = _checks.swiglu_fp8_outputs(inp, _cake.Orientation.parse(orientation), grad is not None)
    return _with_dprob(out, inp, grad, variant)


@torch.library.register_fake("cake::swiglu_fp8_fwd")
def _swiglu_fp8_fwd(inp, orientation, scale_rule=0, program=None, activation=S.ACT_SILU,
                    alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_fp8("swiglu_fp8", inp, None, orientation, scale_rule,
                       (activation, alpha, limit, prob))


@torch.library.register_fake("cake::swiglu_fp8_bwd")
def _swiglu_fp8_bwd(inp, grad, orientation, scale_rule=0, program=None, activation=S.ACT_SILU,
                    alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_fp8("swiglu_fp8 backward", inp, grad, orientation, scale_rule,
                       (activation, alpha, limit, prob))


def _swiglu_grouped(op, inp, grad, offs, format, orientation, scale_rule, variant):
    _checks.device(op, inp, "in", ("grad", grad), ("offs", offs))
    orient = _checks.swiglu_grouped(op, inp, grad, offs, format, orientation, scale_rule,
                                    variant)
    out = _checks.swiglu_grouped_outputs(inp, offs, format, orient, grad is not None)
    return _with_dprob(out, inp, grad, variant)


@torch.library.register_fake("cake::swiglu_grouped_fwd")
def _swiglu_grouped_fwd(inp, offs, format, orientation, scale_rule=0, program=None,
                        activation=S.ACT_SILU, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_grouped("swiglu_grouped", inp, None, offs, format, orientation, scale_rule,
                           (activation, alpha, limit, prob))


@torch.library.register_fake("cake::swiglu_grouped_bwd")
def _swiglu_grouped_bwd(inp, grad, offs, format, orientation, scale_rule=0, program=None,
                        activation=S.ACT_SILU, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_grouped("swiglu_grouped backward", inp, grad, offs, format, orientation,
                           scale_rule, (activation, alpha, limit, prob))


@torch.library.register_fake("cake::normgate_fwd_quant")
def _normgate_fwd_quant(x, z, w, format, scale_rule=0, heads=0, write_y=False, eps=1e-6,
                        program=None):
    _checks.device("normgate_fp8", x, "x", ("z", z), ("w", w))
    sizes = _checks.normgate_quant("normgate_fp8", x, z, w, format, scale_rule, heads, eps)
    return _checks.normgate_quant_outputs(x, format, heads, write_y, sizes)
