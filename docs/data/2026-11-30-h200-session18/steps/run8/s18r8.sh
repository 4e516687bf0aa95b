#!/usr/bin/env bash
# session 18 run 8: cake-bench with the empty-kernel floor timed in the same rounds as each small
# SwiGLU shape (new), two passes.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
for pass in 1 2; do
  timeout 100 .stage/bench/cake-bench --family swiglu --sw-shapes 128x128,256x256,512x512 --json $R/floor$pass.json > $R/floor$pass.log 2>&1; echo "pass $pass rc $? at $SECONDS"
  grep "floor" $R/floor$pass.log | grep swiglu
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
