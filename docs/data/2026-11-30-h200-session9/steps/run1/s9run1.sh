#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 150 .stage/tests/test_swiglu_mxfp8 > $R/test_swiglu.log 2>&1; echo "test rc=$? $SECONDS"; tail -n 3 $R/test_swiglu.log
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so
timeout 300 $B --family swiglu --ab-libs $A,$N --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/ab.json > $R/ab.log 2>&1; echo "ab rc=$? $SECONDS"
grep -A40 "interleaved A/B" $R/ab.log | grep swiglu
cd $OUT && tar czf r.tgz r && rm -rf r
