#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 100 tools/run-tests.sh .stage 'normgate_back' > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"


S=3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48,3534x48:64,3534x48:256,65536x48
for v in A R; do
  L=$PWD/.stage$v/libcake.so
  $B --family normgate --ops bwdg --package det --ab-libs $L,$N --ng-shapes $S --json $R/ab_${v}_N.json > $R/ab_${v}_N.log 2>&1; echo "ab $v/N rc=$? $SECONDS"
  grep -A30 "interleaved A/B" $R/ab_${v}_N.log | grep -i "x48\|x32"
done
cd $OUT && tar czf r.tgz r && rm -rf r
