#!/usr/bin/env bash
# session 13 run 5: why the deterministic walk's steps are slower (run 4's timeline: 2.915 against
# 2.712 us median at 3534x48). Experimental sm90-only build x2 with two unrouted programs:
# ng_bwd_nd_d128_x512 (the non-deterministic walk on the deterministic program's 512 threads x 2
# rows) and ng_bwd_det_d128_ct_x1024 (the column tree on 1024 threads, the tail's warp runs at two
# pair sums a lane). Forced A/B, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run5.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48
timeout 100 $X --lib $E/x2.so --family normgate --ops bwdg --package nondet --no-limit --ab-programs sm90.ng_bwd_nd_d128_t1024,sm90.ng_bwd_nd_d128_x512 --ng-shapes $SH --json $R/ab_nd512.json > $R/ab_nd512.log 2>&1; echo "ab nd512 rc=$?"
timeout 100 $X --lib $E/x2.so --family normgate --ops bwdg --package det --no-limit --ab-programs sm90.ng_bwd_det_d128_ct,sm90.ng_bwd_det_d128_ct_x1024 --ng-shapes $SH --json $R/ab_ct1024.json > $R/ab_ct1024.log 2>&1; echo "ab ct1024 rc=$?"
timeout 100 $X --lib $E/x2.so --family normgate --ops bwdg --package nondet --no-limit --ab-programs sm90.ng_bwd_nd_d128_x512,sm90.ng_bwd_nd_d128_t1024 --ng-shapes 3534x48 --json $R/ab_x.json > $R/ab_x.log 2>&1; echo "ab x rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
