#!/usr/bin/env bash
# session 19 run 9: what torch.compile max-autotune-no-cudagraphs generates for the norm-gate at
# 1031x48 and 260x48 (its inductor cache: kernel sources and the autotuner's chosen configs).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind19
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
timeout 300 python3 bench/peers/peers.py --family normgate --ng-shapes 1031x48,260x48 --peers cake,compile --modes max-autotune-no-cudagraphs --time-budget 240 --json $R/peers_mx.json > $R/peers_mx.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,$p' $R/peers_mx.log
mkdir -p $R/inductor && cd /tmp/ind19 && find . \( -name "*.py" -o -name "*.best_config" -o -name "*.json" \) -size -400k | head -400 | tar czf $R/inductor/cache.tgz -T - ; ls -la $R/inductor
cd / && tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
