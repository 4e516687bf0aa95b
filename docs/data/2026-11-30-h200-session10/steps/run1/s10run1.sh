#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 400 .stage/bench/cake-bench --family normgate --ops bwdg --routing --no-limit --ng-shapes 260x48,1031x48,3534x48,7684x48,16384x48 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
cp .stageT/s10run1.sh $R/
cd $OUT && tar czf r.tgz r && rm -rf r
