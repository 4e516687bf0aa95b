#!/usr/bin/env bash
# session 14 run 7: col_q staged in shared memory and stored by bulk copies (working tree after
# b6314d8) against b6314d8 (head.so): A/B of the five staged programs and of the routed colwise
# and both forms, the SwiGLU GPU tests, compute-sanitizer over the sm90 programs.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi0.txt
B=.stage/bench/cake-bench
NEW=.stage/lib/libcake.so
OLD=.stageE/head.so
timeout 100 tools/run-tests.sh .stage 'swiglu' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -3 $R/tests.log
for pf in sw_bwd_col_st3_128x64w_p2:bwd_col sw_bwd_both_st2_128x64w_p2:bwd_both sw_bwd_both_st2_128x64w:bwd_both sw_fwd_both_st2_128x128w_p2:fwd_both sw_fwd_col_st2_t128_p2:fwd_col; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 150 $B --family swiglu --no-limit --forms $f --program sm90.$p --ab-libs $OLD,$NEW --sw-shapes 2048x4096,4096x7168,8192x4096,16384x7168,32768x4096,131072x8192 --rounds 15 > $R/ab_$p.log 2>&1; echo "ab $p rc $? at $SECONDS"
  grep -A20 "interleaved A/B" $R/ab_$p.log | grep swiglu
done
timeout 200 $B --family swiglu --no-limit --forms fwd_col,fwd_both,bwd_col,bwd_both --ab-libs $OLD,$NEW --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --rounds 20 > $R/ab_routed.log 2>&1; echo "ab routed rc $? at $SECONDS"
grep -A20 "interleaved A/B" $R/ab_routed.log | grep swiglu
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 200 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"; grep "| default" $R/sanitize/summary.md
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
