"""docs/performance.md's host-cost block is what bench/host/host_cost.py renders from
bench/results/host/h200.json (fails when the JSON changed and the document was not regenerated,
or the block was edited by hand), and the renderer marks each Cake op against its target."""

import json
import os
import sys
import unittest

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "host"))
import host_cost  # noqa: E402

DOC = os.path.join(ROOT, "docs", "performance.md")
RESULT = os.path.join(ROOT, "bench", "results", "host", "h200.json")


class HostCostDoc(unittest.TestCase):
    def test_block_matches_the_results(self):
        with open(DOC) as f:
            text = f.read()
        want = host_cost.block(json.load(open(RESULT)), RESULT)
        start = text.index("<!-- host cost begin")
        end = text.index(host_cost.END, start) + len(host_cost.END)
        self.assertEqual(text[start:end], want,
                         "regenerate: python3 bench/host/host_cost.py --write docs/performance.md "
                         "bench/results/host/h200.json")

    def test_ratios_and_targets(self):
        row = {"label": "op", "ref": "r", "us": 12.0, "min_us": 11.0, "max_us": 13.0}
        ref = {"label": "ref", "ref": None, "us": 10.0, "min_us": 9.0, "max_us": 11.0}
        result = {"native": {"rows": {"r": ref, "op": row}, "skipped": {}},
                  "python": {"rows": {"op": dict(row, us=50.0)}}}
        text = host_cost.table(result)
        self.assertIn("| op | 12.0 | 50.0 | 1.20x (met) |", text)
        row["us"] = 12.5
        self.assertIn("1.25x (missed)", host_cost.table(result))


if __name__ == "__main__":
    unittest.main()
