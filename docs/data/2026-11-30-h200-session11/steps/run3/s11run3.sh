#!/usr/bin/env bash
# session 11 run 3: bwd_row staged variants (routing check + graph-replay A/B against the routed
# program); Nsight Compute of the grouped det program and the nondet program at 16384x48.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run3.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
X=.stage/bench/cake-bench
timeout 120 $X --family swiglu --forms bwd_row --routing --no-limit --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route_bwd_row.json > $R/route_bwd_row.log 2>&1; echo "route rc=$? $SECONDS"
for v in x_st3_r8 x_st2_r8_m8 x_st2_r16 x_st2_r8w x_st2_r4; do
  timeout 60 $X --family swiglu --forms bwd_row --no-limit --ab-programs sm90.sw_bwd_row_st2_r8_bg,sm90.sw_bwd_row_$v --sw-shapes 4096x7168,16384x7168 --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$? $SECONDS"
done
for pr in ng_bwd_det_d128_g ng_bwd_nd_d128_t1024; do
  pk=det; [[ $pr == *nd* ]] && pk=nondet
  timeout 120 ncu --set full --import-source no -k regex:$pr -c 1 -o $R/$pr -f $X --program sm90.$pr --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package $pk --ng-shapes 16384x48 > $R/ncu_$pr.log 2>&1; echo "ncu $pr rc=$? $SECONDS"
  ncu -i $R/$pr.ncu-rep --page source --csv --print-source sass > $R/$pr.sass.csv 2>&1
  rm -f $R/$pr.ncu-rep
done
cd $OUT && tar czf r.tgz r && rm -rf r
