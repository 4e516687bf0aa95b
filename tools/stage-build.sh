#!/usr/bin/env bash
# Copy what a GPU machine needs to run tests, the demo and the benchmark from a build
# directory into a small folder (the build directory itself also holds objects and archives):
#   tools/stage-build.sh build .stage      then run there:  tools/run-tests.sh .stage
set -euo pipefail
src="${1:-build}"
dst="${2:-.stage}"
rm -rf "$dst"
mkdir -p "$dst/lib" "$dst/tests" "$dst/deps" "$dst/examples" "$dst/bench" "$dst/fatbins"
cp -a "$src"/lib/libcake.so* "$dst/lib/"
# cake.torch's C++ operators, found beside libcake.so.0 (cake/torch/_native.py).
cp "$src"/bindings/torch/libcake_torch_*.so "$dst/lib/" 2>/dev/null || true
cp -a "$src"/deps/. "$dst/deps/"
find "$src/tests" -maxdepth 2 -type f -name 'test_*' -perm -u+x -exec cp {} "$dst/tests/" \;
[[ -x "$src/tests/reliability/cake_sanitize_driver" ]] &&
  cp "$src/tests/reliability/cake_sanitize_driver" "$dst/tests/"
[[ -f "$src/examples/cake_demo" ]] && cp "$src/examples/cake_demo" "$dst/examples/"
[[ -f "$src/tools/cake-info/cake-info" ]] && mkdir -p "$dst/bin" && cp "$src/tools/cake-info/cake-info" "$dst/bin/"
find "$src/bench" -maxdepth 1 -type f -perm -u+x -exec cp {} "$dst/bench/" \; 2>/dev/null || true
[[ "${CAKE_STAGE_FATBINS:-0}" == 1 ]] && cp "$src"/fatbins/*.fatbin "$dst/fatbins/"
true
du -sh "$dst" >&2
