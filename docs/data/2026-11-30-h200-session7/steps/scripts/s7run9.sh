#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
$B --family swiglu --routing --forms bwd_row,fwd_row --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "^swiglu|FLAG" $R/route.log | head -80
cd $OUT && tar czf r.tgz r && rm -rf r
