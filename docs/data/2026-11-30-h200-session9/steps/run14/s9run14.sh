#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
for i in 1 2; do
timeout 100 .stage/bench/cake-bench --family swiglu --routing --no-limit --sw-shapes 256x256,512x512,256x2048,1024x1024,2048x1024,1024x4096,2048x2048 --json $R/route$i.json > $R/route$i.log 2>&1; echo "route$i rc=$? $SECONDS"
grep -E "routing:" $R/route$i.log
done
cd $OUT && tar czf r.tgz r && rm -rf r
