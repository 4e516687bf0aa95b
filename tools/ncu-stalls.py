#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's warp-state samples per SASS line.

On the device (--set full samples every warp's state; the export keeps one row per SASS line):
  ncu --set full --import-source no -k regex:NAME -c 1 -o rep ... cake-bench ... --program P
  ncu -i rep.ncu-rep --page source --csv --print-source sass > NAME.sass.csv
Here (a .gz export is read as is):
  tools/ncu-stalls.py NAME.sass.csv [MORE.sass.csv ...]      samples by region and stall reason
  tools/ncu-stalls.py NAME.sass.csv --top 20                 and the 20 lines with most samples
  tools/ncu-stalls.py NAME.sass.csv --split 4a30,5c00        regions cut at these addresses

Regions: by default the code is cut around every grid-barrier spin (a line with NANOSLEEP: the
loop a CTA's thread 0 waits in), so a deterministic backward reads as walk, spin, tail. A spin
region is the 12 lines before the NANOSLEEP and the 6 after; the warps of the CTA that wait at
the barrier behind thread 0 are counted at the instruction after their BAR, which is the first
lines after the spin. Regions follow the layout of the code, not the order it runs in.
Samples count warps x time: compare regions of one kernel, or kernels of one thread count.
"""
import argparse
import collections
import csv
import gzip
import io
import sys

SPIN_BEFORE, SPIN_AFTER = 12, 6


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        rows = list(csv.reader(io.StringIO(f.read())))
    header = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    cols = rows[header]
    ia, isrc = cols.index("Address"), cols.index("Source")
    isamp = cols.index("Warp Stall Sampling (All Samples)")
    reasons = [(i, c[len("stall_"):]) for i, c in enumerate(cols)
               if c.startswith("stall_") and "Not Issued" not in c]
    lines = []
    base = None
    for r in rows[header + 1:]:
        if len(r) <= isamp or not r[ia].startswith("0x"):
            continue
        addr = int(r[ia], 16)
        base = addr if base is None else base
        by_reason = collections.Counter()
        for i, name in reasons:
            v = float(r[i] or 0)
            if v:
                by_reason[name] += int(v)
        lines.append((addr - base, int(float(r[isamp] or 0)), r[isrc].strip(), by_reason))
    return rows[0][1] if rows and len(rows[0]) > 1 else path, lines


def regions(lines, split):
    """[(name, first, end)] over line indices."""
    if split:
        cuts = [next((i for i, l in enumerate(lines) if l[0] >= a), len(lines)) for a in split]
        bounds = [0] + cuts + [len(lines)]
        return [("%04x-" % lines[a][0] if a < len(lines) else "end", a, e)
                for a, e in zip(bounds, bounds[1:]) if e > a]
    spins = [i for i, l in enumerate(lines) if "NANOSLEEP" in l[2]]
    out, first = [], 0
    for k, i in enumerate(spins):
        a, e = max(first, i - SPIN_BEFORE), min(len(lines), i + SPIN_AFTER)
        if a > first:
            out.append(("before spin %d" % k, first, a))
        out.append(("spin %d" % k, a, e))
        first = e
    if first < len(lines):
        out.append(("after" if spins else "all", first, len(lines)))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+")
    p.add_argument("--top", type=int, default=0, help="also the N lines with most samples")
    p.add_argument("--split", default="", help="cut regions at these hex addresses (offsets)")
    p.add_argument("--reasons", type=int, default=6, help="stall reasons shown per region")
    a = p.parse_args()
    split = [int(x, 16) for x in a.split.split(",") if x]
    for path in a.csv:
        kernel, lines = load(path)
        total = sum(l[1] for l in lines)
        print("== %s (%s): %d samples, %d SASS lines" % (kernel, path, total, len(lines)))
        for name, first, end in regions(lines, split):
            c = collections.Counter()
            for l in lines[first:end]:
                c.update(l[3])
            n = sum(l[1] for l in lines[first:end])
            top = " ".join("%s=%d" % kv for kv in c.most_common(a.reasons))
            print("  %-14s %05x-%05x %7d %5.1f%%  %s" % (name, lines[first][0], lines[end - 1][0], n,
                                                   100.0 * n / max(total, 1), top))
        if a.top:
            print("  top lines:")
            for off, n, src, c in sorted(lines, key=lambda l: -l[1])[:a.top]:
                why = " ".join("%s=%d" % kv for kv in c.most_common(2))
                print("    %05x %6d  %-48s %s" % (off, n, src[:48], why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
