#!/usr/bin/env bash
# session 11 run 2: the non-deterministic backward's last round in pieces. C = .stage (2
# pieces a unit), B = .stageB (4 pieces), A = .stageA (717f1d4). Tests on C and B; interleaved
# A/B of the routed nondet bwdg (graph replays); C and B with the limit line.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run2.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
A=$PWD/.stageA/libcake.so; B=$PWD/.stageB/libcake.so; C=$PWD/.stage/lib/libcake.so
X=.stage/bench/cake-bench
timeout 200 .stage/tests/test_normgate_backward > $R/test_normgate_backward_C.log 2>&1; echo "bwd test C rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward_C.log)"
mkdir -p /tmp/l4 && cp $B /tmp/l4/libcake.so.0 && ln -sf libcake.so.0 /tmp/l4/libcake.so
LD_LIBRARY_PATH=/tmp/l4:$PWD/.stage/deps timeout 200 .stage/tests/test_normgate_backward > $R/test_normgate_backward_B.log 2>&1; echo "bwd test B rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward_B.log)"
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48,3534x48:64,16384x48:64,3534x48:256,16384x48:256
for pair in "A $A C $C" "A $A B $B" "C $C B $B"; do
  set -- $pair
  timeout 150 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $2,$4 --ng-shapes $SH --json $R/ab_${1}${3}.json > $R/ab_${1}${3}.log 2>&1; echo "ab $1$3 rc=$? $SECONDS"
done
for v in "C $C" "B $B" "A $A"; do
  set -- $v
  timeout 150 $X --lib $2 --family normgate --ops bwdg,fwd+bwd,ckptg --package nondet --ng-shapes 260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48 --json $R/lim_$1.json > $R/lim_$1.log 2>&1; echo "lim $1 rc=$? $SECONDS"
done
cd $OUT && tar czf r.tgz r && rm -rf r
