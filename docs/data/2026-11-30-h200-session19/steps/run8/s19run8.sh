#!/usr/bin/env bash
# session 19 run 8: the peers at 260x48 (the only benchmark shape whose routes moved), paired with
# Cake's graph of this library (HEAD ebb8cf0) round by round.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
timeout 400 python3 bench/peers/peers.py --family normgate --ng-shapes 260x48 --peers cake,fla,mamba,compile --time-budget 360 --json $R/peers_260.json > $R/peers_260.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,$p' $R/peers_260.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
