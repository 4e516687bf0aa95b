#!/usr/bin/env bash
# session 12 run 6: where the deterministic package's time goes after run 5 (experimental
# sm90-only builds e1: no level-0 node writes, e2: the tail's barrier without its reads, e3:
# both; dw wrong by construction, not committed), and the backward without dw
# (cake-bench --dw-skip) against the limit line, both packages.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s12run6.sh $R/
X=.stage/bench/cake-bench
B=$PWD/.stage/lib/libcake.so
for e in 1 2 3; do
  for pr in ct g; do
    timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $B,$PWD/.stageE/e$e.so --program sm90.ng_bwd_det_d128_$pr --ng-shapes 1031x48,3534x48,7684x48,16384x48 --json $R/e${e}_$pr.json > $R/e${e}_$pr.log 2>&1; echo "e$e $pr rc=$?"
  done
done
timeout 100 $X --family normgate --ops bwdg --ng-shapes 260x48,1031x48,3534x48,6000x48,7684x48,16384x48 --json $R/bwd_dw.json > $R/bwd_dw.log 2>&1; echo "dw rc=$?"
timeout 100 $X --family normgate --ops bwdg --dw-skip --ng-shapes 260x48,1031x48,3534x48,6000x48,7684x48,16384x48 --json $R/bwd_nodw.json > $R/bwd_nodw.log 2>&1; echo "nodw rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
