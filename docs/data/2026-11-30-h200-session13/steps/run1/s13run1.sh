#!/usr/bin/env bash
# session 13 run 1: the non-deterministic backward's tail split (the last 1 or 2 waves of units
# cut into 2 or 4 sub-units; sm90-only experimental builds) against HEAD 1127863 (sm90-only build),
# routed nondet bwdg, interleaved graph replays; test_normgate_backward on the s2w1 library.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run1.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,3534x48:256
for v in s2w1 s4w1 s2w2 s4w2; do
  timeout 90 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $E/base.so,$E/$v.so --ng-shapes $SH --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$?"
done
mkdir -p $E/lib_s2w1 && cp $E/s2w1.so $E/lib_s2w1/libcake.so.0.1.0 && ln -sf libcake.so.0.1.0 $E/lib_s2w1/libcake.so.0 && ln -sf libcake.so.0.1.0 $E/lib_s2w1/libcake.so
LD_LIBRARY_PATH=$E/lib_s2w1:$PWD/.stage/deps timeout 250 .stage/tests/test_normgate_backward > $R/test_normgate_backward_s2w1.log 2>&1; echo "bwd test s2w1 rc=$?: $(tail -n 1 $R/test_normgate_backward_s2w1.log)"
cd $OUT && tar czf r.tgz r && rm -rf r
