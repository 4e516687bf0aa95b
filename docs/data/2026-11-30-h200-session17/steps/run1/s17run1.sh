#!/usr/bin/env bash
# session 17 run 1: 8-column slots (slot_cols 8) and 8-row phase-2 items (item_rows 8) for the
# 32x32 programs at small shapes. test_swiglu_mxfp8 (every program forced, byte-exact), then
# kernel-time (CUPTI) interleaved A/B of each candidate against the routed 32x32 program, a
# routing sweep (CUPTI) over small and mid shapes.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,driver_version --format=csv > $R/smi.csv
timeout 240 tools/run-tests.sh .stage 'swiglu_mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|PASSED|passed" $R/tests.log | tail -8
S=128x128,256x256,512x512,1024x1024
ab() {  # form candidate baseline
  $B --family swiglu --no-limit --sw-eager --forms $1 --sw-shapes $S \
     --ab-programs sm90.$2,sm90.$3 --rounds 20 > $R/ab_$2.log 2>&1
  echo "ab $2 rc $? at $SECONDS"; grep -E "^\|.*x" $R/ab_$2.log | tail -4
}
ab fwd_row xs_fwd_row_s8 sw_fwd_row_t32
ab fwd_col xs_fwd_col_s8 sw_fwd_col_t32
ab fwd_col xs_fwd_col_s8i8 sw_fwd_col_t32
ab fwd_col xs_fwd_col_i8 sw_fwd_col_t32
ab fwd_both xs_fwd_both_s8 sw_fwd_both_t32
ab fwd_both xs_fwd_both_s8i8 sw_fwd_both_t32
ab bwd_row xs_bwd_row_s8 sw_bwd_row_t32
ab bwd_col xs_bwd_col_s8 sw_bwd_col_t32
ab bwd_col xs_bwd_col_s8i8 sw_bwd_col_t32
ab bwd_both xs_bwd_both_s8 sw_bwd_both_t32
ab bwd_both xs_bwd_both_s8g sw_bwd_both_t32
ab bwd_both xs_bwd_both_s8i8 sw_bwd_both_t32
$B --family swiglu --routing --no-limit --rounds 5 \
   --sw-shapes 128x128,256x256,256x512,512x512,512x1024,1024x1024,1024x2048,2048x2048,2048x4096 \
   --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
