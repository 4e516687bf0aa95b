#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
S=3534x48:64,7684x48:64,16384x48:64,32768x48:64,1031x48:256,3534x48:256,7684x48:256,16384x48:256
$B --family normgate --routing --no-limit --ops bwdg --package det --ng-shapes $S --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "SLOWER" $R/route.log | head
cd $OUT && tar czf r.tgz r && rm -rf r
