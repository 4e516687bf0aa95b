#!/usr/bin/env bash
# session 18 run 5: peers.py with Cake paired round by round, a quick pass (both families).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
timeout 250 python3 bench/peers/peers.py --quick --peers cake,fla,mamba,compile --modes default --ng-shapes 1031x48,260x48 --sw-shapes 128x128,4096x7168 --forms bwd_row,fwd_col --json $R/peers_quick.json > $R/peers_quick.log 2>&1; echo "peers rc $? at $SECONDS"
grep -v "^ *File\|^    " $R/peers_quick.log | tail -60
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
