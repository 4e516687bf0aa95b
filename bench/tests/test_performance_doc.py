"""docs/performance.md holds, for every bench/results/<device>.json, the tables bench/tables.py
renders from it, and the figures bench/plot.py draws from it exist. Fails when a results JSON
changed and the document was not regenerated (python3 bench/tables.py --write
docs/performance.md), or when a block was edited by hand."""

import contextlib
import glob
import io
import os
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import plot  # noqa: E402
import tables  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
RESULTS = sorted(glob.glob(os.path.join(ROOT, "bench", "results", "*.json")))


class PerformanceDoc(unittest.TestCase):
    def test_there_are_results(self):
        self.assertTrue(RESULTS, "no bench/results/*.json")

    def test_tables_match_the_results(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = tables.main(["--check", DOC] + RESULTS)
        self.assertEqual(rc, 0, out.getvalue()[-4000:] + err.getvalue())

    def test_figures_exist_and_are_linked(self):
        with open(DOC) as f:
            text = f.read()
        for path in RESULTS:
            device = tables.device_of(path)
            doc = tables.load(path)
            present = {r["family"] for r in doc["cake"] if "us" in r and r.get("limit_us")
                       and not tables.is_grouped(r)}  # grouped rows: a table, no figure
            for family, spec in plot.FAMILIES.items():
                if family not in present:  # a run of some families draws only theirs
                    continue
                name = "img/%s-%s.png" % (spec["file"], device)
                self.assertTrue(os.path.exists(os.path.join(ROOT, "docs", name)), name)
                self.assertIn("(%s)" % name, text)


if __name__ == "__main__":
    unittest.main()
