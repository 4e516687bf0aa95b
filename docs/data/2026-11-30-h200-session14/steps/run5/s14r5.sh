#!/usr/bin/env bash
# session 14 run 5: staged scales for 64-row pairs too (HEAD): SwiGLU GPU tests, compute-sanitizer
# over the sm90 programs, A/B against 32de24f (bal.so) of the affected programs, and two SwiGLU
# routing sweeps from 2^20 to 2^27.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi0.txt
B=.stage/bench/cake-bench
NEW=.stage/lib/libcake.so
OLD=.stageE/bal.so
S=1024x1024,1024x2048,2048x1024,2048x2048,1024x4096,4096x2048,2048x4096,2048x7168,1024x14336,4096x4096,8192x2048,4096x7168,8192x4096,6144x7168,16384x4096,16384x7168,8192x14336,32768x4096
for i in 1 2; do
  timeout 200 $B --family swiglu --routing --no-limit --rounds 5 --sw-shapes $S --json $R/routing$i.json > $R/routing$i.log 2>&1; echo "routing $i rc $? at $SECONDS"
  grep FLAG $R/routing$i.log
done
for pf in sw_fwd_both_st2_64x64_p2:fwd_both sw_bwd_col_st3_128x64w_p2:bwd_col sw_bwd_both_st2_128x64w_p2:bwd_both; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 150 $B --family swiglu --no-limit --forms $f --program sm90.$p --ab-libs $OLD,$NEW --sw-shapes 4096x7168,16384x7168,32768x4096,131072x8192 --rounds 20 > $R/ab_$p.log 2>&1; echo "ab $p rc $? at $SECONDS"
  grep -A20 "interleaved A/B" $R/ab_$p.log | grep swiglu
done
timeout 300 tools/run-tests.sh .stage 'swiglu|mxfp8|abi' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 300 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"; grep "| default" $R/sanitize/summary.md
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
