#!/usr/bin/env python3
"""Summarize per-CTA timelines printed by a CAKE_TIMELINE build (kernels/common/cta_timeline.cuh).

Reads the "TL tag launch cta entry walk_end mark2 exit count" lines (times in ns from the
launch's first CTA entry) from one or more logs and prints, per log and launch: the walk end of
the first, median and last CTA, mark 2 (median, last), the last exit, the median time per
counted step, the count range; then the medians of those over the launches of the log.

    tools/timeline-report.py run/*.log          # table per log
    tools/timeline-report.py --json out.json run/*.log
"""
import argparse
import collections
import json
import statistics
import sys


def parse(path):
    """{launch: [(cta, entry, walk_end, mark2, exit, count)]} of one log."""
    launches = collections.defaultdict(list)
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) != 9 or fields[0] != "TL":
                continue
            try:
                launch, cta, *vals = (int(x) for x in fields[2:])
            except ValueError:
                continue
            launches[launch].append((cta, *vals))
    return launches


def summarize(records):
    """One launch's numbers, in microseconds."""
    walk = sorted(r[2] for r in records)
    counted = [r for r in records if r[5] > 0]
    return {
        "ctas": len(records),
        "walk_end_first": walk[0] / 1e3,
        "walk_end_median": statistics.median(walk) / 1e3,
        "walk_end_last": walk[-1] / 1e3,
        "mark2_median": statistics.median(r[3] for r in records) / 1e3,
        "mark2_last": max(r[3] for r in records) / 1e3,
        "exit_last": max(r[4] for r in records) / 1e3,
        "step_median": statistics.median((r[2] - r[1]) / r[5] for r in counted) / 1e3 if counted else 0.0,
        "count_min": min(r[5] for r in records),
        "count_max": max(r[5] for r in records),
    }


COLUMNS = ["walk_end_first", "walk_end_median", "walk_end_last", "mark2_median", "mark2_last",
           "exit_last", "step_median"]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args(argv)
    out = {}
    status = 0
    for path in args.logs:
        launches = parse(path)
        if not launches:
            print(f"{path}: no TL lines (not a CAKE_TIMELINE build, or the printed launches never ran)", file=sys.stderr)
            status = 1
            continue
        rows = {launch: summarize(recs) for launch, recs in sorted(launches.items())}
        med = {k: statistics.median(r[k] for r in rows.values()) for k in COLUMNS}
        out[path] = {"launches": rows, "median": med}
        print(f"{path} (us from the first CTA entry)")
        print("  launch  ctas  walk end first / median / last   mark2 median / last   last exit   "
              "us/step  count")
        for launch, r in rows.items():
            print(f"  {launch:6d} {r['ctas']:5d}  {r['walk_end_first']:9.2f} / {r['walk_end_median']:7.2f}"
                  f" / {r['walk_end_last']:7.2f}   {r['mark2_median']:8.2f} / {r['mark2_last']:7.2f}"
                  f"   {r['exit_last']:9.2f}  {r['step_median']:7.3f}  {r['count_min']}-{r['count_max']}")
        print(f"  median        {med['walk_end_first']:9.2f} / {med['walk_end_median']:7.2f} / "
              f"{med['walk_end_last']:7.2f}   {med['mark2_median']:8.2f} / {med['mark2_last']:7.2f}   "
              f"{med['exit_last']:9.2f}  {med['step_median']:7.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
