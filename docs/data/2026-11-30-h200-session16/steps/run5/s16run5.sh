#!/usr/bin/env bash
# session 16 run 5: the A/B in two halves (each side first for half the rounds) against run 4's
# bias; whether the table's Cake-then-limit order moves Cake's time (Cake alone, Cake + limit).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
cp .stage/lib/libcake.so.0.2.0 /tmp/head_copy.so
S="--sw-shapes 128x128,512x512,4096x2048 --rounds 20"
$B --family swiglu --no-limit --forms bwd_row --ab-programs sm90.sw_bwd_row_t32,sm90.sw_bwd_row_t32 --sw-shapes 128x128,512x512 --rounds 20 > $R/ab_self_bwd_row.log 2>&1; echo "self rc $? at $SECONDS"
$B --family normgate --ops bwdg --package nondet --ng-shapes 260x48,1031x48 --ab-programs sm90.ng_bwd_nd_d128_t1024,sm90.ng_bwd_nd_d128_t1024 --rounds 20 > $R/ab_self_ng.log 2>&1; echo "self ng rc $? at $SECONDS"
$B --family swiglu --no-limit --ab-libs /tmp/head_copy.so,.stage/lib/libcake.so $S > $R/ab_head_head.log 2>&1; echo "head/head rc $? at $SECONDS"
$B --family swiglu --no-limit --ab-libs .stageB/s15.so,.stage/lib/libcake.so --sw-shapes 128x128,256x512,512x512,1024x2048,2048x2048,4096x2048 --rounds 20 --json $R/ab_s15_head_small.json > $R/ab_s15_head_small.log 2>&1; echo "s15/head rc $? at $SECONDS"
for i in 1 2; do
  $B --family swiglu --no-limit --forms fwd_row,bwd_row,bwd_both --sw-shapes 128x128,512x512 > $R/alone_$i.log 2>&1; echo "alone rc $? at $SECONDS"
  $B --family swiglu --forms fwd_row,bwd_row,bwd_both --sw-shapes 128x128,512x512 > $R/withlimit_$i.log 2>&1; echo "with limit rc $? at $SECONDS"
done
for f in $R/ab_*.log; do echo "== $(basename $f)"; sed -n '/interleaved A\/B/,$p' $f | grep -E "swiglu|normgate"; done
for f in $R/alone_*.log $R/withlimit_*.log; do echo "== $(basename $f)"; grep -E "^  swiglu|empty-kernel" $f | head -8; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
