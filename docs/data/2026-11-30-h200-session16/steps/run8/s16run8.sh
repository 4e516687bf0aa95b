#!/usr/bin/env bash
# session 16 run 8: bwd_row on 7 CTAs a SM (68 registers) and on three stages, against the
# routed sw_bwd_row_st2_r8_bg, graph replays, both orders.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
S="--family swiglu --no-limit --forms bwd_row --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --rounds 10"
$B $S --ab-programs sm90.sw_bwd_row_st2_r8_bg7,sm90.sw_bwd_row_st2_r8_bg > $R/ab_c7.log 2>&1; echo "c7 rc $? at $SECONDS"
$B $S --ab-programs sm90.sw_bwd_row_st2_r8_bg,sm90.sw_bwd_row_st2_r8_bg7 > $R/ab_c7_rev.log 2>&1; echo "c7 rev rc $? at $SECONDS"
$B $S --ab-programs sm90.sw_bwd_row_st3_r8_bg,sm90.sw_bwd_row_st2_r8_bg > $R/ab_st3.log 2>&1; echo "st3 rc $? at $SECONDS"
for f in $R/ab_*.log; do echo "== $(basename $f)"; sed -n '/interleaved A\/B/,$p' $f | grep -E "swiglu|error"; grep -i "error\|not avail" $f | head -3; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
