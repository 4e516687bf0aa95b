#!/usr/bin/env bash
# compute-sanitizer over every program of every table (docs/reliability.md), on a GPU machine.
#   tools/sanitize-on-device.sh BUILD_DIR OUT_DIR
# Runs BUILD_DIR/tests/reliability/cake_sanitize_driver (tests/reliability/sanitize_driver.cc):
#   native     --mode guard: guard zones, row padding, every output written, workspace left zero
#   memcheck   --leak-check full, exact-size allocations and guard zones (--mode both)
#   racecheck, initcheck, synccheck: exact-size allocations, outputs left uninitialised
# each with --error-exitcode=1, one job per (tool, table), all at once (16 CPU cores on the H200
# machine; the kernels are tiny). Logs go to OUT_DIR/<tool>-<table>.log; OUT_DIR/summary.md has a
# line per job (exit status, the sanitizer's error summary, the driver's case count) and the
# script exits non-zero if any job failed or timed out.
# Environment: CAKE_SANITIZE_TABLES (default "default,100,103,107"; cross-check tables exist on
# sm_90 only), CAKE_SANITIZE_TOOLS (default "native memcheck racecheck initcheck synccheck"),
# CAKE_SANITIZE_LEVEL (min|full, default min), CAKE_SANITIZE_TIMEOUT (seconds per job, default 600).
set -uo pipefail
build="${1:?usage: tools/sanitize-on-device.sh BUILD_DIR OUT_DIR}"
out="${2:?usage: tools/sanitize-on-device.sh BUILD_DIR OUT_DIR}"
mkdir -p "$out"
build="$(cd "$build" && pwd)"
export LD_LIBRARY_PATH="$build/lib:$build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
driver="$build/tests/reliability/cake_sanitize_driver"
[[ -x "$driver" ]] || driver="$build/tests/cake_sanitize_driver"  # a staged build directory
[[ -x "$driver" ]] || { echo "no cake_sanitize_driver under $build/tests: build it first" >&2; exit 2; }
cs="$(command -v compute-sanitizer || true)"
[[ -n "$cs" ]] || cs=/usr/local/cuda/bin/compute-sanitizer
tables="${CAKE_SANITIZE_TABLES:-default,100,103,107}"
tools="${CAKE_SANITIZE_TOOLS:-native memcheck racecheck initcheck synccheck}"
level="${CAKE_SANITIZE_LEVEL:-min}"
limit="${CAKE_SANITIZE_TIMEOUT:-600}"

run_job() {  # tool table
  local tool="$1" table="$2" log="$out/$1-$2.log" start rc
  start=$(date +%s)
  case "$tool" in
    native) timeout -k 10 "$limit" "$driver" --mode guard --tables "$table" --level "$level" >"$log" 2>&1 ;;
    memcheck)
      timeout -k 10 "$limit" "$cs" --tool memcheck --leak-check full --error-exitcode 1 \
        "$driver" --mode both --tables "$table" --level "$level" >"$log" 2>&1 ;;
    *)
      timeout -k 10 "$limit" "$cs" --tool "$tool" --error-exitcode 1 \
        "$driver" --mode exact --tables "$table" --level "$level" >"$log" 2>&1 ;;
  esac
  rc=$?
  echo "$rc $(($(date +%s) - start))" >"$log.rc"
}

echo "compute-sanitizer: $("$cs" --version 2>/dev/null | tail -1)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
for tool in $tools; do
  for table in ${tables//,/ }; do
    run_job "$tool" "$table" &
  done
done
wait

failed=0
{
  echo "# compute-sanitizer over every program ($(date -u +%Y-%m-%dT%H:%MZ), level $level)"
  echo
  echo "Device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)."
  echo "Sanitizer: $("$cs" --version 2>/dev/null | tail -1)."
  echo
  echo "| tool | table | result | exit | seconds | sanitizer | driver |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for tool in $tools; do
    for table in ${tables//,/ }; do
      log="$out/$tool-$table.log"
      read -r rc secs <"$log.rc"
      errors=$(grep -h -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$log" | sed 's/^========= //' |
        paste -sd ';' -)
      [[ "$tool" == native ]] && errors="-"
      summary=$(grep -h "^SUMMARY:" "$log" | tail -1 | sed 's/^SUMMARY: //')
      if [[ -z "$summary" ]]; then
        summary="(no summary; last: $(grep -h '^PROGRAM' "$log" | tail -1 | cut -c1-80))"
      fi
      if grep -q "^SKIP" "$log"; then
        result="SKIP"
      elif grep -q "not available here" "$log" && grep -q "0 table(s)" "$log"; then
        result="n/a"
      elif [[ "$rc" == 0 ]]; then
        result="PASS"
      elif [[ "$rc" == 124 ]]; then
        result="TIMEOUT"
        failed=1
      else
        result="FAIL"
        failed=1
      fi
      echo "| $tool | $table | $result | $rc | $secs | ${errors:--} | $summary |"
    done
  done
  echo
  echo "First failure lines (if any):"
  echo
  echo '```'
  grep -h -m3 -E "^FAIL |Invalid|Race reported|Uninitialized|Barrier error|Leaked|ERROR SUMMARY: [1-9]" "$out"/*.log | head -40
  echo '```'
} >"$out/summary.md"
cat "$out/summary.md"
exit "$failed"
