#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 150 .stage/tests/test_swiglu_mxfp8 > $R/test_swiglu.log 2>&1; echo "test rc=$? $SECONDS"; grep -E "oracle|PASSED|FAIL" $R/test_swiglu.log
for i in 1 2; do
timeout 200 .stage/bench/cake-bench --family swiglu --routing --no-limit --sw-shapes 128x128,256x256,512x512,256x2048,1024x1024,2048x1024,1024x4096,2048x2048,4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route$i.json > $R/route$i.log 2>&1; echo "route$i rc=$? $SECONDS"
grep -E "FLAG|routing:" $R/route$i.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
