#!/usr/bin/env bash
# session 13 run 15: SwiGLU at 131072x8192 again (the final run measured fwd_row / fwd_col /
# fwd_both 3-5% below session 12 with the same kernels), with the limit line and nvidia-smi.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run15.sh $R/
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/nvidia-smi-before.csv 2>&1
timeout 150 .stage/bench/cake-bench --family swiglu --forms fwd_row,fwd_col,fwd_both,bwd_row --sw-shapes 131072x8192 --json $R/sw131072.json > $R/sw131072.log 2>&1; echo "bench rc=$? $SECONDS"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $R/nvidia-smi-after.csv 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
