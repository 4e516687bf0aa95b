#!/usr/bin/env bash
# session 13 run 9: the deterministic tail (sm90-only experimental builds against HEAD's):
# notail = the grid barrier and counter reset kept, no column reads or dw (dw wrong);
# ool = the one-level tail (reduce_top) out of line. Routed det bwdg, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run9.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=1031x48,3534x48,4097x48,7684x48,16384x48
for v in notail ool; do
  timeout 100 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $E/base.so,$E/$v.so --ng-shapes $SH --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$?"
done
cd $OUT && tar czf r.tgz r && rm -rf r
