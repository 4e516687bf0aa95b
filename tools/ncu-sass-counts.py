#!/usr/bin/env python3
"""Where a kernel's executed instructions go, from Nsight Compute's per-SASS-line counters.

On the device (the SourceCounters section counts every executed warp instruction per line):
  ncu --section SourceCounters --import-source no -k regex:NAME$ -c 1 -o rep ... cake-bench ...
  ncu -i rep.ncu-rep --page source --print-source sass --csv > NAME.sass.csv
Here:
  tools/ncu-sass-counts.py NAME.sass.csv              opcode totals and runs of equal counts
  tools/ncu-sass-counts.py NAME.sass.csv --range 2c10:4200   one address range, line by line

A run of consecutive lines with the same count is straight-line code executed that many times
(per warp): a tile loop shows up as long runs at the loop's trip count, the prologue and epilogue
at the number of warps. Addresses are offsets from the kernel's first instruction (hex).
"""
import argparse
import collections
import csv
import re
import sys


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    # The first row names the kernel; the second is the header.
    header = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
    cols = rows[header]
    ia, isrc, ie = cols.index("Address"), cols.index("Source"), cols.index("Instructions Executed")
    lines = []
    base = None
    for r in rows[header + 1:]:
        if len(r) <= max(ia, isrc, ie) or not r[ia].startswith("0x"):
            continue
        addr = int(r[ia], 16)
        base = addr if base is None else base
        lines.append((addr - base, int(r[ie] or 0), r[isrc].strip()))
    return lines


def opcode(src):
    src = re.sub(r"^@!?U?P\w+\s+", "", src)  # predicate guard
    return src.split()[0] if src else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--range", help="LO:HI, hex offsets: print those lines with their counts")
    ap.add_argument("--top", type=int, default=25, help="opcodes to list (default 25)")
    args = ap.parse_args()
    lines = load(args.csv)
    if not lines:
        sys.exit(f"{args.csv}: no SASS lines with counts")
    total = sum(n for _, n, _ in lines)

    if args.range:
        lo, hi = (int(x, 16) for x in args.range.split(":"))
        ops = collections.Counter()
        for addr, n, src in lines:
            if lo <= addr <= hi:
                print(f"{addr:05x} {n:>11d}  {src}")
                ops[opcode(src)] += n
        print(f"\n{sum(ops.values())} warp instructions executed in [{lo:x}, {hi:x}]")
        for op, n in ops.most_common(args.top):
            print(f"{n:>12d}  {op}")
        return

    print(f"{total} warp instructions executed")
    ops = collections.Counter()
    for _, n, src in lines:
        ops[opcode(src).split(".")[0]] += n
    for op, n in ops.most_common(args.top):
        print(f"{op:10s} {n:>12d} {100.0 * n / total:5.1f}%")
    print("\nruns of equal counts (first-last offset, count, lines, instructions):")
    start, count, length, prev = None, None, 0, None
    for addr, n, _ in lines + [(None, None, None)]:
        if n != count:
            if count:
                print(f"{start:05x}-{prev:05x} {count:>11d} x {length:4d} = {count * length:>12d}")
            start, count, length = addr, n, 0
        length += 1
        prev = addr


if __name__ == "__main__":
    main()
