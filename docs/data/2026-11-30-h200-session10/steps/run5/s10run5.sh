#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s10run5.sh $R/
timeout 240 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "test rc=$? $SECONDS"; tail -n 3 $R/test_normgate_backward.log
timeout 300 .stage/bench/cake-bench --family normgate --ops bwdg --routing --no-limit --ng-shapes 260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,16384x48:64,1031x48:256,3534x48:256,16384x48:256 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
