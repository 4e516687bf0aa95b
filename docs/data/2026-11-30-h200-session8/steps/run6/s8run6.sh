#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
timeout 100 tools/run-tests.sh .stage 'normgate_back' > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
$B --family normgate --routing --no-limit --ops bwdg --package det --ng-shapes 260x48:128,1031x48:128,2048x48:128,3534x48:128,5000x48:128,6000x48:128,7684x48:128,10000x48:128,16384x48:128,32768x48:128,260x48:64,1031x48:64,2048x48:64,3534x48:64,5000x48:64,6000x48:64,7684x48:64,10000x48:64,16384x48:64,32768x48:64,260x48:256,1031x48:256,2048x48:256,3534x48:256,5000x48:256,6000x48:256,7684x48:256,10000x48:256,16384x48:256,32768x48:256 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "routing|FLAG|ng_bwd" $R/route.log | grep -v "^normgate bwdg" | head -80
cd $OUT && tar czf r.tgz r && rm -rf r
