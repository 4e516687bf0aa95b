#!/usr/bin/env bash
# session 14 run 3: HEAD 32de24f (SwiGLU grid balanced at one CTA a SM): the SwiGLU GPU tests and
# the demo, a SwiGLU routing check, A/B against 9e6315a's library, Nsight Compute on the
# colwise/both backward programs and the rowwise backward.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi0.txt
B=.stage/bench/cake-bench
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
timeout 300 tools/run-tests.sh .stage 'swiglu|mxfp8|abi' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
S=4096x2048,2048x7168,4096x4096,4096x7168,8192x4096,16384x7168,32768x4096
timeout 200 $B --family swiglu --routing --no-limit --sw-shapes $S --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc $? at $SECONDS"
grep -A60 "routing check" $R/routing.log | grep -E "FLAG|flag|routed" | head -20
timeout 200 $B --family swiglu --no-limit --ab-libs .stageE/lib/libcake.so,.stage/lib/libcake.so --sw-shapes $S --rounds 20 > $R/ab_routed.log 2>&1; echo "ab rc $? at $SECONDS"
grep -A50 "interleaved A/B" $R/ab_routed.log | grep -E "bwd_col|bwd_both|fwd_both"
for pp in bwd_col:sw_bwd_col_st3_128x64w_p2:16384x7168 bwd_both:sw_bwd_both_st2_128x64w_p2:16384x7168 bwd_row:sw_bwd_row_st2_r8_bg:4096x7168 fwd_col:sw_fwd_col_st2_t128_p2:16384x7168; do
  IFS=: read f p s <<< "$pp"
  timeout 150 ncu --set full --import-source no -k regex:$p -c 1 -o $R/$p $B --program sm90.$p --rounds 1 --iters 1 --warmup 0 --no-limit --family swiglu --forms $f --sw-shapes $s > $R/ncu_$p.log 2>&1; echo "ncu $p rc=$? $SECONDS"
  ncu -i $R/$p.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/$p.sass.csv.gz
  ncu -i $R/$p.ncu-rep --page details > $R/$p.details.txt 2>&1
  rm -f $R/$p.ncu-rep
done
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.txt
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
