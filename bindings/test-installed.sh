#!/usr/bin/env bash
# Run the PyTorch and JAX test suites and the Python examples against the INSTALLED cake-kernels
# wheel, not the source tree, on a GPU machine that has torch and jax and no network:
#
#   bindings/test-installed.sh WHEEL_DIR
#
# Makes a virtual environment with --system-site-packages (torch, jax, numpy come from the
# machine), installs every wheel in WHEEL_DIR with --no-index --no-deps (cake-kernels, and pytest
# with its dependencies when the machine lacks it), checks that `cake` and `cake_jax` and their
# libraries resolve inside that environment, then runs, from a scratch folder:
#   bindings/python/tests, bindings/jax/tests     (CAKE_TEST_INSTALLED=1: no source paths)
#   examples/python/*.py, examples/jax/*.py       (cake imported from the venv first)
# Prints each suite's pytest summary and, last, "N passed, N failed" over suites and examples.
set -uo pipefail
[[ $# -ge 1 && -d "$1" ]] || { echo "usage: $0 WHEEL_DIR" >&2; exit 2; }
wheels="$(cd "$1" && pwd)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-python3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
unset CAKE_LIBRARY CAKE_JAX_LIBRARY CAKE_BUILD_DIR PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false

"$py" -m venv --system-site-packages "$work/venv" || { echo "venv failed" >&2; exit 1; }
vpy="$work/venv/bin/python"
# Where "$py" is itself a virtual environment (as on machines whose torch lives in one),
# --system-site-packages reaches only the base interpreter's packages: a .pth file puts the
# parent's site-packages after the new environment's own, so the wheel still resolves first.
"$py" -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() if p))' \
  >"$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_parent_site.pth"
shopt -s nullglob
all=("$wheels"/*.whl)
((${#all[@]})) || { echo "no wheels in $wheels" >&2; exit 1; }
"$vpy" -m pip install --quiet --no-index --no-deps "${all[@]}" || { echo "pip install failed" >&2; exit 1; }
echo "test-installed.sh: installed ${all[*]##*/}"

cd "$work"
site="$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
"$vpy" - "$site" <<'PY' || { echo "the packages do not resolve inside the venv" >&2; exit 1; }
import sys
site = sys.argv[1]
import cake, cake_jax
for mod, path in ((cake, cake.library_path()), (cake_jax, cake_jax.shim_path())):
    assert mod.__file__.startswith(site) and path.startswith(site), (mod.__file__, path)
    print(f"test-installed.sh: {mod.__name__} {mod.__file__} library {path}")
import jax, jaxlib, torch
print(f"test-installed.sh: cake {cake.__version__} (libcake {cake.version()}), torch "
      f"{torch.__version__}, jax {jax.__version__}, jaxlib {jaxlib.__version__}")
PY

passed=0 failed=0
suite() {  # name, tests folder
  local log="$work/$1.log" rc
  CAKE_TEST_INSTALLED=1 "$vpy" -m pytest -q -rs -p no:cacheprovider "$2" >"$log" 2>&1
  rc=$?
  local summary
  summary="$(grep -E '^[=]* ?[0-9]+ (passed|failed|skipped|error)' "$log" | tail -n 1)"
  [[ -n "$summary" ]] || summary="$(tail -n 1 "$log")"
  echo "test-installed.sh: $1: ${summary} (exit $rc)"
  grep -E '^(SKIPPED|FAILED|ERROR)' "$log" | head -n 20
  ((rc == 0)) && passed=$((passed + 1)) || { failed=$((failed + 1)); tail -n 40 "$log"; }
}
suite pytorch "$repo/bindings/python/tests"
suite jax "$repo/bindings/jax/tests"

for ex in "$repo"/examples/python/*.py "$repo"/examples/jax/*.py; do
  name="example $(basename "$(dirname "$ex")")/$(basename "$ex")"
  # cake and cake_jax are imported from the venv before the example runs, so its fallback to
  # the source tree is never taken (checked again after it ran).
  if "$vpy" - "$ex" "$site" >"$work/ex.log" 2>&1 <<'PY'; then
import runpy, sys
ex, site = sys.argv[1:]
import cake, cake_jax
sys.argv = [ex]
code = 0
try:
    runpy.run_path(ex, run_name="__main__")
except SystemExit as e:
    code = e.code
for m in ("cake", "cake_jax"):
    assert sys.modules[m].__file__.startswith(site), sys.modules[m].__file__
sys.exit(code)
PY
    echo "test-installed.sh: $name: passed ($(tail -n 1 "$work/ex.log"))"
    passed=$((passed + 1))
  else
    echo "test-installed.sh: $name: FAILED"
    tail -n 30 "$work/ex.log"
    failed=$((failed + 1))
  fi
done
echo "test-installed.sh: suites and examples: $passed passed, $failed failed"
((failed == 0))
