#!/usr/bin/env python3
"""Keeps the documentation true to what the code prints (the docs_samples test).

  docs/samples.py --cake-info BIN --library LIB --version X.Y.Z            check (exit 1 on a difference)
  docs/samples.py --cake-info BIN --library LIB --version X.Y.Z --update   rewrite the samples

Runs without a GPU. It checks, in the documents listed in DOCUMENTS:
  - samples: a line `<!-- sample: NAME -->` followed by a fenced block. The block must be what
    the command NAME prints today (SAMPLES below; `python ...` blocks are doctest-style transcripts
    whose `>>>` lines are run with the binding and the built library). --update rewrites them.
  - versions: every `libcake.so.X.Y.Z` and `Cake X.Y.Z` is the project's version;
  - program names: every `smNN.name` is a program some route of table smNN selects (so it is in
    the default build);
  - excerpts: a line `<!-- excerpt: PATH -->` before a fenced block: every line of the block
    is a line of PATH (spacing aside; "..." elides);
  - manifest lines quoted in a document are lines of a manifest;
  - links: every relative link resolves to a file inside the repository (and to a heading of
    it, with an anchor); nothing names the files outside it that the specs were written from;
  - the CMake snippet of getting-started: the find_package / target_link_libraries lines that
    cmake/test-consumer (built by the install_consumer test) uses, with a compatible version.
"""
import argparse
import code
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTS = [
    "README.md",
    "bindings/README.md",
    "bindings/jax/README.md",
    "bindings/python/README.md",
    "bindings/rust/README.md",
    "docs/design.md",
    "docs/distributed.md",
    "docs/getting-started.md",
    "docs/normgate.md",
    "docs/reliability.md",
    "docs/spec/normgate.md",
    "docs/spec/swiglu-grouped.md",
    "docs/spec/swiglu-mxfp8.md",
    "docs/swiglu-grouped.md",
    "docs/swiglu-mxfp8.md",
]
MARKER = re.compile(r"^<!-- sample: (.+?) -->\n(```[a-z]*\n)(.*?)^```\n", re.M | re.S)
EXCERPT = re.compile(r"^<!-- excerpt: (\S+) -->\n```[a-z]*\n(.*?)^```\n", re.M | re.S)
OUTSIDE = re.compile(r"\.\./shared|shared/(SPEC|DESIGN|STYLE)|SPEC-(normgate|swiglu)")


def run(argv, env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout


def no_driver_env(tmp):
    # A libcuda path that does not exist: the output of a machine without a driver, on any
    # machine. The path is shown as the library's default name afterwards.
    return os.path.join(tmp, "libcuda.so.1")


def cake_info_help(args, tmp):
    return "$ cake-info --help\n" + run([args.cake_info, "--help"], {})


def cake_info_no_driver(args, tmp):
    fake = no_driver_env(tmp)
    out = run([args.cake_info], {"CAKE_LIBCUDA": fake}).replace(fake, "libcuda.so.1")
    lines, keep = out.splitlines(), []
    head = True
    for line in lines:
        if line.startswith("Table "):
            head = False
            keep.append(line)
        elif head:
            keep.append(line)
    return "$ build/tools/cake-info/cake-info\n" + "\n".join(keep) + "\n"


SAMPLES = {
    "cake-info --help": cake_info_help,
    "cake-info without a driver": cake_info_no_driver,
}


def python_transcript(args, tmp, body):
    """Runs the >>> statements of a doctest-style block; returns the block as it should be."""
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    os.environ["CAKE_LIBRARY"] = args.library
    os.environ["CAKE_LIBCUDA"] = no_driver_env(tmp)
    console = code.InteractiveInterpreter()
    out, stmt = [], []

    def flush():
        if not stmt:
            return
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            console.runsource("\n".join(stmt) + "\n", symbol="single")
        out.extend(buf.getvalue().splitlines())
        stmt.clear()

    for line in body.splitlines():
        if line.startswith(">>> "):
            flush()
            out.append(line)
            stmt.append(line[4:])
        elif line.startswith("... "):
            out.append(line)
            stmt.append(line[4:])
    flush()
    return "\n".join(out) + "\n"


def expected_sample(args, tmp, name, body):
    if name.startswith("python"):
        return python_transcript(args, tmp, body)
    if name not in SAMPLES:
        raise KeyError(f"unknown sample '{name}' (known: {', '.join(SAMPLES)}, python ...)")
    return SAMPLES[name](args, tmp)


def routed_programs(args):
    info = json.loads(run([args.cake_info, "--json"], {"CAKE_LIBCUDA": "/nonexistent/libcuda.so.1"}))
    return {r["program"] for t in info["tables"] for r in t["routes"]}


def anchors(md_path):
    """The anchors GitHub gives a Markdown file's headings."""
    out = set()
    for line in open(md_path):
        m = re.match(r"#+ (.*)", line)
        if m:
            out.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return out


def check_text(path, text, args, routed, errors):
    for m in re.finditer(r"\blibcake\.so\.(\d+\.\d+\.\d+)|\bCake (\d+\.\d+\.\d+)", text):
        v = m.group(1) or m.group(2)
        if v != args.version:
            errors.append(f"{path}: '{m.group(0)}' but the version is {args.version}")
    for m in re.finditer(r"\b(sm(?:90|100|103|107)\.[a-z][a-z0-9_]*[a-z0-9])", text):
        if m.group(1) not in routed:
            errors.append(f"{path}: program {m.group(1)} is not selected by any route")
    for m in OUTSIDE.finditer(text):
        errors.append(f"{path}: '{m.group(0)}' names a file outside the repository")
    for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", text):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        full = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), target))
        if not full.startswith(ROOT + os.sep) or not os.path.exists(full):
            errors.append(f"{path}: link '{target}' does not resolve inside the repository")
        elif m.group(2) and full.endswith(".md") and m.group(2)[1:] not in anchors(full):
            errors.append(f"{path}: link '{target}{m.group(2)}': no such heading there")


def manifest_lines():
    lines = set()
    kernels = os.path.join(ROOT, "kernels")
    for arch in sorted(os.listdir(kernels)):
        path = os.path.join(kernels, arch, "manifest.def")
        if os.path.exists(path):
            for line in open(path):
                m = re.match(r"(CAKE_\w+\(.*\))", line)  # a trailing comment aside
                if m:
                    lines.add(re.sub(r"\s+", "", m.group(1)))
    return lines


def check_excerpts(path, text, errors):
    """A block marked as an excerpt of a file holds only lines of that file ("..." elides)."""
    for m in EXCERPT.finditer(text):
        source = os.path.join(ROOT, m.group(1))
        if not os.path.exists(source):
            errors.append(f"{path}: excerpt of a missing file {m.group(1)}")
            continue
        lines = {l.strip() for l in open(source)}
        for line in m.group(2).splitlines():
            if line.strip() not in ("", "...") and line.strip() not in lines:
                errors.append(f"{path}: excerpt line not in {m.group(1)}: {line.strip()}")


def check_manifest_quotes(path, text, manifest, errors):
    """A manifest line quoted in a document is a line of some manifest (spacing aside)."""
    for m in re.finditer(r"^(CAKE_(?:NORMGATE_PROGRAM|SWIGLU_PROGRAM|ROUTE|ROUTE_WAVES)\(.*\))$", text, re.M):
        if re.sub(r"\s+", "", m.group(1)) not in manifest:
            errors.append(f"{path}: '{m.group(1)}' is not a line of any kernels/*/manifest.def")


def check_cmake_snippet(args, errors):
    """getting-started's find_package/target_link_libraries are the tested consumer's."""
    text = open(os.path.join(ROOT, "docs", "getting-started.md")).read()
    consumer = open(os.path.join(ROOT, "cmake", "test-consumer", "CMakeLists.txt")).read()
    blocks = re.findall(r"```cmake\n(.*?)```", text, re.S)
    if not blocks:
        errors.append("docs/getting-started.md: no cmake block")
    major, minor = (int(x) for x in args.version.split(".")[:2])
    for block in blocks:
        for m in re.finditer(r"find_package\(Cake (\d+)\.(\d+) REQUIRED\)", block):
            if int(m.group(1)) != major or int(m.group(2)) > minor:
                errors.append(f"getting-started: {m.group(0)} does not accept version {args.version}")
        if not re.search(r"find_package\(Cake \d+\.\d+ REQUIRED\)", consumer):
            errors.append("cmake/test-consumer no longer uses find_package(Cake X.Y REQUIRED)")
        for m in re.finditer(r"target_link_libraries\(\w+ (.*)\)", block):
            if not re.search(r"target_link_libraries\(\w+ " + re.escape(m.group(1)) + r"\)", consumer):
                errors.append(f"getting-started: '{m.group(0)}' is not what cmake/test-consumer links")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cake-info", required=True)
    ap.add_argument("--library", required=True, help="the built libcake.so")
    ap.add_argument("--version", required=True, help="the project's version, X.Y.Z")
    ap.add_argument("--update", action="store_true", help="rewrite the sample blocks")
    args = ap.parse_args()
    errors, samples = [], 0
    routed, manifest = routed_programs(args), manifest_lines()
    with tempfile.TemporaryDirectory() as tmp:
        for path in DOCUMENTS:
            full = os.path.join(ROOT, path)
            text = open(full).read()

            def replace(m):
                nonlocal samples
                samples += 1
                want = expected_sample(args, tmp, m.group(1), m.group(3))
                if want != m.group(3) and not args.update:
                    errors.append(f"{path}: sample '{m.group(1)}' differs from what the code prints:\n"
                                  f"--- in the document\n{m.group(3)}--- printed\n{want}")
                return f"<!-- sample: {m.group(1)} -->\n{m.group(2)}{want}```\n"

            new = MARKER.sub(replace, text)
            if args.update and new != text:
                open(full, "w").write(new)
                print(f"updated {path}")
            check_text(path, new, args, routed, errors)
            check_manifest_quotes(path, new, manifest, errors)
            check_excerpts(path, new, errors)
    check_cmake_snippet(args, errors)
    if samples == 0:
        errors.append("no samples found")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(DOCUMENTS)} documents, {samples} samples, {len(routed)} routed programs: "
          f"{'FAILED, ' + str(len(errors)) + ' problems' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
