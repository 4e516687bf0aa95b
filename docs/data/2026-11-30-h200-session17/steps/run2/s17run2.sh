#!/usr/bin/env bash
# session 17 run 2: L2 prefetch-size hints on the input loads, two experimental libraries against
# HEAD (interleaved graph replays, both orders for the large SwiGLU shapes):
#   .stageB/exp_a.so  cp.async.cg ... .L2::256B and ld.global.nc.L2::256B
#   .stageB/exp_b.so  cp.async.cg ... .L2::128B
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
H=.stage/lib/libcake.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu,driver_version --format=csv > $R/smi.csv
S=4096x2048,4096x7168,16384x7168,131072x8192
for x in a b; do
  timeout 150 $B --family swiglu --no-limit --ab-libs .stageB/exp_$x.so,$H --sw-shapes $S --rounds 10 > $R/ab_sw_exp_$x.log 2>&1
  echo "ab sw exp_$x rc $? at $SECONDS"; sed -n '/interleaved A\/B/,$p' $R/ab_sw_exp_$x.log | grep swiglu
done
timeout 150 $B --family swiglu --no-limit --ab-libs $H,.stageB/exp_a.so --sw-shapes $S --rounds 10 > $R/ab_sw_exp_a_rev.log 2>&1
echo "ab sw exp_a reversed rc $? at $SECONDS"; sed -n '/interleaved A\/B/,$p' $R/ab_sw_exp_a_rev.log | grep swiglu
timeout 100 $B --family normgate --no-limit --ops fwdg,bwdg --package nondet --ng-shapes 3534x48,16384x48 --ab-libs .stageB/exp_a.so,$H --rounds 10 > $R/ab_ng_exp_a.log 2>&1
echo "ab ng exp_a rc $? at $SECONDS"; sed -n '/interleaved A\/B/,$p' $R/ab_ng_exp_a.log | grep normgate
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
