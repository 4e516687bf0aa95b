#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stageE/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stageE/bench/cake-bench
A=.stageE/lib/libcake.so
S=2048x4096,2048x7168,4096x4096,4096x7168,6144x4096,6144x7168,8192x4096,8192x7168,12288x4096,12288x7168,16384x4096,16384x7168,24576x4096,24576x7168,32768x4096,32768x7168
for v in bal w128; do
for pf in sw_bwd_col_st3_128x64w_p2:bwd_col sw_bwd_both_st2_128x64w_p2:bwd_both sw_bwd_both_st2_128x64w:bwd_both sw_fwd_both_st2_128x128w_p2:fwd_both; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 150 $B --family swiglu --no-limit --forms $f --program sm90.$p --ab-libs $A,.stageE/$v.so --sw-shapes $S --rounds 15 > $R/ab_${v}_$p.log 2>&1; echo "$v $p rc $? at $SECONDS"
  grep -A20 "interleaved A/B" $R/ab_${v}_$p.log | grep swiglu
done; done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
