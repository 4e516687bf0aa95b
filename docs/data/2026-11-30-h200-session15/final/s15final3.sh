#!/usr/bin/env bash
# session 15 final table, third (HEAD, the fwd_both route from 2^26; fresh machine first):
# cake-bench with the routing check; fwd_both's two candidate programs forced side by side over
# [2^26, 2^28); the SwiGLU forms against session 14's library (0d53841, .stageB/s14.so); demo.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
timeout 100 $B --family swiglu --no-limit --forms fwd_both --ab-programs sm90.sw_fwd_both_st2_64x64_p2,sm90.sw_fwd_both_st2_128x128w_p2 --sw-shapes 8192x8192,16384x4096,16384x7168,8192x14336,32768x4096,131072x8192 --rounds 10 > $R/ab_fwd_both_progs.log 2>&1; echo "ab progs rc $? at $SECONDS"
grep -A20 "interleaved A/B" $R/ab_fwd_both_progs.log | grep swiglu
timeout 100 $B --family swiglu --no-limit --ab-libs .stageB/s14.so,.stage/lib/libcake.so --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --rounds 10 --json $R/ab_s14_head.json > $R/ab_s14_head.log 2>&1; echo "ab s14 rc $? at $SECONDS"
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
