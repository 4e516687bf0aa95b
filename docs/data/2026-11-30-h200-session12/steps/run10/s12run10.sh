#!/usr/bin/env bash
# session 12 run 10: the general programs' row-tree combine reads every column before zeroing
# any child. A/B against be6a41e at widths the general programs serve (det routed; nondet
# unchanged, for reference); test_normgate_backward.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s12run10.sh $R/
X=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; B=$PWD/.stage/lib/libcake.so
timeout 90 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $A,$B --ng-shapes 4096x48:96,2048x48:512,1024x48:1000,256x48:4096 --json $R/ab_general.json > $R/ab_general.log 2>&1; echo "ab rc=$?"
timeout 200 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$?: $(tail -n 1 $R/test_normgate_backward.log)"
cd $OUT && tar czf r.tgz r && rm -rf r
