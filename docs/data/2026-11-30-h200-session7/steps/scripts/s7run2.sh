#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so; C=$PWD/.stageC/libcake.so
.stage/tests/test_swiglu_mxfp8 > $R/test_swiglu.log 2>&1; echo "test_swiglu rc=$? $SECONDS"
SH=128x128,4096x2048,4096x7168,16384x7168,131072x8192
$B --family swiglu --ab-libs $A,$N --sw-shapes $SH --json $R/ab_base_new.json > $R/ab_base_new.log 2>&1; echo "ab A,N rc=$? $SECONDS"
$B --family swiglu --ab-libs $C,$N --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes 4096x7168,16384x7168,131072x8192 --json $R/ab_twice_once.json > $R/ab_twice_once.log 2>&1; echo "ab C,N rc=$? $SECONDS"
$B --family swiglu --routing --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="racecheck synccheck" CAKE_SANITIZE_TIMEOUT=150 tools/sanitize-on-device.sh .stage $R/san > $R/san.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "FLAG|flagged" $R/route.log
tail -4 $R/san/summary.md
tail -3 $R/test_swiglu.log
cd $OUT && tar czf r.tgz r && rm -rf r
