#!/usr/bin/env bash
# session 12 run 7: arrive_last resets its counter after the acquire fence (one round trip off
# the non-deterministic tail's path). A/B against 533c49b (routed, both packages);
# test_normgate_backward (with the new 560000 x 256 case).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s12run7.sh $R/
X=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; B=$PWD/.stage/lib/libcake.so
timeout 60 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $A,$B --ng-shapes 260x48,1031x48,3534x48,6000x48,16384x48,3534x48:64,3534x48:256 --json $R/ab_nd.json > $R/ab_nd.log 2>&1; echo "ab nd rc=$?"
timeout 60 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $A,$B --ng-shapes 260x48,1031x48,3534x48 --json $R/ab_nd2.json > $R/ab_nd2.log 2>&1; echo "ab nd2 rc=$?"
timeout 250 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$?: $(tail -n 1 $R/test_normgate_backward.log)"
cd $OUT && tar czf r.tgz r && rm -rf r
