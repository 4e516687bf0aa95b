#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
CAKE_TEST_SEED=25898802216 timeout 150 .stage/tests/test_swiglu_mxfp8 > $R/test_swiglu_seed.log 2>&1; echo "test(seed) rc=$? $SECONDS"; grep -E "oracle|FAIL|PASSED" $R/test_swiglu_seed.log
B=.stage/bench/cake-bench
timeout 400 $B --family swiglu --routing --no-limit --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "SLOWER|FLAG|routing:" $R/route.log | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
