#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s10run9.sh $R/
timeout 240 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "test rc=$? $SECONDS"; tail -n 3 $R/test_normgate_backward.log
timeout 300 .stage/bench/cake-bench --family normgate --ops bwdg --routing --no-limit --ng-shapes 3534x48,6000x48,7684x48,10000x48,12000x48,16384x48,32768x48,8192x48:256,12000x48:256,16384x48:256 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
