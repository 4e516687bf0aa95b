"""Host tests of peers.py's grouped SwiGLU rows (bench/peers/grouped.py): the split is
cake-bench's (std::mt19937_64 and uniform_real_distribution as libstdc++ draws them, and
bench/workloads.cc uneven_offsets()'s values for every grouped shape), --sw-shapes grouped is
cake-bench's set, and, where torch is importable (CPU is enough), the grouped reference's bytes
are each expert's ungrouped reference in the spec's layouts (docs/spec/swiglu-grouped.md) with
expert sizes 0, 1, 31, 33, 127, 129 and rows of no expert. No GPU.
Run: python3 -m unittest discover -s bench/tests."""

import os
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import grouped  # noqa: E402
import peers  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # CI's Python: the split and the shapes only
    torch = None


def fnv(offsets):
    """FNV-1a (64-bit) over the offsets' decimal text, "a,b,c,"."""
    h = 1469598103934665603
    for ch in "".join("%d," % v for v in offsets).encode():
        h = ((h ^ ch) * 1099511628211) & grouped.MASK64
    return h


# bench/workloads.cc uneven_offsets(T, E, unit, T * 1000003 + K * 131 + E) built with the
# bench's compiler: (offsets[0], offsets[1], offsets[E-2], fnv(offsets)).
WORKLOADS = {
    (16384, 2048, 8, 32): (7296, 10048, 16224, 0xacc3861698f90f54),
    (16384, 2048, 64, 32): (544, 544, 14880, 0xab57ddee6ff40b86),
    (16384, 2048, 256, 32): (32, 416, 12992, 0xe5e76baf67369a67),
    (16384, 7168, 8, 32): (3200, 3264, 16000, 0x90e4ca5cfb6a79ad),
    (16384, 7168, 64, 32): (96, 192, 15200, 0xcc13b77e9d0b7835),
    (16384, 7168, 256, 32): (224, 224, 12800, 0x4ed5d84198e9dd08),
    (65536, 2048, 8, 32): (256, 2336, 49120, 0xc920085e65668461),
    (65536, 2048, 64, 32): (2880, 6400, 62944, 0x7816d6be1599a964),
    (65536, 2048, 256, 32): (64, 96, 61824, 0x2e55cf6517907c56),
    (65536, 7168, 8, 32): (15904, 24384, 54336, 0x7047a179b3debf81),
    (65536, 7168, 64, 32): (672, 1152, 62944, 0xa1e819efe886ad72),
    (65536, 7168, 256, 32): (0, 96, 61280, 0xe1e2aef2e6720859),
    (16384, 2048, 8, 1): (7322, 10092, 16343, 0x23fa94df927eebb0),
    (65536, 7168, 256, 1): (26, 148, 65358, 0x225b97ee450a4ef8),
}


class Split(unittest.TestCase):
    def test_mt19937_64_is_the_standards(self):
        # [rand.predef]: the 10000th output of a default-constructed std::mt19937_64.
        rng = grouped.MT19937_64(5489)
        for _ in range(9999):
            rng()
        self.assertEqual(rng(), 9981545732273789042)

    def test_offsets_are_cake_benchs(self):
        for (t, k, e, unit), want in WORKLOADS.items():
            o = grouped.shape_offsets(t, k, e, ragged=unit == 1)
            self.assertEqual((o[0], o[1], o[e - 2], fnv(o)), want, (t, k, e, unit))
            self.assertEqual(len(o), e)
            self.assertEqual(o[-1], t)
            self.assertEqual(o, sorted(o))
            if unit == 32:
                self.assertTrue(all(v % 32 == 0 for v in o[:-1]))

    def test_grouped_shapes_are_cake_benchs_set(self):
        argv = sys.argv
        sys.argv = ["peers.py", "--sw-shapes", "grouped"]
        try:
            a = peers.parse_args()
        finally:
            sys.argv = argv
        shapes = a.sw_shapes.split(",")
        self.assertEqual(len(shapes), 12)
        self.assertEqual(shapes[0], "16384x2048/E8")
        self.assertEqual(shapes[-1], "65536x7168/E256")
        self.assertEqual(grouped.parse_shape("16384x7168/E64"), (16384, 7168, 64, False))
        self.assertEqual(grouped.parse_shape("4096x2048/E8r"), (4096, 2048, 8, True))
        self.assertIsNone(grouped.parse_shape("4096x7168"))


COUNTS = [0, 1, 31, 33, 127, 129, 64, 0, 160]
SPARE = 5


@unittest.skipIf(torch is None, "torch not importable: the grouped reference's bytes not checked")
class GroupedReference(unittest.TestCase):
    """The grouped reference against each expert's ungrouped reference, laid out by the spec."""

    @classmethod
    def setUpClass(cls):
        from references import fp8_quant_lastdim, mx_quant_lastdim

        cls.fp8, cls.mx = staticmethod(fp8_quant_lastdim), staticmethod(mx_quant_lastdim)
        gen = torch.Generator().manual_seed(3)
        cls.t, cls.k = sum(COUNTS) + SPARE, 256
        cls.inp = (torch.randn(cls.t, 2 * cls.k, generator=gen) * 2).to(torch.bfloat16)
        cls.grad = torch.randn(cls.t, cls.k, generator=gen).to(torch.bfloat16)
        cls.offs = torch.tensor(COUNTS, dtype=torch.int32).cumsum(0, dtype=torch.int32)
        cls.make = staticmethod(grouped.grouped_reference(torch, F))

    def y(self, backward):
        k = self.k
        g, u = self.inp[:, :k].float(), self.inp[:, k:].float()
        if not backward:
            return (F.silu(g) * u).to(torch.bfloat16)
        s = torch.sigmoid(g)
        a = g * s
        gr = self.grad.float()
        return torch.cat([((a * (1 - s) + s) * gr * u).to(torch.bfloat16),
                          (a * gr).to(torch.bfloat16)], dim=1)

    def run_form(self, form, fmt):
        fn = self.make(form, fmt)
        args = (self.inp, self.offs) if form.startswith("fwd") else (self.inp, self.grad, self.offs)
        return [self.u8(a) for a in fn(*args)]

    @staticmethod
    def u8(a):
        return a.reshape(-1).contiguous().view(torch.uint8)

    def padded(self, y, rows):
        out = torch.zeros(rows, y.shape[1], dtype=y.dtype)
        out[:y.shape[0]] = y
        return out

    def test_fp8_blockwise_every_form(self):
        for backward in (False, True):
            y = self.y(backward)
            o = y.shape[1]
            for orient in ("row", "col", "both"):
                got = self.run_form(("bwd_" if backward else "fwd_") + orient, "fp8_blockwise")
                row = got[:2] if orient != "col" else None
                col = got[-2:] if orient != "row" else None
                c = p = 0
                for n in COUNTS:
                    ye = y[c:c + n]
                    if n and row is not None:
                        q, s = self.fp8(torch, ye)  # s [O/128, n]: element j * n + r
                        self.assertTrue(torch.equal(row[0][c * o:(c + n) * o], self.u8(q)))
                        at = 4 * p * (o // 128)
                        self.assertTrue(torch.equal(row[1][at:at + 4 * n * (o // 128)], self.u8(s)))
                    if n and col is not None:
                        nb = -(-n // 128)
                        q, s = self.fp8(torch, self.padded(ye, nb * 128).t().contiguous())
                        self.assertTrue(torch.equal(col[0][c * o:(c + n) * o],
                                                    self.u8(q[:, :n].contiguous())))
                        at = 4 * (p // 128) * o
                        self.assertTrue(torch.equal(col[1][at:at + 4 * nb * o], self.u8(s)))
                    c += n
                    p += -(-n // 128) * 128

    def swizzled(self, s, cp):
        """Scale bytes [R, C] (R % 128 == 0) -> the swizzled 128x4 layout of C' = cp columns."""
        r, c = s.shape
        full = torch.zeros(r, cp, dtype=torch.uint8)
        full[:, :c] = s
        return full.view(r // 128, 4, 32, cp // 4, 4).permute(0, 3, 2, 1, 4).reshape(-1)

    def test_mxfp8_every_form(self):
        for backward in (False, True):
            y = self.y(backward)
            o = y.shape[1]
            cp = (o // 32 + 3) // 4 * 4
            rp = (o + 127) // 128 * 128
            for orient in ("row", "col", "both"):
                got = self.run_form(("bwd_" if backward else "fwd_") + orient, "mxfp8")
                row = got[:2] if orient != "col" else None
                col = got[-2:] if orient != "row" else None
                c = p = 0
                for n in COUNTS:
                    npad = -(-n // 128) * 128
                    ye = self.padded(y[c:c + n], npad)
                    if n and row is not None:
                        q, s = self.mx(torch, ye)
                        self.assertTrue(torch.equal(row[0][c * o:(c + n) * o],
                                                    self.u8(q[:n].contiguous())))
                        want = s.clone()
                        want[n:] = 0  # padding rows: 0x00
                        self.assertTrue(torch.equal(row[1][p * cp:(p + npad) * cp],
                                                    self.swizzled(want, cp)))
                    if n and col is not None:
                        q, s = self.mx(torch, ye.t().contiguous())  # [O, npad], [O, npad/32]
                        colq = col[0].view(o, self.t)
                        self.assertTrue(torch.equal(colq[:, c:c + n], q[:, :n].view(torch.uint8)))
                        full = torch.zeros(rp, npad // 32, dtype=torch.uint8)
                        full[:o] = s
                        at = rp * p // 32
                        self.assertTrue(torch.equal(col[1][at:at + rp * npad // 32],
                                                    self.swizzled(full, npad // 32)))
                    c += n
                    p += -(-n // 128) * 128
                if row is not None:  # rows of no expert: zeros in the reference
                    self.assertTrue(bool((row[0][sum(COUNTS) * o:] == 0).all()))

    def test_written_masks_cover_the_experts(self):
        offs = self.offs.tolist()
        masks = grouped.written_masks(torch, "fp8_blockwise", offs, self.t, self.k, False, "both")
        got = self.run_form("fwd_both", "fp8_blockwise")
        self.assertEqual([m.numel() for m in masks], [g.numel() for g in got])
        self.assertEqual(int(masks[0].sum()), sum(COUNTS) * self.k)
        self.assertEqual(grouped.differing_bytes(torch, got, got, masks), 0.0)


if __name__ == "__main__":
    unittest.main()
