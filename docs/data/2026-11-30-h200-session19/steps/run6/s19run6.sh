#!/usr/bin/env bash
# session 19 run 6 (HEAD + the t512p4 backward programs routed below 150 (d128) / 300 (d64) rows
# per SM): cake-bench --routing (table shapes); the routed backward against the previous library
# (e39a81e, .stageE/head.so) in interleaved graph replays; the routing sweep of run 5 with the
# new routes; the demo.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
E=$PWD/.stageE
xz -d -k $E/head.so.xz
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
SH=100x48,130x48,195x48,260x48,325x48,390x48,1031x48,3534x48,130x48:64,260x48:64,520x48:64,780x48:64,1031x48:64
timeout 150 $B --family normgate --ops bwdg --package both --no-limit --rounds 20 --ab-libs $E/head.so,.stage/lib/libcake.so --ng-shapes $SH --json $R/ab_head.json > $R/ab_head.log 2>&1; echo "ab head rc $? at $SECONDS"
grep "A/B" $R/ab_head.log | head -26
SW=""
for d in 128 64; do for t in 100 130 195 260 325 390 455 520 650 780 910 1031 1160 1290 1536 1792 2048; do SW="$SW,${t}x48:$d"; done; done
timeout 150 $B --family normgate --ops bwdg --routing --no-limit --ng-shapes ${SW#,} --json $R/sweep.json > $R/sweep.log 2>&1; echo "sweep rc $? at $SECONDS, $(grep -c FLAG $R/sweep.log) flags"
grep FLAG $R/sweep.log
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
