#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
timeout 200 .stage/bench/cake-bench --family swiglu --ab-libs $PWD/.stageA/libcake.so,$PWD/.stage/lib/libcake.so --sw-shapes 128x128,256x256,512x512,256x2048,1024x1024,2048x1024,1024x4096,2048x2048 --json $R/ab_small.json > $R/ab_small.log 2>&1; echo "ab rc=$? $SECONDS"
grep -A60 "interleaved A/B" $R/ab_small.log | grep swiglu
cd $OUT && tar czf r.tgz r && rm -rf r
