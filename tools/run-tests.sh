#!/usr/bin/env bash
# Run every test of a build directory without CTest (on a machine that did not configure it,
# such as the GPU machine a build directory is carried to). Prints each test's result and a
# closing "N passed, N failed" line; exits non-zero if any failed.
#   tools/run-tests.sh [BUILD_DIR] [NAME_REGEX]
set -uo pipefail
build="${1:-build}"
filter="${2:-.}"
export LD_LIBRARY_PATH="$build/lib:$build/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
passed=0
failed=0
for t in "$build"/tests/test_*; do
  [[ -x "$t" && -f "$t" ]] || continue
  name=$(basename "$t")
  [[ "$name" =~ $filter ]] || continue
  echo "=== $name"
  if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
