#!/usr/bin/env bash
# session 16 run 1: the 32x32 programs with the group guard (t32g) at small shapes: interleaved
# graph replays against t32, a routing sweep (CUPTI), a 128x128 table with the limit line, and
# test_swiglu_mxfp8 (every program forced, byte-exact).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/smi.csv
for f in fwd_row fwd_col bwd_row bwd_col bwd_both fwd_both; do
  $B --family swiglu --no-limit --forms $f --sw-shapes 128x128,256x256,512x512,1024x1024 \
     --ab-programs sm90.sw_${f}_t32g,sm90.sw_${f}_t32 --rounds 20 > $R/ab_$f.log 2>&1
  echo "ab $f rc $? at $SECONDS"
done
$B --family swiglu --no-limit --forms fwd_both --sw-shapes 128x128,256x256 \
   --ab-programs sm90.sw_fwd_both_t32g,sm90.sw_fwd_both_st2_64x64 --rounds 20 > $R/ab_fwd_both_st2.log 2>&1
echo "ab fwd_both st2 rc $? at $SECONDS"
$B --family swiglu --sw-shapes 128x128 --json $R/t128.json > $R/t128.log 2>&1; echo "t128 rc $? at $SECONDS"
$B --family swiglu --routing --no-limit --rounds 5 \
   --sw-shapes 128x128,256x256,256x512,512x512,512x1024,1024x1024,1024x2048,2048x2048 \
   --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc $? at $SECONDS"
timeout 300 tools/run-tests.sh .stage 'swiglu_mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed" $R/tests.log | tail -5
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
