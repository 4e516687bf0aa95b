#!/usr/bin/env bash
# session 13 run 3: L2 eviction policies for the deterministic workspace (sm90-only experimental
# builds): el1 = level-0 node stores with an L2 evict_last policy; el2 = el1 + the tail's zeroing
# stores evict_first; el3 = el1 + the walk's bulk input copies evict_first (both packages).
# Against HEAD 1127863 (sm90-only build), routed bwdg, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run3.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,3534x48:256
for v in el1 el2 el3; do
  timeout 100 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $E/base.so,$E/$v.so --ng-shapes $SH --json $R/ab_det_$v.json > $R/ab_det_$v.log 2>&1; echo "ab det $v rc=$?"
done
timeout 100 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $E/base.so,$E/el3.so --ng-shapes $SH --json $R/ab_nd_el3.json > $R/ab_nd_el3.log 2>&1; echo "ab nd el3 rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
