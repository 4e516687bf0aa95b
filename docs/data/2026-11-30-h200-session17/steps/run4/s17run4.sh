#!/usr/bin/env bash
# session 17 run 4: the both forms' rowwise bytes from the Y tile after the barrier (row_from_tile
# 1), taken by the threads without a phase-2 item: test_swiglu_mxfp8 (every program forced,
# byte-exact), kernel-time A/B against the routed 32x32 programs, a routing sweep of the both
# forms.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,driver_version --format=csv > $R/smi.csv
timeout 240 tools/run-tests.sh .stage 'swiglu_mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|PASSED|passed" $R/tests.log | tail -6
ab() {  # form candidate baseline shapes
  $B --family swiglu --no-limit --sw-eager --forms $1 --sw-shapes $4 \
     --ab-programs sm90.$2,sm90.$3 --rounds 20 > $R/ab_$2.log 2>&1
  echo "ab $2 rc $? at $SECONDS"; sed -n '/interleaved A\/B/,$p' $R/ab_$2.log | grep swiglu
}
ab fwd_both xr_fwd_both_s8r sw_fwd_both_t32s8 128x128,256x256,256x512
ab bwd_both xr_bwd_both_s8r sw_bwd_both_t32s8 128x128,256x256,256x512
ab fwd_both xr_fwd_both_t32r sw_fwd_both_t32 256x512,512x512,512x1024
ab bwd_both xr_bwd_both_t32r sw_bwd_both_t32 512x512,512x1024,1024x1024
$B --family swiglu --forms fwd_both,bwd_both --routing --no-limit --rounds 5 \
   --sw-shapes 128x128,256x256,256x512,512x512,512x1024,1024x1024,1024x2048,2048x2048 \
   --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc $? at $SECONDS"
grep -E "FLAG|flagged" $R/routing.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
