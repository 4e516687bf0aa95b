#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so; P=$PWD/.stageR/libcake.so
S=7684x48,16384x48,3534x48:256,65536x48
$B --family normgate --ops bwdg --package det --ab-libs $P,$N --ng-shapes $S --json $R/ab_P_N.json > $R/ab_P_N.log 2>&1; echo "ab P/N rc=$? $SECONDS"
grep -A30 "interleaved A/B" $R/ab_P_N.log | grep -i "x48\|x32"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_red.sum,lts__t_requests_op_write.sum,smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_write_lookup_miss.sum
for v in A N; do
  L=$PWD/.stage$v/libcake.so; [ $v = N ] && L=$N
  for sh in 16384x48 3534x48:256; do
    timeout 120 ncu --metrics $M -k regex:ng_bwd_det -c 1 $B --lib $L --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package det --ng-shapes $sh > $R/ncu_${v}_${sh}.log 2>&1; echo "ncu $v $sh rc=$? $SECONDS"
    grep -E "^\s+(gpu__|dram__|lts__|smsp__)" $R/ncu_${v}_${sh}.log
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
