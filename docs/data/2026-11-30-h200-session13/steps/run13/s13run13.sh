#!/usr/bin/env bash
# session 13 run 13: the committed timeline instrumentation (CMake option CAKE_TIMELINE, here an
# sm90-only build with -DCAKE_TIMELINE=1): routed det and nondet bwdg at 3534x48 and 1031x48.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run13.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for pk in det nondet; do for sh in 1031x48 3534x48; do
  timeout 60 $X --family normgate --ops bwdg --package $pk --no-limit --lib $E/tlon.so --rounds 2 --iters 30 --ng-shapes $sh > $R/tl_${pk}_$sh.log 2>&1; echo "tl $pk $sh rc=$?"
done; done
cd $OUT && tar czf r.tgz r && rm -rf r
