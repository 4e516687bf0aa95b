#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 200 tools/run-tests.sh .stage 'normgate' > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
S=3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48,3534x48:64,3534x48:256,65536x48
for v in A Q2 Q8; do
  L=$PWD/.stage$v/libcake.so
  $B --family normgate --ops bwdg --package det --ab-libs $L,$N --ng-shapes $S --json $R/ab_${v}_q4.json > $R/ab_${v}_q4.log 2>&1; echo "ab $v/Q4 rc=$? $SECONDS"
  grep -A30 "interleaved A/B" $R/ab_${v}_q4.log | grep -i "x48\|x32"
done
$B --family normgate --ops bwdg --package both --no-limit --ng-shapes $S --json $R/pk.json > $R/pk.log 2>&1; echo "pk rc=$? $SECONDS"
grep -E "^normgate bwdg" $R/pk.log | head -40
cd $OUT && tar czf r.tgz r && rm -rf r
