#!/usr/bin/env bash
# session 13 run 14: the deterministic walk's level-0 node index as a per-thread column part plus
# a per-step node part (the store path 22 -> 10 SASS instructions, branch-free). A/B ni
# (sm90-only build of the change) against HEAD de019a1 (sm90-only), 20 rounds, routed det and
# forced ct; then the full build's test_normgate_backward and the four sanitizer tools.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s13run14.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
timeout 100 $X --family normgate --ops bwdg --package det --no-limit --rounds 20 --ab-libs $E/hd.so,$E/ni.so --ng-shapes 260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,3534x48:256 --json $R/ab_det.json > $R/ab_det.log 2>&1; echo "ab det rc=$? $SECONDS"
timeout 60 $X --family normgate --ops bwdg --package det --no-limit --rounds 20 --program sm90.ng_bwd_det_d128_ct --ab-libs $E/hd.so,$E/ni.so --ng-shapes 7684x48,16384x48 --json $R/ab_ct.json > $R/ab_ct.log 2>&1; echo "ab ct rc=$? $SECONDS"
timeout 200 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward.log)"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=100 timeout 150 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -8
cd $OUT && tar czf r.tgz r && rm -rf r
