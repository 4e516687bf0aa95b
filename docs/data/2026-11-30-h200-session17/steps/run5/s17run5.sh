#!/usr/bin/env bash
# session 17 run 5: the rowwise forms on smaller tiles with 8-column slots (16x32 on 64 threads,
# 8x32 on 32 threads: more SMs for the same per-thread chain) against the routed 32x32 ones,
# kernel time (CUPTI), 20 rounds; test_swiglu_mxfp8 (every program forced, byte-exact).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
S=128x128,256x256,256x512,512x512
ab() {  # form candidate baseline
  $B --family swiglu --no-limit --sw-eager --forms $1 --sw-shapes $S \
     --ab-programs sm90.$2,sm90.$3 --rounds 20 > $R/ab_$2.log 2>&1
  echo "ab $2 rc $? at $SECONDS"; sed -n '/interleaved A\/B/,$p' $R/ab_$2.log | grep swiglu
}
ab fwd_row xq_fwd_row_t16s8 sw_fwd_row_t32s8
ab fwd_row xq_fwd_row_t8s8 sw_fwd_row_t32s8
ab bwd_row xq_bwd_row_t16s8 sw_bwd_row_t32s8
ab bwd_row xq_bwd_row_t8s8 sw_bwd_row_t32s8
timeout 240 tools/run-tests.sh .stage 'swiglu_mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|PASSED|passed" $R/tests.log | tail -4
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
