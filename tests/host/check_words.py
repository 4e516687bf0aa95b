#!/usr/bin/env python3
"""Fails when the tree's product folders speak of how the work was done rather than what it is:
words that count rounds of work (the name of a working period, a numbered trial or a range
of them) or point at the tracker (a numbered ticket, "#12"); the patterns are below.
Provenance of a measurement is its date, device, commit and command.

  check_words.py REPO_ROOT      exit 1 and list file:line: text for every match

Scans the tracked text files of kernels/ lib/ include/ bench/ tests/ bindings/ tools/ examples/
docs/ and README.md (`git ls-files`; every file when the root is not a git checkout).
"""
import os
import pathlib
import re
import subprocess
import sys

FOLDERS = ["kernels", "lib", "include", "bench", "tests", "bindings", "tools", "examples", "docs"]
FILES = ["README.md"]

# Built from pieces so that this file does not match itself.
S = "ses" + "sion"
R = "r" + "un"
T = "is" + "sue"
BANNED = re.compile(
    r"\b" + S + r"|"                                  # any word starting so
    r"\b" + R + r"[ _-]?\d+\b|"                          # a numbered trial, also joined by _ or -
    r"\b" + R + r"s \d+(?:\s*(?:-|,|and)\s*\d+)+\b(?![\d%])|"  # a list or range of them (not a percentage)
    r"\b" + T + r"s?[ _-]?#?\d+\b|"                     # a numbered ticket
    r"(?<![\w&/])#\d{1,4}\b",                          # #12 (not &#12; nor a URL fragment)
    re.IGNORECASE)
# The only legitimate uses: removed from a line before it is matched.
ALLOWED = re.compile(r"""scope\s*=\s*["']""" + S + r"""["']""")  # pytest's fixture scope


def files(root):
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--"] + FOLDERS + FILES,
                             capture_output=True, check=True).stdout
        return [root / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        found = [root / f for f in FILES if (root / f).is_file()]
        for folder in FOLDERS:
            for dirpath, _, names in os.walk(root / folder):
                found += [pathlib.Path(dirpath) / n for n in names]
        return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    me = pathlib.Path(__file__).resolve()
    hits = 0
    for path in sorted(files(root)):
        if path.resolve() == me or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary
        rel = path.relative_to(root)
        for name_hit in BANNED.finditer(str(rel)):
            print(f"{rel}: file name: {name_hit.group(0)}")
            hits += 1
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            m = BANNED.search(ALLOWED.sub("", line))
            if m:
                print(f"{rel}:{n}: {m.group(0)!r}: {line.strip()[:160]}")
                hits += 1
    if hits:
        print(f"{hits} lines name rounds of work or tracker entries", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
