#!/usr/bin/env bash
# session 19 run 12 (HEAD 7c7b6ed, the wave routes): the routed backward against ebb8cf0
# (.stageE/ebb.so) at 20 shapes neither the fit (run 5) nor the check (run 11) saw: the first 12
# inside the wave band (routes moved), the last 8 outside it (routes as before), interleaved graph
# replays, both packages; then every GPU test binary; the demo.
set -u
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
E=$PWD/.stageE
xz -d -k $E/ebb.so.xz
B=.stage/bench/cake-bench
SH=1481x40:64,350x80:128,3536x8:128,712x40:128,714x40:128,3459x8:128,1213x24:128,257x112:128,338x80:128,464x80:128,497x56:128,1178x24:128,3297x24:64,384x80:128,221x112:128,642x40:128,754x56:128,455x112:64,4797x8:128,1409x56:64
timeout 150 $B --family normgate --ops bwdg --package both --no-limit --rounds 20 --ab-libs $E/ebb.so,.stage/lib/libcake.so --ng-shapes $SH --json $R/ab_waves.json > $R/ab_waves.log 2>&1; echo "ab rc $? at $SECONDS"
grep "A/B" $R/ab_waves.log | head -40
timeout 330 tools/run-tests.sh .stage '.' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed|PASSED|SKIPPED" $R/tests.log | tail -30
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
