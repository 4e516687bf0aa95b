#!/usr/bin/env bash
# session 11 final (routes moved after s11final.sh): demo, every GPU test, the benchmark table
# with the routing check, and the deterministic backward (routed) against session 10's library
# (.stageA = 717f1d4), interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11final2.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 240 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 200 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
A=$PWD/.stageA/libcake.so; C=$PWD/.stage/lib/libcake.so
timeout 60 .stage/bench/cake-bench --family normgate --ops bwdg --package det --ab-libs $A,$C --ng-shapes 3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48,32768x48,3534x48:256,8192x48:256 --json $R/ab_s10_s11_det.json > $R/ab_s10_s11_det.log 2>&1; echo "ab det rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
