#!/usr/bin/env bash
# Fetches the peers' pure-Python sources into .peers/site, which bench/peers/peers.py reads on
# the GPU machine (it has torch and triton but no network). .peers/ is git-ignored through
# .git/info/exclude: their code is never committed.
#   FLA 0.6.0:        the fla-core wheel, unpacked (fla/modules/norm/fused_norm_gate.py ...)
#   mamba_ssm 2.3.2:  one file of the sdist (PyPI's 2.3.2.post1): ops/triton/layernorm_gated.py
# Carry it with the device tool: carry [".peers"].
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dst="$root/.peers"
exclude=$(git -C "$root" rev-parse --git-path info/exclude)
case "$exclude" in /*) ;; *) exclude="$root/$exclude" ;; esac
mkdir -p "$(dirname "$exclude")" "$dst/dl" "$dst/site/mamba_ssm_peer"
grep -qxF '/.peers/' "$exclude" 2>/dev/null || echo '/.peers/' >>"$exclude"

python3 -m pip download --no-deps fla-core==0.6.0 -d "$dst/dl"
python3 -m zipfile -e "$dst/dl/fla_core-0.6.0-py3-none-any.whl" "$dst/site"

# The sdist's metadata step imports torch, so pip stops after unpacking it; --no-clean keeps
# the unpacked tree, from which one file is taken.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TMPDIR="$tmp" python3 -m pip download --no-clean --no-deps --no-binary :all: \
  mamba_ssm==2.3.2.post1 -d "$tmp/dl" >/dev/null 2>&1 || true
src=$(find "$tmp" -path '*mamba_ssm/ops/triton/layernorm_gated.py' | head -n 1)
[[ -n "$src" ]] || { echo "fetch.sh: mamba_ssm sdist not unpacked" >&2; exit 1; }
cp "$src" "$dst/site/mamba_ssm_peer/layernorm_gated.py"
cp "$(dirname "$src")/../../../LICENSE" "$dst/site/mamba_ssm_peer/LICENSE" 2>/dev/null || true
echo "2.3.2.post1" >"$dst/site/mamba_ssm_peer/VERSION"
echo "fetch.sh: peers in $dst/site"
