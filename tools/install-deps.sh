#!/usr/bin/env bash
# Install what building Cake needs on a Debian 12 machine, as root: CMake, g++, Ninja, and the
# pinned nvcc 13.5 beside the machine's CUDA toolkit (tools/install-nvcc.sh). Running the built
# library needs only the NVIDIA driver. The tests' and docs' tools are a separate step,
# tools/install-dev-tools.sh. Idempotent and fast when all is present (no apt-get update, no
# network).
#
#   tools/install-deps.sh      -> last line of stdout: path of the pinned nvcc 13.5
#
# Debian packages (only those missing):
#   cmake g++ ninja-build            the build
#   libcmocka-dev pkg-config         the C tests a default configure builds (CAKE_BUILD_TESTS);
#                                    pkg-config reads the installed cake.pc
#   python3-pip                      only if `python3 -m pip` does not work (install-nvcc.sh
#                                    unpacks NVIDIA's nvcc wheels with it into a private prefix)
# Prerequisite, not installed here: the CUDA 13 toolkit in /usr/local/cuda (the sm_90a, sm_100a
# and sm_103a images; CUDA_HOME or nvcc on PATH also work).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-python3}"
APT_PKGS=(cmake g++ ninja-build libcmocka-dev pkg-config)

log() { echo "install-deps.sh: $*" >&2; }
die() { echo "install-deps.sh: error: $*" >&2; exit 1; }
# shellcheck source=tools/apt-install-missing.sh
source "$HERE/apt-install-missing.sh"

[[ "$(id -u)" == 0 ]] || die "run as root (it installs Debian packages)"
start=$SECONDS

"$PY" -m pip --version >/dev/null 2>&1 || APT_PKGS+=(python3-pip)
apt_install_missing "${APT_PKGS[@]}"

for t in cmake g++ ninja pkg-config; do
  command -v "$t" >/dev/null 2>&1 || die "$t is not on PATH after install"
done
if ! command -v nvcc >/dev/null 2>&1 && [[ ! -x /usr/local/cuda/bin/nvcc ]] &&
    [[ ! -x "${CUDA_HOME:-/nonexistent}/bin/nvcc" ]]; then
  die "no CUDA toolkit (nvcc in /usr/local/cuda/bin, \$CUDA_HOME/bin or on PATH): install the CUDA 13 toolkit first"
fi

nvcc="$("$HERE/install-nvcc.sh" | tail -n 1)" || die "tools/install-nvcc.sh failed"
log "all present ($((SECONDS - start))s)"
echo "$nvcc"
