#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so; D=$PWD/.stageD/libcake.so
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 50 > $R/smi.csv 2>&1 &
SMI=$!
for lib in D N D N; do
  L=$D; [ $lib = N ] && L=$N
  echo "== $lib $(date +%T.%N)" >> $R/marks.txt
  $B --family swiglu --forms bwd_both --sw-shapes 16384x7168 --no-limit --rounds 40 --iters 100 --lib $L --program sm90.sw_bwd_both_st3_t128w > $R/run_$lib.log 2>&1
  echo "   end $(date +%T.%N)" >> $R/marks.txt
  grep bwd_both $R/run_$lib.log | tail -1 >> $R/marks.txt
done
kill $SMI
cat $R/marks.txt
cd $OUT && tar czf r.tgz r && rm -rf r
