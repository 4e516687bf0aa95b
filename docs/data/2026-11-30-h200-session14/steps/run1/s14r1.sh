#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stageE/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi0.txt
B=.stageE/bench/cake-bench
S=4096x2048,4096x7168,16384x7168,8192x4096,2048x7168,32768x4096
timeout 200 $B --family swiglu --no-limit --ab-libs .stageE/lib/libcake.so,.stageE/bal.so --sw-shapes $S --rounds 20 > $R/ab_graph1.log 2>&1; echo "ab1 rc $? at $SECONDS"
timeout 200 $B --family swiglu --no-limit --sw-eager --ab-libs .stageE/lib/libcake.so,.stageE/bal.so --sw-shapes $S --rounds 20 > $R/ab_eager.log 2>&1; echo "ab2 rc $? at $SECONDS"
timeout 200 $B --family swiglu --no-limit --ab-libs .stageE/lib/libcake.so,.stageE/bal.so --sw-shapes $S --rounds 20 > $R/ab_graph2.log 2>&1; echo "ab3 rc $? at $SECONDS"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv > $R/smi1.txt
tail -45 $R/ab_graph1.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
