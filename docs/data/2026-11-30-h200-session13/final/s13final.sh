#!/usr/bin/env bash
# session 13 final: demo, every GPU test, the benchmark table with the routing check, A/B of the
# backward against session 12's library (.stageA = 1127863, sm90-only build), the four sanitizer
# tools over every sm90 program.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s13final.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 280 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 150 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
A=$PWD/.stageA/libcake.so; C=$PWD/.stage/lib/libcake.so
timeout 80 .stage/bench/cake-bench --family normgate --ops bwdg --ab-libs $A,$C --ng-shapes 260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,2048x48:256,3534x48:256 --json $R/ab_s12_s13.json > $R/ab_s12_s13.log 2>&1; echo "ab rc=$? $SECONDS"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=100 timeout 150 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
