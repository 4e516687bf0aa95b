#!/usr/bin/env bash
# Everything a visit to a GPU machine checks and measures, in one command there, each phase
# time-boxed so the whole run ends inside BUDGET seconds (default 560):
#   1. the demo                          OUT/demo.log
#   2. every test binary                 OUT/tests.log      (tools/run-tests.sh)
#   3. compute-sanitizer, every program  OUT/sanitize/      (tools/sanitize-on-device.sh)
#   4. cake-bench with the routing check OUT/cake.json, OUT/cake.log
# Usage, from the repository root of a checkout carrying a staged build (tools/stage-build.sh):
#   <this script> STAGE OUTDIR [BUDGET]     (STAGE: the staged build; .stage by default)
# Prints a short summary last; exits non-zero if the demo, a test or the sanitizer failed.
set -uo pipefail
stage="${1:-.stage}"
out="${2:?usage: $0 STAGE OUTDIR [BUDGET]}"
budget="${3:-560}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
export LD_LIBRARY_PATH="$stage/lib:$stage/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1
left() { echo $((budget - SECONDS)); }
status=0
summary=()

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$out/nvidia-smi.csv" 2>&1

timeout 60 "$stage/examples/cake_demo" >"$out/demo.log" 2>&1
rc=$?
summary+=("demo: rc $rc")
((rc == 0)) || status=1

timeout $(( $(left) > 300 ? 300 : $(left) )) "$here/run-tests.sh" "$stage" >"$out/tests.log" 2>&1
rc=$?
summary+=("tests: rc $rc, $(tail -n 1 "$out/tests.log")")
((rc == 0)) || status=1

if (( $(left) > 200 )); then
  CAKE_SANITIZE_TIMEOUT=120 timeout 150 "$here/sanitize-on-device.sh" "$stage" "$out/sanitize" \
    >"$out/sanitize.log" 2>&1
  rc=$?
  summary+=("compute-sanitizer: rc $rc")
  ((rc == 0)) || status=1
else
  summary+=("compute-sanitizer: skipped (time)")
fi

if (( $(left) > 60 )); then
  timeout $(( $(left) - 10 )) "$stage/bench/cake-bench" --routing --json "$out/cake.json" \
    >"$out/cake.log" 2>&1
  rc=$?
  summary+=("cake-bench: rc $rc ($(grep -c FLAG "$out/cake.log") routing flags)")
else
  summary+=("cake-bench: skipped (time)")
fi

printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
exit $status
