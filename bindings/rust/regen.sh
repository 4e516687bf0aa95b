#!/usr/bin/env bash
# Regenerate cake-sys/src/bindings.rs from include/cake.h with bindgen (Debian's, 0.60), then
# rustfmt. The output is committed; CI checks that regenerating gives no diff.
#
#   bindings/rust/regen.sh            rewrite cake-sys/src/bindings.rs
#   bindings/rust/regen.sh --check    exit 1 with a diff if it would change; exit 77 (skipped)
#                                     when bindgen or rustfmt is missing
# BINDGEN and RUSTFMT override the tools.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$here/cake-sys/src/bindings.rs"
bindgen="${BINDGEN:-bindgen}"
rustfmt="${RUSTFMT:-rustfmt}"
check=0
[[ "${1:-}" == "--check" ]] && check=1

for tool in "$bindgen" "$rustfmt"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "regen.sh: $tool not found" >&2
    ((check)) && exit 77
    exit 1
  fi
done

generate() {
  # Run from the repository root so that no absolute path reaches the output. The crate binds
  # the experimental section too (the program tables), so its version must match the library's.
  (cd "$root" && "$bindgen" include/cake.h \
    --size_t-is-usize --no-prepend-enum-name --no-rustfmt-bindings \
    --allowlist-function 'cake_.*' --allowlist-type 'cake_.*' --allowlist-var 'CAKE_.*' \
    -- -std=c99 -DCAKE_EXPERIMENTAL_API) | "$rustfmt" --edition 2021 --emit stdout
}

tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
generate >"$tmp"
if ((check)); then
  if ! diff -u "$out" "$tmp"; then
    echo "regen.sh: cake-sys/src/bindings.rs is stale for include/cake.h" \
      "(bindgen $("$bindgen" --version 2>/dev/null | awk '{print $2}')); run bindings/rust/regen.sh" >&2
    exit 1
  fi
  echo "regen.sh: cake-sys/src/bindings.rs is up to date"
else
  mv "$tmp" "$out"
  trap - EXIT
  echo "regen.sh: wrote $out"
fi
