#!/usr/bin/env bash
# session 15 run 4: phase-2 lanes over a column's 16-row chunks, up to 8 lanes a column pair
# (.stage, L8) and capped at 4 (.stageB/libcake_l4.so), each against HEAD 0d53841 (.stageA),
# interleaved graph replays of the routed colwise/both forms over seven shapes.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
A=.stageA/libcake.so
S=4096x4096,4096x7168,8192x7168,4096x14336,16384x7168,32768x8192,131072x8192
for v in l8:.stage/lib/libcake.so l4:.stageB/libcake_l4.so l8b:.stage/lib/libcake.so; do
  n=${v%%:*}; N=${v#*:}
  timeout 170 $B --family swiglu --no-limit --ab-libs $A,$N --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes $S --rounds 10 --json $R/ab_$n.json > $R/ab_$n.log 2>&1; echo "ab $n rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
