#!/usr/bin/env bash
# session 11 run 1: validate the forward test change and the warm tail (C = .stage); A = main's
# library (717f1d4), B = branch wip/s10-compact-grouped-tail on main; forced-program A/B at five
# shapes; det routing on C; ncu --set full of g (A, C) and ct (C) at 3534x48.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run1.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
A=$PWD/.stageA/libcake.so; B=$PWD/.stageB/libcake.so; C=$PWD/.stage/lib/libcake.so
X=.stage/bench/cake-bench
timeout 120 .stage/tests/test_normgate_forward > $R/test_normgate_forward.log 2>&1; echo "fwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_forward.log)"
timeout 240 .stage/tests/test_normgate_backward > $R/test_normgate_backward.log 2>&1; echo "bwd test rc=$? $SECONDS: $(tail -n 1 $R/test_normgate_backward.log)"
SH=260x48,1031x48,3534x48,7684x48,16384x48
for pr in g ct; do
  for pair in "A $A C $C" "A $A B $B"; do
    set -- $pair
    timeout 120 $X --family normgate --ops bwdg --package det --no-limit --ab-libs $2,$4 --program sm90.ng_bwd_det_d128_$pr --ng-shapes $SH --json $R/ab_${1}${3}_$pr.json > $R/ab_${1}${3}_$pr.log 2>&1; echo "ab $1$3 $pr rc=$? $SECONDS"
  done
done
timeout 150 $X --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes 260x48,1031x48,3534x48,6000x48,7684x48,12000x48,16384x48,3534x48:256,8192x48:256,16384x48:256 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
for v in "C ng_bwd_det_d128_g $C" "A ng_bwd_det_d128_g $A" "C ng_bwd_det_d128_ct $C"; do
  set -- $v
  timeout 120 ncu --set full --import-source no -k regex:$2 -c 1 -o $R/${1}_$2 -f $X --lib $3 --program sm90.$2 --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package det --ng-shapes 3534x48 > $R/ncu_${1}_$2.log 2>&1; echo "ncu $1 $2 rc=$? $SECONDS"
  ncu -i $R/${1}_$2.ncu-rep --page source --csv --print-source sass > $R/${1}_$2.sass.csv 2>&1
  rm -f $R/${1}_$2.ncu-rep
done
cd $OUT && tar czf r.tgz r && rm -rf r
