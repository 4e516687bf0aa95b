#!/usr/bin/env python3
"""What the SASS of each program does with memory and the SFU: global loads and stores by
width, local-memory traffic (must be none), shared-memory ops, MUFU and shuffles. Reads a fatbin
with cuobjdump (the pinned 13.5 one reads every image).

  tools/sass-report.py build/fatbins/sm90.fatbin [--cuobjdump PATH] [--filter REGEX]
"""
import argparse
import collections
import re
import subprocess
import sys

DEFAULT_CUOBJDUMP = "/opt/cake-nvcc-13.5.37/nvidia/cu13/bin/cuobjdump"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fatbin")
    ap.add_argument("--cuobjdump", default=DEFAULT_CUOBJDUMP)
    ap.add_argument("--filter", default=".")
    args = ap.parse_args()
    sass = subprocess.run([args.cuobjdump, "-sass", args.fatbin], capture_output=True, text=True,
                          check=True).stdout
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
        elif base in ("LDL", "STL", "LDS", "STS", "MUFU", "SHFL", "ATOMG", "RED", "UBLKPF"):
            c[base] += 1
    cols = ["instructions", "LDG.128", "LDG.64", "LDG.32-", "STG.128", "STG.64", "STG.32-",
            "LDL", "STL", "LDS", "STS", "MUFU", "SHFL", "UBLKPF"]
    print("| kernel | " + " | ".join(cols) + " |")
    print("| --- | " + " | ".join("---:" for _ in cols) + " |")
    bad = 0
    for k, c in kernels.items():
        if not re.search(args.filter, k):
            continue
        print(f"| {k} | " + " | ".join(str(c.get(col, 0)) for col in cols) + " |")
        bad += c.get("LDL", 0) + c.get("STL", 0)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
