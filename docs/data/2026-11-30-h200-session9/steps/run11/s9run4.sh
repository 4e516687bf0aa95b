#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
timeout 60 .stage/bench/cake-bench-colwise-writes > $R/colwise_writes.log 2>&1; echo "writes rc=$? $SECONDS"
B=.stage/bench/cake-bench
timeout 300 $B --family swiglu --forms fwd_col,fwd_both,bwd_col,bwd_both --routing --no-limit --sw-shapes 4096x7168,16384x7168,131072x8192 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
grep -E "SLOWER|FLAG|routing:" $R/route.log | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
