#!/usr/bin/env bash
# session 18 final: the table run first on the machine (cake-bench --routing), then every peer
# with Cake's graph alternating with each peer's round by round on the same inputs
# (bench/peers/peers.py, paired), both families; the demo. Library: HEAD's kernels (1877f2c's,
# unchanged this session).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
timeout 540 python3 bench/peers/peers.py --peers cake,fla,mamba,compile --time-budget 470 --json $R/peers.json > $R/peers.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,$p' $R/peers.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
