"""The DTensor sharding rules of the cake:: operators (cake.torch.sharding), on the host:

- on a fake process group (torch.testing's FakeStore, world size 4, and a 2x2 mesh) with fake
  tensors: which placements come out, and that CommDebugMode counts no collective for
  row-sharded inputs, forward and backward;
- on a real gloo group of two processes, with the operators' CPU kernels replaced by float64
  references (Cake's kernels are CUDA-only): that the values of the sharded programs, gathered
  with full_tensor(), are the unsharded ones, including the SwiGLU + MXFP8 scale layouts and a
  Partial main_grad.

CPU torch only; skipped without torch.distributed."""


import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available", allow_module_level=True)

import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard  # noqa: E402
from torch.distributed.tensor.debug import CommDebugMode  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import cake.torch as ct  # noqa: E402
from cake.torch import sharding  # noqa: E402
from conftest import PYTHON_DIR  # noqa: E402

BF16, F32 = torch.bfloat16, torch.float32
WORLD = 4


def test_every_operator_has_a_rule():
    assert set(sharding.registered()) == {
        "cake::normgate_fwd", "cake::normgate_bwd", "cake::normgate_bwd_accumulate",
        "cake::swiglu_mxfp8_fwd", "cake::swiglu_mxfp8_bwd", "cake::swiglu_fp8_fwd",
        "cake::swiglu_fp8_bwd", "cake::swiglu_grouped_fwd", "cake::swiglu_grouped_bwd",
        "cake::normgate_fwd_quant"}


def test_rules_register_when_dtensor_is_imported_later():
    # cake.torch first, DTensor later: the rules are registered by that later import.
    import subprocess
    import sys

    code = ("import sys, cake.torch\n"
            "from cake.torch import sharding\n"
            "assert 'torch.distributed.tensor' not in sys.modules\n"
            "assert sharding.registered() == []\n"
            "import torch.distributed.tensor\n"
            "print(len(sharding.registered()))\n")
    import os

    here = None if os.environ.get("CAKE_TEST_INSTALLED") == "1" else str(PYTHON_DIR)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=here,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "10"


@pytest.fixture(scope="module")
def fake_group():
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    yield
    dist.destroy_process_group()


@pytest.fixture
def mesh(fake_group):
    return init_device_mesh("cpu", (WORLD,))


@pytest.fixture
def mesh2(fake_group):
    return init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "sp"))


def dt(local, mesh, placements, grad=False):
    out = DTensor.from_local(local, mesh, placements, run_check=False)
    return out.requires_grad_() if grad else out


def counts(mode):
    return dict(mode.get_comm_counts())


# ---- norm-gate -------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("gated", [True, False])
def test_normgate_rows_sharded_run_locally(mesh, dim, gated):
    with FakeTensorMode():
        x = dt(torch.empty(2, 3, 4, 64, dtype=BF16), mesh, [Shard(dim)], grad=True)
        z = dt(torch.empty(2, 3, 4, 64, dtype=BF16), mesh, [Shard(dim)], grad=True) \
            if gated else None
        w = dt(torch.empty(64, dtype=BF16), mesh, [Replicate()], grad=True)
        with CommDebugMode() as comm:
            y = ct.normgate(x, z, w)
            y.backward(torch.ones_like(y))
        assert counts(comm) == {}
        assert y.placements == (Shard(dim),) and y.shape == x.shape
        assert x.grad.placements == (Shard(dim),)
        if gated:
            assert z.grad.placements == (Shard(dim),)
        assert w.grad.placements == (Partial("sum"),)


@pytest.mark.parametrize("dw_dtype", [None, torch.float32])
def test_normgate_dw_is_partial_in_its_dtype(mesh, dw_dtype):
    with FakeTensorMode():
        x = dt(torch.empty(8, 64, dtype=BF16), mesh, [Shard(0)])
        w = dt(torch.empty(64, dtype=BF16), mesh, [Replicate()])
        mode = -1 if dw_dtype is None else 2
        with CommDebugMode() as comm:
            dx, dz, dw = torch.ops.cake.normgate_bwd(x, x, x, w, 1e-6, 0, False, 0, True, mode)
        assert counts(comm) == {}
        assert dw.placements == (Partial("sum"),) and dw.dtype == (dw_dtype or BF16)
        assert dx.placements == (Shard(0),) and dz.placements == (Shard(0),)
        # A skipped dw is an empty placeholder, not a partial sum.
        dx, dz, dw = torch.ops.cake.normgate_bwd(x, x, None, w, 1e-6, 2, False, 0, True, 0)
        assert dw.placements == (Replicate(),) and dz.placements == (Replicate(),)


def test_normgate_replicated_stays_replicated(mesh):
    with FakeTensorMode():
        x = dt(torch.empty(8, 64, dtype=BF16), mesh, [Replicate()], grad=True)
        w = dt(torch.empty(64, dtype=BF16), mesh, [Replicate()], grad=True)
        with CommDebugMode() as comm:
            y = ct.normgate(x, x, w)
            y.backward(torch.ones_like(y))
        assert counts(comm) == {}
        assert y.placements == (Replicate(),) and w.grad.placements == (Replicate(),)


def test_normgate_column_sharded_input_is_gathered_to_replicated_columns(mesh):
    # The columns are one row's: a column-sharded x is redistributed (Cake never computes on
    # part of a row).
    with FakeTensorMode():
        x = dt(torch.empty(8, 64 // WORLD, dtype=BF16), mesh, [Shard(1)])
        w = dt(torch.empty(64, dtype=BF16), mesh, [Replicate()])
        with CommDebugMode() as comm:
            y = ct.normgate(x, x, w)
        assert sum(counts(comm).values()) > 0
        assert y.placements != (Shard(1),)


@pytest.mark.parametrize("placements", [(Shard(0), Shard(0)), (Shard(0), Shard(1)),
                                        (Replicate(), Shard(1))])
def test_normgate_on_a_2d_mesh(mesh2, placements):
    with FakeTensorMode():
        x = dt(torch.empty(4, 8, 64, dtype=BF16), mesh2, list(placements), grad=True)
        w = dt(torch.empty(64, dtype=F32), mesh2, [Replicate(), Replicate()], grad=True)
        with CommDebugMode() as comm:
            y = ct.normgate(x, x, w)
            y.backward(torch.ones_like(y))
        assert counts(comm) == {}
        assert y.placements == placements
        assert w.grad.placements == tuple(Replicate() if p == Replicate() else Partial("sum")
                                          for p in placements)


def test_main_grad_partial_is_accumulated_in_place(mesh):
    with FakeTensorMode():
        x = dt(torch.empty(8, 64, dtype=BF16), mesh, [Shard(0)], grad=True)
        w = dt(torch.empty(64, dtype=BF16), mesh, [Replicate()], grad=True)
        mg = dt(torch.zeros(64, dtype=F32), mesh, [Partial()])
        with CommDebugMode() as comm:
            y = ct.normgate(x, x, w, main_grad=mg)
            y.backward(torch.ones_like(y))
        assert counts(comm) == {}
        assert mg.placements == (Partial("sum"),) and w.grad is None


def test_main_grad_mixed_placements_are_refused(mesh2):
    with FakeTensorMode():
        x = dt(torch.empty(8, 64, dtype=BF16), mesh2, [Shard(0), Shard(0)])
        w = dt(torch.empty(64, dtype=BF16), mesh2, [Replicate(), Replicate()])
        mg = dt(torch.zeros(64, dtype=F32), mesh2, [Partial(), Replicate()])
        with pytest.raises(RuntimeError, match="one placement on every mesh dimension"):
            torch.ops.cake.normgate_bwd_accumulate(x, x, x, w, mg, 1e-6, 0, False, 0, True)


# ---- SwiGLU + MXFP8 and + FP8 blockwise -------------------------------------------------------
# Per family: the operators, and the placements of row_s and (its shape) of col_s.
SWIGLU_FAMILIES = {
    "mxfp8": ("swiglu_mxfp8_fwd", "swiglu_mxfp8_bwd", Shard(0), None),
    "fp8": ("swiglu_fp8_fwd", "swiglu_fp8_bwd", Shard(1), lambda m, o: (m // 128, o)),
}


@pytest.mark.parametrize("family", sorted(SWIGLU_FAMILIES))
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("orient", [1, 2, 3])
def test_swiglu_rows_sharded_run_locally(mesh, family, orient, backward):
    fwd, bwd, row_s, col_s_shape = SWIGLU_FAMILIES[family]
    m, k = 128 * WORLD * 2, 256
    o = 2 * k if backward else k
    with FakeTensorMode():
        inp = dt(torch.empty(m // WORLD, 2 * k, dtype=BF16), mesh, [Shard(0)])
        with CommDebugMode() as comm:
            if backward:
                grad = dt(torch.empty(m // WORLD, k, dtype=BF16), mesh, [Shard(0)])
                rq, rs, cq, cs, dp = getattr(torch.ops.cake, bwd)(inp, grad, orient)
                assert dp.placements == (Replicate(),)  # unweighted: empty
            else:
                rq, rs, cq, cs = getattr(torch.ops.cake, fwd)(inp, orient)
        assert counts(comm) == {}
        if orient & 1:
            assert rq.placements == (Shard(0),) and rs.placements == (row_s,)
            assert rq.shape == (m, o)
        if orient & 2:
            assert cq.placements == (Shard(1),) and cq.shape == (o, m)
            assert cs.placements == (Shard(0),)
            if col_s_shape is not None:
                assert cs.shape == col_s_shape(m, o)


@pytest.mark.parametrize("backward", [False, True])
def test_swiglu_prob_is_sharded_with_the_rows(mesh, backward):
    m, k = 128 * WORLD, 256
    with FakeTensorMode():
        inp = dt(torch.empty(m // WORLD, 2 * k, dtype=BF16), mesh, [Shard(0)])
        prob = dt(torch.empty(m // WORLD, dtype=F32), mesh, [Shard(0)])
        with CommDebugMode() as comm:
            if backward:
                grad = dt(torch.empty(m // WORLD, k, dtype=BF16), mesh, [Shard(0)])
                out = torch.ops.cake.swiglu_mxfp8_bwd(inp, grad, 3, None, 1, 1.702, 7.0, prob)
                assert out[4].placements == (Shard(0),) and out[4].shape == (m,)
            else:
                out = torch.ops.cake.swiglu_mxfp8_fwd(inp, 3, None, 1, 1.702, 7.0, prob)
        assert counts(comm) == {}
        assert out[0].placements == (Shard(0),)
        # A replicated prob with sharded rows is redistributed to the rows (no gather of in).
        rep = dt(torch.empty(m, dtype=F32), mesh, [Replicate()])
        out = torch.ops.cake.swiglu_mxfp8_fwd(inp, 1, None, 0, 1.702, 7.0, rep)
        assert out[0].placements == (Shard(0),)


def test_swiglu_rows_not_in_whole_tiles_per_shard_are_replicated(mesh):
    # 256 rows over 4 ranks: 64 per rank, not a multiple of the 128-row scale tile.
    with FakeTensorMode():
        inp = dt(torch.empty(64, 512, dtype=BF16), mesh, [Shard(0)])
        rq, rs, cq, cs = torch.ops.cake.swiglu_mxfp8_fwd(inp, 1)
        assert rq.placements == (Replicate(),)


def test_swiglu_on_a_2d_mesh(mesh2):
    with FakeTensorMode():
        inp = dt(torch.empty(256, 512, dtype=BF16), mesh2, [Shard(0), Replicate()])
        with CommDebugMode() as comm:
            rq, rs, cq, cs = torch.ops.cake.swiglu_mxfp8_fwd(inp, 3)
        assert counts(comm) == {}
        assert rq.placements == (Shard(0), Replicate()) and rs.placements == rq.placements
        assert cq.placements == (Shard(1), Replicate()) and cs.placements == rq.placements


def test_colwise_scales_to_global_is_a_tile_permutation():
    # Two shards of m = 256 rows, o = 256: the global layout interleaves the shards' tiles
    # within each 128-row tile of o.
    o, m, n = 256, 256, 2
    tiles = torch.arange(n * (o // 128) * (m // n // 128)).repeat_interleave(512)
    glob = sharding.colwise_scales_to_global(tiles, o, m, n).reshape(-1, 512)[:, 0]
    # shard-major (shard, o-tile, m-tile) -> global (o-tile, shard, m-tile)
    assert glob.tolist() == [0, 2, 1, 3]
    with pytest.raises(ValueError, match="multiples of 128"):
        sharding.colwise_scales_to_global(tiles, o, 3 * 128, 2)


# ---- SwiGLU + FP8 blockwise, grouped SwiGLU, quantized norm-gate -----------------------------
def test_swiglu_fp8_rowwise_shards_any_rows_colwise_whole_blocks(mesh):
    # 40 rows over 4 ranks: 10 a rank. The rowwise form has one scale a row: sharded; a colwise
    # form's 128-row blocks would straddle the shards: replicated.
    with FakeTensorMode():
        inp = dt(torch.empty(10, 512, dtype=BF16), mesh, [Shard(0)])
        with CommDebugMode() as comm:
            rq, rs, _, _ = torch.ops.cake.swiglu_fp8_fwd(inp, 1)
        assert counts(comm) == {}
        assert rq.placements == (Shard(0),) and rs.placements == (Shard(1),)
        rq, rs, cq, cs = torch.ops.cake.swiglu_fp8_fwd(inp, 3)
        assert rq.placements == (Replicate(),) and cs.placements == (Replicate(),)


def test_swiglu_fp8_prob_is_sharded_with_the_rows(mesh):
    m, k = 128 * WORLD, 256
    with FakeTensorMode():
        inp = dt(torch.empty(m // WORLD, 2 * k, dtype=BF16), mesh, [Shard(0)])
        grad = dt(torch.empty(m // WORLD, k, dtype=BF16), mesh, [Shard(0)])
        prob = dt(torch.empty(m // WORLD, dtype=F32), mesh, [Shard(0)])
        with CommDebugMode() as comm:
            out = torch.ops.cake.swiglu_fp8_bwd(inp, grad, 3, 0, None, 1, 1.702, 7.0, prob)
        assert counts(comm) == {}
        assert out[4].placements == (Shard(0),) and out[4].shape == (m,)


def test_swiglu_grouped_takes_replicated_inputs(mesh):
    # The offsets index the whole token buffer: sharded tokens are gathered, never split.
    t, k = 512, 256
    with FakeTensorMode():
        offs = dt(torch.tensor([128, 384, 512], dtype=torch.int32), mesh, [Replicate()])
        rep = dt(torch.empty(t, 2 * k, dtype=BF16), mesh, [Replicate()])
        with CommDebugMode() as comm:
            out = torch.ops.cake.swiglu_grouped_fwd(rep, offs, 1, 3)
        assert counts(comm) == {}
        assert all(o.placements == (Replicate(),) for o in out)
        sharded = dt(torch.empty(t // WORLD, 2 * k, dtype=BF16), mesh, [Shard(0)])
        grad = dt(torch.empty(t // WORLD, k, dtype=BF16), mesh, [Shard(0)])
        with CommDebugMode() as comm:
            out = torch.ops.cake.swiglu_grouped_bwd(sharded, grad, offs, 2, 1)
        assert sum(counts(comm).values()) > 0
        assert all(o.placements == (Replicate(),) for o in out)


@pytest.mark.parametrize("fmt", [1, 2])
@pytest.mark.parametrize("heads", [0, 2])
def test_normgate_quant_rows_sharded_run_locally(mesh, fmt, heads):
    d = 256
    rows = 128 * WORLD * max(1, heads)
    with FakeTensorMode():
        x = dt(torch.empty(rows // WORLD, d, dtype=BF16), mesh, [Shard(0)])
        w = dt(torch.empty(d, dtype=BF16), mesh, [Replicate()])
        with CommDebugMode() as comm:
            q, s, y = torch.ops.cake.normgate_fwd_quant(x, x, w, fmt, 0, heads, True)
        assert counts(comm) == {}
        assert q.placements == (Shard(0),) and q.shape == (128 * WORLD, max(1, heads) * d)
        assert s.placements == ((Shard(1),) if fmt == 1 else (Shard(0),))
        assert y.placements == (Shard(0),) and y.shape == (rows, d)


def test_normgate_quant_mxfp8_rows_not_in_whole_tiles_are_replicated(mesh):
    with FakeTensorMode():
        x = dt(torch.empty(8, 256, dtype=BF16), mesh, [Shard(0)])
        w = dt(torch.empty(256, dtype=BF16), mesh, [Replicate()])
        q, s, y = torch.ops.cake.normgate_fwd_quant(x, x, w, 2)
        assert q.placements == (Replicate(),)
        q, s, y = torch.ops.cake.normgate_fwd_quant(x, x, w, 1)  # one scale a row: sharded
        assert q.placements == (Shard(0),) and s.placements == (Shard(1),)


# ---- real values on a two-process gloo group ---------------------------------------------------
def _reference_kernels():
    """CPU kernels for the cake:: operators: the norm-gate in float64 (autograd for the
    backward), the SwiGLU + MXFP8 ones as layout probes: every output byte is a function of the
    input row it belongs to, written at the spec's swizzled scale offsets."""
    lib = torch.library.Library("cake", "IMPL")

    def ng64(x, z, w, eps, gate, before, group):
        d = x.shape[-1]
        g = group or d
        h = x.double()
        if z is not None:
            zd = z.double()
            a = torch.sigmoid(zd) * (zd if gate == 0 else 1.0)
            if before:
                h = h * a
        hg = h.reshape(*x.shape[:-1], d // g, g)
        y = (hg * torch.rsqrt(hg.square().mean(-1, keepdim=True) + eps)).reshape(x.shape)
        y = y * w.double()
        if z is not None and not before:
            y = y * a
        return y

    def fwd(x, z, w, eps=1e-6, gate=0, before=False, group=0, det=True, dw_mode=-1, mg=None,
            program=None):
        return ng64(x, z, w, eps, gate, before, group).to(x.dtype)

    def grads(dy, x, z, w, eps, gate, before, group):
        # A kernel runs below autograd (its dispatch keys are excluded on this thread): the
        # float64 autograd runs on a thread of its own.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(_grads, dy, x, z, w, eps, gate, before, group).result()

    def _grads(dy, x, z, w, eps, gate, before, group):
        xs = x.double().requires_grad_()
        zs = None if z is None else z.double().requires_grad_()
        ws = w.double().requires_grad_()
        with torch.enable_grad():
            y = ng64(xs, zs, ws, eps, gate, before, group)
            ins = [t for t in (xs, zs, ws) if t is not None]
            out = torch.autograd.grad(y, ins, dy.double())
        dx, dw = out[0], out[-1]
        dz = out[1] if z is not None else None
        return dx, dz, dw

    def bwd(dy, x, z, w, eps, gate, before, group, det, dw_mode, program=None):
        dx, dz, dw = grads(dy, x, z, w, eps, gate, before, group)
        dwt = {-1: w.dtype, 1: BF16, 2: F32, 3: torch.float16}.get(dw_mode, BF16)
        return (dx.to(x.dtype), x.new_empty(0) if z is None else dz.to(z.dtype),
                w.new_empty(0, dtype=BF16) if dw_mode == 0 else dw.to(dwt))

    def bwd_acc(dy, x, z, w, dw, eps, gate, before, group, det, program=None):
        dx, dz, dwl = grads(dy, x, z, w, eps, gate, before, group)
        dw.add_(dwl.to(dw.dtype))
        return dx.to(x.dtype), x.new_empty(0) if z is None else dz.to(z.dtype)

    lib.impl("normgate_fwd", fwd, "CPU", allow_override=True)
    lib.impl("normgate_bwd", bwd, "CPU", allow_override=True)
    lib.impl("normgate_bwd_accumulate", bwd_acc, "CPU", allow_override=True)
    lib.impl("swiglu_mxfp8_fwd",
             lambda inp, o, p=None, act=0, alpha=0.0, limit=0.0, prob=None:
             swiglu_probe(inp, None, o, prob), "CPU", allow_override=True)
    lib.impl("swiglu_mxfp8_bwd",
             lambda inp, g, o, p=None, act=0, alpha=0.0, limit=0.0, prob=None:
             swiglu_probe(inp, g, o, prob), "CPU", allow_override=True)
    lib.impl("swiglu_fp8_fwd",
             lambda inp, o, rule=0, p=None, act=0, alpha=0.0, limit=0.0, prob=None:
             swiglu_fp8_probe(inp, None, o), "CPU", allow_override=True)
    lib.impl("swiglu_fp8_bwd",
             lambda inp, g, o, rule=0, p=None, act=0, alpha=0.0, limit=0.0, prob=None:
             swiglu_fp8_probe(inp, g, o), "CPU", allow_override=True)
    lib.impl("normgate_fwd_quant", normgate_quant_probe, "CPU", allow_override=True)
    return lib


def swiglu_fp8_probe(inp, grad, orient):
    """The layout probe of one SwiGLU + FP8 blockwise call: every value a function of its row
    (row_s [O/128, M] and col_s [ceil(M/128), O] at their storage places)."""
    m, k2 = inp.shape
    o = k2 if grad is not None else k2 // 2
    vals = inp.float()[:, :o] + (0 if grad is None else 1)
    e4m3 = torch.float8_e4m3fn
    rq = rs = cq = cs = inp.new_empty(0, dtype=e4m3)
    if orient & 1:
        rq = (vals % 64).to(e4m3)
        rs = vals[:, ::128].t().contiguous()
    if orient & 2:
        cq = (vals.t() % 64).contiguous().to(e4m3)
        cs = vals[::128, :].contiguous() * 3
    rs, cs = rs.float(), cs.float()
    if grad is None:
        return rq, rs, cq, cs
    return rq, rs, cq, cs, torch.empty(0)


def normgate_quant_probe(x, z, w, fmt, rule=0, heads=0, write_y=False, eps=1e-6, program=None):
    """The layout probe of the quantized norm-gate forward: q [rows / heads, heads * d] from
    x's rows in order, its scales at their storage places (FP8 blockwise [K/128, q rows],
    MXFP8 swizzled bytes)."""
    h = max(1, heads)
    vals = x.float().reshape(-1, h * x.shape[-1])
    q = (vals % 64).to(torch.float8_e4m3fn)
    if fmt == 1:
        s = vals[:, ::128].t().contiguous()
    else:
        rows, k = vals.shape
        s = torch.zeros(rows * k // 32, dtype=torch.uint8)
        s[ct.swizzled_scale_offsets(rows, k // 32).flatten()] = \
            (vals[:, ::32] % 251).to(torch.uint8).flatten()
    return q, s, (x * 1 if write_y else x.new_empty(0))


def swiglu_probe(inp, grad, orient, prob=None):
    """The layout probe of one SwiGLU + MXFP8 call (see _reference_kernels); a weighted
    backward's dprob is a function of each row's own values and prob."""
    import cake

    m, k2 = inp.shape
    backward = grad is not None
    o = k2 if backward else k2 // 2
    vals = inp.float()[:, :o] + (0 if grad is None else 1)  # [m, o], integers
    sizes = cake.swiglu_mxfp8_expected_sizes(m, k2 // 2, backward)
    e4m3 = torch.float8_e4m3fn
    empty_q, empty_s = inp.new_empty(0, dtype=e4m3), inp.new_empty(0, dtype=torch.uint8)
    rq, rs, cq, cs = empty_q, empty_s, empty_q, empty_s
    if orient & 1:
        rq = (vals % 64).to(e4m3)
        rs = torch.zeros(sizes.row_s_bytes, dtype=torch.uint8)
        blocks = vals[:, ::32]  # [m, o/32]: one scale per 32 columns of a row
        rs[ct.swizzled_scale_offsets(m, o // 32).flatten()] = (blocks % 251).to(torch.uint8) \
            .flatten()
    if orient & 2:
        cq = (vals.t() % 64).contiguous().to(e4m3)
        cs = torch.zeros(sizes.col_s_bytes, dtype=torch.uint8)
        blocks = vals.t()[:, ::32]  # [o, m/32]
        cs[ct.swizzled_scale_offsets(o, m // 32).flatten()] = ((blocks * 7) % 251) \
            .to(torch.uint8).flatten()
    if not backward:
        return rq, rs, cq, cs
    dp = torch.empty(0) if prob is None else vals[:, 0] * 3 + prob.reshape(-1)
    return rq, rs, cq, cs, dp


def _fp8_and_quant_values_checks(mesh):
    """SwiGLU + FP8 blockwise and the quantized norm-gate: the sharded outputs gathered are the
    unsharded call's bytes (no permutation: the row-indexed layouts concatenate)."""
    from torch.distributed.tensor import distribute_tensor

    def as_bytes(t):
        if not isinstance(t, DTensor):
            return t.view(torch.uint8) if t.dtype == torch.float8_e4m3fn else t
        local = t.to_local()
        local = local.view(torch.uint8) if local.dtype == torch.float8_e4m3fn else local
        return DTensor.from_local(local, mesh, t.placements, shape=t.shape,
                                  stride=t.stride()).full_tensor()

    m, k = 512, 256
    inp = torch.randint(0, 200, (m, 2 * k)).to(BF16)
    grad = torch.randint(0, 200, (m, k)).to(BF16)
    for rows in (m, 40):  # 40: the rowwise form's any rows (10 a rank)
        for backward in (False, True):
            for orient in ((1,) if rows % 128 else (1, 2, 3)):
                a, g = inp[:rows], grad[:rows]
                full = (torch.ops.cake.swiglu_fp8_bwd(a, g, orient) if backward
                        else torch.ops.cake.swiglu_fp8_fwd(a, orient))
                da, dg = (distribute_tensor(t, mesh, [Shard(0)]) for t in (a, g))
                with CommDebugMode() as comm:
                    out = (torch.ops.cake.swiglu_fp8_bwd(da, dg, orient) if backward
                           else torch.ops.cake.swiglu_fp8_fwd(da, orient))
                assert counts(comm) == {}, counts(comm)
                for name, want, got in zip(("row_q", "row_s", "col_q", "col_s"), full, out):
                    got = as_bytes(got)
                    assert got.shape == want.shape, (name, got.shape, want.shape)
                    assert torch.equal(got, as_bytes(want)), (name, rows, backward, orient)
    d = 256
    for fmt in (1, 2):
        for heads in (0, 2):
            x = torch.randint(0, 200, (128 * 2 * max(1, heads), d)).to(BF16)
            w = torch.ones(d, dtype=BF16)
            full = torch.ops.cake.normgate_fwd_quant(x, x, w, fmt, 0, heads, True)
            dx = distribute_tensor(x, mesh, [Shard(0)])
            dw = distribute_tensor(w, mesh, [Replicate()])
            with CommDebugMode() as comm:
                out = torch.ops.cake.normgate_fwd_quant(dx, dx, dw, fmt, 0, heads, True)
            assert counts(comm) == {}, counts(comm)
            for name, want, got in zip(("q", "q_scale", "y"), full, out):
                got = as_bytes(got)
                assert got.shape == want.shape, (name, fmt, heads, got.shape, want.shape)
                assert torch.equal(got, as_bytes(want)), (name, fmt, heads)


def _gloo_worker(rank, world, store_path, failures):
    try:
        dist.init_process_group("gloo", store=dist.FileStore(store_path, world), rank=rank,
                                world_size=world)
        _lib = _reference_kernels()  # noqa: F841  (kept alive for the checks)
        _values_checks(init_device_mesh("cpu", (world,)))
        _fp8_and_quant_values_checks(init_device_mesh("cpu", (world,)))
        _guide_step_check()
    except BaseException as e:  # reported to the parent, which fails the test
        import traceback

        failures.put(f"rank {rank}: {e!r}\n{traceback.format_exc()}")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _values_checks(mesh):
    from torch.distributed.tensor import distribute_tensor

    torch.manual_seed(0)
    x = torch.randn(2, 8, 64).to(BF16)
    z = torch.randn(2, 8, 64).to(BF16)
    w = (1 + torch.randn(64) / 4).to(F32)
    dy = torch.randn(2, 8, 64).to(BF16)
    # Unsharded: the plain call on the whole tensors.
    xr, zr, wr = (t.clone().requires_grad_() for t in (x, z, w))
    yr = ct.normgate(xr, zr, wr, gate="sigmoid", group_size=16)
    yr.backward(dy)
    for dim in (0, 1):
        xs = distribute_tensor(x, mesh, [Shard(dim)]).requires_grad_()
        zs = distribute_tensor(z, mesh, [Shard(dim)]).requires_grad_()
        ws = distribute_tensor(w, mesh, [Replicate()]).requires_grad_()
        dys = distribute_tensor(dy, mesh, [Shard(dim)])
        with CommDebugMode() as comm:
            ys = ct.normgate(xs, zs, ws, gate="sigmoid", group_size=16)
            ys.backward(dys)
        assert counts(comm) == {}, counts(comm)
        assert torch.equal(ys.full_tensor(), yr), "y"
        assert torch.equal(xs.grad.full_tensor(), xr.grad), "dx"
        assert torch.equal(zs.grad.full_tensor(), zr.grad), "dz"
        assert ws.grad.placements == (Partial("sum"),)
        torch.testing.assert_close(ws.grad.full_tensor(), wr.grad, rtol=1e-6, atol=1e-6)
        # main_grad: each rank adds its rows' dw to its part of a Partial buffer.
        mg_local = torch.full((64,), 0.5 if dist.get_rank() == 0 else 0.25)
        mg = DTensor.from_local(mg_local, mesh, [Partial()])
        xs2 = distribute_tensor(x, mesh, [Shard(dim)]).requires_grad_()
        ys2 = ct.normgate(xs2, zs.detach(), ws.detach(), gate="sigmoid", group_size=16,
                          main_grad=mg)
        ys2.backward(dys)
        torch.testing.assert_close(mg.full_tensor(), wr.grad + 0.75, rtol=1e-6, atol=1e-6)
        # A Replicate main_grad with sharded rows: DTensor gathers the rows (never redistributes
        # the buffer written in place), each rank adds the whole dw.
        mg = DTensor.from_local(torch.full((64,), 0.5), mesh, [Replicate()])
        xs3 = distribute_tensor(x, mesh, [Shard(dim)]).requires_grad_()
        with CommDebugMode() as comm:
            ys3 = ct.normgate(xs3, zs.detach(), ws.detach(), gate="sigmoid", group_size=16,
                              main_grad=mg)
            ys3.backward(dys)
        assert sum(counts(comm).values()) > 0
        assert mg.placements == (Replicate(),)
        torch.testing.assert_close(mg.to_local(), wr.grad + 0.5, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(xs3.grad.full_tensor(), xr.grad, rtol=0, atol=0)

    # SwiGLU + MXFP8: the sharded outputs gathered are the unsharded call's bytes.
    m, k = 512, 256
    inp = torch.randint(0, 200, (m, 2 * k)).to(BF16)
    grad = torch.randint(0, 200, (m, k)).to(BF16)
    # The weighted backward: prob sharded with the rows, dprob gathered is the unsharded one.
    prob = torch.rand(m)
    _, _, _, _, want = torch.ops.cake.swiglu_mxfp8_bwd(inp, grad, 1, None, 1, 1.702, 7.0, prob)
    parts = [distribute_tensor(t, mesh, [Shard(0)]) for t in (inp, grad, prob)]
    with CommDebugMode() as comm:
        out = torch.ops.cake.swiglu_mxfp8_bwd(parts[0], parts[1], 1, None, 1, 1.702, 7.0,
                                              parts[2])
    assert counts(comm) == {}, counts(comm)
    assert out[4].placements == (Shard(0),)
    assert torch.equal(out[4].full_tensor(), want)
    for backward in (False, True):
        for orient in (1, 2, 3):
            full = (torch.ops.cake.swiglu_mxfp8_bwd(inp, grad, orient) if backward
                    else torch.ops.cake.swiglu_mxfp8_fwd(inp, orient))
            di = distribute_tensor(inp, mesh, [Shard(0)])
            dg = distribute_tensor(grad, mesh, [Shard(0)])
            with CommDebugMode() as comm:
                if backward:
                    out = torch.ops.cake.swiglu_mxfp8_bwd(di, dg, orient)
                else:
                    out = torch.ops.cake.swiglu_mxfp8_fwd(di, orient)
            assert counts(comm) == {}, counts(comm)
            for name, want, got in zip(("row_q", "row_s", "col_q", "col_s"), full, out):
                # As bytes: gloo gathers no float8.
                got = DTensor.from_local(got.to_local().view(torch.uint8), mesh, got.placements,
                                         shape=got.shape, stride=got.stride()).full_tensor()
                if name == "col_s" and got.numel():
                    o = 2 * k if backward else k
                    assert not torch.equal(got, want.view(torch.uint8)), "shard-major differs"
                    got = sharding.colwise_scales_to_global(got, o, m, mesh.size())
                assert got.shape == want.shape, (name, got.shape, want.shape)
                assert torch.equal(got.view(torch.uint8), want.view(torch.uint8)), \
                    (name, backward, orient)


def _guide_step_check():
    """The DTensor training step of docs/distributed.md, on this CPU group: w after the step is
    the unsharded step's."""
    import re

    from conftest import REPO

    text = (REPO / "docs" / "distributed.md").read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[2]
    # This group is up already, on CPU: the guide's set-up lines for CUDA and NCCL are left out.
    block = "\n".join(l for l in block.splitlines()
                      if not l.startswith(("dist.init_process_group", "torch.cuda.set_device")))
    block = block.replace('"cuda"', '"cpu"')
    ns = {}
    exec(compile(block, "docs/distributed.md", "exec"), ns)
    torch.manual_seed(1)
    x, z, target = (torch.randn(4, 8, 1024).to(BF16) for _ in range(3))
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = [t.chunk(world)[rank] for t in (x, z, target)]
    with CommDebugMode() as comm:
        loss = ns["train_step"](*mine)
    found = counts(comm)
    # The step's collectives: the loss's mean and w's gradient (the optimizer), not the op's.
    assert all("all_reduce" in str(op) for op in found), found
    w = torch.nn.Parameter(torch.ones(1024))
    ref = torch.mean(torch.square(ct.normgate(x, z, w).float() - target.float()))
    ref.backward()
    torch.testing.assert_close(loss, ref.detach(), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(ns["w"].full_tensor(), (w - 1e-3 * w.grad).detach(), rtol=1e-6,
                               atol=1e-7)


def test_values_on_a_two_process_gloo_group(tmp_path):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    failures = ctx.SimpleQueue()
    store = str(tmp_path / "store")
    procs = [ctx.Process(target=_gloo_worker, args=(r, 2, store, failures)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    errors = []
    while not failures.empty():
        errors.append(failures.get())
    assert not errors, "\n".join(errors)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
