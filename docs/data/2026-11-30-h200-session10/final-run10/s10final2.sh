#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s10final2.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 240 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 170 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
timeout 90 .stage/bench/cake-bench --family normgate --ops bwdg --package det --ab-libs $PWD/.stageA/libcake.so,$PWD/.stage/lib/libcake.so --ng-shapes 260x48,1031x48,3534x48,7684x48,16384x48,32768x48,16384x48:256,3534x48:64 --json $R/ab_s9_s10.json > $R/ab_s9_s10.log 2>&1; echo "ab rc=$? $SECONDS"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=120 timeout 230 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
