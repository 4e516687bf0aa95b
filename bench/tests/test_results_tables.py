"""Host tests of bench/results.py (a results JSON from cake-bench's and peers.py's JSON),
bench/tables.py (its Markdown tables, the blocks of docs/performance.md) and bench/plot.py's
series (no matplotlib needed). Made-up numbers; no GPU.
Run: python3 -m unittest discover -s bench/tests (or python3 -m pytest bench/tests)."""

import json
import os
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import plot  # noqa: E402
import results  # noqa: E402
import tables  # noqa: E402


def stat(us, timer="events"):
    return {"median_us": us, "lo_us": us, "hi_us": us, "spread_pct": 1.0, "timer": timer,
            "round_medians_us": [us, us]}


def cake_row(family, op, shape, package, us, limit, program="sm90.p", **extra):
    r = {"family": family, "op": op, "shape": shape, "package": package, "program": program,
         "status": "ok", "note": "", "time": stat(us), "limit": stat(limit),
         "frac_limit": limit / us, "frac_copy": 0.5}
    r.update(extra)
    return r


def cake_doc():
    return {
        "tool": "cake-bench", "date": "2026-01-02T03:04:05Z",
        "device": {"name": "GPU X", "cc_major": 9, "cc_minor": 0, "sm_count": 100,
                   "l2_bytes": 50 * 2**20, "memory_bytes": 80 * 2**30},
        "cake": {"version": 200, "table": 90, "image": "sm_90a", "program_count": 7},
        "method": {"rounds": 10, "iters": 30, "warmup": 3, "flush_bytes": 100 * 2**20,
                   "eager_timer": "CUPTI", "graph_timer": "events", "swiglu_timing": "graph"},
        "copy": {"gbps": 3000.0, "reference": "cudaMemcpyAsync, eager"},
        "empty_kernel_graph": stat(4.0),
        "results": [
            cake_row("normgate", "fwdg", "100x8", "-", 10.0, 9.5),
            cake_row("normgate", "bwdg", "100x8", "det", 22.0, 18.0),
            cake_row("normgate", "bwdg", "100x8", "nondet", 20.0, 18.0),
            cake_row("swiglu", "fwd_row", "128x128", "-", 6.0, 5.4, floor=stat(4.0),
                     frac_copy=0.003),
            {"family": "swiglu", "op": "bwd_row", "shape": "128x128", "package": "-",
             "status": "not available", "note": "no entry point", "time": stat(-1),
             "limit": stat(5.0)},
        ],
        "routing": [{"family": "swiglu", "form": "fwd_row", "shape": "128x128", "routed": "a",
                     "routed_us": 2.0, "fastest": "b", "fastest_us": 1.8, "flagged": True},
                    {"family": "swiglu", "form": "fwd_col", "shape": "128x128", "routed": "a",
                     "routed_us": 2.0, "fastest": "a", "fastest_us": 2.0, "flagged": False}],
    }


def peers_doc():
    def peer(op, shape, name, us, family="normgate"):
        return {"family": family, "op": op, "shape": shape, "peer": name, "status": "ok",
                "time": stat(us)}
    return {
        "versions": {"torch": "2.0", "triton": "3.0", "fla": "0.1", "cake": "0.2.0"},
        "method": {"timer": "events"}, "floor_graph": stat(3.0),
        "results": [peer("fwdg", "100x8", "FLA rms_norm_gated", 11.0),
                    peer("fwdg", "100x8", "torch.compile default", 12.0),
                    peer("bwdg", "100x8", "FLA rms_norm_gated", 30.0),
                    peer("bwdg", "100x8", "torch.compile default", 25.0),
                    peer("fwd_row", "128x128", "torch.compile default", 5.5, "swiglu"),
                    dict(peer("fwdg", "100x8", "Cake", 9.0), is_cake=True),
                    dict(peer("fwdg", "100x8", "broken", 1.0), status="error")],
        "cake_vs_best_peer": [
            {"family": "normgate", "op": "fwdg", "shape": "100x8", "cake": "Cake", "cake_us": 10.2,
             "peer": "FLA rms_norm_gated", "peer_us": 11.0, "speedup": 1.0784, "speedup_lo": 1.05,
             "speedup_hi": 1.1},
            {"family": "normgate", "op": "bwdg", "shape": "100x8", "cake": "Cake nondet",
             "cake_us": 20.0, "peer": "torch.compile default", "peer_us": 25.0, "speedup": 1.25,
             "speedup_lo": 1.2, "speedup_hi": 1.3},
            {"family": "swiglu", "op": "fwd_row", "shape": "128x128", "cake": "Cake",
             "cake_us": 5.0, "peer": "torch.compile default", "peer_us": 5.5, "speedup": 1.1,
             "speedup_lo": 1.0, "speedup_hi": 1.2}],
        "skipped_for_time": ["swiglu compile:max-autotune-no-cudagraphs bwd_row 128x128"],
    }


def make_results(tmp, **kw):
    cp, pp = os.path.join(tmp, "cake.json"), os.path.join(tmp, "peers.json")
    for path, doc in ((cp, cake_doc()), (pp, peers_doc())):
        with open(path, "w") as f:
            json.dump(doc, f)
    out = os.path.join(tmp, "gpux.json")
    argv = [cp, pp, "-o", out, "--commit", "abc1234", "--driver", "1.2.3"]
    for k, v in kw.items():
        argv += ["--" + k.replace("_", "-"), v]
    results.main(argv)
    with open(out) as f:
        return json.load(f), out


class ResultsJson(unittest.TestCase):
    def test_provenance_and_rows(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc, _ = make_results(tmp)
        self.assertEqual(doc["date"], "2026-01-02")
        self.assertEqual(doc["device"]["arch"], "sm_90")
        self.assertEqual(doc["device"]["driver"], "1.2.3")
        self.assertEqual(doc["library"], {"commit": "abc1234", "version": "0.2.0",
                                          "table": "sm90", "image": "sm_90a", "programs": 7})
        self.assertNotIn("cake", doc["tools"])
        self.assertTrue(any("--commit abc1234" in c for c in doc["commands"]))
        # Cake alone and failed peers are not peers.
        self.assertEqual({p["peer"] for p in doc["peers"]},
                         {"FLA rms_norm_gated", "torch.compile default"})
        na = [r for r in doc["cake"] if r["op"] == "bwd_row"][0]
        self.assertNotIn("us", na)
        self.assertEqual(na["status"], "not available")
        self.assertEqual(doc["routing"]["checked"], 2)
        self.assertEqual([r["form"] for r in doc["routing"]["flagged"]], ["fwd_row"])

    def test_driver_from_nvidia_smi_csv(self):
        with tempfile.TemporaryDirectory() as tmp:
            csv = os.path.join(tmp, "smi.csv")
            with open(csv, "w") as f:
                f.write("name, driver_version, clocks.current.sm [MHz]\nGPU X, 580.1.2, 345 MHz\n")
            self.assertEqual(results.driver_from_csv(csv), "580.1.2")


class Tables(unittest.TestCase):
    def render(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc, _ = make_results(tmp)
        return doc, tables.render(doc)

    def test_normgate_rows(self):
        _, md = self.render()
        # fwdg has one package; the fractions are limit / Cake.
        self.assertIn("| 100x8 | fwdg | 10.00 | = | 9.50 | 95.0% | = | 50.0% |", md)
        self.assertIn("| 100x8 | bwdg | 22.00 | 20.00 | 18.00 | 81.8% | 90.0% | 50.0% |", md)
        # Each peer, the best in bold, the paired speedups; det not paired here.
        self.assertIn("| 100x8 | fwdg | **11.00** | 12.00 | 1.078 [1.050, 1.100] | = |", md)
        self.assertIn("| 100x8 | bwdg | 30.00 | **25.00** | 1.250 [1.200, 1.300] | - |", md)

    def test_swiglu_floor_routing_skipped(self):
        _, md = self.render()
        self.assertIn("| 128x128 | fwd_row | 6.00 | 5.40 | 90.0% | 0.3% | **5.50** | "
                      "1.100 [1.000, 1.200] | `sm90.p` |", md)
        self.assertIn("| 128x128 | bwd_row | - | 5.00 | - | - | - | - | not available |", md)
        self.assertIn("| 128x128 | fwd_row | 6.00 | 5.40 | 4.00 | 1.50 | 1.35 |", md)
        self.assertIn("1 of 2 forms x shapes flagged", md)
        self.assertIn("| swiglu | fwd_row | 128x128 | `a` | 2.00 | `b` | 1.80 |", md)
        self.assertIn("compile max-autotune `bwd_row` 128x128", md)

    def test_write_and_check_blocks(self):
        with tempfile.TemporaryDirectory() as tmp:
            _, path = make_results(tmp)
            md = os.path.join(tmp, "perf.md")
            with open(md, "w") as f:
                f.write("# P\n<!-- tables gpux begin: generated -->\nstale\n<!-- tables gpux end -->\ntail\n")
            self.assertEqual(tables.main(["--check", md, path]), 1)
            self.assertEqual(tables.main(["--write", md, path]), 0)
            self.assertEqual(tables.main(["--check", md, path]), 0)
            with open(md) as f:
                text = f.read()
            self.assertTrue(text.startswith("# P\n<!-- tables gpux begin: generated -->\n- Device: GPU X"))
            self.assertTrue(text.endswith("<!-- tables gpux end -->\ntail\n"))
            # A device without a block is an error, not silently skipped.
            other = os.path.join(tmp, "other.json")
            with open(path) as f, open(other, "w") as g:
                g.write(f.read())
            self.assertEqual(tables.main(["--check", md, path, other]), 1)


def ngquant_doc():
    """A cake-bench --ng-quant run: the plain forward and two quantized outputs of one shape,
    one output not available, no peers."""
    doc = cake_doc()
    q = dict(family="normgate_quant", shape="3534x48", package="-")
    doc["results"] = [
        cake_row(op="fwdg", us=40.0, limit=39.0, read_bytes=86859264, write_bytes=43417344, **q),
        cake_row(op="fp8b", us=30.0, limit=28.5, base=stat(40.0), ratio_to_base=0.75,
                 ratio_lo=0.74, ratio_hi=0.76, read_bytes=86859264, write_bytes=22387200, **q),
        cake_row(op="mxfp8+y", us=52.0, limit=49.4, base=stat(40.0), ratio_to_base=1.3,
                 ratio_lo=1.29, ratio_hi=1.31, read_bytes=86859264, write_bytes=66486272, **q),
        dict(q, op="fp8b_pow2", status="not available", note="not in this build",
             time=stat(-1), limit=stat(28.5), read_bytes=86859264, write_bytes=22387200),
    ]
    doc["routing"] = []
    return doc


class NormgateQuant(unittest.TestCase):
    def results(self):
        with tempfile.TemporaryDirectory() as tmp:
            cp, out = os.path.join(tmp, "ngq.json"), os.path.join(tmp, "gpux.json")
            with open(cp, "w") as f:
                json.dump(ngquant_doc(), f)
            results.main([cp, "-", "-o", out, "--commit", "abc1234", "--driver", "1.2.3"])
            with open(out) as f:
                return json.load(f)

    def test_results_keep_the_ratio_and_bytes(self):
        doc = self.results()
        rows = {r["op"]: r for r in doc["cake"]}
        self.assertEqual(rows["fp8b"]["base_us"], 40.0)
        self.assertEqual((rows["fp8b"]["ratio"], rows["fp8b"]["ratio_lo"],
                          rows["fp8b"]["ratio_hi"]), (0.75, 0.74, 0.76))
        self.assertEqual(rows["fp8b"]["bytes"], 86859264 + 22387200)
        self.assertNotIn("ratio", rows["fwdg"])
        self.assertNotIn("us", rows["fp8b_pow2"])
        self.assertEqual(doc["peers"], [])

    def test_table(self):
        md = tables.render(self.results())
        self.assertIn("| T x H[:D] | output | MB | Cake us | quantized / plain | limit us | "
                      "% limit | program |", md)
        self.assertIn("| 3534x48 | plain (BF16 y) | 130.3 | 40.00 | - | 39.00 | 97.5% | "
                      "`sm90.p` |", md)
        self.assertIn("| 3534x48 | FP8 blockwise, exact | 109.2 | 30.00 | 0.750 [0.740, 0.760] | "
                      "28.50 | 95.0% | `sm90.p` |", md)
        self.assertIn("| 3534x48 | MXFP8 + BF16 y | 153.3 | 52.00 | 1.300 [1.290, 1.310] | "
                      "49.40 | 95.0% | `sm90.p` |", md)
        self.assertIn("| 3534x48 | FP8 blockwise, pow2 | 109.2 | - | - | 28.50 | - | "
                      "not available |", md)
        # No peers in such a run: the header says nothing of them, and no norm-gate table is
        # rendered from the quantized rows.
        self.assertNotIn("- Peers:", md)
        self.assertIn("empty-kernel graph replay 4.00 us (cake-bench).", md)
        self.assertNotIn("| T x H | op | det us", md)


def grouped_doc(family, us, base_us, ratio, lo, hi):
    """A cake-bench --sw-shapes grouped JSON of one family: one shape, fwd_row."""
    doc = cake_doc()
    doc["results"] = [cake_row(family, "fwd_row", "16384x2048/E8", "-", us, 48.0,
                               program="sm90.g_" + family, base=stat(base_us),
                               base_label="per-expert", ratio_to_base=ratio, ratio_lo=lo,
                               ratio_hi=hi)]
    doc["routing"] = []
    return doc


class GroupedRows(unittest.TestCase):
    """Grouped SwiGLU runs (both families' JSONs into one results file): the per-expert ratio
    kept, their own table, no plain SwiGLU table and no figure from them."""

    def results(self, **kw):
        with tempfile.TemporaryDirectory() as tmp:
            mx, f8 = os.path.join(tmp, "g-mx.json"), os.path.join(tmp, "g-f8.json")
            with open(mx, "w") as f:
                json.dump(grouped_doc("swiglu", 54.0, 66.5, 0.811, 0.808, 0.818), f)
            with open(f8, "w") as f:
                json.dump(grouped_doc("swiglu_fp8", 60.0, 50.0, 1.2, 1.19, 1.21), f)
            out = os.path.join(tmp, "gpux-grouped.json")
            results.main([mx, "-", "--cake-also", f8, "-o", out, "--commit", "abc1234",
                          "--driver", "1.2.3", "--cake-command", "cake-bench A",
                          "--cake-command", "cake-bench B"])
            with open(out) as f:
                return json.load(f)

    def test_results_keep_the_ratio_and_both_files(self):
        doc = self.results()
        rows = {r["family"]: r for r in doc["cake"]}
        self.assertEqual(sorted(rows), ["swiglu", "swiglu_fp8"])
        self.assertEqual((rows["swiglu"]["base_us"], rows["swiglu"]["ratio"],
                          rows["swiglu"]["base_label"]), (66.5, 0.811, "per-expert"))
        self.assertEqual(rows["swiglu_fp8"]["ratio_hi"], 1.21)
        cmds = doc["commands"]
        self.assertIn("cake-bench A", cmds)
        self.assertLess(cmds.index("cake-bench A"), cmds.index("cake-bench B"))
        self.assertFalse(any("peers" in c for c in cmds), cmds)
        self.assertTrue(any("g-mx.json - --cake-also g-f8.json --commit abc1234" in c
                            for c in cmds), cmds)

    def test_another_device_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
            other = grouped_doc("swiglu_fp8", 1.0, 1.0, 1.0, 1.0, 1.0)
            other["device"] = dict(other["device"], name="GPU Y")
            for path, d in ((a, grouped_doc("swiglu", 1.0, 1.0, 1.0, 1.0, 1.0)), (b, other)):
                with open(path, "w") as f:
                    json.dump(d, f)
            with self.assertRaises(SystemExit):
                results.main([a, "-", "--cake-also", b, "-o", os.path.join(tmp, "o.json")])

    def test_table(self):
        doc = self.results()
        md = tables.render(doc)
        self.assertIn("| T x K / E | form | grouped us | limit us | % limit | per-expert us | "
                      "grouped / per-expert | program |", md)
        self.assertIn("| 16384x2048/E8 | fwd_row | 54.00 | 48.00 | 88.9% | 66.50 | "
                      "0.811 [0.808, 0.818] | `sm90.g_swiglu` |", md)
        self.assertIn("| 16384x2048/E8 | fwd_row | 60.00 | 48.00 | 80.0% | 50.00 | "
                      "1.200 [1.190, 1.210] | `sm90.g_swiglu_fp8` |", md)
        self.assertLess(md.index("Grouped SwiGLU + MXFP8"), md.index("Grouped SwiGLU + FP8"))
        self.assertNotIn("| M x K | form | Cake us", md)  # no plain SwiGLU table
        self.assertEqual(plot.series(doc, "swiglu")[0], [])  # no figure


def grouped_peers_doc(family, us, cake_us):
    """A peers.py JSON of one family at the grouped shape: torch.compile paired with Cake."""
    name = "torch.compile default"
    return {"device": {"name": "GPU X"}, "versions": {"torch": "2.11"},
            "method": {"timer": "events"}, "floor_graph": stat(3.0),
            "results": [{"family": family, "op": "fwd_row", "shape": "16384x2048/E8",
                         "peer": name, "status": "ok", "time": stat(us)}],
            "cake_vs_best_peer": [{"family": family, "op": "fwd_row", "shape": "16384x2048/E8",
                                   "cake": "Cake", "cake_us": cake_us, "peer": name,
                                   "peer_us": us, "speedup": us / cake_us,
                                   "speedup_lo": us / cake_us - 0.1,
                                   "speedup_hi": us / cake_us + 0.1}],
            "skipped_for_time": []}


class GroupedPeers(unittest.TestCase):
    """Grouped rows with torch.compile of the grouped reference (peers.py at the grouped shapes,
    one JSON per family: --peers-also): peer columns and Cake's paired speedup in the grouped
    table."""

    def test_table_with_peers_of_both_families(self):
        with tempfile.TemporaryDirectory() as tmp:
            paths = {}
            for name, doc in (("g-mx", grouped_doc("swiglu", 54.0, 66.5, 0.811, 0.808, 0.818)),
                              ("g-f8", grouped_doc("swiglu_fp8", 60.0, 50.0, 1.2, 1.19, 1.21)),
                              ("p-mx", grouped_peers_doc("swiglu", 108.0, 54.0)),
                              ("p-f8", grouped_peers_doc("swiglu_fp8", 90.0, 60.0))):
                paths[name] = os.path.join(tmp, name + ".json")
                with open(paths[name], "w") as f:
                    json.dump(doc, f)
            out = os.path.join(tmp, "gpux-grouped.json")
            results.main([paths["g-mx"], paths["p-mx"], "--cake-also", paths["g-f8"],
                          "--peers-also", paths["p-f8"], "-o", out, "--commit", "abc1234",
                          "--driver", "1.2.3", "--cake-command", "cake-bench A",
                          "--peers-command", "peers.py MX", "--peers-also-command",
                          "peers.py F8"])
            with open(out) as f:
                doc = json.load(f)
        self.assertEqual(sorted(p["family"] for p in doc["peers"]), ["swiglu", "swiglu_fp8"])
        self.assertEqual(len(doc["vs_best_peer"]), 2)
        cmds = doc["commands"]
        self.assertLess(cmds.index("peers.py MX"), cmds.index("peers.py F8"))
        self.assertTrue(any("g-mx.json p-mx.json --cake-also g-f8.json --peers-also p-f8.json"
                            in c for c in cmds), cmds)
        md = tables.render(doc)
        self.assertIn("| T x K / E | form | grouped us | limit us | % limit | per-expert us | "
                      "grouped / per-expert | compile | vs best | program |", md)
        self.assertIn("| 16384x2048/E8 | fwd_row | 54.00 | 48.00 | 88.9% | 66.50 | "
                      "0.811 [0.808, 0.818] | **108.00** | 2.000 [1.900, 2.100] | "
                      "`sm90.g_swiglu` |", md)
        self.assertIn("| 16384x2048/E8 | fwd_row | 60.00 | 48.00 | 80.0% | 50.00 | "
                      "1.200 [1.190, 1.210] | **90.00** | 1.500 [1.400, 1.600] | "
                      "`sm90.g_swiglu_fp8` |", md)

    def test_peers_also_needs_the_same_device(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, b, c = (os.path.join(tmp, n) for n in ("a.json", "b.json", "c.json"))
            other = grouped_peers_doc("swiglu_fp8", 1.0, 1.0)
            other["device"] = {"name": "GPU Y"}
            for path, d in ((a, grouped_doc("swiglu", 1.0, 1.0, 1.0, 1.0, 1.0)),
                            (b, grouped_peers_doc("swiglu", 1.0, 1.0)), (c, other)):
                with open(path, "w") as f:
                    json.dump(d, f)
            with self.assertRaises(SystemExit):
                results.main([a, b, "--peers-also", c, "-o", os.path.join(tmp, "o.json")])


class PlotSeries(unittest.TestCase):
    def test_series_by_size_with_paired_whiskers(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc, _ = make_results(tmp)
        shapes, fracs, vs = plot.series(doc, "normgate")
        self.assertEqual(shapes, ["100x8"])
        f = dict(fracs)
        self.assertAlmostEqual(f["fwdg"][0], 0.95)
        self.assertAlmostEqual(f["bwdg det"][0], 18.0 / 22.0)
        v = dict(vs)
        self.assertEqual(v["bwdg nondet"][0], (1.25, 1.2, 1.3))
        self.assertNotIn("bwdg det", v)
        self.assertEqual(plot.elements("16384x48"), 16384 * 48)


if __name__ == "__main__":
    unittest.main()
