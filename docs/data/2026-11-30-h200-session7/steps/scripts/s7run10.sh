#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
ab() { # name A B forms shapes
  $B --family swiglu --ab-programs sm90.$2,sm90.$3 --forms $4 --sw-shapes $5 --rounds 20 --json $R/$1.json > $R/$1.log 2>&1
  echo "$1 rc=$? $SECONDS"; grep -A12 "interleaved A/B" $R/$1.log | grep swiglu
}
ab fcol sw_fwd_col_st3_256x64w sw_fwd_col_st2_t128 fwd_col 16384x7168,131072x8192
ab fcol2 sw_fwd_col_st3_256x64w sw_fwd_col_t128 fwd_col 131072x8192
ab fboth sw_fwd_both_st2_128x128w sw_fwd_both_st2 fwd_both 16384x7168,131072x8192
ab frow sw_fwd_row_st2_r8 sw_fwd_row fwd_row 4096x2048,4096x7168,16384x7168,131072x8192
ab brow sw_bwd_row_st2_r8_bg sw_bwd_row_evict bwd_row 4096x2048,4096x7168
ab brow2 sw_bwd_row_st2_r8_bg sw_bwd_row bwd_row 4096x2048
cd $OUT && tar czf r.tgz r && rm -rf r
