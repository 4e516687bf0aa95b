#!/usr/bin/env bash
# One benchmark run on the GPU machine, everything into OUTDIR: cake-bench (JSON + log), the
# peers (JSON + log) and the plot. Run from the repository root.
#   bench/run-device.sh OUTDIR quick|full [CAKE_BENCH]
# CAKE_BENCH defaults to .stage/bench/cake-bench (tools/stage-build.sh), else build/bench/cake-bench.
# PEERS_BUDGET (seconds, default 150) bounds the peers' run; they stop early and keep what they
# measured. Each peer is timed alternating with Cake (the library beside CAKE_BENCH, or
# $CAKE_LIBRARY) on the same inputs: bench/peers/peers.py.
set -uo pipefail
out="${1:?OUTDIR}"
mode="${2:-full}"
bin="${3:-}"
if [[ -z "$bin" ]]; then
  bin=.stage/bench/cake-bench
  [[ -x "$bin" ]] || bin=build/bench/cake-bench
fi
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# peers.py pairs every peer with Cake through the Python binding: the library beside cake-bench.
export CAKE_LIBRARY="${CAKE_LIBRARY:-$(cd "$(dirname "$bin")/../lib" 2>/dev/null && pwd)}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv >"$out/nvidia-smi.csv" 2>&1 || true
if [[ "$mode" == quick ]]; then
  timeout 150 "$bin" --quick --routing --json "$out/cake-quick.json" 2>&1 | tee "$out/cake-quick.log"
  timeout 120 python3 bench/peers/peers.py --quick --modes default --time-budget "${PEERS_BUDGET:-45}" \
    --json "$out/peers-quick.json" 2>&1 | tee "$out/peers-quick.log" | grep -v '^  ' || true
  python3 bench/plot.py "$out/cake-quick.json" --peers "$out/peers-quick.json" \
    -o "$out/cake-quick.png" 2>&1 | tail -2
else
  timeout 420 "$bin" --routing --json "$out/cake.json" >"$out/cake.log" 2>&1
  echo "cake-bench rc=$?"
  sed -n '/^== results/,$p' "$out/cake.log"
  budget="${PEERS_BUDGET:-150}"
  timeout $((budget + 90)) python3 bench/peers/peers.py --time-budget "$budget" \
    --json "$out/peers.json" >"$out/peers.log" 2>&1
  echo "peers rc=$?"
  sed -n '/^== Cake against/,$p' "$out/peers.log"
  python3 bench/plot.py "$out/cake.json" --peers "$out/peers.json" -o "$out/cake.png" 2>&1 | tail -2
fi
