#!/usr/bin/env bash
# session 15 run 1: routing sweeps of the colwise/both forms with the candidate programs
# (several CTAs a SM on 128-row pairs), two repetitions.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
for rep in 1 2; do
  timeout 240 $B --family swiglu --routing --no-limit --rounds 5 --forms fwd_col,fwd_both,bwd_col,bwd_both \
    --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/routing$rep.json > $R/routing$rep.log 2>&1
  echo "routing $rep rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
