#!/usr/bin/env bash
# session 15 final table, second (HEAD a6d4362, fresh machine first): cake-bench with the routing
# check; the SwiGLU forms against session 14's library (0d53841, .stageB/s14.so) and against
# 02163ea (.stageB/s15a.so) interleaved; the demo, the SwiGLU GPU tests and the sanitizer.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
S=4096x2048,4096x7168,16384x7168,131072x8192
timeout 120 $B --family swiglu --no-limit --ab-libs .stageB/s14.so,.stage/lib/libcake.so --sw-shapes $S --rounds 10 --json $R/ab_s14_head.json > $R/ab_s14_head.log 2>&1; echo "ab s14 rc $? at $SECONDS"
timeout 120 $B --family swiglu --no-limit --ab-libs .stageB/s15a.so,.stage/lib/libcake.so --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes $S,32768x8192 --rounds 10 --json $R/ab_02163ea_head.json > $R/ab_02163ea_head.log 2>&1; echo "ab 02163ea rc $? at $SECONDS"
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
timeout 150 tools/run-tests.sh .stage 'swiglu|abi|mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 150 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"; grep "| default" $R/sanitize/summary.md
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
