#!/usr/bin/env bash
# session 19 run 4: run 3's routing flags in graph replays, interleaved (A/B > 1: B faster), x4.
set -u
R=$OUT/r; mkdir -p $R
cp .stageT/s19run4.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
xz -d -k $E/x4.so.xz
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
S1=130x48,195x48,260x48,390x48,520x48,780x48,1031x48
ab() {  # name package A B shapes
  timeout 120 $X --lib $E/x4.so --family normgate --ops bwdg --package $2 --no-limit --rounds 20 --ab-programs sm90.$3,sm90.$4 --ng-shapes $5 --json $R/ab_$1.json > $R/ab_$1.log 2>&1; echo "ab $1 rc=$?"
  grep "A/B" $R/ab_$1.log | head -12
}
ab det_p5 det ng_bwd_det_d128_ct ng_bwd_det_d128_ct_p5 $S1
ab det_p4 det ng_bwd_det_d128_ct ng_bwd_det_d128_ct_p4 $S1
ab nd_p5 nondet ng_bwd_nd_d128_t1024 ng_bwd_nd_d128_x512p5 $S1
ab nd_p4 nondet ng_bwd_nd_d128_t1024 ng_bwd_nd_d128_x512p4 $S1
ab nd_c2 nondet ng_bwd_nd_d128_t1024 ng_bwd_nd_d128_x512c2 $S1,1536x48,2048x48
ab nd64_p5 nondet ng_bwd_nd_d64_t1024 ng_bwd_nd_d64_x512p5 130x48:64,260x48:64,390x48:64,520x48:64,780x48:64,1031x48:64
ab nd64_c2 nondet ng_bwd_nd_d64_t1024 ng_bwd_nd_d64_x512c2 260x48:64,520x48:64,1031x48:64,2048x48:64
ab det64_p5 det ng_bwd_det_d64_ct ng_bwd_det_d64_ct_p5 130x48:64,260x48:64,520x48:64
cd $OUT && tar czf r.tgz r && rm -rf r
