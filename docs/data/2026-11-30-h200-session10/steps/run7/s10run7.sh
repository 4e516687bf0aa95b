#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s10run7.sh $R/
B=.stage/bench/cake-bench
for sh in 260x48; do
  for pr in ng_bwd_det_d128_g ng_bwd_det_d128_ct; do
    timeout 120 ncu --set full --import-source no -k regex:$pr -c 1 -o $R/${pr}_$sh -f $B --program sm90.$pr --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package det --ng-shapes $sh > $R/ncu_${pr}_${sh}.log 2>&1; echo "ncu $pr $sh rc=$? $SECONDS"
    ncu -i $R/${pr}_$sh.ncu-rep --page source --csv --print-source sass > $R/${pr}_$sh.sass.csv 2>&1
    ncu -i $R/${pr}_$sh.ncu-rep --page details --print-details all > $R/${pr}_$sh.details.txt 2>&1
    rm -f $R/${pr}_$sh.ncu-rep
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
