"""The cake:: operators in Python, through the ctypes binding: used where libcake_torch cannot
load (another torch minor version, or CAKE_TORCH_NATIVE=0). Same names, schemas, results and
errors as the C++ operators; only the host time per call is higher."""

import os
import threading

import torch

import cake as _cake

from . import _checks, _schemas as S

#: Debugging aid: zero the cached workspace before every call (stream-ordered memset) instead of
#: relying on Cake leaving it zeroed. Set CAKE_TORCH_ZERO_WORKSPACE=1 to isolate a suspected
#: workspace problem; off by default (the library's contract makes it unnecessary).
ZERO_WORKSPACE_EACH_CALL = os.environ.get("CAKE_TORCH_ZERO_WORKSPACE", "") == "1"

_lock = threading.Lock()
_handles = {}
_workspaces = {}
_CAKE_DTYPES = {torch.bfloat16: 1, torch.float32: 2, torch.float16: 3}


def device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def handle(device=None) -> "_cake.Handle":
    """The process-wide Cake handle of a CUDA device (created on first use)."""
    device = torch.device("cuda", torch.cuda.current_device()) if device is None else device
    idx = device_index(torch.device(device))
    h = _handles.get(idx)
    if h is None:
        with _lock:
            h = _handles.get(idx)
            if h is None:
                h = _handles[idx] = _cake.Handle(idx)
    return h


def workspace(device: torch.device, nbytes: int):
    """A zero-filled uint8 buffer of at least @p nbytes for the current stream of @p device,
    cached per (device, stream); None when nbytes is 0."""
    if nbytes == 0:
        return None
    idx = device_index(device)
    key = (idx, torch.cuda.current_stream(idx).cuda_stream)
    ws = _workspaces.get(key)
    if ws is None or ws.numel() < nbytes:
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"cake: the norm-gate backward needs a workspace of {nbytes} bytes "
                               "on this stream while it is being captured into a CUDA graph; "
                               "make one eager call of this shape on the stream before capturing")
        size = max(nbytes, 2 * ws.numel() if ws is not None else 0, 4096)
        ws = torch.zeros(size, dtype=torch.uint8, device=torch.device("cuda", idx))
        with _lock:
            _workspaces[key] = ws
    elif ZERO_WORKSPACE_EACH_CALL:
        ws[:nbytes].zero_()
    return ws


def _stream(device):
    return torch.cuda.current_stream(device_index(device)).cuda_stream


def _rows(t, d):
    """@p t ([..., d]) as [rows, d] with a contiguous last dimension, a 16-byte aligned start and
    a row stride of whole 16-byte units (a view when possible, else a copy)."""
    t2 = t.reshape(-1, d)

    def usable(u):
        if u.data_ptr() % 16:
            return False
        if u.shape[0] <= 1:
            return u.stride(1) == 1
        return u.stride(1) == 1 and u.stride(0) >= d and (u.stride(0) * u.element_size()) % 16 == 0

    if not usable(t2):
        t2 = t2.contiguous()
        if not usable(t2):
            t2 = t2.clone()
    return t2, (d if t2.shape[0] <= 1 else t2.stride(0))


def _dense(t):
    if not t.is_contiguous() or t.data_ptr() % 16:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def _check_cuda(op, x):
    if x.device.type != "cuda":
        raise ValueError(f"cake {op}: x is on {x.device}; Cake runs on CUDA tensors")


def _variant(x, z, w, gate, before, group):
    """The descriptor fields of the variant, only where they differ from the defaults."""
    extra = {}
    if gate != S.GATE_SILU:
        extra["gate"] = gate
    if before:
        extra["placement"] = 1
    if group:
        extra["group_size"] = group
    for name, t in (("x_dtype", x), ("z_dtype", z), ("w_dtype", w)):
        if t is not None and t.dtype != torch.bfloat16:
            extra[name] = _CAKE_DTYPES[t.dtype]
    return extra


def _forward(x, z, w, eps, gate, before, group, program):
    _checks.normgate("normgate", x, z, w, gate, group)
    _check_cuda("normgate", x)
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    if x.numel() == 0:
        return y
    d = x.shape[-1]
    x2, xs = _rows(x, d)
    z2, zs = _rows(z, d) if z is not None else (None, 0)
    w2 = _dense(w)
    desc = _cake.normgate_desc(x2.shape[0], d, eps=eps, x_stride=xs, z_stride=zs, y_stride=d,
                               program=program, **_variant(x, z, w, gate, before, group))
    handle(x.device).normgate_forward(desc, x2.data_ptr(), None if z2 is None else z2.data_ptr(),
                                      w2.data_ptr(), y.data_ptr(), None, _stream(x.device))
    return y


def _backward(dy, x, z, w, dx, dz, dw, eps, gate, before, group, det, dw_dtype, flags, program):
    d = x.shape[-1]
    dy2, dys = _rows(dy, d)
    x2, xs = _rows(x, d)
    z2, zs = _rows(z, d) if z is not None else (None, 0)
    w2 = _dense(w)
    package = (_cake.NormgatePackage.DETERMINISTIC if det
               else _cake.NormgatePackage.NONDETERMINISTIC)
    h = handle(x.device)
    desc = _cake.normgate_desc(x2.shape[0], d, eps=eps, x_stride=xs, z_stride=zs, dy_stride=dys,
                               dx_stride=d, dz_stride=d, package=package, dw_dtype=dw_dtype,
                               flags=flags, program=program,
                               **_variant(x, z, w, gate, before, group))
    nbytes = h.normgate_workspace_size(desc)
    ws = workspace(x.device, nbytes)
    h.normgate_backward(desc, dy2.data_ptr(), x2.data_ptr(),
                        None if z2 is None else z2.data_ptr(), w2.data_ptr(), dx.data_ptr(),
                        dz.data_ptr() if dz.numel() else None,
                        None if dw is None else dw.data_ptr(),
                        None if ws is None else ws.data_ptr(), nbytes, _stream(x.device))


def _dz(z, x):
    return torch.empty_like(z, memory_format=torch.contiguous_format) if z is not None \
        else x.new_empty(0)


def _normgate_fwd(x, z, w, eps=1e-6, gate=0, gate_before_norm=False, group_size=0,
                  deterministic=True, dw_mode=-1, main_grad=None, program=None):
    return _forward(x, z, w, eps, gate, gate_before_norm, group_size, program)


def _normgate_bwd(dy, x, z, w, eps, gate, gate_before_norm, group_size, deterministic, dw_mode,
                  program=None):
    _checks.normgate("normgate backward", x, z, w, gate, group_size)
    _checks.dy(dy, x)
    _check_cuda("normgate backward", x)
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dz = _dz(z, x)
    skip = dw_mode == S.DW_SKIP
    dw_t = torch.bfloat16 if skip else _checks.dw_dtype(dw_mode, w)
    dw = w.new_empty(0 if skip else x.shape[-1], dtype=dw_t)
    if x.numel() == 0:
        dw.zero_()
        return dx, dz, dw
    _backward(dy, x, z, w, dx, dz, None if skip else dw, eps, gate, gate_before_norm, group_size,
              deterministic, _CAKE_DTYPES[dw_t],
              _cake.NormgateFlags.DW_SKIP if skip else 0, program)
    return dx, dz, dw


def _normgate_bwd_accumulate(dy, x, z, w, dw, eps, gate, gate_before_norm, group_size,
                             deterministic, program=None):
    _checks.normgate("normgate backward", x, z, w, gate, group_size)
    _checks.dy(dy, x)
    _check_cuda("normgate backward", x)
    d = x.shape[-1]
    if dw.shape != (d,) or dw.dtype not in _CAKE_DTYPES or dw.device != x.device:
        raise ValueError(f"cake normgate backward: main_grad {tuple(dw.shape)} {dw.dtype} must be "
                         f"a float32, bfloat16 or float16 [d = {d}] tensor on {x.device}")
    if not dw.is_contiguous() or dw.data_ptr() % 16:
        raise ValueError("cake normgate backward: main_grad must be contiguous and 16-byte "
                         "aligned (it is accumulated into in place)")
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dz = _dz(z, x)
    if x.numel() == 0:
        return dx, dz
    _backward(dy, x, z, w, dx, dz, dw, eps, gate, gate_before_norm, group_size, deterministic,
              _CAKE_DTYPES[dw.dtype], _cake.NormgateFlags.DW_ACCUMULATE, program)
    return dx, dz


def _set_variant(desc, inp, backward, variant):
    """The descriptor's variant from (activation, alpha, limit, prob); returns what it points to
    (prob as the kernel reads it, dprob: FP32 [rows] for a weighted backward, else empty)."""
    activation, alpha, limit, prob = variant
    v = desc.variant
    v.activation, v.alpha, v.limit = activation, alpha, limit
    dprob = _checks.dprob(inp, backward, prob)
    if prob is not None:
        prob = prob.contiguous()
        v.weighted, v.p = 1, prob.data_ptr()
        if backward:
            v.dp = dprob.data_ptr()
    return prob, dprob


def _check_cuda_in(op, inp):
    if inp.device.type != "cuda":
        raise ValueError(f"cake {op}: in is on {inp.device}; Cake runs on CUDA tensors")


def _swiglu(op, inp, grad, orientation, program, variant):
    _checks.swiglu(op, inp, grad, variant=variant)
    _check_cuda_in(op, inp)
    inp = _dense(inp)
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    backward = grad is not None
    sizes = _cake.swiglu_mxfp8_buffer_sizes(m, k2 // 2, backward, orient)
    out = _checks.swiglu_outputs(inp, orient, backward, sizes)
    ptrs = [t.data_ptr() if t.numel() else None for t in out]
    desc = _cake.swiglu_mxfp8_desc(m, k2 // 2, orient, program)
    _prob, dprob = _set_variant(desc, inp, backward, variant)
    h = handle(inp.device)
    if backward:
        h.swiglu_mxfp8_backward(desc, inp.data_ptr(), _dense(grad).data_ptr(), *ptrs,
                                stream=_stream(inp.device))
        return out + (dprob,)
    h.swiglu_mxfp8_forward(desc, inp.data_ptr(), *ptrs, stream=_stream(inp.device))
    return out


def _swiglu_fwd(inp, orientation, program=None, activation=S.ACT_SILU, alpha=S.ALPHA,
                limit=S.LIMIT, prob=None):
    return _swiglu("swiglu_mxfp8", inp, None, orientation, program,
                   (activation, alpha, limit, prob))


def _swiglu_bwd(inp, grad, orientation, program=None, activation=S.ACT_SILU, alpha=S.ALPHA,
                limit=S.LIMIT, prob=None):
    return _swiglu("swiglu_mxfp8 backward", inp, grad, orientation, program,
                   (activation, alpha, limit, prob))


def _swiglu_fp8(op, inp, grad, orientation, scale_rule, program, variant):
    _checks.swiglu(op, inp, grad, shape=_checks.FP8_SHAPE, variant=variant)
    _checks.scale_rule(op, scale_rule)
    _check_cuda_in(op, inp)
    inp = _dense(inp)
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    backward = grad is not None
    out = _checks.swiglu_fp8_outputs(inp, orient, backward)
    ptrs = [t.data_ptr() if t.numel() else None for t in out]
    desc = _cake.swiglu_fp8_desc(m, k2 // 2, orient, scale_rule, program)
    _prob, dprob = _set_variant(desc, inp, backward, variant)
    h = handle(inp.device)
    if backward:
        h.swiglu_fp8_backward(desc, inp.data_ptr(), _dense(grad).data_ptr(), *ptrs,
                              stream=_stream(inp.device))
        return out + (dprob,)
    h.swiglu_fp8_forward(desc, inp.data_ptr(), *ptrs, stream=_stream(inp.device))
    return out


def _swiglu_fp8_fwd(inp, orientation, scale_rule=0, program=None, activation=S.ACT_SILU,
                    alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_fp8("swiglu_fp8", inp, None, orientation, scale_rule, program,
                       (activation, alpha, limit, prob))


def _swiglu_fp8_bwd(inp, grad, orientation, scale_rule=0, program=None, activation=S.ACT_SILU,
                    alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_fp8("swiglu_fp8 backward", inp, grad, orientation, scale_rule, program,
                       (activation, alpha, limit, prob))


def _swiglu_grouped(op, inp, grad, offs, format, orientation, scale_rule, program, variant):
    orient = _checks.swiglu_grouped(op, inp, grad, offs, format, orientation, scale_rule,
                                    variant)
    _check_cuda_in(op, inp)
    inp, offs = _dense(inp), _dense(offs)
    t, k2 = inp.shape
    backward = grad is not None
    out = _checks.swiglu_grouped_outputs(inp, offs, format, orient, backward)
    ptrs = [x.data_ptr() if x.numel() else None for x in out]
    e = offs.shape[0]
    desc = (_cake.swiglu_mxfp8_grouped_desc(t, k2 // 2, e, orient, program) if format == 2 else
            _cake.swiglu_fp8_grouped_desc(t, k2 // 2, e, orient, scale_rule, program))
    _prob, dprob = _set_variant(desc, inp, backward, variant)
    h = handle(inp.device)
    if backward:
        dprob.zero_()  # the tokens of no expert get no dp from the library: their gradient is 0
        h.swiglu_grouped_backward(desc, inp.data_ptr(), _dense(grad).data_ptr(), offs.data_ptr(),
                                  *ptrs[:4], status=ptrs[4], stream=_stream(inp.device))
        return out + (dprob,)
    h.swiglu_grouped_forward(desc, inp.data_ptr(), offs.data_ptr(), *ptrs[:4],
                             status=ptrs[4], stream=_stream(inp.device))
    return out


def _swiglu_grouped_fwd(inp, offs, format, orientation, scale_rule=0, program=None,
                        activation=S.ACT_SILU, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_grouped("swiglu_grouped", inp, None, offs, format, orientation, scale_rule,
                           program, (activation, alpha, limit, prob))


def _swiglu_grouped_bwd(inp, grad, offs, format, orientation, scale_rule=0, program=None,
                        activation=S.ACT_SILU, alpha=S.ALPHA, limit=S.LIMIT, prob=None):
    return _swiglu_grouped("swiglu_grouped backward", inp, grad, offs, format, orientation,
                           scale_rule, program, (activation, alpha, limit, prob))


def _normgate_fwd_quant(x, z, w, format, scale_rule=0, heads=0, write_y=False, eps=1e-6,
                        program=None):
    sizes = _checks.normgate_quant("normgate_fp8", x, z, w, format, scale_rule, heads, eps)
    _check_cuda("normgate_fp8", x)
    q, s, y = _checks.normgate_quant_outputs(x, format, heads, write_y, sizes)
    if sizes is None:
        return q, s, y
    d = x.shape[-1]
    x2, xs = _rows(x, d)
    z2, zs = _rows(z, d)
    desc = _cake.normgate_desc(x2.shape[0], d, eps=eps, x_stride=xs, z_stride=zs, y_stride=d,
                               program=program)
    quant = _cake.normgate_quant_desc(format, scale_rule, heads)
    handle(x.device).normgate_forward_quantized(
        desc, quant, x2.data_ptr(), z2.data_ptr(), _dense(w).data_ptr(), q.data_ptr(),
        s.data_ptr(), y=y.data_ptr() if write_y else None, stream=_stream(x.device))
    return q, s, y


# ---- autograd of normgate_fwd (the C++ library registers the same in C++) -------------------
def _setup_context(ctx, inputs, output):
    x, z, w, eps, gate, before, group, det, dw_mode, main_grad, program = inputs
    ctx.save_for_backward(x, z, w)
    ctx.args = (eps, gate, before, group, det, dw_mode, program)
    ctx.main_grad = main_grad


def _autograd_backward(ctx, dy):
    x, z, w = ctx.saved_tensors
    eps, gate, before, group, det, dw_mode, program = ctx.args
    dy = dy if dy.dtype == x.dtype else dy.to(x.dtype)
    if ctx.main_grad is not None:
        dx, dz = torch.ops.cake.normgate_bwd_accumulate(dy, x, z, w, ctx.main_grad, eps, gate,
                                                        before, group, det, program)
        dw = None
    else:
        mode = dw_mode if ctx.needs_input_grad[2] else S.DW_SKIP
        dx, dz, dw = torch.ops.cake.normgate_bwd(dy, x, z, w, eps, gate, before, group, det, mode,
                                                 program)
        if mode == S.DW_SKIP:
            dw = None
        elif dw.dtype != w.dtype:
            dw = dw.to(w.dtype)
    return dx, (dz if z is not None else None), dw, None, None, None, None, None, None, None, None


_IMPLS = (
    ("normgate_fwd", S.NORMGATE_FWD, (), _normgate_fwd),
    ("normgate_bwd", S.NORMGATE_BWD, (), _normgate_bwd),
    ("normgate_bwd_accumulate", S.NORMGATE_BWD_ACCUMULATE, ("dw",), _normgate_bwd_accumulate),
    ("swiglu_mxfp8_fwd", S.SWIGLU_MXFP8_FWD, (), _swiglu_fwd),
    ("swiglu_mxfp8_bwd", S.SWIGLU_MXFP8_BWD, (), _swiglu_bwd),
    ("swiglu_fp8_fwd", S.SWIGLU_FP8_FWD, (), _swiglu_fp8_fwd),
    ("swiglu_fp8_bwd", S.SWIGLU_FP8_BWD, (), _swiglu_fp8_bwd),
    ("swiglu_grouped_fwd", S.SWIGLU_GROUPED_FWD, (), _swiglu_grouped_fwd),
    ("swiglu_grouped_bwd", S.SWIGLU_GROUPED_BWD, (), _swiglu_grouped_bwd),
    ("normgate_fwd_quant", S.NORMGATE_FWD_QUANT, (), _normgate_fwd_quant),
)


#: The operator definitions; an operator lives as long as its definition object.
_DEFINED = []


def define():
    """Define the cake:: operators in Python (once per process)."""
    for name, schema, mutates, fn in _IMPLS:
        _DEFINED.append(torch.library.custom_op(f"cake::{name}", fn, mutates_args=mutates,
                                                schema="(" + schema.split("(", 1)[1]))
    torch.library.register_autograd("cake::normgate_fwd", _autograd_backward,
                                    setup_context=_setup_context)
