"""GPU tests of cake.torch's grouped SwiGLU (docs/spec/swiglu-grouped.md), both formats: every
expert's slices bit-identical to the ungrouped cake.torch call of its rows (FP8 blockwise every
expert, MXFP8 the experts whose rows are a multiple of 32), the fake implementation's shapes
equal the real ones, the status word, a CUDA graph replayed with new offsets, and the FP8
blockwise output fed to a per-expert F.scaled_mm loop against the BF16 GEMM of the BF16 SwiGLU.
Errors are printed and, with $OUT set, written to $OUT/grouped_errors.json."""

import json
import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: grouped GPU tests skipped", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import cake  # noqa: E402
import cake.torch as ct  # noqa: E402
from conftest import require_symbols  # noqa: E402

BF16 = torch.bfloat16
DEV = torch.device("cuda", 0)
ERRORS = {}


@pytest.fixture(autouse=True)
def _needs():
    require_symbols("cake_swiglu_mxfp8_grouped_forward", "cake_swiglu_fp8_grouped_forward")


def teardown_module(module):
    print("grouped errors:", json.dumps(ERRORS, indent=1))
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "grouped_errors.json"), "w") as f:
            json.dump(ERRORS, f, indent=1)


def counts_to_offs(counts):
    return torch.tensor(counts, device=DEV, dtype=torch.int32).cumsum(0, dtype=torch.int32)


def bytes_equal(a, b):
    return torch.equal(a.reshape(-1).contiguous().view(torch.uint8), b.reshape(-1).contiguous().view(torch.uint8))


COUNTS = [0, 1, 31, 33, 127, 129, 256, 64, 0, 200]


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("orientation", ["rowwise", "colwise", "both"])
def test_fp8_expert_slices_are_the_ungrouped_calls(backward, orientation):
    t, k = sum(COUNTS) + 7, 256  # 7 rows of no expert
    inp = torch.randn(t, 2 * k, device=DEV).to(BF16)
    grad = torch.randn(t, k, device=DEV).to(BF16)
    offs = counts_to_offs(COUNTS)
    g = (ct.swiglu_grouped_backward(inp, grad, offs, "fp8_blockwise", orientation) if backward
         else ct.swiglu_grouped(inp, offs, "fp8_blockwise", orientation))
    assert int(g.status.item()) == 0
    c = 0
    for n, v in zip(COUNTS, ct.fp8_expert_views(g, offs.tolist())):
        if n:
            u = (ct.swiglu_fp8_backward(inp[c:c + n], grad[c:c + n], orientation) if backward
                 else ct.swiglu_fp8(inp[c:c + n], orientation))
            for got, want in zip(v, u):
                assert (got is None) == (want is None)
                if got is not None:
                    assert got.shape == want.shape and got.stride() == want.stride()
                    assert bytes_equal(got, want), (n, orientation, backward)
        c += n


@pytest.mark.parametrize("backward", [False, True])
def test_mxfp8_expert_slices_are_the_ungrouped_calls(backward):
    counts = [96, 0, 256, 33, 128]  # 33: not a multiple of 32, not comparable ungrouped
    t, k = sum(counts), 160
    inp = torch.randn(t, 2 * k, device=DEV).to(BF16)
    grad = torch.randn(t, k, device=DEV).to(BF16)
    offs = counts_to_offs(counts)
    g = (ct.swiglu_grouped_backward(inp, grad, offs, "mxfp8", "both") if backward
         else ct.swiglu_grouped(inp, offs, "mxfp8", "both"))
    o = g.out_cols
    row_cp, col_rp = (o // 32 + 3) // 4 * 4, (o + 127) // 128 * 128
    c = p = 0
    for n in counts:
        if n and n % 32 == 0:
            u = (ct.swiglu_mxfp8_backward(inp[c:c + n], grad[c:c + n], "both") if backward
                 else ct.swiglu_mxfp8(inp[c:c + n], "both"))
            assert bytes_equal(g.row_q[c:c + n], u.row_q)
            assert bytes_equal(g.row_s.view(-1)[p * row_cp:p * row_cp + u.row_s.numel()], u.row_s)
            assert bytes_equal(g.col_q[:, c:c + n], u.col_q)
            at = col_rp * p // 32
            assert bytes_equal(g.col_s.view(-1)[at:at + u.col_s.numel()], u.col_s)
        c += n
        p += -(-n // 128) * 128


def test_fake_shapes_are_the_real_ones():
    from torch._subclasses.fake_tensor import FakeTensorMode

    t, k = 777, 256
    inp = torch.randn(t, 2 * k, device=DEV).to(BF16)
    offs = counts_to_offs([100, 0, 600])
    for fmt in ("mxfp8", "fp8_blockwise"):
        real = torch.ops.cake.swiglu_grouped_fwd(inp, offs, 2 if fmt == "mxfp8" else 1, 3)
        with FakeTensorMode(allow_non_fake_inputs=False) as mode:
            fi, fo = mode.from_tensor(inp), mode.from_tensor(offs)
            fake = torch.ops.cake.swiglu_grouped_fwd(fi, fo, 2 if fmt == "mxfp8" else 1, 3)
        for r, f in zip(real, fake):
            assert r.shape == f.shape and r.dtype == f.dtype, fmt


def test_status_and_graph_replay_with_new_offsets():
    t, k = 1000, 256
    inp = torch.randn(t, 2 * k, device=DEV).to(BF16)
    offs = counts_to_offs([300, 300, 400])
    ct.swiglu_grouped(inp, offs, "fp8_blockwise", "both")  # eager first (module load)
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        g = ct.swiglu_grouped(inp, offs, "fp8_blockwise", "both")
    for counts, status in (([10, 990, 0], 0), ([500, 0, 499], 0), ([600, 399, 0], 0)):
        offs.copy_(counts_to_offs(counts))
        graph.replay()
        torch.cuda.synchronize()
        assert int(g.status.item()) == status
        eager = ct.swiglu_grouped(inp, offs, "fp8_blockwise", "both")
        # The bytes the spec writes: every expert's slices (the scale gaps are left unwritten).
        host = offs.tolist()
        for va, vb in zip(ct.fp8_expert_views(g, host), ct.fp8_expert_views(eager, host)):
            for a, b in zip(va, vb):
                assert bytes_equal(a, b), counts
    offs.copy_(torch.tensor([400, 100, 5000], device=DEV, dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    assert int(g.status.item()) == int(cake.GroupedOffsetsStatus.DECREASING |
                                       cake.GroupedOffsetsStatus.PAST_TOKENS)


def test_fp8_per_expert_scaled_mm_against_bf16():
    ScalingType = F.ScalingType

    counts, k, n_out = [256, 0, 384, 128], 1024, 512
    t = sum(counts)
    inp = (torch.randn(t, 2 * k, device=DEV) * 2).to(BF16)
    offs = counts_to_offs(counts)
    g = ct.swiglu_grouped(inp, offs, "fp8_blockwise")
    worst = 0.0
    c = 0
    for n, v in zip(counts, ct.fp8_expert_views(g, offs.tolist())):
        if n:
            # b^T [n_out, k] row-major, 1x128 along k, scales [n_out, k/128] MN-major.
            w = (torch.randn(n_out, k, device=DEV) / k ** 0.5).to(BF16)
            wq, ws = ct.quantize_fp8_blockwise(w)
            y = F.scaled_mm(v.row_q, wq.t(), v.row_s, ScalingType.BlockWise1x128,
                            ws.t().contiguous().t(), ScalingType.BlockWise1x128,
                            output_dtype=BF16)
            h = inp[c:c + n].float()
            ref = (F.silu(h[:, :k]) * h[:, k:]).to(BF16).float() @ w.float().t()
            err = float((y.float() - ref).norm() / ref.norm())
            worst = max(worst, err)
            assert err < 0.08, (n, err)
        c += n
    ERRORS["fp8 per-expert scaled_mm vs bf16"] = worst
