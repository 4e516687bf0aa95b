#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s10run6.sh $R/
B=.stage/bench/cake-bench
for sh in 260x48 3534x48; do
  for pr in ng_bwd_det_d128_g ng_bwd_det_d128_ct; do
    timeout 100 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy -k regex:$pr -c 1 $B --program sm90.$pr --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package det --ng-shapes $sh > $R/ncu_${pr}_${sh}.log 2>&1; echo "ncu $pr $sh rc=$? $SECONDS"
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
