#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
timeout 150 .stage/tests/test_swiglu_mxfp8 > $R/test_swiglu.log 2>&1; echo "test rc=$? $SECONDS"; tail -n 2 $R/test_swiglu.log
B=.stage/bench/cake-bench
ab() { # form A B shapes tag
  timeout 200 $B --family swiglu --forms $1 --ab-programs $2,$3 --sw-shapes $4 --json $R/ab_$5.json > $R/ab_$5.log 2>&1; echo "ab $5 rc=$? $SECONDS"
  grep -A12 "interleaved A/B" $R/ab_$5.log | grep swiglu
}
S=4096x7168,16384x7168,131072x8192
ab bwd_both sm90.sw_bwd_both_st2_128x64w sm90.sw_bwd_both_st2_128x64w_p2 $S bb
ab bwd_col sm90.sw_bwd_col_st3_128x64w sm90.sw_bwd_col_st3_128x64w_p2 $S bc
ab fwd_col sm90.sw_fwd_col_st2_t128 sm90.sw_fwd_col_st2_t128_p2 $S fc
ab fwd_col sm90.sw_fwd_col_st2_64x64 sm90.sw_fwd_col_st2_64x64_p2 4096x2048,$S fc64
ab fwd_both sm90.sw_fwd_both_st2_128x128w sm90.sw_fwd_both_st2_128x128w_p2 $S fbw
ab fwd_both sm90.sw_fwd_both_st2 sm90.sw_fwd_both_st2_p2 $S fb
ab fwd_both sm90.sw_fwd_both_st2_64x64 sm90.sw_fwd_both_st2_64x64_p2 4096x2048,$S fb64
cd $OUT && tar czf r.tgz r && rm -rf r
