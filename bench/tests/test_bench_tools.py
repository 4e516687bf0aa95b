"""Host tests of bench/peers/peers.py's modules (no GPU, no torch): how the bookkeeping picks the
best peer, pairs Cake with it and derives fwd + bwd, how the graph timer alternates the graphs of
a round, the phases' priority order, and that the entry point parses its options without torch.
Run: python3 -m unittest discover -s bench/tests (or python3 -m pytest bench/tests)."""

import os
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
import bookkeeping  # noqa: E402
import graph_timer  # noqa: E402
import peers  # noqa: E402
import phases  # noqa: E402


def stat(us, rounds=None):
    rounds = rounds or [us]
    return {"median_us": us, "lo_us": min(rounds), "hi_us": max(rounds), "spread_pct": 0.0,
            "round_medians_us": rounds}


def paired(cake_us, speedup, lo, hi):
    return {"time": stat(cake_us), "speedup": speedup, "speedup_lo": lo, "speedup_hi": hi}


def row(op, shape, peer, us, family="normgate", status="ok", **extra):
    r = {"family": family, "op": op, "shape": shape, "peer": peer, "status": status,
         "time": stat(us)}
    r.update(extra)
    return r


class PeersBookkeeping(unittest.TestCase):
    def results(self):
        return [
            # Cake alone: faster than everyone, but never a "best peer".
            row("fwdg", "260x48", "Cake", 5.0, is_cake=True),
            row("bwdg", "260x48", "Cake nondet", 9.0, is_cake=True, fwd_peer="Cake"),
            row("bwdg", "260x48", "Cake det", 10.0, is_cake=True, fwd_peer="Cake"),
            # Two peers; B is the best fwdg, A the best bwdg; a failed run of C is ignored.
            row("fwdg", "260x48", "A", 8.0, paired_cake={"Cake": paired(7.9, 1.013, 1.0, 1.02)}),
            row("bwdg", "260x48", "A", 18.0,
                paired_cake={"Cake nondet": paired(14.0, 1.29, 1.28, 1.30),
                             "Cake det": paired(15.0, 1.20, 1.19, 1.21)}),
            row("fwdg", "260x48", "B", 7.5, paired_cake={"Cake": paired(7.8, 0.96, 0.95, 0.97)}),
            row("bwdg", "260x48", "B", 30.0,
                paired_cake={"Cake nondet": paired(14.1, 2.1, 2.0, 2.2),
                             "Cake det": paired(15.1, 2.0, 1.9, 2.1)}),
            row("fwdg", "260x48", "C", 1.0, status="error"),
        ]

    def test_best_table_skips_cake_and_failures(self):
        best = {(b["op"]): b for b in bookkeeping.best_table(self.results())}
        self.assertEqual(best["fwdg"]["peer"], "B")
        self.assertEqual(best["bwdg"]["peer"], "A")

    def test_fwd_bwd_pairs_cake_packages_with_cake_forward(self):
        derived = {d["peer"]: d for d in bookkeeping.derive_fwd_bwd(self.results())}
        self.assertEqual(set(derived), {"Cake nondet", "Cake det", "A", "B"})
        self.assertAlmostEqual(derived["Cake nondet"]["time"]["median_us"], 14.0)
        self.assertAlmostEqual(derived["Cake det"]["time"]["median_us"], 15.0)
        self.assertTrue(derived["Cake det"].get("is_cake"))
        self.assertAlmostEqual(derived["A"]["time"]["median_us"], 26.0)
        self.assertNotIn("is_cake", derived["A"])

    def test_cake_vs_best_peer_uses_the_best_peers_rounds(self):
        res = self.results()
        res += bookkeeping.derive_fwd_bwd(res)
        v = {(x["op"], x["cake"]): x for x in bookkeeping.cake_vs_best_peer(res)}
        # fwdg: B is best (7.5 us); its paired speedup, not A's.
        self.assertEqual(v[("fwdg", "Cake")]["peer"], "B")
        self.assertAlmostEqual(v[("fwdg", "Cake")]["speedup"], 0.96)
        self.assertAlmostEqual(v[("fwdg", "Cake")]["speedup_lo"], 0.95)
        # bwdg: A is best (18 us), both packages.
        self.assertAlmostEqual(v[("bwdg", "Cake nondet")]["speedup"], 1.29)
        self.assertAlmostEqual(v[("bwdg", "Cake det")]["cake_us"], 15.0)
        # fwd + bwd: A (8 + 18 = 26 us) is best; Cake's paired sums against A: 7.9 + 14.0.
        fb = v[("fwd+bwd", "Cake nondet")]
        self.assertEqual(fb["peer"], "A")
        self.assertAlmostEqual(fb["peer_us"], 26.0)
        self.assertAlmostEqual(fb["cake_us"], 21.9)
        self.assertAlmostEqual(fb["speedup"], 26.0 / 21.9)
        self.assertIsNone(fb["speedup_lo"])


class FakeTorch:
    """Just enough of torch for graph_timer.GraphTimer: a clock that graph replays advance."""

    def __init__(self):
        self.now = 0.0
        self.replays = []
        torch = self

        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self):
                self.t = torch.now

            def elapsed_time(self, end):
                return end.t - self.t  # ms

        class Props:
            L2_cache_size = 1 << 20

        class Cuda:
            pass
        self.cuda = Cuda()
        self.cuda.Event = Event
        self.fresh = True  # the next replay is the first after a synchronisation

        def synchronize():
            torch.fresh = True
        self.cuda.synchronize = synchronize
        self.cuda.get_device_properties = lambda i: Props()
        self.uint8 = "uint8"

    def empty(self, n, dtype=None, device=None):
        class Buf:
            def fill_(self, v):
                pass
        return Buf()


class FakeGraph:
    def __init__(self, torch, name, ms, first_penalty_ms=0.0):
        self.torch, self.name, self.ms, self.penalty = torch, name, ms, first_penalty_ms

    def replay(self):
        t = self.torch
        slow = self.penalty if t.fresh else 0.0
        t.fresh = False
        t.replays.append(self.name)
        t.now += self.ms + slow


class GraphTimerRounds(unittest.TestCase):
    def test_rounds_alternate_order_and_stay_aligned(self):
        torch = FakeTorch()
        timer = graph_timer.GraphTimer(torch, 2.0, rounds=4, iters=3, warmup=1)
        a = FakeGraph(torch, "a", 0.010)
        b = FakeGraph(torch, "b", 0.020)
        sa, sb = timer.time_graphs([a, b])
        timed = torch.replays[2:]  # after one warm-up replay each
        blocks = [timed[i] for i in range(0, len(timed), 3)]
        self.assertEqual(blocks, ["a", "b", "b", "a", "a", "b", "b", "a"])
        self.assertEqual(len(sa["round_medians_us"]), 4)
        self.assertAlmostEqual(sa["median_us"], 10.0)
        self.assertAlmostEqual(sb["median_us"], 20.0)

    def test_a_first_position_penalty_hits_both_graphs(self):
        # The first replay after a synchronisation is slow (the round's first graph): with the
        # order reversed every other round both graphs take it equally often.
        torch = FakeTorch()
        timer = graph_timer.GraphTimer(torch, 2.0, rounds=2, iters=1, warmup=0)
        a = FakeGraph(torch, "a", 0.010, first_penalty_ms=0.005)
        b = FakeGraph(torch, "b", 0.010, first_penalty_ms=0.005)
        sa, sb = timer.time_graphs([a, b])
        self.assertEqual(sorted(sa["round_medians_us"]), sorted(sb["round_medians_us"]))


class Args:
    def __init__(self, family="all"):
        self.family = family


class PhaseOrder(unittest.TestCase):
    def test_cake_first_then_default_mode_then_the_other_modes(self):
        order = phases.phase_list(Args(), {"fla", "mamba", "compile", "cake"},
                                  ["default", "max-autotune-no-cudagraphs"], cake=object())
        self.assertEqual(order, [
            ("normgate", "cake"), ("swiglu", "cake"),
            ("normgate", "fla"), ("normgate", "mamba"), ("normgate", "compile:default"),
            ("swiglu", "default"),
            ("normgate", "compile:max-autotune-no-cudagraphs"),
            ("swiglu", "max-autotune-no-cudagraphs")])

    def test_no_cake_phase_without_the_binding_and_one_family(self):
        order = phases.phase_list(Args("swiglu"), {"compile", "cake"}, ["default"], cake=None)
        self.assertEqual(order, [("swiglu", "default")])


class EntryPoint(unittest.TestCase):
    def test_quick_fills_the_short_shape_lists(self):
        argv = sys.argv
        sys.argv = ["peers.py", "--quick", "--rounds", "7"]
        try:
            a = peers.parse_args()
        finally:
            sys.argv = argv
        self.assertEqual((a.ng_shapes, a.sw_shapes, a.rounds, a.iters),
                         ("3534x48,260x48", "128x128,4096x2048", 3, 10))
        self.assertEqual(a.forms.split(","), peers.SW_FORMS)


if __name__ == "__main__":
    unittest.main()
