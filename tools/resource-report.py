#!/usr/bin/env python3
"""Registers, stack and spills of every program in every image, from the -Xptxas -v reports
that the build keeps beside each fatbin (build/fatbins/<image>.resources.txt), and each
program's SASS size (its .text section, from `cuobjdump -elf <image>.fatbin`; "-" where
cuobjdump is missing or cannot read the image): a program run once per launch pays for code
that does not stay in the SM's instruction caches.

  tools/resource-report.py build/fatbins            # markdown table on stdout
  tools/resource-report.py build/fatbins --doc      # the whole of docs/programs.md
  tools/resource-report.py build/fatbins --check    # exit 1 if any program spills or uses stack
"""
import pathlib
import re
import shutil
import subprocess
import sys


def parse(path):
    regs, frames = {}, {}
    current = None
    for line in path.read_text().splitlines():
        m = re.search(r"Compiling entry function '(\w+)' for '(\w+)'", line) or re.search(
            r"Function properties for (\w+)", line)
        if m:
            current = m.group(1)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            frames[current] = tuple(int(g) for g in m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            regs[current] = int(m.group(1))
    return {k: (regs[k],) + frames.get(k, (0, 0, 0)) for k in regs}


def code_bytes(fatbin):
    """{kernel: bytes of its .text section} of every SASS image in the fatbin ({} if unreadable)."""
    tool = shutil.which("cuobjdump")
    if tool is None or not fatbin.exists():
        return {}
    try:
        out = subprocess.run([tool, "-elf", str(fatbin)], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    sizes = {}
    for line in out.splitlines():  # section header: index offset size ... PROGBITS ... name
        m = re.match(r"\s*[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s.*PROGBITS.*\s\.text\.(\w+)\s*$", line)
        if m:
            sizes[m.group(2)] = int(m.group(1), 16)
    return sizes


def toolkits(folder, images):
    """{image: "sm_90a: 13.0, ..."} from the ELF headers cuobjdump prints ("toolkit=13.0")."""
    tool = shutil.which("cuobjdump")
    found = {}
    for image in images:
        fatbin = folder / (image + ".fatbin")
        if tool is None or not fatbin.exists():
            continue
        try:
            out = subprocess.run([tool, "-elf", str(fatbin)], capture_output=True, text=True,
                                 timeout=120).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        heads = sorted(set(re.findall(r"ELF: .*\bsm=(\w+), toolkit=([\d.]+)", out)))
        found[image] = ", ".join(f"sm_{sm} (toolkit {tk})" for sm, tk in heads)
    return found


DOC_HEAD = """# Programs: registers, stack, spills and code size

Every program of every image of the default build, from the `-Xptxas -v` reports the build keeps
beside each fatbin (`build/fatbins/<image>.resources.txt`), and its SASS size in bytes (the
kernel's `.text` section, `cuobjdump -elf`: a tail that runs once per launch pays for code that
does not stay in the SM's instruction caches). The `xc_*` images are the sm100, sm103 and sm107
manifests compiled for sm_90a, so that their arithmetic runs on an H200. The manifests'
`CAKE_*_CANDIDATE` lines (programs no route selects) are built only with
`cmake -DCAKE_CANDIDATES=ON`, for A/B work (`cake-bench --ab-programs`), and are not listed here.
CTest's `test_no_spills` fails if any program spills or uses a stack frame, `test_sass_memory` if
any has a local or generic load or store in its SASS (`tools/sass-report.py --check`).

Regenerate: `cmake --build build && tools/resource-report.py build/fatbins --doc > docs/programs.md`
"""


def commit(folder):
    try:
        out = subprocess.run(["git", "-C", str(folder), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--",
                                "kernels", "fatbins"], capture_output=True, text=True).stdout
        return out + (" (with uncommitted changes to kernels/ or fatbins/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build/fatbins")
    check = "--check" in sys.argv
    reports = sorted(folder.glob("*.resources.txt"))
    if not reports:
        print(f"no *.resources.txt in {folder}", file=sys.stderr)
        return 1
    bad = []
    if "--doc" in sys.argv:
        images = [r.name.replace(".resources.txt", "") for r in reports]
        print(DOC_HEAD)
        print(f"Source: commit {commit(pathlib.Path(__file__).resolve().parent)}. Toolkits, from each image:\n")
        print("| image | SASS (toolkit) |")
        print("| --- | --- |")
        tk = toolkits(folder, images)
        for image in images:
            print(f"| {image} | {tk.get(image, '-')} |")
        print()
    if not check:
        print("| image | program (kernel) | registers | stack bytes | spill stores | spill loads | SASS bytes |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for rep in reports:
        image = rep.name.replace(".resources.txt", "")
        sizes = {} if check else code_bytes(rep.with_name(image + ".fatbin"))
        for kernel, (r, stack, st, ld) in sorted(parse(rep).items()):
            if not check:
                print(f"| {image} | {kernel} | {r} | {stack} | {st} | {ld} | {sizes.get(kernel, '-')} |")
            if stack or st or ld:
                bad.append(f"{image}: {kernel} stack {stack} spill stores {st} loads {ld}")
    if check and bad:
        print("\n".join(["programs with local memory:"] + bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
