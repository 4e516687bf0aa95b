#!/usr/bin/env bash
# session 12 run 1: the walk's ring arithmetic and row addressing (bits-identical) + the shared
# tail top. test_normgate_backward; A/B against session 11's library (forced programs and
# routed); Nsight Compute instruction counts of the walk at 16384x48, both builds.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s12run1.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
X=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; B=$PWD/.stage/lib/libcake.so
timeout 170 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward.log)"
S=1031x48,3534x48,7684x48,16384x48
timeout 60 $X --family normgate --ops bwdg --package nondet --no-limit --ab-libs $A,$B --program sm90.ng_bwd_nd_d128_t1024 --ng-shapes 260x48,$S --json $R/ab_nd128.json > $R/ab_nd128.log 2>&1; echo "ab nd rc=$? $SECONDS"
for pr in g ct; do
timeout 60 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $A,$B --program sm90.ng_bwd_det_d128_$pr --ng-shapes 260x48,$S --json $R/ab_det_$pr.json > $R/ab_det_$pr.log 2>&1; echo "ab det $pr rc=$? $SECONDS"
done
timeout 60 $X --family normgate --ops bwdg --no-limit --ab-libs $A,$B --ng-shapes 3534x48:64,16384x48:64,3534x48:256,8192x48:256 --json $R/ab_routed_d64_256.json > $R/ab_routed_d64_256.log 2>&1; echo "ab routed rc=$? $SECONDS"
for L in A B; do
  for pr in ng_bwd_nd_d128_t1024 ng_bwd_det_d128_g; do
    pk=det; [[ $pr == *nd* ]] && pk=nondet
    lib=$A; [[ $L == B ]] && lib=$B
    timeout 60 ncu --metrics smsp__inst_executed.sum,sm__cycles_elapsed.max,gpu__time_duration.sum -k regex:$pr -c 1 $X --lib $lib --program sm90.$pr --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package $pk --ng-shapes 16384x48 > $R/ncu_${L}_$pr.log 2>&1; echo "ncu $L $pr rc=$? $SECONDS"
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
