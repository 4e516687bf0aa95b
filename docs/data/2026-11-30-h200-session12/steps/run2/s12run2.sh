#!/usr/bin/env bash
# session 12 run 2: the column and grouped trees on 1024 threads (1 row a group), new programs
# ng_bwd_det_d128_{ct,g}_t1024: interleaved A/B against their 512-thread forms; the backward test
# (forces every program).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s12run2.sh $R/
X=.stage/bench/cake-bench
timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-programs sm90.ng_bwd_det_d128_ct,sm90.ng_bwd_det_d128_ct_t1024 --ng-shapes 260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48 --json $R/ab_ct.json > $R/ab_ct.log 2>&1; echo "ab ct rc=$? $SECONDS"
timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-programs sm90.ng_bwd_det_d128_g,sm90.ng_bwd_det_d128_g_t1024 --ng-shapes 3534x48,6000x48,7684x48,16384x48,32768x48 --json $R/ab_g.json > $R/ab_g.log 2>&1; echo "ab g rc=$? $SECONDS"
timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-programs sm90.ng_bwd_det_d128_g,sm90.ng_bwd_det_d128_ct_t1024 --ng-shapes 4097x48,6000x48,7684x48,16384x48 --json $R/ab_g_ct1024.json > $R/ab_g_ct1024.log 2>&1; echo "ab g/ct1024 rc=$? $SECONDS"
timeout 170 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward.log)"
cd $OUT && tar czf r.tgz r && rm -rf r
