#!/usr/bin/env bash
# session 18 run 9: peers.py at 03ffc7d (paired order reversed every other round), a smoke pass.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
timeout 100 python3 bench/peers/peers.py --quick --peers fla,compile --modes default --ng-shapes 1031x48 --sw-shapes 128x128 --forms fwd_row --json $R/peers_smoke.json > $R/peers_smoke.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,/== best/p' $R/peers_smoke.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
