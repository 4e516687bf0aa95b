#!/usr/bin/env bash
# Fetch the XLA FFI headers that libcake_jax.so is built against: they ship inside the jaxlib
# wheel (jaxlib/include/xla/ffi/api/{ffi.h,api.h,c_api.h}). Downloads the pinned wheel from PyPI
# (any Python can download it; it is never installed) and unpacks only its include/ folder into
# $CAKE_JAXLIB_PREFIX (default <repo>/.jaxlib; bindings/CMakeLists.txt also looks in
# /opt/cake-jaxlib-0.11.2). Idempotent: nothing is fetched when the headers are there. Then
# re-run CMake.
#
#   bindings/jax/fetch-headers.sh [JAXLIB_VERSION]      (default 0.11.2, the GPU machine's)
#   CAKE_JAXLIB_PREFIX=/opt/cake-jaxlib-0.11.2 bindings/jax/fetch-headers.sh
set -euo pipefail
version="${1:-0.11.2}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dest="${CAKE_JAXLIB_PREFIX:-$root/.jaxlib}"
py="${PYTHON:-python3}"
stamp="$dest/jaxlib/include/.cake-jaxlib-version"
if [[ -f "$dest/jaxlib/include/xla/ffi/api/ffi.h" && "$(cat "$stamp" 2>/dev/null)" == "$version" ]]; then
  echo "fetch-headers.sh: XLA FFI headers of jaxlib $version already in $dest/jaxlib/include"
  exit 0
fi
mkdir -p "$dest"
if ! ls "$dest"/jaxlib-"$version"-*.whl >/dev/null 2>&1; then
  for plat in manylinux_2_27_x86_64 manylinux_2_28_x86_64 manylinux2014_x86_64; do
    "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
      --platform "$plat" -d "$dest" "jaxlib==$version" && break
  done
fi
wheel="$(ls "$dest"/jaxlib-"$version"-*.whl | head -n 1)"
rm -rf "$dest/jaxlib/include"
"$py" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("jaxlib/include/")])' \
  "$wheel" "$dest"
test -f "$dest/jaxlib/include/xla/ffi/api/ffi.h"
echo "$version" >"$stamp"
rm -f "$wheel"  # only the headers are kept
echo "fetch-headers.sh: XLA FFI headers of jaxlib $version in $dest/jaxlib/include"
