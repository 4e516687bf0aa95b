#!/usr/bin/env bash
# session 15 final table (HEAD 02163ea, fresh machine first): cake-bench with the routing check,
# then the SwiGLU colwise/both forms against session 14's library (0d53841, .stageA)
# interleaved, the demo and the SwiGLU GPU tests.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
timeout 120 $B --family swiglu --no-limit --ab-libs .stageA/libcake.so,.stage/lib/libcake.so --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --rounds 10 --json $R/ab_s14_s15.json > $R/ab_s14_s15.log 2>&1; echo "ab rc $? at $SECONDS"
grep -A30 "interleaved A/B" $R/ab_s14_s15.log | grep swiglu
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
timeout 150 tools/run-tests.sh .stage 'swiglu|abi|mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
