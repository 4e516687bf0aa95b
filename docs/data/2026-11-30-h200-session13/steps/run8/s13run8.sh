#!/usr/bin/env bash
# session 13 run 8: the deterministic walk's chunk-sum shuffles moved out of the chunk threads'
# branch (run 7's SASS: the branch made the compiler guard every shuffle of the step with
# BRA.DIV / BSSY, 12 more in the rows part; the column tree's loop 1358 -> 1300 instructions, the
# rows part as the non-deterministic walk's). A/B cv (sm90-only build of the change) against HEAD
# (sm90-only), routed det and nondet, forced ct and g; then the full build's
# test_normgate_backward (every program forced, det bits across programs, grids, streams).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run8.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,3534x48:256,2048x48:256
timeout 120 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $E/base.so,$E/cv.so --ng-shapes $SH --json $R/ab_det.json > $R/ab_det.log 2>&1; echo "ab det rc=$?"
timeout 100 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $E/base.so,$E/cv.so --ng-shapes 1031x48,3534x48,7684x48,16384x48 --json $R/ab_nd.json > $R/ab_nd.log 2>&1; echo "ab nd rc=$?"
timeout 100 $X --family normgate --ops bwdg --package det --no-limit --program sm90.ng_bwd_det_d128_ct --ab-libs $E/base.so,$E/cv.so --ng-shapes 7684x48,16384x48 --json $R/ab_ct.json > $R/ab_ct.log 2>&1; echo "ab ct rc=$?"
timeout 100 $X --family normgate --ops bwdg --package det --no-limit --program sm90.ng_bwd_det_d128_g --ab-libs $E/base.so,$E/cv.so --ng-shapes 1031x48,3534x48 --json $R/ab_g.json > $R/ab_g.log 2>&1; echo "ab g rc=$?"
timeout 300 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$?: $(tail -n 1 $R/test_normgate_backward.log)"
cd $OUT && tar czf r.tgz r && rm -rf r
