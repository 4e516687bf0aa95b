#!/usr/bin/env bash
# session 16 run 4: the A/B method's bias at small shapes. Two copies of HEAD's library against
# each other; session 15's library and HEAD in the other order; one program against itself.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
cp .stage/lib/libcake.so.0.2.0 /tmp/head_copy.so
S="--sw-shapes 128x128,512x512,4096x2048 --rounds 20"
$B --family swiglu --no-limit --ab-libs /tmp/head_copy.so,.stage/lib/libcake.so $S > $R/ab_head_head.log 2>&1; echo "head/head rc $? at $SECONDS"
$B --family swiglu --no-limit --ab-libs .stage/lib/libcake.so,.stageB/s15.so $S > $R/ab_head_s15.log 2>&1; echo "head/s15 rc $? at $SECONDS"
$B --family swiglu --no-limit --ab-libs .stageB/s15.so,.stage/lib/libcake.so $S > $R/ab_s15_head.log 2>&1; echo "s15/head rc $? at $SECONDS"
for f in bwd_row bwd_both; do
  $B --family swiglu --no-limit --forms $f --ab-programs sm90.sw_${f}_t32,sm90.sw_${f}_t32 --sw-shapes 128x128,512x512 --rounds 20 > $R/ab_self_$f.log 2>&1; echo "self $f rc $? at $SECONDS"
done
for f in $R/ab_*.log; do echo "== $(basename $f)"; sed -n '/interleaved A\/B/,$p' $f | grep swiglu; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
