#!/usr/bin/env bash
# session 15 run 8: HEAD 02163ea: the remaining GPU test binaries (normgate, reliability),
# compute-sanitizer (memcheck with leak check, racecheck, synccheck, initcheck) over the sm90
# programs.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
timeout 330 tools/run-tests.sh .stage 'normgate|rel' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; grep -E "^===|FAILED|passed" $R/tests.log
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 200 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"; grep "| default" $R/sanitize/summary.md
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
