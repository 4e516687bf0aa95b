#!/usr/bin/env bash
# Fetch what libcake_torch is compiled and linked against: the headers and the four shared
# libraries it links (libc10, libc10_cuda, libtorch_cpu, libtorch) of the pinned torch wheel from
# PyPI (any Python can download it; it is never installed), unpacked into
# $CAKE_TORCH_PREFIX/torch (default <repo>/.torch/torch; bindings/torch/CMakeLists.txt also looks
# in /opt/cake-torch-<version>/torch). At run time the library uses the torch the user has loaded.
# Idempotent: nothing is fetched when the files are there. Then re-run CMake.
#
#   bindings/torch/fetch-torch.sh [TORCH_VERSION]      (default: cake/torch/_native.py's)
#   CAKE_TORCH_PREFIX=/opt/cake-torch-2.11.0 bindings/torch/fetch-torch.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="${1:-$(sed -n 's/^BUILT_AGAINST = "\(.*\)"/\1/p' "$root/bindings/python/cake/torch/_native.py")}"
dest="${CAKE_TORCH_PREFIX:-$root/.torch}"
py="${PYTHON:-python3}"
stamp="$dest/torch/.cake-torch-version"
libs=(libc10.so libc10_cuda.so libtorch_cpu.so libtorch.so)
if [[ -f "$dest/torch/include/torch/library.h" && "$(cat "$stamp" 2>/dev/null)" == "$version" ]]; then
  echo "fetch-torch.sh: torch $version headers and libraries already in $dest/torch"
  exit 0
fi
mkdir -p "$dest"
if ! ls "$dest"/torch-"$version"-*.whl >/dev/null 2>&1; then
  "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$dest" "torch==$version"
fi
wheel="$(ls "$dest"/torch-"$version"-*.whl | head -n 1)"
rm -rf "$dest/torch"
"$py" - "$wheel" "$dest" "${libs[@]}" <<'PY'
import sys, zipfile
wheel, dest, libs = sys.argv[1], sys.argv[2], sys.argv[3:]
z = zipfile.ZipFile(wheel)
want = [n for n in z.namelist()
        if n.startswith("torch/include/") or n in {f"torch/lib/{l}" for l in libs}]
z.extractall(dest, want)
PY
for l in "${libs[@]}"; do test -f "$dest/torch/lib/$l"; done
test -f "$dest/torch/include/torch/library.h"
echo "$version" >"$stamp"
rm -f "$wheel"  # only what the build needs is kept
echo "fetch-torch.sh: torch $version headers and libraries in $dest/torch"
