#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 200 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 150 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
timeout 30 .stage/bench/cake-bench-colwise-writes > $R/colwise_writes.log 2>&1; echo "writes rc=$? $SECONDS"
timeout 150 .stage/bench/cake-bench --family swiglu --ab-libs $PWD/.stageA/libcake.so,$PWD/.stage/lib/libcake.so --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/ab_s8_s9.json > $R/ab_s8_s9.log 2>&1; echo "ab rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=120 timeout 220 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
