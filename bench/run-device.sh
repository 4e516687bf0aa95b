#!/usr/bin/env bash
# One benchmark run on a GPU machine, everything into OUTDIR: cake-bench (JSON + log), the peers
# (JSON + log), the results JSON that bench/tables.py reads, and the figures. Run from the
# repository root.
#   bench/run-device.sh OUTDIR quick|full [CAKE_BENCH]
# CAKE_BENCH defaults to build/bench/cake-bench (or a staged build's, tools/stage-build.sh).
# PEERS_BUDGET (seconds; default 0, no limit) bounds the peers' run: they stop early and keep
# what they measured. Each peer is timed alternating with Cake (the library beside CAKE_BENCH,
# or $CAKE_LIBRARY) on the same inputs: bench/peers/peers.py. CAKE_COMMIT names the measured
# library's commit in the results JSON (default: this checkout's HEAD).
# Then, for the tables of docs/performance.md:
#   cp OUTDIR/results.json bench/results/<device>.json
#   python3 bench/tables.py --write docs/performance.md
#   python3 bench/plot.py bench/results/<device>.json -o docs/img
set -uo pipefail
out="${1:?OUTDIR}"
mode="${2:-full}"
bin="${3:-build/bench/cake-bench}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# peers.py pairs every peer with Cake through the Python binding: the library beside cake-bench.
export CAKE_LIBRARY="${CAKE_LIBRARY:-$(cd "$(dirname "$bin")/../lib" 2>/dev/null && pwd)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/nvidia-smi.csv" 2>&1 || true
budget="${PEERS_BUDGET:-0}"
if [[ "$mode" == quick ]]; then
  timeout 150 "$bin" --quick --routing --json "$out/cake.json" >"$out/cake.log" 2>&1
  echo "cake-bench rc=$?"
  peers=(bench/peers/peers.py --quick --modes default --time-budget "$budget" --json "$out/peers.json")
else
  timeout 420 "$bin" --routing --json "$out/cake.json" >"$out/cake.log" 2>&1
  echo "cake-bench rc=$?"
  # shellcheck disable=SC2054 # the commas are peers.py's list, not array separators
  peers=(bench/peers/peers.py --peers fla,mamba,compile --time-budget "$budget" --json "$out/peers.json")
fi
sed -n '/^== results/,$p' "$out/cake.log"
python3 "${peers[@]}" >"$out/peers.log" 2>&1
echo "peers rc=$?"
sed -n '/^== Cake against/,$p' "$out/peers.log"
python3 bench/results.py "$out/cake.json" "$out/peers.json" --nvidia-smi "$out/nvidia-smi.csv" \
  ${CAKE_COMMIT:+--commit "$CAKE_COMMIT"} --peers-command "python3 ${peers[*]/#$out\//}" \
  -o "$out/results.json"
python3 bench/tables.py "$out/results.json" >"$out/tables.md"
python3 bench/plot.py "$out/results.json" -o "$out" 2>&1 | tail -2
