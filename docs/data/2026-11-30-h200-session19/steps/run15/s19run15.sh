#!/usr/bin/env bash
# session 19 run 15 (the d256 deterministic four-stage program and its routes, on top of
# 7c7b6ed): the routed d256 det backward against 7c7b6ed's library (.stageE/w.so) at shapes
# the sweeps had not seen (the first six routed to the new program, the last three not);
# test_normgate_backward and test_router; compute-sanitizer (4 tools) over the sm90 table.
set -u
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
E=$PWD/.stageE
xz -d -k $E/w.so.xz
B=.stage/bench/cake-bench
SH=77x48:256,130x40:256,300x16:256,455x40:256,380x48:256,250x56:256,270x64:256,330x64:256,1000x16:256
timeout 40 $B --family normgate --ops bwdg --package det --no-limit --rounds 20 --ab-libs $E/w.so,.stage/lib/libcake.so --ng-shapes $SH --json $R/ab_d256.json > $R/ab_d256.log 2>&1; echo "ab rc $? at $SECONDS"
grep "A/B" $R/ab_d256.log | head -10
timeout 170 tools/run-tests.sh .stage 'normgate_backward|router' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed|PASSED|SKIPPED" $R/tests.log | tail -8
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=60 timeout 70 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"
cat $R/sanitize/summary.md 2>/dev/null | grep "|" | tail -4
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
