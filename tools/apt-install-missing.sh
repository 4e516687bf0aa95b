# shellcheck shell=bash
# Sourced by tools/install-deps.sh and tools/install-dev-tools.sh (not run on its own):
#   apt_install_missing PKG...   installs, quietly and without recommends, those of PKG that dpkg
#                                does not list as installed; on failure prints apt's last lines
#                                and calls the caller's die().
apt_install_missing() {
  local missing=() p aptlog
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  log "apt-get install ${missing[*]}"
  aptlog="$(mktemp)"
  if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
    >"$aptlog" 2>&1; then
    tail -n 20 "$aptlog" >&2
    rm -f "$aptlog"
    die "apt-get failed for: ${missing[*]}"
  fi
  rm -f "$aptlog"
}
