#!/usr/bin/env python3
"""What the SASS of each program does with memory and the SFU: global loads and stores by
width, local-memory traffic (must be none), generic loads and stores (LD/ST: an address whose
space the compiler could not tell, e.g. of a parameter block whose address escaped into an
out-of-line call; must be none), shared-memory ops, MUFU and shuffles. Reads a fatbin with
cuobjdump (the pinned 13.5 one reads every image). Exits non-zero if any program has local or
generic memory instructions; --check prints only those (CTest's test_sass_memory).

  tools/sass-report.py build/fatbins/sm90.fatbin [--cuobjdump PATH] [--filter REGEX] [--check]
  tools/sass-report.py build/fatbins --check          every *.fatbin of a folder
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys

DEFAULT_CUOBJDUMP = "/opt/cake-nvcc-13.5.37/nvidia/cu13/bin/cuobjdump"


def report(args, fatbin):
    """Prints one fatbin's table (or, with --check, its offenders); the count of local and
    generic memory instructions."""
    run = subprocess.run([args.cuobjdump, "-sass", fatbin], capture_output=True, text=True)
    if run.returncode != 0:  # e.g. an image newer than this cuobjdump
        print(f"{fatbin}: {args.cuobjdump} -sass failed: {run.stderr.strip()}", file=sys.stderr)
        return 1
    sass = run.stdout
    kernels = collections.OrderedDict()
    current = None
    for line in sass.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            current = m.group(1)
            kernels[current] = collections.Counter()
            continue
        m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if not m or current is None:
            continue
        op = m.group(1)
        c = kernels[current]
        c["instructions"] += 1
        base = op.split(".")[0]
        if base in ("LDG", "STG"):
            width = "128" if ".128" in op else ("64" if ".64" in op else "32-")
            c[f"{base}.{width}"] += 1
        elif base in ("LDL", "STL", "LD", "ST", "LDS", "STS", "MUFU", "SHFL", "ATOMG", "RED", "UBLKPF"):
            c[base] += 1
    cols = ["instructions", "LDG.128", "LDG.64", "LDG.32-", "STG.128", "STG.64", "STG.32-",
            "LDL", "STL", "LD", "ST", "LDS", "STS", "MUFU", "SHFL", "UBLKPF"]
    forbidden = ("LDL", "STL", "LD", "ST")
    if not args.check:
        print("| kernel | " + " | ".join(cols) + " |")
        print("| --- | " + " | ".join("---:" for _ in cols) + " |")
    bad = 0
    for k, c in kernels.items():
        if not re.search(args.filter, k):
            continue
        n = sum(c.get(op, 0) for op in forbidden)
        if not args.check:
            print(f"| {k} | " + " | ".join(str(c.get(col, 0)) for col in cols) + " |")
        elif n:
            print(f"{fatbin}: {k}: " + ", ".join(f"{op} {c[op]}" for op in forbidden if c.get(op)))
        bad += n
    if args.check:
        print(f"{fatbin}: {len(kernels)} programs, "
              + ("no local or generic memory instructions" if not bad else f"{bad} local or generic"))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fatbin", nargs="+", help="fatbins, or folders of *.fatbin")
    ap.add_argument("--cuobjdump", default=DEFAULT_CUOBJDUMP)
    ap.add_argument("--filter", default=".")
    ap.add_argument("--check", action="store_true", help="print only the offending programs")
    args = ap.parse_args()
    paths = []
    for p in args.fatbin:
        paths += sorted(glob.glob(os.path.join(p, "*.fatbin"))) if os.path.isdir(p) else [p]
    if not paths:
        print("sass-report.py: no fatbin in " + " ".join(args.fatbin), file=sys.stderr)
        return 2
    bad = sum(report(args, p) for p in paths)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
