#!/usr/bin/env bash
# session 13 run 4: a per-CTA timeline of the tuned backward (sm90-only experimental build,
# %globaltimer at entry, walk end, before nondet_finish, exit; launch 40 of each process printed).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run4.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for pk in det nondet; do for sh in 1031x48 3534x48 16384x48; do
  timeout 60 $X --family normgate --ops bwdg --package $pk --no-limit --lib $E/tl.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_${pk}_$sh.log 2>&1; echo "tl $pk $sh rc=$?"
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
