#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so
timeout 150 tools/run-tests.sh .stage 'normgate_back|rel_graph' > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
S=3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,16384x48,260x48,3534x48:64,260x48:256,1031x48:256,32768x48
$B --family normgate --ops bwdg --package det --ab-libs $A,$N --ng-shapes $S --json $R/ab_det.json > $R/ab_det.log 2>&1; echo "ab rc=$? $SECONDS"
grep -A30 "interleaved A/B" $R/ab_det.log | grep -i "x48\|x32"
$B --family normgate --routing --no-limit --ops bwdg --package det --ng-shapes $S --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "SLOWER" $R/route.log | head
cd $OUT && tar czf r.tgz r && rm -rf r
