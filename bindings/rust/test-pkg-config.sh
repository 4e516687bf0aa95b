#!/usr/bin/env bash
# The bindings_rust_pkg_config test: install this build into a scratch prefix, then build cake-sys
# with only PKG_CONFIG_PATH (no CAKE_LIB_DIR) and check that it linked the installed library and
# said that pkg-config found it.
#   bindings/rust/test-pkg-config.sh BUILD_DIR WORK_DIR CARGO
set -euo pipefail
build="$1" work="$2" cargo="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc="$(dirname "$(find "$work/prefix" -name cake.pc | head -n 1)")"
[[ -f "$pc/cake.pc" ]] || { echo "no cake.pc installed under $work/prefix" >&2; exit 1; }
out="$(env -u CAKE_LIB_DIR PKG_CONFIG_PATH="$pc" CARGO_TARGET_DIR="$work/target" \
  "$cargo" build --offline -vv -p cake-sys --manifest-path "$here/Cargo.toml" 2>&1)" ||
  { echo "$out" | tail -n 20; exit 1; }
line="$(grep -o 'cake-sys: linking .*' <<<"$out" | head -n 1)"
echo "$line"
[[ "$line" == *"$work/prefix/"*"libcake.so (found through pkg-config: cake "* ]] ||
  { echo "cake-sys did not take the installed library through pkg-config" >&2; exit 1; }
