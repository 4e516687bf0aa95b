#!/usr/bin/env bash
# session 11 final 3 (d64 route moved to the new grouped program after run 10; kernels as run
# 10, which passed test_normgate_backward and the sanitizer with them): the demo, the benchmark
# table with the routing check, the routed det backward at D = 64 against session 10's library.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11final3.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 150 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
timeout 30 .stage/bench/cake-bench --family normgate --ops bwdg --package det --ab-libs $PWD/.stageA/libcake.so,$PWD/.stage/lib/libcake.so --ng-shapes 12000x48:64,16384x48:64,32768x48:64 --json $R/ab_d64.json > $R/ab_d64.log 2>&1; echo "ab rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
