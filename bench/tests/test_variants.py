"""Host tests of the norm-gate variant table (bench/peers/variants.py, peers.py --table variants,
bench/results.py --variants, bench/tables.py's variant block): the plan, which peer computes
which variant and with which options, the byte counts and the copy limit, the bookkeeping per
variant, the rendered table. With torch (CPU) also: the written-out FP32 backward that
torch.compile compiles against float64 autograd for every variant, that the check catches a
wrong placement or ignored groups, and the whole table's passes on CPU tensors with made-up
peers and a made-up Cake (one of them wrong), down to the Markdown. Made-up numbers; no GPU.
Run: python3 -m unittest discover -s bench/tests (or python3 -m pytest bench/tests)."""

import os
import sys
import types
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import bookkeeping  # noqa: E402
import peers  # noqa: E402
import results  # noqa: E402
import tables  # noqa: E402
import variants as V  # noqa: E402

try:
    import torch
except ImportError:  # the CTest's Python has no torch: the torch tests skip
    torch = None


def stat(us, rounds=None):
    rounds = rounds or [us]
    return {"median_us": us, "lo_us": min(rounds), "hi_us": max(rounds), "spread_pct": 1.0,
            "round_medians_us": rounds, "timer": "events (graph replay)"}


def vrow(variant, shape, op, peer, us=None, status="ok", **extra):
    r = {"family": "normgate", "variant": variant, "shape": shape, "op": op, "peer": peer,
         "status": status}
    if us is not None:
        r["time"] = stat(us)
    r.update(extra)
    return r


class Plan(unittest.TestCase):
    def test_sets_in_priority_order(self):
        cases = V.plan(["wide", "group", "sigmoid", "d128", "nogate"], "16384x8192,65536x512",
                       "3534x48,260x48")
        got = [(c["set"], c["variant"], c["shape"]) for c in cases]
        self.assertEqual(got, [
            ("wide", "silu/after", "16384x8192"), ("wide", "silu/before", "16384x8192"),
            ("wide", "silu/after", "65536x512"), ("wide", "silu/before", "65536x512"),
            ("group", "silu/after/G1024", "16384x8192"), ("group", "silu/before/G1024", "16384x8192"),
            ("sigmoid", "sigmoid/after", "16384x8192"), ("sigmoid", "sigmoid/after", "65536x512"),
            ("d128", "silu/before", "169632x128"), ("d128", "silu/before", "12480x128"),
            ("nogate", "none", "16384x8192"), ("nogate", "none", "65536x512")])
        self.assertEqual(cases[8]["th"], "3534x48")

    def test_default_wide_shapes_cover_every_width_of_the_speed_table(self):
        widths = sorted({V.parse_rxd(s)[1] for s in V.WIDE.split(",")})
        self.assertEqual(widths, [512, 1024, 2048, 4096, 5120, 8192])
        self.assertEqual(peers.NG_DEFAULT.count(","), 7)  # the d128 set is today's eight shapes

    def test_one_group_is_the_whole_row_and_bad_groups_are_refused(self):
        self.assertEqual(V.make_case("s", 8, 1024, "silu", "after", 1024)["variant"], "silu/after")
        self.assertEqual(V.make_case("s", 8, 1024, "none", "before")["variant"], "none")
        with self.assertRaises(ValueError):
            V.make_case("s", 8, 1024, "silu", "after", 300)  # does not divide D
        with self.assertRaises(ValueError):
            V.make_case("s", 8, 1000, "silu", "after", 500)  # not a multiple of 8
        with self.assertRaises(ValueError):
            V.plan(["widest"])


class Dtypes(unittest.TestCase):
    def test_labels_bytes_and_plan(self):
        self.assertEqual(V.parse_dtype("bf16:f32"), ("bf16", "f32"))
        self.assertEqual(V.parse_dtype("f16"), ("f16", "f16"))
        with self.assertRaises(ValueError):
            V.parse_dtype("fp8")
        self.assertEqual(V.variant_label("silu", "before", 1024, "f32", "f32"), "silu/before/G1024/f32")
        self.assertEqual(V.variant_label("none", "after", 0, "bf16", "f32"), "none/bf16-wf32")
        c = V.make_case("s", 10, 64, "silu", "after", dtype="f32", w_dtype="f32")
        self.assertEqual(V.case_bytes(c), ((2 * 10 * 64 * 4 + 4 * 64, 10 * 64 * 4),
                                           (3 * 10 * 64 * 4 + 4 * 64, 2 * 10 * 64 * 4 + 4 * 64)))
        c = V.make_case("s", 10, 64, "none", "after", dtype="bf16", w_dtype="f32")
        self.assertEqual(V.case_bytes(c), ((10 * 64 * 2 + 4 * 64, 10 * 64 * 2),
                                           (2 * 10 * 64 * 2 + 4 * 64, 10 * 64 * 2 + 4 * 64)))
        cases = V.plan(["wide"], "16x64", dtypes=["bf16", "f32", "bf16:f32"])
        self.assertEqual([c["variant"] for c in cases],
                         ["silu/after", "silu/before", "silu/after/f32", "silu/before/f32",
                          "silu/after/bf16-wf32", "silu/before/bf16-wf32"])


class PeerOptions(unittest.TestCase):
    def case(self, gate, placement, group=0):
        return V.make_case("s", 64, 2048, gate, placement, group)

    def test_fla_gate_after_the_whole_row_both_activations(self):
        self.assertEqual(V.peer_options("fla", self.case("silu", "after")), {"activation": "swish"})
        self.assertEqual(V.peer_options("fla", self.case("sigmoid", "after")), {"activation": "sigmoid"})
        self.assertIsNone(V.peer_options("fla", self.case("silu", "before")))
        self.assertIsNone(V.peer_options("fla", self.case("silu", "after", 1024)))
        self.assertIsNone(V.peer_options("fla", self.case("none", "after")))

    def test_mamba_norm_before_gate_is_the_gate_after_the_norm(self):
        self.assertEqual(V.peer_options("mamba", self.case("silu", "after")),
                         {"norm_before_gate": True, "group_size": None, "gated": True})
        self.assertEqual(V.peer_options("mamba", self.case("silu", "before", 512)),
                         {"norm_before_gate": False, "group_size": 512, "gated": True})
        self.assertEqual(V.peer_options("mamba", self.case("none", "after"))["gated"], False)
        self.assertIsNone(V.peer_options("mamba", self.case("sigmoid", "after")))

    def test_compile_and_cake_compute_everything(self):
        for c in V.plan(list(V.SETS), V.WIDE, peers.NG_DEFAULT):
            self.assertEqual(V.peer_options("compile:default", c), {})
            self.assertEqual(V.peer_options("cake", c), {})


class BytesAndLimit(unittest.TestCase):
    def test_bytes_match_the_gated_tables(self):
        rows, d = 1000, 128
        tb = rows * d * 2
        fwd, bwd = V.variant_bytes(rows, d, True)
        self.assertEqual(fwd, (2 * tb + 2 * d, tb))
        self.assertEqual(bwd, (3 * tb + 2 * d, 2 * tb + 2 * d))
        fwd, bwd = V.variant_bytes(rows, d, False)  # no z, no dz
        self.assertEqual(fwd, (tb + 2 * d, tb))
        self.assertEqual(bwd, (2 * tb + 2 * d, tb + 2 * d))

    def test_limit_is_bytes_at_the_copy_bandwidth(self):
        self.assertAlmostEqual(V.limit_us((3e6, 1e6), 4000.0), 1.0)  # 4 MB at 4 TB/s
        self.assertIsNone(V.limit_us((1, 1), 0))

    def test_nan_is_a_mismatch(self):
        self.assertEqual(V.mismatches({"y": 0.001, "dx": float("nan"), "dw": 0.5}, 0.01), ["dw", "dx"])


class Bookkeeping(unittest.TestCase):
    def results(self):
        sh = "8192x5120"
        return [
            vrow("silu/after", sh, "fwdg", "Cake", 50.0, is_cake=True, limit_us=40.0),
            vrow("silu/after", sh, "bwdg", "Cake nondet", 100.0, is_cake=True, fwd_peer="Cake", limit_us=80.0),
            vrow("silu/after", sh, "bwdg", "Cake det", 110.0, is_cake=True, fwd_peer="Cake", limit_us=80.0),
            vrow("silu/after", sh, "fwdg", "A", 60.0, limit_us=40.0,
                 paired_cake={"Cake": {"time": stat(50.0), "speedup": 1.2, "speedup_lo": 1.1, "speedup_hi": 1.3}}),
            vrow("silu/after", sh, "bwdg", "A", 150.0, limit_us=80.0,
                 paired_cake={"Cake nondet": {"time": stat(100.0), "speedup": 1.5, "speedup_lo": 1.4, "speedup_hi": 1.6},
                              "Cake det": {"time": stat(110.0), "speedup": 1.36, "speedup_lo": 1.3, "speedup_hi": 1.4}}),
            # Faster but wrong: never the best.
            vrow("silu/after", sh, "fwdg", "W", status="mismatch", note="rel L2 above 0.01: y 0.3"),
            # Another variant at the same shape: its faster peer must not be silu/after's best.
            vrow("silu/before", sh, "fwdg", "B", 10.0, limit_us=40.0),
            vrow("silu/before", sh, "fwdg", "A", status="unsupported", note="n/a"),
        ]

    def test_per_variant_best_derived_and_versus(self):
        res = self.results()
        derived, best, versus = V.finish(res, 4000.0)
        self.assertAlmostEqual(res[0]["frac_limit"], 0.8)
        self.assertAlmostEqual(res[3]["frac_limit"], 40.0 / 60.0)
        bests = {(b["variant"], b["op"]): (b["peer"], b["us"]) for b in best}
        self.assertEqual(bests[("silu/after", "fwdg")], ("A", 60.0))
        self.assertEqual(bests[("silu/before", "fwdg")], ("B", 10.0))
        self.assertEqual(bests[("silu/after", "fwd+bwd")], ("A", 210.0))
        fb = {(r["variant"], r["peer"]): r for r in derived}
        self.assertAlmostEqual(fb[("silu/after", "Cake nondet")]["time"]["median_us"], 150.0)
        self.assertAlmostEqual(fb[("silu/after", "Cake nondet")]["limit_us"], 120.0)
        self.assertAlmostEqual(fb[("silu/after", "Cake det")]["frac_limit"], 120.0 / 160.0)
        vs = {(v["variant"], v["op"], v["cake"]): v for v in versus}
        self.assertEqual(vs[("silu/after", "fwdg", "Cake")]["speedup"], 1.2)
        self.assertAlmostEqual(vs[("silu/after", "fwd+bwd", "Cake nondet")]["speedup"], 210.0 / 150.0)
        self.assertNotIn(("silu/before", "fwdg", "Cake"), vs)  # B was not paired

    def test_summary_lines_show_statuses(self):
        res = self.results()
        derived, _, versus = V.finish(res, 4000.0)
        lines = V.summary_lines(res + derived, versus)
        fwd = next(line for line in lines if line.startswith("silu/after") and " fwdg " in line)
        self.assertIn("50.00 (80%)", fwd)
        self.assertIn("mismatch", fwd)
        self.assertIn("1.200", fwd)


class Rendering(unittest.TestCase):
    def raw(self):
        res = Bookkeeping().results()
        res.append(vrow("silu/before", "169632x128", "fwdg", "Cake", 20.0, is_cake=True,
                        limit_us=15.0, th="3534x48"))
        res.append(vrow("silu/before", "169632x128", "fwdg", "mamba_ssm rmsnorm_fn", 25.0,
                        limit_us=15.0, th="3534x48"))
        derived, best, versus = V.finish(res, 4000.0)
        return {"tool": "cake-bench peers variants", "date": "2026-01-02T03:04:05Z",
                "versions": {"torch": "2.0"}, "method": {"rounds": 10}, "copy": {"gbps": 4000.0, "how": "copy_ (cudaMemcpyAsync), eager"},
                "floor_graph": stat(3.0), "check_tol": 0.01, "results": res + derived,
                "best": best, "cake_vs_best_peer": versus,
                "skipped_for_time": ["variants compile:default none 65536x512"]}

    def test_section_and_table(self):
        sec = results.variant_section(self.raw(), "python3 bench/peers/peers.py --table variants")
        self.assertEqual(sec["variants_meta"]["copy_gbps"], 4000.0)
        wrong = next(r for r in sec["variants"] if r["peer"] == "W")
        self.assertEqual((wrong["status"], "us" in wrong), ("mismatch", False))
        md = tables.render_variants(sec)
        lines = md.splitlines()
        head = next(line for line in lines if line.startswith("| variant"))
        self.assertEqual(head.count("|"), 15)  # 10 fixed columns + A, W, B, mamba
        fwd = next(line for line in lines if line.startswith("| silu/after | 8192x5120 | fwdg"))
        cells = [c.strip() for c in fwd.strip("|").split("|")]
        self.assertEqual(cells[3:8], ["50.00", "=", "40.00", "80.0%", "="])
        self.assertEqual(cells[8:12], ["**60.00**", "wrong", "-", "-"])
        self.assertEqual(cells[12:], ["1.200 [1.100, 1.300]", "="])
        bwd = next(line for line in lines if line.startswith("| silu/after | 8192x5120 | bwdg"))
        self.assertIn("| 100.00 | 110.00 | 80.00 | 80.0% | 72.7% |", bwd)
        self.assertIn("| 169632x128 (3534x48) |", md)
        self.assertIn("| n/a |", next(line for line in lines if line.startswith("| silu/before | 8192x5120")))
        self.assertIn("Not timed: W silu/after 8192x5120 fwdg: rel L2 above 0.01: y 0.3.", md)
        self.assertIn("Not measured (the time budget ran out)", md)
        # In a results JSON the block follows the device's tables; without it nothing changes.
        self.assertEqual(tables.variants({}), [])

    def test_results_json_keeps_it_only_when_given(self):
        import json
        import tempfile
        import test_results_tables as trt
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, doc in (("cake", trt.cake_doc()), ("peers", trt.peers_doc()), ("variants", self.raw())):
                paths[name] = os.path.join(tmp, name + ".json")
                with open(paths[name], "w") as f:
                    json.dump(doc, f)
            out = {}
            for key, extra in (("with", ["--variants", paths["variants"]]), ("without", [])):
                out[key] = os.path.join(tmp, key + ".json")
                argv = [paths["cake"], paths["peers"], "-o", out[key], "--commit", "abc1234",
                        "--driver", "1.2"] + extra
                import contextlib
                import io
                with contextlib.redirect_stdout(io.StringIO()):
                    results.main(argv)
            with open(out["with"]) as f:
                text = f.read()
            doc = json.loads(text)
            with open(out["without"]) as f:
                plain = json.load(f)
        self.assertFalse({"variants", "variants_vs_best", "variants_meta"} & set(plain))
        self.assertEqual(len(doc["variants"]), len(self.raw()["results"]))
        self.assertIn('\n  {"variant":"silu/after"', text)  # one row a line
        self.assertEqual(doc["variants_meta"]["command"], results.VARIANTS_DEFAULT)
        full, base = tables.render(doc), tables.render(plain)
        self.assertTrue(full.startswith(base.rstrip("\n")))
        self.assertTrue(full.rstrip("\n").endswith(tables.render_variants(doc).rstrip("\n")))

    def test_refuses_another_tool(self):
        with self.assertRaises(ValueError):
            results.variant_section({"tool": "cake-bench peers", "results": []})


class EntryPoint(unittest.TestCase):
    def parse(self, *argv):
        saved = sys.argv
        sys.argv = ["peers.py"] + list(argv)
        try:
            return peers.parse_args()
        finally:
            sys.argv = saved

    def test_variant_defaults(self):
        a = self.parse("--table", "variants")
        self.assertEqual((a.time_budget, a.modes, a.vt_shapes), (peers.VT_BUDGET, "default", V.WIDE))
        self.assertEqual(a.vt_sets.split(","), list(V.SETS))
        q = self.parse("--table", "variants", "--quick", "--time-budget", "0")
        self.assertEqual((q.vt_shapes, q.time_budget, q.rounds), (peers.VT_QUICK, 0.0, 3))

    def test_ops_table_defaults_unchanged(self):
        a = self.parse()
        self.assertEqual((a.table, a.time_budget, a.modes), ("ops", 0.0, ",".join(peers.COMPILE_MODES)))


@unittest.skipIf(torch is None, "torch not importable")
class Formulas(unittest.TestCase):
    def inputs(self, case, seed=0):
        g = torch.Generator().manual_seed(seed)
        rows, d = case["rows"], case["d"]
        x = (torch.randn(rows, d, generator=g) * torch.exp2(torch.linspace(-1, 1, d))).bfloat16()
        z = (2 * torch.randn(rows, d, generator=g)).bfloat16() if case["gate"] != "none" else None
        w = (0.5 * torch.randn(d, generator=g) + 1).bfloat16()
        dy = torch.randn(rows, d, generator=g).bfloat16()
        return x, z, w, dy

    def test_fp32_formula_and_backward_match_float64_autograd(self):
        for gate in ("silu", "sigmoid", "none"):
            for pl in ("after", "before"):
                for group in (0, 64):
                    case = V.make_case("t", 96, 256, gate, pl, group)
                    x, z, w, dy = self.inputs(case)
                    ref = V.reference64(torch, case, x, z, w, dy)
                    f, b = V.formula(torch, case)
                    dx, dz, dw = b(dy, x, z, w)
                    errs, bad = V.check_outputs(torch, {"y": f(x, z, w), "dx": dx, "dz": dz, "dw": dw}, ref, 1e-2)
                    self.assertEqual(bad, [], (case["variant"], errs))
                    self.assertEqual(set(errs), {"y", "dx", "dw"} | ({"dz"} if gate != "none" else set()))
                    self.assertLess(max(errs.values()), 4e-3, case["variant"])  # BF16 rounding

    def test_other_dtypes_round_once_to_their_own_precision(self):
        for spec, bound in (("f16", 1e-3), ("f32", 1e-6), ("bf16:f32", 4e-3)):
            xd, wd = V.parse_dtype(spec)
            for gate, pl in (("silu", "before"), ("sigmoid", "after")):
                case = V.make_case("t", 64, 256, gate, pl, 64, dtype=xd, w_dtype=wd)
                x, z, w, dy = self.inputs(case)
                dt, wdt = V.TORCH_DTYPE[xd](torch), V.TORCH_DTYPE[wd](torch)
                x, z, w, dy = x.to(dt), z.to(dt), w.to(wdt), dy.to(dt)
                ref = V.reference64(torch, case, x, z, w, dy)
                f, b = V.formula(torch, case)
                y = f(x, z, w)
                dx, dz, dw = b(dy, x, z, w)
                self.assertEqual((y.dtype, dx.dtype, dz.dtype, dw.dtype), (dt, dt, dt, wdt))
                errs, bad = V.check_outputs(torch, {"y": y, "dx": dx, "dz": dz, "dw": dw}, ref, 1e-2)
                self.assertLess(max(errs.values()), bound, (case["variant"], errs))

    def test_the_check_catches_another_formula(self):
        before = V.make_case("t", 64, 2048, "silu", "before", 1024)
        x, z, w, dy = self.inputs(before)
        ref = V.reference64(torch, before, x, z, w, dy)
        for other in (V.make_case("t", 64, 2048, "silu", "after", 1024),   # the other placement
                      V.make_case("t", 64, 2048, "silu", "before", 0),     # groups ignored
                      V.make_case("t", 64, 2048, "sigmoid", "before", 1024)):  # the other gate
            f, b = V.formula(torch, other)
            errs, bad = V.check_outputs(torch, {"y": f(x, z, w), "dx": b(dy, x, z, w)[0]}, ref, 1e-2)
            self.assertEqual(bad, ["dx", "y"], (other["variant"], errs))
            self.assertGreater(min(errs.values()), 0.1, other["variant"])


class CpuTorch:
    """torch on the CPU where the passes ask for "cuda": no device, synchronisation a no-op."""

    def __init__(self):
        self.cuda = types.SimpleNamespace(synchronize=lambda: None, empty_cache=lambda: None,
                                          current_stream=lambda: None)

    def __getattr__(self, name):
        return getattr(torch, name)

    def _cpu(self, fn):
        def call(*a, **k):
            k.pop("device", None)
            return fn(*a, **k)
        return call

    def linspace(self, *a, **k):
        return self._cpu(torch.linspace)(*a, **k)

    def empty(self, *a, **k):
        return self._cpu(torch.empty)(*a, **k)

    def zeros(self, *a, **k):
        return self._cpu(torch.zeros)(*a, **k)


def fake_fla(t):
    """FLA's three entry points as the variant table calls them, computing its variant."""
    def case_of(x, act):
        return V.make_case("f", x.shape[0], x.shape[1], "silu" if act == "swish" else act, "after")

    def rms_norm_gated(x, g, w, b, activation, eps):
        return V.formula(t, case_of(x, activation))[0](x, g, w)

    def fwd(x, g, weight, bias, activation, eps, is_rms_norm):
        return None, None, "rstd", None

    def bwd(dy, x, g, weight, bias, activation, eps, mean, rstd, is_rms_norm, x_dtype):
        assert rstd == "rstd"
        dx, dz, dw = V.formula(t, case_of(x, activation))[1](dy, x, g, weight)
        return dx, dz, dw, None, None
    return rms_norm_gated, fwd, bwd, "0.0"


def fake_mamba_ignoring_groups(t):
    """mamba_ssm's functions, but with group_size ignored: every grouped row must be 'mismatch'."""
    def case_of(x, z, nbg):
        return V.make_case("m", x.shape[0], x.shape[1], "silu" if z is not None else "none",
                           "after" if nbg else "before")

    mod = types.SimpleNamespace()
    mod.rmsnorm_fn = lambda x, w, b, z, eps, group_size, norm_before_gate: V.formula(
        t, case_of(x, z, norm_before_gate))[0](x, z, w)
    mod._layer_norm_fwd = lambda x, w, b, eps, z, group_size, norm_before_gate, is_rms_norm: (None, None, "rstd")

    def bwd(dy, x, w, b, eps, mean, rstd, z, group_size, norm_before_gate, is_rms_norm):
        dx, dz, dw = V.formula(t, case_of(x, z, norm_before_gate))[1](dy, x, z, w)
        return dx, dw, None, dz
    mod._layer_norm_bwd = bwd
    return mod, "0.0"


def fake_cake(t):
    """Cake's binding: the descriptor's variant fields decide what it computes."""
    cake = types.SimpleNamespace(NormgatePackage=types.SimpleNamespace(NONDETERMINISTIC=1, DETERMINISTIC=0),
                                 DType=types.SimpleNamespace(BF16=1))
    cake.normgate_desc = lambda rows, d, **kw: dict(kw, rows=rows, d=d)

    def case_of(desc):
        return V.make_case("c", desc["rows"], desc["d"], desc["gate"],
                           "before" if desc["gate_before_norm"] else "after", desc["group_size"] or 0)

    h = types.SimpleNamespace(calls=[], dtypes=[], dw_dtypes=[])

    def forward(desc, x, z, w, y, rstd, stream):
        h.calls.append(("fwd", desc["gate"], desc["gate_before_norm"], desc["group_size"]))
        h.dtypes.append((desc.get("x_dtype"), desc.get("z_dtype"), desc.get("w_dtype"), str(x.dtype), str(w.dtype)))
        y.copy_(V.formula(t, case_of(desc))[0](x, z, w))

    def backward(desc, dy, x, z, w, dx, dz, dw, ws, ws_bytes, stream):
        h.dw_dtypes.append((desc["dw_dtype"], str(dw.dtype)))
        a, b, c = V.formula(t, case_of(desc))[1](dy, x, z, w)
        dx.copy_(a)
        dw.copy_(c)
        if dz is not None:
            dz.copy_(b)
    h.normgate_forward, h.normgate_backward = forward, backward
    h.normgate_workspace_size = lambda desc: 0
    return cake, h


@unittest.skipIf(torch is None, "torch not importable")
class PassesOnCpu(unittest.TestCase):
    def test_whole_table_with_made_up_peers(self):
        t = CpuTorch()
        args = types.SimpleNamespace(time_budget=0, json=None, no_pair=False, check_tol=1e-2,
                                     copy_gbps=4000.0, vt_sets="wide,group,sigmoid,d128,nogate",
                                     vt_shapes="64x256", ng_shapes="2x8", vt_group=64,
                                     vt_group_shape="32x256", vt_dtypes="bf16,bf16:f32")
        run = bookkeeping.Run(args)
        gen = torch.Generator().manual_seed(1)
        cake, cake_h = fake_cake(t)
        ctx = types.SimpleNamespace(torch=t, args=args, run=run, fla=fake_fla(t),
                                    mamba=fake_mamba_ignoring_groups(t), cake=cake, cake_h=cake_h)
        ctx.randn = lambda *s, scale=1.0, offset=0.0: (torch.randn(*s, generator=gen) * scale + offset).bfloat16()
        timed = []

        def measure(family, op, shape, peer, fn, bytes_rw=None, extra=None, cake_fns=None):
            fn()
            row = {"family": family, "op": op, "shape": shape, "peer": peer, "status": "ok",
                   "time": stat(10.0)}
            row.update(extra or {})
            if cake_fns:
                row["paired_cake"] = {n: {"time": stat(5.0), "speedup": 2.0, "speedup_lo": 2.0,
                                          "speedup_hi": 2.0} for n in cake_fns}
                for f in cake_fns.values():
                    f()
            timed.append((row["variant"], shape, op, peer))
            run.add(**row)
        ctx.measure = measure
        ctx.compiled = lambda fn, mode: fn
        import io
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()):
            V.run_table(ctx, {"fla", "mamba", "compile"}, ["default"])
        st = {(r["variant"], r["shape"], r["op"], r["peer"]): r["status"] for r in run.results}
        self.assertEqual(st[("silu/after", "64x256", "fwdg", "Cake")], "ok")
        self.assertEqual(st[("silu/after", "64x256", "bwdg", "FLA rms_norm_gated")], "ok")
        self.assertEqual(st[("silu/before", "64x256", "fwdg", "FLA rms_norm_gated")], "unsupported")
        self.assertEqual(st[("sigmoid/after", "64x256", "bwdg", "FLA rms_norm_gated")], "ok")
        self.assertEqual(st[("sigmoid/after", "64x256", "fwdg", "mamba_ssm rmsnorm_fn")], "unsupported")
        self.assertEqual(st[("none", "64x256", "bwdg", "mamba_ssm rmsnorm_fn")], "ok")
        self.assertEqual(st[("silu/before", "16x128", "fwdg", "mamba_ssm rmsnorm_fn")], "ok")
        # The made-up mamba ignores group_size: reported, not timed.
        for pl in ("after", "before"):
            for op in ("fwdg", "bwdg"):
                self.assertEqual(st[("silu/%s/G64" % pl, "32x256", op, "mamba_ssm rmsnorm_fn")], "mismatch")
                self.assertNotIn(("silu/%s/G64" % pl, "32x256", op, "mamba_ssm rmsnorm_fn"), timed)
        # torch.compile of the formula, every variant, both ops; Cake's descriptor carried each.
        for c in V.plan(args.vt_sets.split(","), args.vt_shapes, args.ng_shapes, 64, "32x256",
                        ["bf16", "bf16:f32"]):
            for op in ("fwdg", "bwdg"):
                self.assertEqual(st[(c["variant"], c["shape"], op, "torch.compile default")], "ok")
                self.assertEqual(st[(c["variant"], c["shape"], op, "Cake" if op == "fwdg" else "Cake det")], "ok")
        self.assertIn(("fwd", "sigmoid", False, None), cake_h.calls)
        self.assertIn(("fwd", "silu", True, 64), cake_h.calls)
        self.assertIn(("fwd", "none", False, None), cake_h.calls)
        # BF16 rows leave the dtype fields at their defaults; FP32 w rows set them, dw FP32 too.
        self.assertEqual(set(cake_h.dtypes), {(None, None, None, "torch.bfloat16", "torch.bfloat16"),
                                              ("bf16", "bf16", "f32", "torch.bfloat16", "torch.float32")})
        self.assertEqual(set(cake_h.dw_dtypes), {("bf16", "torch.bfloat16"), ("f32", "torch.float32")})
        self.assertEqual(st[("silu/before/G64/bf16-wf32", "32x256", "bwdg", "torch.compile default")], "ok")
        self.assertEqual(st[("sigmoid/after/bf16-wf32", "64x256", "bwdg", "FLA rms_norm_gated")], "ok")
        # Paired speedups and limits per variant, then the table renders every row.
        self.assertTrue(any(v["variant"] == "silu/before/G64" and v["op"] == "fwd+bwd"
                            for v in run.meta["cake_vs_best_peer"]))
        raw = dict(run.meta, results=run.results, skipped_for_time=run.skipped, tool="cake-bench peers variants")
        md = tables.render_variants(results.variant_section(raw))
        self.assertIn("| silu/before/G64 | 32x256 | fwdg |", md)
        self.assertIn("| none | 64x256 | fwd+bwd |", md)
        self.assertIn("mamba_ssm rmsnorm_fn silu/after/G64 32x256 fwdg: rel L2 above 0.01", md)

    def test_a_variant_cake_does_not_serve_is_reported_and_the_peers_run_alone(self):
        t = CpuTorch()
        cake, cake_h = fake_cake(t)
        make = cake.normgate_desc

        def desc(rows, d, **kw):
            if kw.get("gate") == "sigmoid":
                raise NotImplementedError("cake_normgate_desc.gate")
            return make(rows, d, **kw)
        cake.normgate_desc = desc
        args = types.SimpleNamespace(time_budget=0, json=None, no_pair=False, check_tol=1e-2)
        run = bookkeeping.Run(args)
        gen = torch.Generator().manual_seed(2)
        ctx = types.SimpleNamespace(torch=t, args=args, run=run, cake=cake, cake_h=cake_h,
                                    fla=fake_fla(t), mamba=fake_mamba_ignoring_groups(t))
        ctx.randn = lambda *s, scale=1.0, offset=0.0: (torch.randn(*s, generator=gen) * scale + offset).bfloat16()
        paired = []

        def measure(family, op, shape, peer, fn, bytes_rw=None, extra=None, cake_fns=None):
            paired.append((peer, op, sorted(cake_fns or {})))
            run.add(family=family, op=op, shape=shape, peer=peer, status="ok", time=stat(1.0), **extra)
        ctx.measure = measure
        vr = V.VariantRunner(ctx, 4000.0, 1e-2)
        import io
        import contextlib
        with contextlib.redirect_stdout(io.StringIO()):
            vr.fast_pass([V.make_case("sigmoid", 32, 256, "sigmoid", "after")], {"fla", "mamba"})
        st = {(r["op"], r["peer"]): (r["status"], r.get("note", "")) for r in run.results}
        for key in (("fwdg", "Cake"), ("bwdg", "Cake nondet"), ("bwdg", "Cake det")):
            self.assertEqual(st[key][0], "not available")
            self.assertIn("cake_normgate_desc.gate", st[key][1])
        self.assertEqual(st[("fwdg", "mamba_ssm rmsnorm_fn")][0], "unsupported")
        # FLA computes it: checked, then timed alone, its row saying why Cake is not beside it.
        self.assertEqual(paired, [("FLA rms_norm_gated", "fwdg", []), ("FLA rms_norm_gated", "bwdg", [])])
        self.assertIn("cake_normgate_desc.gate", next(
            r for r in run.results if r["peer"] == "FLA rms_norm_gated")["cake_note"])

    def test_a_wrong_cake_is_reported_and_not_paired(self):
        t = CpuTorch()
        cake, cake_h = fake_cake(t)
        good = cake_h.normgate_forward

        def placement_ignored(desc, *a, **k):
            good(dict(desc, gate_before_norm=False), *a, **k)
        cake_h.normgate_forward = placement_ignored
        args = types.SimpleNamespace(time_budget=0, json=None, no_pair=False, check_tol=1e-2)
        run = bookkeeping.Run(args)
        ctx = types.SimpleNamespace(torch=t, args=args, run=run, cake=cake, cake_h=cake_h)
        vr = V.VariantRunner(ctx, 4000.0, 1e-2)
        case = V.make_case("t", 16, 256, "silu", "before")
        x, z, w, dy = Formulas().inputs(case)
        ref = V.reference64(torch, case, x, z, w, dy)
        fns, why = vr.cake_fns(case, x, z, w, dy, ref)
        self.assertEqual(fns, {})
        self.assertIn("Cake mismatch", why)


if __name__ == "__main__":
    unittest.main()
