#!/usr/bin/env bash
# session 12 run 5: the tails read before they zero (warp_chunk_tree coalesced, run_tree and the grouped leaves zeroed after every load). test_normgate_backward;
# A/B against 2d20281 (forced ct and g); routing checks of the deterministic backward (D = 64,
# 128, 256) to place the column / grouped crossover again.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s12run5.sh $R/
X=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; B=$PWD/.stage/lib/libcake.so
timeout 170 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$?: $(tail -n 1 $R/test_normgate_backward.log)"
for pr in ct g; do
  timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $A,$B --program sm90.ng_bwd_det_d128_$pr --ng-shapes 260x48,1031x48,3534x48,7684x48,16384x48,32768x48 --json $R/ab_$pr.json > $R/ab_$pr.log 2>&1; echo "ab $pr rc=$?"
done
timeout 120 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 1031x48,2048x48,3534x48,4097x48,5120x48,6000x48,7684x48,8192x32,10000x48,16384x48,32768x48 --json $R/route_d128.json > $R/route_d128.log 2>&1; echo "route d128 rc=$?"
timeout 120 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 3534x48:64,8192x48:64,12000x48:64,16384x48:64,32768x48:64,1031x48:256,2048x48:256,2560x48:256,3534x48:256,8192x48:256,16384x48:256 --json $R/route_d64_256.json > $R/route_d64_256.log 2>&1; echo "route d64/256 rc=$?"
cd $OUT && tar czf r.tgz r && rm -rf r
