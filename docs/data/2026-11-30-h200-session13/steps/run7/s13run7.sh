#!/usr/bin/env bash
# session 13 run 7: what slows the deterministic walk's steps (sm90-only experimental builds
# against HEAD's): nc = launched without the cooperative attribute (grid barriers still hold: one
# CTA a SM, all resident); ns = no level-0 node stores (dw wrong); nsh = no chunk-sum shuffles
# (dw wrong). Routed det bwdg, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run7.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=1031x48,3534x48,4097x48,7684x48,16384x48
for v in nc ns nsh; do
  timeout 100 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $E/base.so,$E/$v.so --ng-shapes $SH --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$?"
done
cd $OUT && tar czf r.tgz r && rm -rf r
