#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 300 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=120 timeout 200 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md
cd $OUT && tar czf r.tgz r && rm -rf r
