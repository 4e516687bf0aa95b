#!/usr/bin/env bash
# The wheel_package test: build the cake-kernels wheel from a build folder's libraries (no GPU
# image is compiled again; offline), check what it holds and its platform tag, install it into a
# fresh virtual environment and use it from there, not from the source tree:
#   - `import cake` loads the bundled libcake.so.0; a handle says "no driver" (or works on a GPU);
#   - `import cake_jax` without jax, or with a jaxlib outside the declared range, names both;
#   - a libcake of another ABI version, or a package without its library, gives one clear error
#     that names only paths that exist;
#   - the host test suite of bindings/python/tests passes against the installed package.
#
#   bindings/wheel/test-wheel.sh BUILD_DIR WORK_DIR TOOLS_PYTHON
# TOOLS_PYTHON: a Python with scikit-build-core, auditwheel and pytest (tools/install-dev-tools.sh).
set -euo pipefail
build="$(cd "$1" && pwd)"
work="$2"
tools_py="$3"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
say() { echo "test-wheel.sh: $*"; }
fail() { echo "test-wheel.sh: FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PYTHONDONTWRITEBYTECODE=1

# 1. Build (the one-command path, `pip wheel .`, with the build folder's libraries).
"$tools_py" -m pip wheel "$repo" --no-build-isolation --no-deps --no-index -w "$work/dist" \
  -Ccmake.define.CAKE_WHEEL_PREBUILT="$build" -Cbuild-dir="$work/skbuild" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log"; fail "pip wheel failed"; }
wheels=("$work"/dist/*.whl)
((${#wheels[@]} == 1)) || fail "expected one wheel, found: ${wheels[*]}"
whl="${wheels[0]}"
say "built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"

torch_ops="$(cd "$build/bindings/torch" && ls libcake_torch_*.so)"

# 2. Contents: exactly the packages' sources, py.typed, the three libraries (the build's bytes).
"$tools_py" - "$whl" "$repo" "$build" "$torch_ops" <<'PY' || fail "wheel contents"
import hashlib, os, sys, zipfile
whl, repo, build, torch_ops = sys.argv[1:]
names = set(zipfile.ZipFile(whl).namelist())
want = {"cake/libcake.so.0", "cake_jax/libcake_jax.so", f"cake/{torch_ops}"}
for pkg, src in (("cake", "bindings/python/cake"), ("cake_jax", "bindings/jax/cake_jax")):
    top = os.path.join(repo, src)
    for d, _, files in os.walk(top):
        if "__pycache__" in d:
            continue
        for f in files:
            if f.endswith(".py") or f == "py.typed":
                rel = os.path.relpath(os.path.join(d, f), top)
                want.add(f"{pkg}/{rel}")
meta = {n for n in names if n.split("/")[0].endswith(".dist-info")}
extra, missing = names - want - meta, want - names
assert not extra and not missing, f"unexpected {sorted(extra)}, missing {sorted(missing)}"
assert any(n.endswith("/METADATA") for n in meta)
z = zipfile.ZipFile(whl)
for member, built in (("cake/libcake.so.0", "lib/libcake.so.0"),
                      ("cake_jax/libcake_jax.so", "bindings/jax/libcake_jax.so"),
                      (f"cake/{torch_ops}", f"bindings/torch/{torch_ops}")):
    a = hashlib.sha256(z.read(member)).hexdigest()
    b = hashlib.sha256(open(os.path.join(build, built), "rb").read()).hexdigest()
    assert a == b, f"{member} differs from the build's {built}"
print(f"test-wheel.sh: contents ok ({len(names)} files: {sorted(want)})")
PY

# 3. The platform tag: the one auditwheel finds for the libraries' symbol versions. libcake_torch
# links the torch libraries of the user's torch (no manylinux policy lists them), so auditwheel
# reads the wheel without it, and its own dependencies and symbol versions are checked here.
tag="$(basename "$whl" .whl | awk -F- '{print $NF}')"
mkdir -p "$work/audit"
audit="$work/audit/$(basename "$whl")"
"$tools_py" - "$whl" "$audit" "cake/$torch_ops" <<'PY' || fail "copy of the wheel for auditwheel"
import sys, zipfile
src, dst, skip = sys.argv[1:]
with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:
    for info in a.infolist():
        if info.filename == skip:
            continue
        data = a.read(info.filename)
        if info.filename.endswith(".dist-info/RECORD"):
            data = b"".join(l for l in data.splitlines(True) if not l.startswith(skip.encode()))
        b.writestr(info, data)
PY
"$tools_py" - "$build/bindings/torch/$torch_ops" <<'PY' || fail "libcake_torch's dependencies"
import re, sys
from elftools.elf.elffile import ELFFile
from elftools.elf.dynamic import DynamicSection
from elftools.elf.gnuversions import GNUVerNeedSection
allowed = {"libcake.so.0", "libtorch_cpu.so", "libc10.so", "libc10_cuda.so", "libcudart.so.13",
           "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}
with open(sys.argv[1], "rb") as f:
    elf = ELFFile(f)
    needed = {t.needed for s in elf.iter_sections() if isinstance(s, DynamicSection)
              for t in s.iter_tags() if t.entry.d_tag == "DT_NEEDED"}
    versions = [a.name for s in elf.iter_sections() if isinstance(s, GNUVerNeedSection)
                for _, auxs in s.iter_versions() for a in auxs]
assert needed <= allowed, f"unexpected dependencies {sorted(needed - allowed)}"
glibc = max((tuple(map(int, v[6:].split("."))) for v in versions if v.startswith("GLIBC_2")),
            default=(2, 0))
assert glibc <= (2, 34), f"needs GLIBC_{'.'.join(map(str, glibc))}, above the wheel's tag"
print(f"test-wheel.sh: libcake_torch needs {sorted(needed)}, GLIBC <= {glibc}")
PY
show="$("$tools_py" -m auditwheel show "$audit" 2>&1)" || { echo "$show"; fail "auditwheel show failed"; }
policy="$(tr -s '\n ' '  ' <<<"$show" |
  sed -n 's/.*consistent with the following platform tag: "\([^"]*\)".*/\1/p')"
[[ -n "$policy" ]] || { echo "$show"; fail "auditwheel named no platform tag"; }
[[ "$tag" == "$policy" ]] || { echo "$show"; fail "wheel tagged $tag, auditwheel says $policy (pyproject.toml wheel.tags)"; }
say "platform tag $tag agrees with auditwheel"

# 4. A fresh virtual environment with only the wheel.
"$tools_py" -m venv "$work/venv"
vpy="$work/venv/bin/python"
"$vpy" -m pip install --quiet --no-index --no-deps "$whl" || fail "pip install of the wheel failed"
site="$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

cc="${CC:-cc}"
printf 'int cake_version(void) { return 10203; }\n' >"$work/abi1.c"
"$cc" -shared -fPIC -o "$work/libcake-abi1.so" "$work/abi1.c" || fail "cannot compile a stand-in library"
mkdir -p "$work/fakejax"
for d in jax jaxlib; do
  mkdir -p "$work/fakejax/$d-0.10.0.dist-info"
  printf 'Metadata-Version: 2.1\nName: %s\nVersion: 0.10.0\n' "$d" >"$work/fakejax/$d-0.10.0.dist-info/METADATA"
done

cd "$work"  # never the source tree
"$vpy" - "$site" "$work" <<'PY' || fail "the installed package"
import os, subprocess, sys
site, work = sys.argv[1:]
import cake
assert cake.__file__.startswith(site), cake.__file__
assert cake.library_path() == os.path.join(site, "cake", "libcake.so.0"), cake.library_path()
print("test-wheel.sh: import cake:", cake.__version__, "library", cake.library_path(), cake.version())
try:
    with cake.Handle(0) as h:
        print("test-wheel.sh: a GPU:", h.device_info().device_name)
except (cake.DriverUnavailableError, cake.NoDeviceError) as e:
    assert e.message, "the no-driver error must say why"
    print(f"test-wheel.sh: no GPU here: {type(e).__name__}: {e}")

def run(code, **env):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, **env})
    return r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1]

rc, last = run("import cake_jax")
assert rc != 0 and "ImportError" in last and "jaxlib >=0.11.2,<0.12" in last, last
print("test-wheel.sh: import cake_jax without jax:", last)
rc, last = run("import cake_jax", PYTHONPATH=os.path.join(work, "fakejax"))
assert rc != 0 and "found jaxlib 0.10.0" in last and ">=0.11.2,<0.12" in last, last
print("test-wheel.sh: import cake_jax with jaxlib 0.10.0:", last)
rc, last = run("import cake; cake.version()", CAKE_LIBRARY=os.path.join(work, "libcake-abi1.so"))
assert rc != 0 and "libcake 1.2.3 (ABI 1)" in last and "needs ABI 0" in last, last
print("test-wheel.sh: another ABI:", last)
lib = os.path.join(site, "cake", "libcake.so.0")
os.rename(lib, lib + ".away")
try:
    rc, last = run("import cake; cake.version()")
finally:
    os.rename(lib + ".away", lib)
assert rc != 0 and "LibraryNotFoundError" in last and "cmake" not in last, last
import re
for p in re.findall(r"(/[^\s,;()]+)", last):  # every path it names exists: none is guessed
    assert os.path.exists(p), (p, last)
print("test-wheel.sh: without the bundled library:", last)
PY

# 5. The host tests against the installed package (pytest from the tools' environment).
tools_site="$("$tools_py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
CAKE_TEST_INSTALLED=1 PYTHONPATH="$tools_site" "$vpy" -m pytest -q -rs -p no:cacheprovider \
  "$repo/bindings/python/tests" || fail "host tests against the installed package"
say "ok"
