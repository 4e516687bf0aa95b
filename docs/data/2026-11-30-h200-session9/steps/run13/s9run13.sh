#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
for i in 1 2 3; do
timeout 60 .stage/bench/cake-bench --family swiglu --routing --no-limit --sw-shapes 128x128,256x256,512x512 --json $R/route$i.json > $R/route$i.log 2>&1; echo "route$i rc=$? $SECONDS"
grep -E "SLOWER|FLAG|routing:" $R/route$i.log | head -8
done
timeout 60 .stage/bench/cake-bench --family swiglu --forms fwd_both --ab-programs sm90.sw_fwd_both_t32,sm90.sw_fwd_both_st2_64x64 --sw-shapes 128x128,256x256,512x512 > $R/ab_small.log 2>&1; echo "ab rc=$? $SECONDS"
grep -A8 "interleaved A/B" $R/ab_small.log | grep swiglu
cd $OUT && tar czf r.tgz r && rm -rf r
