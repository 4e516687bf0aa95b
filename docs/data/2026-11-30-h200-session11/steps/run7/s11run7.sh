#!/usr/bin/env bash
# session 11 run 7: where the grouped tree (tail fixed) overtakes the column tree: routing check
# of the deterministic backward (kernel time, every program) over T x 48 at D = 128 and 256.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run7.sh $R/
X=.stage/bench/cake-bench
timeout 200 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 2048x48,2560x48,3072x48,3534x48,4097x48,4608x48,5120x48,5632x48,6000x48,8192x32,10000x48,1031x48:256,2048x48:256,2560x48:256,3534x48:256,5000x48:256,6000x48:256,8192x48:256,3534x48:64,8192x48:64 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
