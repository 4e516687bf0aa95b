#!/usr/bin/env bash
# session 12 run 8: the non-deterministic backward with a two-stage ring (loads one step ahead,
# ng_bwd_nd_d128_t1024_pf2, unrouted) against the routed three-stage program.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s12run8.sh $R/
X=.stage/bench/cake-bench
timeout 60 $X --family normgate --ops bwdg --package nondet --no-limit --ab-programs sm90.ng_bwd_nd_d128_t1024,sm90.ng_bwd_nd_d128_t1024_pf2 --ng-shapes 260x48,1031x48,3534x48,6000x48,7684x48,16384x48 --json $R/ab_pf2.json > $R/ab_pf2.log 2>&1; echo "ab rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
