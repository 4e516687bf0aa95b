#!/usr/bin/env bash
# session 19 run 10: the tuned walk's non-deterministic finish (ticket before the adds; the last CTA
# waits for the others' adds and rounds accumulator + its own sums into dw) against ebb8cf0
# (.stageE/ebb.so), routed nondet bwdg and ckptg, interleaved graph replays (A/B > 1: B faster).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
E=$PWD/.stageE
xz -d -k $E/ebb.so.xz
B=.stage/bench/cake-bench
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,130x48,260x48:64,1031x48:256
for rep in 1 2; do
timeout 150 $B --family normgate --ops bwdg,ckptg --package nondet --no-limit --rounds 20 --ab-libs $E/ebb.so,.stage/lib/libcake.so --ng-shapes $SH --json $R/ab_fin$rep.json > $R/ab_fin$rep.log 2>&1; echo "ab rc $? at $SECONDS"
grep "A/B" $R/ab_fin$rep.log | head -22
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
