#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 200 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 60 .stage/bench/cake-bench --family normgate --routing --no-limit --ops bwdg --package det --ng-shapes 3534x48,16384x48,32768x48:64,16384x48:256,3534x48:256 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "SLOWER|FLAG|routing:" $R/route.log | head
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=120 timeout 220 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
