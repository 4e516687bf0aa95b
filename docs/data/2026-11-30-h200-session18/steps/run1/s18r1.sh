#!/usr/bin/env bash
# session 18 run 1: Cake inside peers.py's harness (the Python binding) against cake-bench's
# numbers of the same library, and the peers, one process each, on one machine; both harnesses'
# empty-graph floors. cake-bench before and after peers.py (machine drift).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
NG=1031x48,260x48,3534x48
SW=128x128,4096x2048,4096x7168
FORMS=fwd_row,bwd_row,bwd_both
timeout 100 $B --family normgate --ops fwdg,bwdg,fwd+bwd --ng-shapes $NG --json $R/bench_ng_a.json > $R/bench_ng_a.log 2>&1; echo "bench ng a rc $? at $SECONDS"
timeout 100 $B --family swiglu --forms $FORMS --sw-shapes $SW --json $R/bench_sw_a.json > $R/bench_sw_a.log 2>&1; echo "bench sw a rc $? at $SECONDS"
timeout 260 python3 bench/peers/peers.py --family normgate --peers cake,fla,mamba,compile --modes default --ng-shapes $NG --time-budget 230 --json $R/peers_ng.json > $R/peers_ng.log 2>&1; echo "peers ng rc $? at $SECONDS"
timeout 150 python3 bench/peers/peers.py --family swiglu --peers cake,compile --modes default --forms $FORMS --sw-shapes $SW --time-budget 130 --json $R/peers_sw.json > $R/peers_sw.log 2>&1; echo "peers sw rc $? at $SECONDS"
timeout 100 $B --family normgate --ops fwdg,bwdg,fwd+bwd --ng-shapes $NG --no-limit --json $R/bench_ng_b.json > $R/bench_ng_b.log 2>&1; echo "bench ng b rc $? at $SECONDS"
timeout 100 $B --family swiglu --forms $FORMS --sw-shapes $SW --no-limit --json $R/bench_sw_b.json > $R/bench_sw_b.log 2>&1; echo "bench sw b rc $? at $SECONDS"
grep -A40 "one harness" $R/peers_ng.log; grep -A40 "one harness" $R/peers_sw.log; grep "floor" $R/peers_*.log
tail -5 $R/peers_ng.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
