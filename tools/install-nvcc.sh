#!/usr/bin/env bash
# Install a pinned CUDA 13.5 compiler (the first with sm_107a / Rubin) from NVIDIA's PyPI wheels
# into a private prefix, next to (not over) the system toolkit in /usr/local/cuda.
#
#   tools/install-nvcc.sh            -> last line of stdout: path of the working nvcc
#   CAKE_NVCC_PREFIX=/some/dir tools/install-nvcc.sh
#
# Idempotent: if the prefix already holds exactly these pins and nvcc runs, nothing is downloaded.
# No wrapper is needed: the wheels all unpack into <prefix>/nvidia/cu13/{bin,include,lib,nvvm},
# the layout nvcc.profile expects (paths relative to nvcc itself), so the tree is self-contained
# and relocatable; it does not read /usr/local/cuda. Messages go to stderr; only the nvcc path goes
# to stdout. Needs python3 with pip and a host g++.
set -euo pipefail

PREFIX="${CAKE_NVCC_PREFIX:-/opt/cake-nvcc-13.5.37}"
PY="${PYTHON:-python3}"
NVCC_VERSION=13.5.37
# Exact pins. --no-deps below: nvcc's wheel declares nvvm/runtime/crt unpinned; we pin them here.
PINS=(
  "nvidia-cuda-nvcc==${NVCC_VERSION}"      # bin/: nvcc ptxas fatbinary nvlink cudafe++ bin2c
  "nvidia-cuda-crt==${NVCC_VERSION}"       # include/crt/ (host_config.h, ...)
  "nvidia-nvvm==${NVCC_VERSION}"           # nvvm/bin/cicc, nvvm/libdevice, lib/libnvvm.so.4
  "nvidia-cuda-runtime==${NVCC_VERSION}"   # include/cuda_runtime.h cuda.h cuda_bf16.h ..., lib/libcudart*
  "nvidia-cuda-cccl==13.3.5.0.6"           # include/cccl/ (cuda/std, cub, thrust); newest on PyPI
  "nvidia-cuda-cuobjdump==${NVCC_VERSION}" # bin/cuobjdump (the system 13.0 toolkit has none)
  "nvidia-cuda-nvdisasm==${NVCC_VERSION}"  # bin/nvdisasm (cuobjdump -sass needs it)
)
CU="${PREFIX}/nvidia/cu13"
NVCC="${CU}/bin/nvcc"

log() { echo "install-nvcc.sh: $*" >&2; }
die() { echo "install-nvcc.sh: error: $*" >&2; exit 1; }

pins_text() { printf '%s\n' "${PINS[@]}"; }

installed_ok() {  # $1 = tree root
  [[ -x "$1/nvidia/cu13/bin/nvcc" && -f "$1/.cake-nvcc-pins" ]] || return 1
  [[ "$(cat "$1/.cake-nvcc-pins")" == "$(pins_text)" ]] || return 1
  "$1/nvidia/cu13/bin/nvcc" --version 2>/dev/null | grep -q "V${NVCC_VERSION}"
}

smoke_test() {  # $1 = tree root: compile a kernel for sm_107a and sm_90a, check the fatbin
  local cu="$1/nvidia/cu13" d rc=0
  d="$(mktemp -d)"
  cat >"$d/t.cu" <<'EOF'
#include <cuda_runtime.h>
#include <cuda/std/cstdint>
extern "C" __global__ void t(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], 256;" :: "l"(x) : "memory");
  if (i < n) y[i] = x[i] * 2.0f;
}
EOF
  if ! "$cu/bin/nvcc" -fatbin -gencode arch=compute_107a,code=sm_107a \
        -gencode arch=compute_90a,code=sm_90a "$d/t.cu" -o "$d/t.fatbin" >"$d/log" 2>&1; then
    cat "$d/log" >&2; rc=1
  elif ! "$cu/bin/cuobjdump" --list-elf "$d/t.fatbin" 2>&1 | grep -q 'sm_107a'; then
    log "cuobjdump does not list an sm_107a image"; rc=1
  fi
  rm -rf "$d"
  return "$rc"
}

if installed_ok "$PREFIX"; then
  echo "$NVCC"
  exit 0
fi

command -v g++ >/dev/null 2>&1 || die "no host compiler g++ on PATH (apt-get install g++)"
"$PY" -m pip --version >/dev/null 2>&1 || die "'$PY -m pip' does not work (apt-get install python3-pip)"
mkdir -p "$(dirname "$PREFIX")" || die "cannot create $(dirname "$PREFIX")"

# One installer at a time per prefix (parallel CI jobs).
exec 9>"${PREFIX}.lock" || die "cannot open lock ${PREFIX}.lock"
flock 9 || die "cannot lock ${PREFIX}.lock"
if installed_ok "$PREFIX"; then  # another process finished it while we waited
  echo "$NVCC"
  exit 0
fi

# Install into a fresh temporary tree, test it, then swap it in. All pins go in ONE pip call:
# `pip install --target` into an existing tree silently skips packages whose top-level folder
# (nvidia/) is already there, so a second call would not add anything.
TMP="$(mktemp -d "${PREFIX}.tmp.XXXXXX")" || die "cannot create a temporary folder next to $PREFIX"
trap 'rm -rf "$TMP"' EXIT
log "installing ${PINS[*]} into $PREFIX"
start=$SECONDS
if ! PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 \
    "$PY" -m pip install --quiet --no-deps --only-binary=:all: --no-warn-script-location \
    --target "$TMP" "${PINS[@]}" >&2; then
  die "pip install of the pinned CUDA ${NVCC_VERSION} wheels failed (is PyPI reachable?)"
fi
pins_text >"$TMP/.cake-nvcc-pins"
smoke_test "$TMP" || die "the installed nvcc ${NVCC_VERSION} failed its sm_107a smoke test"
rm -rf "$PREFIX"
mv "$TMP" "$PREFIX" || die "cannot move the new tree to $PREFIX"
trap - EXIT
installed_ok "$PREFIX" || die "nvcc at $NVCC does not run after install"
log "done in $((SECONDS - start))s ($(du -sh "$PREFIX" | cut -f1))"
echo "$NVCC"
