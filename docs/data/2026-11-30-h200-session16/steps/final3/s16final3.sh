#!/usr/bin/env bash
# session 16 final3 (HEAD 4852c1a, the kernels of 8ca4acd): a second table run on another fresh
# machine (cake-bench with the routing check), then every GPU test binary and the demo.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 200 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
timeout 330 tools/run-tests.sh .stage '.' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed|SKIP" $R/tests.log | tail -16
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
