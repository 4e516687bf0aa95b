#!/usr/bin/env bash
# session 15 run 6: bwd_col pairs, 2 vs 4 lanes (HEAD's program vs this build's, --ab-libs with
# the program forced) and 4 vs 8 lanes (--ab-programs), twice each, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
A=.stageA/libcake.so; N=.stage/lib/libcake.so
S=2048x7168,4096x7168,8192x7168,16384x7168,32768x8192,131072x8192
P=sm90.sw_bwd_col_st3_128x64w_p2
for i in 1 2; do
  timeout 100 $B --family swiglu --no-limit --forms bwd_col --ab-libs $A,$N --program $P --sw-shapes $S --rounds 10 > $R/ab_l2_l4_$i.log 2>&1; echo "l2/l4 $i rc $? at $SECONDS"
  timeout 100 $B --family swiglu --no-limit --forms bwd_col --ab-programs $P,${P}_l8 --sw-shapes $S --rounds 10 > $R/ab_l4_l8_$i.log 2>&1; echo "l4/l8 $i rc $? at $SECONDS"
  timeout 100 $B --family swiglu --no-limit --forms bwd_both --ab-libs $A,$N --program sm90.sw_bwd_both_st2_128x64w_p2 --sw-shapes $S --rounds 10 > $R/ab_bb_l2_l4_$i.log 2>&1; echo "bb l2/l4 $i rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
