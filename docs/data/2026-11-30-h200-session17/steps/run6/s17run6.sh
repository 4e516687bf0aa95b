#!/usr/bin/env bash
# session 17 run 6: HEAD's SwiGLU table at 128x128 and 256x256 (graph replays with the limit line
# and the empty-kernel floor), three times in a row on a fresh machine: the spread of the
# floor ratios the 1.5x target is read from.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
for i in 1 2 3; do
  $B --family swiglu --sw-shapes 128x128,256x256 --json $R/small$i.json > $R/small$i.log 2>&1
  echo "small$i rc $? at $SECONDS"; grep -E "empty-kernel|^swiglu .*128x128" $R/small$i.log
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
