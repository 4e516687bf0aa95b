#!/usr/bin/env bash
# session 12 run 3: where the deterministic package's time goes. Experimental builds (sm90
# only, not committed; dw wrong by construction): e1 = no level-0 node writes in the walk,
# e2 = the tail's barrier without its column reads, e3 = both. Interleaved A/B against this
# build with the same forced program. Then the det routing check at small sizes (the column
# tree on 1024 threads, ng_bwd_det_d128_ct_t1024, unrouted).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s12run3.sh $R/
X=.stage/bench/cake-bench
B=$PWD/.stage/lib/libcake.so
for e in 1 2 3; do
  for pr in ct g; do
    timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $B,$PWD/.stageE/e$e.so --program sm90.ng_bwd_det_d128_$pr --ng-shapes 1031x48,3534x48,7684x48,16384x48 --json $R/e${e}_$pr.json > $R/e${e}_$pr.log 2>&1; echo "e$e $pr rc=$? $SECONDS"
  done
done
timeout 60 $X --family normgate --ops bwdg --package nondet --no-limit --ng-shapes 1031x48,3534x48,7684x48,16384x48 --json $R/nd.json > $R/nd.log 2>&1; echo "nd rc=$? $SECONDS"
timeout 90 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 260x48,520x48,780x48,1031x48,2048x48,3534x48 --json $R/route_small.json > $R/route_small.log 2>&1; echo "route rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
