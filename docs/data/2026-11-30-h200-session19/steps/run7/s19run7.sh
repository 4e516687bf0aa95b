#!/usr/bin/env bash
# session 19 run 7 (the library of run 6): every GPU test binary; compute-sanitizer (memcheck,
# racecheck, synccheck, initcheck) over the sm90 table.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage
timeout 330 tools/run-tests.sh .stage '.' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed|PASSED|SKIPPED" $R/tests.log | tail -30
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 240 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"
cat $R/sanitize/summary.md 2>/dev/null | tail -6
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
