#!/usr/bin/env bash
# session 20 final: the table run first on a freshly started machine (cake-bench --routing), then
# every peer paired with Cake's graph of the same op (bench/peers/peers.py: FLA, mamba_ssm,
# torch.compile default and max-autotune-no-cudagraphs, both families), the demo.
# Library: HEAD c74f508 (its kernels are 55ec317's).
set -u
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage lib deps bench examples
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 200 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> $R/nvidia-smi.csv
left=$((555 - SECONDS))
timeout $((left + 20)) python3 bench/peers/peers.py --peers fla,mamba,compile --time-budget $((left - 40)) --json $R/peers.json > $R/peers.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,$p' $R/peers.log | head -60
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >> $R/nvidia-smi.csv
timeout 20 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
