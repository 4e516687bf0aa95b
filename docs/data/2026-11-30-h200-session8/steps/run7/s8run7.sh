#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
timeout 100 tools/run-tests.sh .stage 'normgate_back' > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
S=260x48,1031x48,3534x48,6000x48,7684x48,16384x48,32768x48,1031x48:64,3534x48:64,16384x48:64,260x48:256,1031x48:256,3534x48:256,16384x48:256
$B --family normgate --routing --no-limit --ops bwdg --package both --ng-shapes $S --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "FLAG|SLOWER" $R/route.log | head
cd $OUT && tar czf r.tgz r && rm -rf r
