#!/usr/bin/env bash
# session 15 run 2: clocks and power during the SwiGLU colwise/both forms at 131072x8192 (and
# 16384x7168), Cake alone and with its limit line; Nsight Compute at the running clocks.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$Q --format=csv -lms 20 > $R/smi.csv 2> $R/smi.err &
SMI=$!
sleep 1
for s in 131072x8192 16384x7168; do
  for f in fwd_row fwd_col fwd_both bwd_col bwd_both; do
    echo "$(date +%H:%M:%S.%N) start $f $s nolimit" >> $R/marks.txt
    $B --family swiglu --forms $f --sw-shapes $s --rounds 5 --no-limit > $R/cake_${f}_$s.log 2>&1
    echo "$(date +%H:%M:%S.%N) end $f $s nolimit" >> $R/marks.txt
  done
done
echo "$(date +%H:%M:%S.%N) start all 131072x8192 withlimit" >> $R/marks.txt
$B --family swiglu --sw-shapes 131072x8192 --rounds 5 --json $R/lim131072.json > $R/lim131072.log 2>&1
echo "$(date +%H:%M:%S.%N) end all 131072x8192 withlimit" >> $R/marks.txt
kill $SMI
echo "smi+bench at $SECONDS"
for pf in sw_fwd_col_st2_t128_p2:fwd_col sw_bwd_col_st3_128x64w_p2:bwd_col sw_fwd_row_st2_r8:fwd_row; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 150 ncu --clock-control none --set full --import-source no -k regex:$p -c 1 -o $R/$p $B --program sm90.$p --rounds 1 --iters 1 --warmup 2 --no-limit --family swiglu --forms $f --sw-shapes 131072x8192 > $R/ncu_$p.log 2>&1; echo "ncu $p rc=$? $SECONDS"
  ncu -i $R/$p.ncu-rep --page details > $R/$p.details.txt 2>&1
  ncu -i $R/$p.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/$p.sass.csv.gz
  rm -f $R/$p.ncu-rep
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
