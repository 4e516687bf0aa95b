#!/usr/bin/env bash
# session 11 run 10: the grouped tree at D = 64 (new program, unrouted): routing check of the
# deterministic backward at D = 64, test_normgate_backward (forces every program), the four
# sanitizer tools over every sm90 program.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run10.sh $R/
X=.stage/bench/cake-bench
timeout 60 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 3534x48:64,6000x48:64,8192x48:64,12000x48:64,16384x48:64,32768x48:64 --json $R/route-d64.json > $R/route-d64.log 2>&1; echo "route rc=$? $SECONDS"
timeout 150 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward.log)"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=100 timeout 150 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
