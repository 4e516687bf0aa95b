#!/usr/bin/env bash
# session 13 run 6: per-CTA timelines (sm90-only experimental build tl: %globaltimer at entry,
# walk end, barrier exit (det) / before nondet_finish, exit; launches 40-45 of each process),
# forced programs: det ct (512 x 2), nondet x512 (512 x 2), nondet t1024, det g.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run6.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for sh in 3534x48 7684x48; do
  timeout 60 $X --family normgate --ops bwdg --package det --program sm90.ng_bwd_det_d128_ct --no-limit --lib $E/tl.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_ct_$sh.log 2>&1; echo "ct $sh rc=$?"
  timeout 60 $X --family normgate --ops bwdg --package det --program sm90.ng_bwd_det_d128_g --no-limit --lib $E/tl.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_g_$sh.log 2>&1; echo "g $sh rc=$?"
  timeout 60 $X --family normgate --ops bwdg --package nondet --program sm90.ng_bwd_nd_d128_x512 --no-limit --lib $E/tl.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_x512_$sh.log 2>&1; echo "x512 $sh rc=$?"
  timeout 60 $X --family normgate --ops bwdg --package nondet --program sm90.ng_bwd_nd_d128_t1024 --no-limit --lib $E/tl.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_t1024_$sh.log 2>&1; echo "t1024 $sh rc=$?"
done
cd $OUT && tar czf r.tgz r && rm -rf r
