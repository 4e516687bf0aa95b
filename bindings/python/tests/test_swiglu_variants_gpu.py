"""The SwiGLU variants through cake.torch on the GPU (docs/spec/swiglu-mxfp8.md, "Variants"):
both activations, weighted and not, both formats, ungrouped and grouped, against a float64
autograd of the formulas: swiglu_dequantized's forward and its gradients of in and prob
(prob.grad is the backward's dprob), and the grouped backward's dprob and bytes against the
ungrouped call on each expert's rows. Fresh random inputs each run (normals times 4: gates and
ups beyond the clamp limit). The ops allocate their outputs (nothing to poison); dprob is
checked finite and equal to the reference on every row. Skips without a GPU."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device: SwiGLU variant GPU tests skipped", allow_module_level=True)

import cake.torch as ct  # noqa: E402
from conftest import require_symbols  # noqa: E402
from reference import rel_l2, swiglu_variant64  # noqa: E402

DEV = torch.device("cuda", 0)
BF16, F32 = torch.bfloat16, torch.float32
NEEDS = ("cake_swiglu_mxfp8_forward", "cake_swiglu_fp8_forward", "cake_swiglu_fp8_backward")
#: One E4M3 rounding (3 mantissa bits) of every value, in relative L2 over a tensor.
QUANT_REL = 0.04


def inputs(m, k, prob_shape):
    inp = (torch.randn(m, 2 * k, device=DEV) * 4).to(BF16)
    dy = torch.randn(m, k, device=DEV)
    prob = None if prob_shape is None else torch.rand(*prob_shape, device=DEV)
    return inp, dy, prob


def check_dprob(got, want64):
    assert bool(torch.isfinite(got).all()), "dprob: a value not finite (or left unwritten)"
    # An FP32 sum of FP32 products: far inside 1e-4 of the row's scale.
    scale = want64.abs().amax().clamp_min(1.0)
    err = (got.double() - want64).abs().amax().item()
    assert err <= 1e-4 * scale.item(), f"dprob: max error {err:.3e}"


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
@pytest.mark.parametrize("activation", ["silu", "clamped"])
@pytest.mark.parametrize("prob_shape", [None, (256,), (256, 1)])
def test_dequantized_forward_and_gradients(fmt, activation, prob_shape):
    require_symbols(*NEEDS)
    inp, dy, prob = inputs(256, 256, prob_shape)
    x = inp.clone().requires_grad_()
    p = None if prob is None else prob.clone().requires_grad_()
    y = ct.swiglu_dequantized(x, fmt, activation=activation, prob=p)
    y.backward(dy)
    # The kernel's grad is dy rounded to BF16.
    y64, dx64, dp64 = swiglu_variant64(inp, dy.to(BF16), activation, prob=prob)
    assert rel_l2(y, y64) <= QUANT_REL, f"y: {rel_l2(y, y64):.3e}"
    assert rel_l2(x.grad, dx64) <= QUANT_REL, f"dinp: {rel_l2(x.grad, dx64):.3e}"
    if prob is not None:
        assert p.grad.shape == prob.shape
        check_dprob(p.grad.reshape(-1), dp64)
    # A plain call and its variant twin differ (the options reach the kernel).
    if activation == "clamped" or prob is not None:
        plain = ct.swiglu_dequantized(inp, fmt)
        assert not torch.equal(plain, y.detach())


@pytest.mark.parametrize("activation", ["silu", "clamped"])
def test_backward_ops_return_dprob(activation):
    require_symbols(*NEEDS)
    inp, dy, prob = inputs(256, 256, (256,))
    grad = dy.to(BF16)
    _, _, dp64 = swiglu_variant64(inp, grad, activation, prob=prob)
    q, dp = ct.swiglu_mxfp8_backward(inp, grad, "both", activation=activation, prob=prob)
    check_dprob(dp, dp64)
    q8, dp8 = ct.swiglu_fp8_backward(inp, grad, "both", activation=activation, prob=prob)
    # The bits depend on the inputs alone: both families give the same dprob.
    assert torch.equal(dp, dp8)


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
@pytest.mark.parametrize("activation", ["silu", "clamped"])
def test_grouped_weighted_matches_ungrouped_per_expert(fmt, activation):
    require_symbols("cake_swiglu_mxfp8_grouped_backward", "cake_swiglu_fp8_grouped_backward")
    counts = [128, 0, 256, 128]  # whole 128-row blocks: the ungrouped MXFP8 call's rule too
    t = sum(counts) + 64  # 64 tokens of no expert
    inp, dy, prob = inputs(t, 256, (t,))
    grad = dy.to(BF16)
    offs = torch.tensor(counts, device=DEV).cumsum(0).to(torch.int32)
    g, dp = ct.swiglu_grouped_backward(inp, grad, offs, fmt, "rowwise", activation=activation,
                                       prob=prob)
    _, _, dp64 = swiglu_variant64(inp, grad, activation, prob=prob)
    end = sum(counts)
    check_dprob(dp[:end], dp64[:end])
    assert bool((dp[end:] == 0).all()), "dprob of tokens of no expert: 0"
    fwd = ct.swiglu_grouped(inp, offs, fmt, "rowwise", activation=activation, prob=prob)
    c = 0
    for n in counts:
        if n:
            rows = slice(c, c + n)
            one = (ct.swiglu_mxfp8(inp[rows], "rowwise", activation=activation,
                                   prob=prob[rows]) if fmt == "mxfp8" else
                   ct.swiglu_fp8(inp[rows], "rowwise", activation=activation, prob=prob[rows]))
            assert torch.equal(fwd.row_q[rows].view(torch.uint8), one.row_q.view(torch.uint8))
        c += n
