"""The grouped SwiGLU's outputs fed to GEMMs (docs/spec/swiglu-grouped.md, "Layouts"), per
expert, against the BF16 GEMM of the unquantized SwiGLU output.

FP8 blockwise (sm_90's consumer): each expert's fp8_expert_views() slices straight into
F.scaled_mm: the rowwise Y [n, k] (1x128) times a BF16 weight quantized in 128x128 blocks (the
down projection), and the colwise Y^T [k, n] (1x128 along the tokens) as b of the weight
gradient dOut^T @ Y with dOut quantized 1x128 (an activation gradient: 1x128, as DeepSeek-V3's
recipe). MXFP8 has no GEMM on sm_90: its outputs are dequantized in PyTorch and multiplied in
FP32, the check of the values a Blackwell grouped GEMM would read.

The bounds. E4M3 keeps 3 mantissa bits: a normal value's rounding error is at most half an ulp,
2^-4 of its magnitude (the scales map each block's amax to 448, so a block's values are normal
down to 2^-15 of its amax; those below carry little of the product's norm). With independent
rounding errors the product's relative Frobenius error is then at most about
sqrt(2) * 2^-4 = 0.088 for two quantized operands and 2^-4 = 0.0625 for one, and near a third of
that for random inputs (uniform errors: RMS ulp / sqrt(12)). Against the FP32 GEMM of the
dequantized operands the error is the GEMM's own (FP32 accumulation, BF16 output: 2^-9): 1e-2
there means scaled_mm read the layout and scales as the spec writes them.
Errors are printed and, with $OUT set, written to $OUT/grouped_gemm_errors.json."""

import json
import math
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: grouped GEMM GPU tests skipped", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import cake.torch as ct  # noqa: E402
from cake.torch import fp8  # noqa: E402
from conftest import require_symbols  # noqa: E402

BF16 = torch.bfloat16
E4M3 = torch.float8_e4m3fn
DEV = torch.device("cuda", 0)
ERRORS = {}
TWO_OPERANDS = math.sqrt(2) * 2.0 ** -4
ONE_OPERAND = 2.0 ** -4
LAYOUT = 1e-2
# Uneven experts (empty ones, 1, 31, 33, 127, 129 tokens) for the rowwise GEMMs, whose
# contraction is k; the weight gradient contracts over an expert's tokens, which cuBLAS's FP8
# GEMM takes in multiples of 16 (the row pitch of a): multiples of 128, and of 16 with partial
# 128-token scale blocks.
ROW_COUNTS = {"aligned": [256, 0, 384, 128], "uneven": [1, 31, 33, 0, 127, 129, 200, 64]}
# torch 2.11's blockwise F.scaled_mm on sm_90 takes the expert slices of experts whose rows are
# whole 128-row tiles; an expert of 1 token has a scale view of strides (1, 1), which it refuses.
FP8_ROW_COUNTS = {"aligned": [256, 0, 384, 128]}


@pytest.fixture(autouse=True)
def _needs():
    require_symbols("cake_swiglu_mxfp8_grouped_forward", "cake_swiglu_fp8_grouped_forward")


def teardown_module(module):
    print("grouped GEMM errors:", json.dumps(ERRORS, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "grouped_gemm_errors.json"), "w") as f:
            json.dump(ERRORS, f, indent=1)


def sm90_or_newer():
    return torch.cuda.get_device_capability(DEV) >= (9, 0)


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def offs_of(counts):
    return torch.tensor(counts, device=DEV, dtype=torch.int32).cumsum(0, dtype=torch.int32)


def swiglu_bf16(h):
    k = h.shape[1] // 2
    hf = h.float()
    return (F.silu(hf[:, :k]) * hf[:, k:]).to(BF16)


def quant_128x128(w):
    """A weight [R, C] in 128x128 blocks: (q [R, C], s [R/128, C/128] row-major)."""
    r, c = w.shape
    wb = w.float().reshape(r // 128, 128, c // 128, 128)
    s = wb.abs().amax(dim=(1, 3)).clamp(min=1e-12) / 448.0
    return (wb / s[:, None, :, None]).clamp(-448, 448).to(E4M3).reshape(r, c), s


def deq_128x128(q, s):
    r, c = q.shape
    return (q.float().reshape(r // 128, 128, c // 128, 128) * s[:, None, :, None]).reshape(r, c)


def mn_major(s):
    return s.t().contiguous().t()


def record(name, err, bound):
    ERRORS[name] = max(ERRORS.get(name, 0.0), err)
    assert err < bound, (name, err, bound)


@pytest.mark.parametrize("counts", list(FP8_ROW_COUNTS), ids=list(FP8_ROW_COUNTS))
@pytest.mark.parametrize("pow2", [False, True])
def test_fp8_rowwise_feeds_scaled_mm_with_a_128x128_weight(counts, pow2):
    if not sm90_or_newer():
        pytest.skip("F.scaled_mm with blockwise scales needs sm_90")
    counts, k, n_out = FP8_ROW_COUNTS[counts], 1024, 512
    g = torch.Generator(device=DEV).manual_seed(21 + pow2)
    t = sum(counts) + 5  # rows of no expert at the end
    h = (torch.randn(t, 2 * k, device=DEV, generator=g) * 2).to(BF16)
    w = (torch.randn(n_out, k, device=DEV, generator=g) / k ** 0.5).to(BF16)
    w_q, w_s = quant_128x128(w)
    offs = offs_of(counts)
    out = ct.swiglu_grouped(h, offs, "fp8_blockwise", "both", pow2)
    c = 0
    for n, v in zip(counts, ct.fp8_expert_views(out, offs.tolist())):
        if n:
            y = F.scaled_mm(v.row_q, w_q.t(), v.row_s, F.ScalingType.BlockWise1x128, w_s.t(),
                            F.ScalingType.BlockWise128x128, output_dtype=BF16)
            assert y.shape == (n, n_out)
            deq = fp8.dequantize_fp8_blockwise(v.row_q, v.row_s) @ deq_128x128(w_q, w_s).t()
            ref = swiglu_bf16(h[c:c + n]) @ w.t()
            record(f"fp8 rowwise scaled_mm vs dequantized FP32, pow2={pow2}", rel(y, deq), LAYOUT)
            record(f"fp8 rowwise scaled_mm vs BF16 GEMM, pow2={pow2}", rel(y, ref), TWO_OPERANDS)
        c += n


def mxfp8_expert_rows(out, c, n, p):
    """FP32 [n, O] of expert rows [c, c + n) from the rowwise outputs: its row_s bytes from
    padded row p are the ungrouped call's of its rows."""
    cp = out.row_s.shape[1]
    s = out.row_s.reshape(-1)[p * cp:(p + -(-n // 128) * 128) * cp]
    return ct.dequantize_mxfp8(out.row_q[c:c + n], s)


def mxfp8_expert_cols(out, c, n, p):
    """FP32 [n, O] of expert rows [c, c + n) from the colwise outputs: col_q's columns
    [c, c + n), the expert's swizzled [O, ceil(n/32)] scales from byte R' * p / 32 (blocks of
    32 of the expert's own rows, the last one partial)."""
    o = out.col_q.shape[0]
    rp = out.col_s.shape[0]
    nb = -(-n // 32)
    at = rp * p // 32 + ct.swizzled_scale_offsets(o, nb, DEV)
    e = out.col_s.reshape(-1)[at].to(torch.int32)
    scale = torch.exp2((e - 127).float()).repeat_interleave(32, dim=1)[:, :n]
    return (out.col_q[:, c:c + n].float() * scale).t()


@pytest.mark.parametrize("counts", list(ROW_COUNTS), ids=list(ROW_COUNTS))
def test_mxfp8_dequantized_gemms_against_bf16(counts):
    counts, k, n_out = ROW_COUNTS[counts], 1024, 512
    g = torch.Generator(device=DEV).manual_seed(25)
    t = sum(counts)
    h = (torch.randn(t, 2 * k, device=DEV, generator=g) * 2).to(BF16)
    w = (torch.randn(n_out, k, device=DEV, generator=g) / k ** 0.5).to(BF16)
    d_out = torch.randn(t, n_out, device=DEV, generator=g).to(BF16)
    offs = offs_of(counts)
    out = ct.swiglu_grouped(h, offs, "mxfp8", "both")
    c = p = 0
    for n in counts:
        if n:
            y_bf16 = swiglu_bf16(h[c:c + n])
            # The forward GEMM from the rowwise outputs, the weight gradient from the colwise.
            y_row = mxfp8_expert_rows(out, c, n, p)
            record("mxfp8 rowwise dequantized @ W vs BF16 GEMM", rel(y_row @ w.float().t(),
                                                                     y_bf16 @ w.t()), ONE_OPERAND)
            y_col = mxfp8_expert_cols(out, c, n, p)
            dw = d_out[c:c + n].float().t() @ y_col
            record("mxfp8 colwise dequantized dW vs BF16 GEMM",
                   rel(dw, d_out[c:c + n].t() @ y_bf16), ONE_OPERAND)
        c += n
        p += -(-n // 128) * 128
