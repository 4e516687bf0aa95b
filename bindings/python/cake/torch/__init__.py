"""PyTorch layer: Cake's kernels on PyTorch tensors, on PyTorch's current stream.

Norm-gate (y = rmsnorm(x) * w * silu(z), per row of width d = x.shape[-1]):

    y = cake.torch.normgate(x, z, w, eps=1e-6)                 # autograd, BF16 dw
    y = cake.torch.normgate(x, z, w32)                          # FP32 master weight: FP32 dw
    y = cake.torch.normgate(x, z, w, main_grad=w_main_grad)     # dw accumulated into FP32 buffer

The forward saves only its inputs (x, z, w): the backward recomputes rstd and the gate from them,
so the op is as cheap to checkpoint as it can be (torch.utils.checkpoint recomputes the same y,
bit for bit).

SwiGLU + MXFP8 (in = [gate | up], BF16 [m, 2k]; outputs E4M3 data and E8M0 swizzled scales):

    q = cake.torch.swiglu_mxfp8(inp, "both")                   # q.row_q [m, k], q.col_q [k, m]
    g = cake.torch.swiglu_mxfp8_backward(inp, grad, "rowwise") # [m, 2k] gradients, quantized

Every op is a torch.library custom op (namespace "cake") with a fake implementation, so
torch.compile graphs hold them; the norm-gate forward op has its autograd registered too.
Kernels run on torch.cuda.current_stream() of the tensors' device; the norm-gate backward's
workspace comes from PyTorch's caching allocator, zeroed once and cached per (device, stream)
(the library leaves it zeroed after every call). Capture a CUDA graph only after one eager call
per stream, so that the workspace exists outside the graph's memory pool.
"""

import os
import threading
from typing import NamedTuple, Optional, Tuple

import torch

import cake as _cake

__all__ = [
    "normgate",
    "NormGateFunction",
    "normgate_reference",
    "swiglu_mxfp8",
    "swiglu_mxfp8_backward",
    "MXFP8Tensors",
    "dequantize_mxfp8",
    "swizzled_scale_offsets",
    "handle",
    "workspace",
]

_BF16 = torch.bfloat16
_F32 = torch.float32
_E4M3 = torch.float8_e4m3fn

# ---- per-device handles, per-(device, stream) workspaces -----------------------------------
#: Debugging aid: zero the cached workspace before every call (stream-ordered memset) instead of
#: relying on Cake leaving it zeroed. Set CAKE_TORCH_ZERO_WORKSPACE=1 to isolate a suspected
#: workspace problem; off by default (the library's contract makes it unnecessary).
ZERO_WORKSPACE_EACH_CALL = os.environ.get("CAKE_TORCH_ZERO_WORKSPACE", "") == "1"

_lock = threading.Lock()
_handles = {}
_workspaces = {}


def _device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def handle(device=None) -> "_cake.Handle":
    """The process-wide Cake handle of a CUDA device (created on first use, kept for the
    process's life: module loads happen once, never on the launch path afterwards)."""
    device = torch.device("cuda", torch.cuda.current_device()) if device is None else device
    device = torch.device(device)
    idx = _device_index(device)
    h = _handles.get(idx)
    if h is None:
        with _lock:
            h = _handles.get(idx)
            if h is None:
                h = _cake.Handle(idx)
                _handles[idx] = h
    return h


def workspace(device: torch.device, nbytes: int) -> Optional[torch.Tensor]:
    """A zero-filled uint8 buffer of at least @p nbytes for the current stream of @p device.

    Cached per (device, stream) and grown when needed; Cake leaves it zeroed after every call,
    so it is zeroed only when allocated. None when nbytes is 0."""
    if nbytes == 0:
        return None
    idx = _device_index(device)
    stream = torch.cuda.current_stream(idx).cuda_stream
    key = (idx, stream)
    ws = _workspaces.get(key)
    if ws is None or ws.numel() < nbytes:
        # Rounded up so that slowly growing sizes do not reallocate each time.
        size = max(nbytes, 2 * ws.numel() if ws is not None else 0, 4096)
        ws = torch.zeros(size, dtype=torch.uint8, device=torch.device("cuda", idx))
        with _lock:
            _workspaces[key] = ws
    elif ZERO_WORKSPACE_EACH_CALL:
        ws[:nbytes].zero_()
    return ws


def _stream(device: torch.device) -> int:
    return torch.cuda.current_stream(_device_index(device)).cuda_stream


# ---- tensor checks -------------------------------------------------------------------------
def _rows(t: torch.Tensor, d: int) -> Tuple[torch.Tensor, int]:
    """@p t ([..., d]) as [rows, d] with a contiguous last dimension, a row stride that is a
    multiple of 8 elements and a 16-byte aligned start (a view when possible, else a copy)."""
    t2 = t.reshape(-1, d)
    if t2.shape[0] <= 1:
        if t2.stride(-1) != 1 or t2.data_ptr() % 16:
            t2 = t2.clone(memory_format=torch.contiguous_format)
        return t2, d
    if t2.stride(1) != 1 or t2.stride(0) < d or t2.stride(0) % 8 or t2.data_ptr() % 16:
        t2 = t2.contiguous()
        if t2.data_ptr() % 16:
            t2 = t2.clone()
    return t2, t2.stride(0)


def _vec(t: torch.Tensor) -> torch.Tensor:
    if not t.is_contiguous() or t.data_ptr() % 16:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def _check_normgate(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor, what: str = "") -> None:
    if x.dim() < 1 or x.shape != z.shape:
        raise ValueError(f"cake normgate{what}: x {tuple(x.shape)} and z {tuple(z.shape)} must "
                         "have one shape [..., d]")
    if w.dim() != 1 or w.shape[0] != x.shape[-1]:
        raise ValueError(f"cake normgate{what}: w {tuple(w.shape)} must be [d] with d = "
                         f"x.shape[-1] = {x.shape[-1]}")
    for name, t in (("x", x), ("z", z), ("w", w)):
        if t.dtype != _BF16:
            raise TypeError(f"cake normgate{what}: {name} is {t.dtype}; Cake takes bfloat16")
        if t.device.type != "cuda" or t.device != x.device:
            raise ValueError(f"cake normgate{what}: {name} is on {t.device}; all tensors must be "
                             f"on one CUDA device ({x.device})")


# ---- norm-gate custom ops ------------------------------------------------------------------
_DW_SKIP, _DW_BF16, _DW_F32 = 0, 1, 2


@torch.library.custom_op("cake::normgate_fwd", mutates_args=(), device_types="cuda")
def _normgate_fwd(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor, eps: float,
                  program: Optional[str]) -> torch.Tensor:
    """y = bf16(rmsnorm(x) * w * silu(z)); x, z [..., d] BF16, w [d] BF16."""
    _check_normgate(x, z, w)
    d = x.shape[-1]
    y = torch.empty(x.shape, dtype=_BF16, device=x.device)
    if x.numel() == 0:
        return y
    x2, xs = _rows(x, d)
    z2, zs = _rows(z, d)
    w2 = _vec(w)
    with torch.cuda.device(x.device):
        desc = _cake.normgate_desc(x2.shape[0], d, eps=eps, x_stride=xs, z_stride=zs,
                                   y_stride=d, program=program)
        handle(x.device).normgate_forward(desc, x2.data_ptr(), z2.data_ptr(), w2.data_ptr(),
                                          y.data_ptr(), None, _stream(x.device))
    return y


@_normgate_fwd.register_fake
def _(x, z, w, eps, program):
    return x.new_empty(x.shape, dtype=_BF16)


def _normgate_bwd_run(dy, x, z, w, dx, dz, dw, eps, deterministic, dw_dtype, flags, program):
    d = x.shape[-1]
    dy2, dys = _rows(dy, d)
    x2, xs = _rows(x, d)
    z2, zs = _rows(z, d)
    w2 = _vec(w)
    package = (_cake.NormgatePackage.DETERMINISTIC if deterministic
               else _cake.NormgatePackage.NONDETERMINISTIC)
    with torch.cuda.device(x.device):
        h = handle(x.device)
        desc = _cake.normgate_desc(x2.shape[0], d, eps=eps, x_stride=xs, z_stride=zs,
                                   dy_stride=dys, dx_stride=d, dz_stride=d, package=package,
                                   dw_dtype=dw_dtype, flags=flags, program=program)
        nbytes = h.normgate_workspace_size(desc)
        ws = workspace(x.device, nbytes)
        h.normgate_backward(desc, dy2.data_ptr(), x2.data_ptr(), z2.data_ptr(), w2.data_ptr(),
                            dx.data_ptr(), dz.data_ptr(), None if dw is None else dw.data_ptr(),
                            None if ws is None else ws.data_ptr(), nbytes, _stream(x.device))


def _check_dy(dy, x):
    if dy.shape != x.shape or dy.dtype != _BF16 or dy.device != x.device:
        raise ValueError(f"cake normgate backward: dy ({tuple(dy.shape)}, {dy.dtype}, "
                         f"{dy.device}) must match x ({tuple(x.shape)}, bfloat16, {x.device})")


@torch.library.custom_op("cake::normgate_bwd", mutates_args=(), device_types="cuda")
def _normgate_bwd(dy: torch.Tensor, x: torch.Tensor, z: torch.Tensor, w: torch.Tensor,
                  eps: float, deterministic: bool, dw_mode: int,
                  program: Optional[str]) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dx, dz, dw). dw_mode: 0 skip (dw is empty), 1 BF16 dw, 2 FP32 dw."""
    _check_normgate(x, z, w, " backward")
    _check_dy(dy, x)
    d = x.shape[-1]
    dx = torch.empty(x.shape, dtype=_BF16, device=x.device)
    dz = torch.empty(z.shape, dtype=_BF16, device=x.device)
    if dw_mode == _DW_SKIP:
        dw = torch.empty(0, dtype=_BF16, device=x.device)
    else:
        dw = torch.empty(d, dtype=_F32 if dw_mode == _DW_F32 else _BF16, device=x.device)
    if x.numel() == 0:
        dw.zero_()
        return dx, dz, dw
    _normgate_bwd_run(dy, x, z, w, dx, dz, dw if dw_mode != _DW_SKIP else None, eps,
                      deterministic, _cake.DType.F32 if dw_mode == _DW_F32 else _cake.DType.BF16,
                      _cake.NormgateFlags.DW_SKIP if dw_mode == _DW_SKIP else 0, program)
    return dx, dz, dw


@_normgate_bwd.register_fake
def _(dy, x, z, w, eps, deterministic, dw_mode, program):
    d = x.shape[-1]
    if dw_mode == _DW_SKIP:
        dw = x.new_empty(0, dtype=_BF16)
    else:
        dw = x.new_empty(d, dtype=_F32 if dw_mode == _DW_F32 else _BF16)
    return x.new_empty(x.shape, dtype=_BF16), z.new_empty(z.shape, dtype=_BF16), dw


@torch.library.custom_op("cake::normgate_bwd_accumulate", mutates_args=("dw",),
                         device_types="cuda")
def _normgate_bwd_accumulate(dy: torch.Tensor, x: torch.Tensor, z: torch.Tensor,
                             w: torch.Tensor, dw: torch.Tensor, eps: float, deterministic: bool,
                             program: Optional[str]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(dx, dz), and dw += the weight gradient in place (dw FP32 or BF16, contiguous [d])."""
    _check_normgate(x, z, w, " backward")
    _check_dy(dy, x)
    d = x.shape[-1]
    if dw.shape != (d,) or dw.dtype not in (_F32, _BF16) or dw.device != x.device:
        raise ValueError(f"cake normgate backward: main_grad {tuple(dw.shape)} {dw.dtype} must be "
                         f"a float32 or bfloat16 [d = {d}] tensor on {x.device}")
    if not dw.is_contiguous() or dw.data_ptr() % 16:
        raise ValueError("cake normgate backward: main_grad must be contiguous and 16-byte "
                         "aligned (it is accumulated into in place)")
    dx = torch.empty(x.shape, dtype=_BF16, device=x.device)
    dz = torch.empty(z.shape, dtype=_BF16, device=x.device)
    if x.numel() == 0:
        return dx, dz
    _normgate_bwd_run(dy, x, z, w, dx, dz, dw, eps, deterministic,
                      _cake.DType.F32 if dw.dtype == _F32 else _cake.DType.BF16,
                      _cake.NormgateFlags.DW_ACCUMULATE, program)
    return dx, dz


@_normgate_bwd_accumulate.register_fake
def _(dy, x, z, w, dw, eps, deterministic, program):
    return x.new_empty(x.shape, dtype=_BF16), z.new_empty(z.shape, dtype=_BF16)


# Autograd of the forward op itself (so torch.ops.cake.normgate_fwd is differentiable, and
# torch.compile puts normgate_bwd in the backward graph): BF16 dw, deterministic package.
def _fwd_setup_context(ctx, inputs, output):
    x, z, w, eps, program = inputs
    ctx.save_for_backward(x, z, w)
    ctx.eps, ctx.program = eps, program


def _fwd_backward(ctx, dy):
    x, z, w = ctx.saved_tensors
    mode = _DW_BF16 if ctx.needs_input_grad[2] else _DW_SKIP
    dx, dz, dw = torch.ops.cake.normgate_bwd(dy, x, z, w, ctx.eps, True, mode, ctx.program)
    return dx, dz, (dw if mode != _DW_SKIP else None), None, None


torch.library.register_autograd("cake::normgate_fwd", _fwd_backward,
                                setup_context=_fwd_setup_context)


class NormGateFunction(torch.autograd.Function):
    """y = rmsnorm(x) * w * silu(z) with Cake's backward.

    apply(x, z, w, eps, deterministic, dw_dtype, main_grad, program):
      x, z: BF16 [..., d] (row strides allowed: z may be a view into a fused projection);
      w: BF16 or FP32 [d] (FP32: cast to BF16 for the kernel; the gradient is FP32);
      dw_dtype: torch.bfloat16 / torch.float32, or None for w's dtype;
      main_grad: None, or an FP32/BF16 [d] buffer the weight gradient is added to in place
        (then w gets no .grad: the Megatron "main_grad" pattern);
      deterministic: the deterministic package (dw bits fixed by the inputs) or the faster
        non-deterministic one (dw within 1 ulp).
    Saves only x, z, w; the backward recomputes everything else.
    """

    @staticmethod
    def forward(ctx, x, z, w, eps=1e-6, deterministic=True, dw_dtype=None, main_grad=None,
                program=None):
        w16 = w if w.dtype == _BF16 else w.to(_BF16)
        y = torch.ops.cake.normgate_fwd(x, z, w16, float(eps), program)
        ctx.save_for_backward(x, z, w)
        ctx.eps, ctx.deterministic, ctx.program = float(eps), bool(deterministic), program
        ctx.dw_dtype = w.dtype if dw_dtype is None else dw_dtype
        ctx.main_grad = main_grad
        return y

    @staticmethod
    def backward(ctx, dy):
        x, z, w = ctx.saved_tensors
        w16 = w if w.dtype == _BF16 else w.to(_BF16)
        dy = dy if dy.dtype == _BF16 else dy.to(_BF16)
        if ctx.main_grad is not None:
            dx, dz = torch.ops.cake.normgate_bwd_accumulate(dy, x, z, w16, ctx.main_grad,
                                                            ctx.eps, ctx.deterministic,
                                                            ctx.program)
            dw = None
        else:
            if not ctx.needs_input_grad[2]:
                mode = _DW_SKIP
            else:
                mode = _DW_F32 if ctx.dw_dtype == _F32 else _DW_BF16
            dx, dz, dw = torch.ops.cake.normgate_bwd(dy, x, z, w16, ctx.eps, ctx.deterministic,
                                                     mode, ctx.program)
            if mode == _DW_SKIP:
                dw = None
            elif dw.dtype != w.dtype:
                dw = dw.to(w.dtype)
        return dx, dz, dw, None, None, None, None, None


def normgate(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor, eps: float = 1e-6, *,
             deterministic: bool = True, dw_dtype: Optional[torch.dtype] = None,
             main_grad: Optional[torch.Tensor] = None, program: Optional[str] = None
             ) -> torch.Tensor:
    """y = bf16(rmsnorm(x) * w * silu(z)), differentiable (see NormGateFunction)."""
    if dw_dtype not in (None, _BF16, _F32):
        raise TypeError(f"cake normgate: dw_dtype {dw_dtype}: bfloat16, float32 or None")
    if w.dtype not in (_BF16, _F32):
        raise TypeError(f"cake normgate: w is {w.dtype}; bfloat16 or float32 (master weight)")
    return NormGateFunction.apply(x, z, w, eps, deterministic, dw_dtype, main_grad, program)


def normgate_reference(x: torch.Tensor, z: torch.Tensor, w: torch.Tensor,
                       eps: float = 1e-6) -> torch.Tensor:
    """The unfused PyTorch form (FP32 inside, BF16 out), for comparisons."""
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    zf = z.float()
    return (xf * rstd * w.float() * zf * torch.sigmoid(zf)).to(_BF16)


# ---- SwiGLU + MXFP8 ------------------------------------------------------------------------
class MXFP8Tensors(NamedTuple):
    """Outputs of a SwiGLU + MXFP8 call; None for an orientation not asked for.

    row_q: E4M3 [m, O]; row_s: E8M0 bytes (uint8) in the swizzled 128x4 layout, R = m,
    C = O/32; col_q: E4M3 [O, m] (the transpose, stored row-major); col_s: uint8, R = O,
    C = m/32. O = k forward, 2k backward. view(torch.float8_e8m0fnu) gives E8M0-typed scales.
    """

    row_q: Optional[torch.Tensor]
    row_s: Optional[torch.Tensor]
    col_q: Optional[torch.Tensor]
    col_s: Optional[torch.Tensor]


def _swiglu_outputs(inp: torch.Tensor, orientation: int, backward: bool, sizes):
    m, k2 = inp.shape
    o = k2 if backward else k2 // 2
    dev = inp.device
    none_q = (0,)
    row = orientation & _cake.Orientation.ROWWISE
    col = orientation & _cake.Orientation.COLWISE
    return (
        torch.empty((m, o) if row else none_q, dtype=_E4M3, device=dev),
        torch.empty(sizes.row_s_bytes if row else 0, dtype=torch.uint8, device=dev),
        torch.empty((o, m) if col else none_q, dtype=_E4M3, device=dev),
        torch.empty(sizes.col_s_bytes if col else 0, dtype=torch.uint8, device=dev),
    )


def _check_swiglu(inp: torch.Tensor, grad: Optional[torch.Tensor] = None):
    if inp.dim() != 2 or inp.shape[1] % 2 or inp.dtype != _BF16 or inp.device.type != "cuda":
        raise ValueError(f"cake swiglu_mxfp8: in ({tuple(inp.shape)}, {inp.dtype}, "
                         f"{inp.device}) must be a bfloat16 CUDA tensor [m, 2k]")
    if grad is not None:
        m, k2 = inp.shape
        if (grad.shape != (m, k2 // 2) or grad.dtype != _BF16 or grad.device != inp.device):
            raise ValueError(f"cake swiglu_mxfp8 backward: grad ({tuple(grad.shape)}, "
                             f"{grad.dtype}) must be bfloat16 [m, k] = [{m}, {k2 // 2}] on "
                             f"{inp.device}")


def _dense(t: torch.Tensor) -> torch.Tensor:
    if not t.is_contiguous() or t.data_ptr() % 16:
        t = t.clone(memory_format=torch.contiguous_format)
    return t


def _ptr_or_none(t: torch.Tensor):
    return t.data_ptr() if t.numel() else None


@torch.library.custom_op("cake::swiglu_mxfp8_fwd", mutates_args=(), device_types="cuda")
def _swiglu_fwd(inp: torch.Tensor, orientation: int, program: Optional[str]
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(row_q, row_s, col_q, col_s) of silu(gate) * up; disabled orientations are empty."""
    _check_swiglu(inp)
    inp = _dense(inp)
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    sizes = _cake.swiglu_mxfp8_buffer_sizes(m, k2 // 2, False, orient)
    out = _swiglu_outputs(inp, orient, False, sizes)
    with torch.cuda.device(inp.device):
        desc = _cake.swiglu_mxfp8_desc(m, k2 // 2, orient, program)
        handle(inp.device).swiglu_mxfp8_forward(desc, inp.data_ptr(),
                                                *[_ptr_or_none(t) for t in out],
                                                stream=_stream(inp.device))
    return out


@_swiglu_fwd.register_fake
def _(inp, orientation, program):
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    sizes = _cake.swiglu_mxfp8_expected_sizes(m, k2 // 2, False)
    return _swiglu_outputs(inp, orient, False, sizes)


@torch.library.custom_op("cake::swiglu_mxfp8_bwd", mutates_args=(), device_types="cuda")
def _swiglu_bwd(inp: torch.Tensor, grad: torch.Tensor, orientation: int, program: Optional[str]
                ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """[dgate | dup] quantized: (row_q [m, 2k], row_s, col_q [2k, m], col_s)."""
    _check_swiglu(inp, grad)
    inp, grad = _dense(inp), _dense(grad)
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    sizes = _cake.swiglu_mxfp8_buffer_sizes(m, k2 // 2, True, orient)
    out = _swiglu_outputs(inp, orient, True, sizes)
    with torch.cuda.device(inp.device):
        desc = _cake.swiglu_mxfp8_desc(m, k2 // 2, orient, program)
        handle(inp.device).swiglu_mxfp8_backward(desc, inp.data_ptr(), grad.data_ptr(),
                                                 *[_ptr_or_none(t) for t in out],
                                                 stream=_stream(inp.device))
    return out


@_swiglu_bwd.register_fake
def _(inp, grad, orientation, program):
    m, k2 = inp.shape
    orient = _cake.Orientation.parse(orientation)
    sizes = _cake.swiglu_mxfp8_expected_sizes(m, k2 // 2, True)
    return _swiglu_outputs(inp, orient, True, sizes)


def _wrap(out, orient) -> MXFP8Tensors:
    row = bool(orient & _cake.Orientation.ROWWISE)
    col = bool(orient & _cake.Orientation.COLWISE)
    return MXFP8Tensors(out[0] if row else None, out[1] if row else None,
                        out[2] if col else None, out[3] if col else None)


def swiglu_mxfp8(inp: torch.Tensor, orientation="rowwise", program: Optional[str] = None
                 ) -> MXFP8Tensors:
    """Forward: Y = bf16(silu(in[:, :k]) * in[:, k:]) quantized to MXFP8 (O = k).

    orientation: "rowwise", "colwise", "both" (or cake.Orientation). Not differentiable: the
    quantized outputs feed an MXFP8 GEMM; pair it with swiglu_mxfp8_backward()."""
    orient = _cake.Orientation.parse(orientation)
    return _wrap(torch.ops.cake.swiglu_mxfp8_fwd(inp, int(orient), program), orient)


def swiglu_mxfp8_backward(inp: torch.Tensor, grad: torch.Tensor, orientation="rowwise",
                          program: Optional[str] = None) -> MXFP8Tensors:
    """Backward: [dgate | dup] (BF16 [m, 2k], from in and grad = dL/dY [m, k]) quantized to
    MXFP8 (O = 2k)."""
    orient = _cake.Orientation.parse(orientation)
    return _wrap(torch.ops.cake.swiglu_mxfp8_bwd(inp, grad, int(orient), program), orient)


def swizzled_scale_offsets(rows: int, cols: int, device=None) -> torch.Tensor:
    """int64 [rows, cols]: byte offset of scale (r, c) in the swizzled 128x4 layout
    (docs/spec/swiglu-mxfp8.md): ((r/128)*(C'/4) + c/4)*512 + (r%32)*16 + ((r%128)/32)*4 + c%4."""
    r = torch.arange(rows, device=device, dtype=torch.int64).view(-1, 1)
    c = torch.arange(cols, device=device, dtype=torch.int64).view(1, -1)
    cp = (cols + 3) // 4 * 4
    return ((r // 128) * (cp // 4) + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4


def dequantize_mxfp8(q: torch.Tensor, s: torch.Tensor, colwise: bool = False) -> torch.Tensor:
    """FP32 values of an MXFP8 tensor, in the logical [M, O] orientation.

    q: E4M3 [M, O] (rowwise) or [O, M] (colwise, the stored transpose); s: its uint8 scales."""
    qf = q.float()
    rows, cols = qf.shape  # stored shape: [M, O] rowwise, [O, M] colwise
    offs = swizzled_scale_offsets(rows, cols // 32, q.device)
    e = s.view(torch.uint8)[offs].to(torch.int32)  # [rows, cols/32]
    scale = torch.exp2((e - 127).to(_F32))
    scale[e == 255] = float("nan")  # E8M0 255 is NaN
    out = qf * scale.repeat_interleave(32, dim=1)
    return out.t() if colwise else out
