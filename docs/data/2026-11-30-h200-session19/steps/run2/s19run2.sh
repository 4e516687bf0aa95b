#!/usr/bin/env bash
# session 19 run 2: the walk's claim distance. x1 = sm90-only HEAD (+ run 1's unrouted programs);
# x2 / x3 = the same with CAKE_X_CLAIM_F=1 / 2: on the bulk path thread 0 fetches the unit of
# step j at step j - 3 / j - 4 and writes the ring when it issues step j's copies (HEAD: j - 6).
# Routed det and nondet, interleaved graph replays (A/B > 1: B faster); then
# test_normgate_backward against each experimental library.
set -u
R=$OUT/r; mkdir -p $R
cp .stageT/s19run2.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for n in 1 2 3; do xz -d -k $E/x$n.so.xz; mkdir -p $E/d$n; cp $E/x$n.so $E/d$n/libcake.so.0; done
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48
for n in 2 3; do
  timeout 150 $X --family normgate --ops bwdg --package both --no-limit --rounds 20 --ab-libs $E/x1.so,$E/x$n.so --ng-shapes $SH --json $R/ab_x$n.json > $R/ab_x$n.log 2>&1; echo "ab x$n rc=$?"
  grep "A/B" $R/ab_x$n.log | head -16
done
for n in 2 3; do
  LD_LIBRARY_PATH=$E/d$n:$PWD/.stage/deps ldd .stage/tests/test_normgate_backward | grep cake
  t0=$(date +%s)
  LD_LIBRARY_PATH=$E/d$n:$PWD/.stage/deps timeout 250 .stage/tests/test_normgate_backward > $R/test_bwd_x$n.log 2>&1; echo "test x$n rc=$? $(( $(date +%s) - t0 )) s"
  tail -3 $R/test_bwd_x$n.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
