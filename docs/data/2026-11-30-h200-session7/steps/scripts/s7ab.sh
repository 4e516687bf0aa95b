#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so
$B --family swiglu --ab-libs $A,$N --sw-shapes 128x128,4096x2048,4096x7168,16384x7168,131072x8192 --json $R/ab_s6_s7.json > $R/ab_s6_s7.log 2>&1; echo "ab rc=$? $SECONDS"
grep -A40 "interleaved A/B" $R/ab_s6_s7.log | grep swiglu
cd $OUT && tar czf r.tgz r && rm -rf r
