#!/usr/bin/env bash
# session 11 run 5: forward launch shapes (experimental, unrouted programs) at 1031x48 and
# around: routing check (kernel time) and graph-replay A/B against the routed short program.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run5.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
X=.stage/bench/cake-bench
timeout 120 $X --family normgate --ops fwdg --routing --ng-shapes 260x48,1031x48,2048x48,3534x48,16384x48 --json $R/route_fwd.json > $R/route_fwd.log 2>&1; echo "route rc=$? $SECONDS"
for v in x_t32 x_t64 x_r2 x_t512 x_t1024; do
  timeout 60 $X --family normgate --ops fwdg --no-limit --ab-programs sm90.ng_fwd_d128_short,sm90.ng_fwd_d128_$v --ng-shapes 260x48,1031x48,3534x48 --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$? $SECONDS"
done
cd $OUT && tar czf r.tgz r && rm -rf r
