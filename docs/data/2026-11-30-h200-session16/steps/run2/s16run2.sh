#!/usr/bin/env bash
# session 16 run 2: interleaved graph replays of the group-guard variants against the routed
# programs (small shapes: t32g; large: fwd_row st2_r8g, bwd_col/bwd_both p2g); test_swiglu_mxfp8.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
ab() {  # name form shapes A B rounds
  $B --family swiglu --no-limit --forms $2 --sw-shapes $3 --ab-programs sm90.$4,sm90.$5 --rounds $6 > $R/ab_$1.log 2>&1
  echo "ab $1 rc $? at $SECONDS"
}
ab fwd_row_small fwd_row 256x512,512x512,512x1024,1024x1024 sw_fwd_row_t32g sw_fwd_row 20
ab fwd_row_g fwd_row 512x1024,1024x1024,1024x2048 sw_fwd_row_g sw_fwd_row 20
ab fwd_col_small fwd_col 256x512,512x512,512x1024 sw_fwd_col_t32g sw_fwd_col_st2_64x64 20
ab fwd_both_small fwd_both 128x128,256x256,256x512,512x512,512x1024 sw_fwd_both_t32g sw_fwd_both_st2_64x64 20
ab bwd_col_small bwd_col 128x128,256x256,512x512,512x1024 sw_bwd_col_t32g sw_bwd_col_t32 40
ab bwd_row_small bwd_row 128x128,256x256 sw_bwd_row_t32g sw_bwd_row_t32 40
ab fwd_row_big fwd_row 2048x2048,4096x2048,4096x7168,16384x7168,131072x8192 sw_fwd_row_st2_r8g sw_fwd_row_st2_r8 10
ab bwd_col_big bwd_col 4096x2048,4096x7168,16384x7168,131072x8192 sw_bwd_col_st3_128x64w_p2g sw_bwd_col_st3_128x64w_p2 10
ab bwd_both_big bwd_both 4096x2048,4096x7168,16384x7168,131072x8192 sw_bwd_both_st2_128x64w_p2g sw_bwd_both_st2_128x64w_p2 10
timeout 300 tools/run-tests.sh .stage 'swiglu_mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed" $R/tests.log | tail -5
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
