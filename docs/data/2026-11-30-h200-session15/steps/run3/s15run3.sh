#!/usr/bin/env bash
# session 15 run 3: phase-2 lanes over a column's 16-row chunks (whole col_q runs per store
# instruction) against HEAD 0d53841, interleaved graph replays, routed colwise/both forms, then
# the forced 128-row programs.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
A=.stageA/libcake.so; N=.stage/lib/libcake.so
S=4096x2048,4096x7168,16384x7168,131072x8192
timeout 200 $B --family swiglu --no-limit --ab-libs $A,$N --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes $S --rounds 10 --json $R/ab_routed.json > $R/ab_routed.log 2>&1; echo "ab routed rc $? at $SECONDS"
grep -A40 "interleaved A/B" $R/ab_routed.log | grep swiglu
for pf in sw_fwd_col_st2_t128_p2:fwd_col sw_fwd_both_st2_64x64_p2:fwd_both sw_bwd_col_t128:bwd_col sw_fwd_col_t32:fwd_col; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 100 $B --family swiglu --no-limit --ab-libs $A,$N --program sm90.$p --forms $f --sw-shapes 4096x7168,16384x7168 --rounds 6 > $R/ab_$p.log 2>&1; echo "ab $p rc $? at $SECONDS"
  grep -A20 "interleaved A/B" $R/ab_$p.log | grep swiglu
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
