"""cake_jax's grouped SwiGLU on the GPU, both formats and all six forms: every byte the spec
writes (docs/spec/swiglu-grouped.md) equal to the C library's call on the same device buffers
(libcake through the cake package, on poisoned outputs), on random uneven expert sizes with 0,
1, 31, 33, 127, 129 tokens and rows of no expert; one jitted function run with new offsets and
no retrace; the variants (clamped, weighted: the C call with the same variant, dprob bit for
bit); the status word of invalid offsets; vmap against per-element calls; and the
custom_vjp: y the dequantized forward, its gradient the dequantized grouped backward, both
within FP8 E4M3's rounding of the float64 model. Skips without jax, the shim, a GPU or the op."""

import ctypes

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
try:
    import cake_jax
except Exception as e:  # noqa: BLE001 - the shim not built, or libcake.so missing
    pytest.skip(f"cake_jax unavailable: {e}", allow_module_level=True)
if not any(d.platform == "gpu" for d in jax.devices()):
    pytest.skip("no GPU visible to JAX: cake_jax GPU tests skipped", allow_module_level=True)

import numpy as np  # noqa: E402

import cake  # noqa: E402
from conftest import require_op  # noqa: E402
from reference_np import rel_l2, swiglu_y64  # noqa: E402

GPU = [d for d in jax.devices() if d.platform == "gpu"][0]
COUNTS = [0, 1, 31, 33, 127, 129, 256, 64, 0, 200]
SPARE = 7  # rows past the last offset: no expert's
FORMS = [(b, o) for b in (False, True) for o in ("rowwise", "colwise", "both")]


@pytest.fixture(autouse=True)
def _needs():
    for op in ("swiglu_mxfp8_grouped_fwd", "swiglu_mxfp8_grouped_bwd", "swiglu_fp8_grouped_fwd",
               "swiglu_fp8_grouped_bwd"):
        require_op(op)


@pytest.fixture(scope="module")
def handle():
    with cake.Handle(GPU.local_hardware_id) as h:
        yield h


def _cu(name, *args):
    status = getattr(_libcuda(), name)(*args)
    assert status == 0, f"{name}: CUresult {status}"


_CUDA = []


def _libcuda():
    if not _CUDA:
        _CUDA.append(ctypes.CDLL("libcuda.so.1"))
    return _CUDA[0]


def device_sync():
    """cuCtxSynchronize on the device's primary context (the one JAX and Cake use)."""
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    _cu("cuDeviceGet", ctypes.byref(dev), GPU.local_hardware_id)
    _cu("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
    _cu("cuCtxPushCurrent_v2", ctx)
    _cu("cuCtxSynchronize")
    _cu("cuCtxPopCurrent_v2", ctypes.byref(ctx))
    _cu("cuDevicePrimaryCtxRelease_v2", dev)


def bits(a):
    return np.asarray(jax.device_get(a)).reshape(-1).view(np.uint8)


def poison(nbytes, value):
    """Fill and free device memory so that the next results land on poisoned bytes (XLA's
    allocator reuses the freed blocks)."""
    jax.block_until_ready(jnp.full((nbytes,), value, jnp.uint8)).delete()


def offs_of(counts):
    return jnp.asarray(np.cumsum(counts), jnp.int32)


def inputs(t, k, seed):
    """Random BF16 in [T, 2k] and grad [T, k] without exact zeros."""
    ki, kg = jax.random.split(jax.random.key(seed))
    inp = 2 * jax.random.normal(ki, (t, 2 * k), jnp.float32)
    grad = jax.random.normal(kg, (t, k), jnp.float32)
    return (jnp.where(inp == 0, 0.5, inp).astype(jnp.bfloat16),
            jnp.where(grad == 0, 0.25, grad).astype(jnp.bfloat16))


def written(fmt, counts, t, k, backward):
    """Byte masks of row_q, row_s, col_q, col_s: the bytes the spec says the call writes."""
    s = cake.swiglu_grouped_expected_sizes(t, k, len(counts), backward, fmt)
    o, end = s.out_cols, sum(counts)
    p = np.concatenate([[0], np.cumsum([-(-n // 128) * 128 for n in counts])])
    masks = [np.zeros(n, bool) for n in (s.q_bytes, s.row_s_bytes, s.q_bytes, s.col_s_bytes)]
    masks[0][:end * o] = True
    if fmt == "mxfp8":
        masks[1][:p[-1] * ((o + 127) // 128 * 4)] = True
        masks[2].reshape(o, t)[:, :end] = True
        masks[3][:(o + 127) // 128 * 128 * p[-1] // 32] = True
    else:
        for n, pe in zip(counts, p):
            masks[1][4 * pe * (o // 128):4 * (pe + n) * (o // 128)] = True
        masks[2][:end * o] = True
        masks[3][:4 * (p[-1] // 128) * o] = True
    return masks


def c_library(handle, fmt, orient, backward, inp, grad, offs, rule="exact", poison_byte=0xA5,
              variant=None):
    """The C call on the same device buffers: (row_q, row_s, col_q, col_s bytes, status), and
    with @p variant (activation, alpha, limit, prob or None) set in the descriptor, a weighted
    backward's dprob bytes last."""
    t, k = inp.shape[0], inp.shape[1] // 2
    e = offs.shape[0]
    s = cake.swiglu_grouped_buffer_sizes(t, k, e, backward, fmt)
    row, col = orient != "colwise", orient != "rowwise"
    bufs = [jnp.full((n,), poison_byte, jnp.uint8) if keep else None
            for n, keep in ((s.q_bytes, row), (s.row_s_bytes, row), (s.q_bytes, col),
                            (s.col_s_bytes, col))]
    status = jnp.full((1,), -7, jnp.int32)
    jax.block_until_ready([b for b in bufs if b is not None] + [status, inp, grad, offs])
    ptr = lambda a: None if a is None else a.unsafe_buffer_pointer()  # noqa: E731
    if fmt == "mxfp8":
        desc = cake.swiglu_mxfp8_grouped_desc(t, k, e, orient)
    else:
        desc = cake.swiglu_fp8_grouped_desc(t, k, e, orient, rule)
    outs = [ptr(b) for b in bufs] + [ptr(status)]
    dprob = None
    if variant is not None:
        act, alpha, limit, prob = variant
        desc.variant.activation, desc.variant.alpha, desc.variant.limit = act, alpha, limit
        if prob is not None:
            desc.variant.weighted = 1
            desc.variant.p = ptr(jax.block_until_ready(prob))
            if backward:
                dprob = jax.block_until_ready(jnp.full((t,), np.nan, jnp.float32))
                desc.variant.dp = ptr(dprob)
    if backward:
        handle.swiglu_grouped_backward(desc, ptr(inp), ptr(grad), ptr(offs), *outs)
    else:
        handle.swiglu_grouped_forward(desc, ptr(inp), ptr(offs), *outs)
    device_sync()
    out = [None if b is None else bits(b) for b in bufs], int(np.asarray(status)[0])
    return out if dprob is None else out + (bits(dprob),)


def run_jax(fmt, orient, backward, inp, grad, offs, rule="exact", **variant):
    if backward:
        return cake_jax.swiglu_grouped_backward(inp, grad, offs, fmt, orient, rule, **variant)
    return cake_jax.swiglu_grouped(inp, offs, fmt, orient, rule, **variant)


def assert_same_written(g, ref, masks, what):
    for name, got, want, mask in zip(("row_q", "row_s", "col_q", "col_s"), g[:4], ref, masks):
        assert (got is None) == (want is None), (what, name)
        if got is not None:
            b = bits(got)
            assert b.size == mask.size, (what, name, b.size, mask.size)
            bad = np.flatnonzero((b != want) & mask)
            assert bad.size == 0, f"{what} {name}: {bad.size} bytes differ, first at {bad[:4]}"


@pytest.mark.parametrize("fmt,k", [("mxfp8", 256), ("mxfp8", 160), ("fp8_blockwise", 256)])
@pytest.mark.parametrize("backward,orient", FORMS)
def test_bytes_equal_the_c_library(handle, fmt, k, backward, orient):
    t = sum(COUNTS) + SPARE
    inp, grad = inputs(t, k, seed=k + 2 * backward + len(orient))
    offs = offs_of(COUNTS)
    ref, ref_status = c_library(handle, fmt, orient, backward, inp, grad, offs)
    poison(4 * t * 2 * k, 0x5A)
    g = jax.jit(lambda a, d, o: run_jax(fmt, orient, backward, a, d, o))(inp, grad, offs)
    assert ref_status == 0 and int(g.status[0]) == 0
    assert_same_written(g, ref, written(fmt, COUNTS, t, k, backward), (fmt, orient, backward))


# The variants (docs/spec/swiglu-mxfp8.md, "Variants"): (activation, alpha, limit, weighted).
VARIANTS = [("clamped", 1.702, 7.0, False), ("silu", 1.702, 7.0, True), ("clamped", 1.25, 2.5, True)]


@pytest.mark.parametrize("fmt,k", [("mxfp8", 256), ("fp8_blockwise", 256)])
@pytest.mark.parametrize("backward,orient", [(False, "both"), (True, "both"), (True, "colwise")])
@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_bytes_equal_the_c_library(handle, fmt, k, backward, orient, variant):
    # The JAX options reach the kernel: the C call with the same variant in its descriptor
    # writes the same bytes, and a weighted backward's dprob the same bits on every expert row.
    t = sum(COUNTS) + SPARE
    inp, grad = inputs(t, k, seed=17 + k + 2 * backward + len(orient))
    offs = offs_of(COUNTS)
    activation, alpha, limit, weighted = variant
    prob = jax.random.uniform(jax.random.key(t), (t,), jnp.float32, 0.05, 1.0) if weighted \
        else None
    act = {"silu": 0, "clamped": 1}[activation]
    ref = c_library(handle, fmt, orient, backward, inp, grad, offs,
                    variant=(act, alpha, limit, prob))
    poison(4 * t * 2 * k, 0x5A)
    kw = dict(activation=activation, alpha=alpha, limit=limit, prob=prob)
    got = jax.jit(lambda a, d, o, p: run_jax(fmt, orient, backward, a, d, o,
                                             **dict(kw, prob=p)))(inp, grad, offs, prob)
    g, dprob = got if weighted and backward else (got, None)
    assert ref[1] == 0 and int(g.status[0]) == 0
    assert_same_written(g, ref[0], written(fmt, COUNTS, t, k, backward),
                        (fmt, orient, backward, variant))
    if dprob is not None:
        end = sum(COUNTS)
        assert dprob.shape == (t,) and dprob.dtype == jnp.float32
        assert np.array_equal(bits(dprob)[:4 * end], ref[2][:4 * end]), "dprob"
        assert np.all(np.asarray(dprob)[end:] == 0.0)  # tokens of no expert
    # The plain call differs: the variant is not dropped on the way.
    plain = run_jax(fmt, orient, backward, inp, grad, offs)
    first = next(a for a in (plain.row_q, plain.col_q) if a is not None)
    mine = next(a for a in (g.row_q, g.col_q) if a is not None)
    assert not np.array_equal(bits(first), bits(mine))


@pytest.mark.parametrize("backward", [False, True])
def test_fp8_pow2_rule_bytes_equal_the_c_library(handle, backward):
    t, k = sum(COUNTS) + SPARE, 384
    inp, grad = inputs(t, k, seed=11)
    offs = offs_of(COUNTS)
    ref, _ = c_library(handle, "fp8_blockwise", "both", backward, inp, grad, offs, "pow2")
    g = run_jax("fp8_blockwise", "both", backward, inp, grad, offs, "pow2")
    assert_same_written(g, ref, written("fp8_blockwise", COUNTS, t, k, backward), "pow2")


def test_one_trace_serves_every_split(handle):
    t, k = 1024, 256
    inp, grad = inputs(t, k, seed=3)
    traces = []

    @jax.jit
    def f(a, o):
        traces.append(1)  # runs once per trace, not per call
        return cake_jax.swiglu_grouped(a, o, "fp8_blockwise", "both")

    for counts in ([1024, 0, 0, 0], [1, 31, 33, 959], [129, 0, 127, 700], [0, 0, 0, 5]):
        offs = offs_of(counts)
        g = f(inp, offs)
        ref, _ = c_library(handle, "fp8_blockwise", "both", False, inp, grad, offs)
        assert_same_written(g, ref, written("fp8_blockwise", counts, t, k, False), counts)
    assert len(traces) == 1


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
def test_status_of_invalid_offsets(handle, fmt):
    t, k = 512, 128
    inp, grad = inputs(t, k, seed=5)
    offs = jnp.asarray([300, 100, 5000], jnp.int32)  # decreasing, then past T
    g = cake_jax.swiglu_grouped(inp, offs, fmt, "both")
    _, ref_status = c_library(handle, fmt, "both", False, inp, grad, offs)
    want = int(cake.GroupedOffsetsStatus.DECREASING | cake.GroupedOffsetsStatus.PAST_TOKENS)
    assert int(g.status[0]) == want == ref_status
    # The effective offsets {300, 300, 512}: expert 2 runs to T.
    y = cake_jax.dequantize_grouped(g, offs, fmt)
    assert bool((jnp.abs(y[300:]).sum(1) > 0).all())


def test_vmap_equals_per_element_calls():
    t, k = 640, 128
    a0, _ = inputs(t, k, seed=6)
    a1, _ = inputs(t, k, seed=7)
    offs = jnp.stack([offs_of([100, 0, 540]), offs_of([33, 129, 1])])
    inp = jnp.stack([a0, a1])
    f = lambda a, o: cake_jax.swiglu_grouped(a, o, "mxfp8", "both")  # noqa: E731
    batched = jax.vmap(f)(inp, offs)
    for i, counts in enumerate(([100, 0, 540], [33, 129, 1])):
        one = f(inp[i], offs[i])
        masks = written("mxfp8", counts, t, k, False)
        for got, want, mask in zip(batched[:4], one[:4], masks):
            assert (bits(got[i]) == bits(want))[mask].all()


@pytest.mark.parametrize("fmt", ["mxfp8", "fp8_blockwise"])
@pytest.mark.parametrize("orient,bwd_orient", [("rowwise", "rowwise"), ("both", "colwise")])
def test_qdq_value_and_gradient(fmt, orient, bwd_orient):
    t, k = sum(COUNTS) + SPARE, 256
    inp, w = inputs(t, k, seed=9)
    offs = offs_of(COUNTS)

    def loss(a):
        y, _ = cake_jax.swiglu_grouped_qdq(a, offs, fmt, orient, bwd_orient)
        return (y.astype(jnp.float32) * w.astype(jnp.float32)).sum()

    y, g = jax.jit(lambda a: cake_jax.swiglu_grouped_qdq(a, offs, fmt, orient, bwd_orient))(inp)
    d = jax.jit(jax.grad(loss))(inp)
    # y: the forward's outputs dequantized, bit for bit.
    want_y = cake_jax.dequantize_grouped(g, offs, fmt, colwise=orient == "colwise",
                                         out_cols=k).astype(jnp.bfloat16)
    assert (bits(y) == bits(want_y)).all()
    # The gradient: the grouped backward of (in, dy = w) dequantized, bit for bit.
    gb = cake_jax.swiglu_grouped_backward(inp, w, offs, fmt, bwd_orient)
    want_d = cake_jax.dequantize_grouped(gb, offs, fmt, colwise=bwd_orient == "colwise",
                                         out_cols=2 * k).astype(jnp.bfloat16)
    assert (bits(d) == bits(want_d)).all()
    # Both within E4M3's rounding (3 mantissa bits: at most 2^-4 relative per element, about
    # 2^-4 / sqrt(3) = 3.6% relative L2 for values spread over binades) of the float64 model;
    # rows of no expert are 0.
    end = sum(COUNTS)
    y64 = swiglu_y64(np.asarray(inp)[:end])
    d64 = swiglu_y64(np.asarray(inp)[:end], np.asarray(w)[:end])
    assert rel_l2(np.asarray(y)[:end], y64) < 0.05
    assert rel_l2(np.asarray(d)[:end], d64) < 0.05
    assert (np.asarray(y)[end:] == 0).all() and (np.asarray(d)[end:] == 0).all()
