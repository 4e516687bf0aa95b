#!/usr/bin/env bash
# session 17 run 3: at 128x128 and 256x256, the routed SwiGLU programs and their limit lines in
# CUPTI kernel time (eager launches, cold L2), 20 rounds: how much of the kernel time a streaming
# kernel on the same bytes also takes.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,driver_version --format=csv > $R/smi.csv
timeout 120 $B --family swiglu --sw-eager --sw-shapes 128x128,256x256,512x512 --rounds 20 --json $R/eager.json > $R/eager.log 2>&1
echo "eager rc $? at $SECONDS"; grep -E "^swiglu" $R/eager.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
