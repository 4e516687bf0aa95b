#!/usr/bin/env bash
# session 11 run 9 (after the final table): the small shapes side by side with their peers in
# one process run each (normgate 1031x48 and 260x48: cake-bench then peers.py; SwiGLU 128x128:
# cake-bench then the torch.compile peer), and a repeat of the table's two outliers.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11run9.sh $R/
X=.stage/bench/cake-bench
timeout 40 $X --family normgate --ops fwdg,bwdg,fwd+bwd --ng-shapes 1031x48,260x48 --json $R/cake-ng-small.json > $R/cake-ng-small.log 2>&1; echo "cake ng rc=$? $SECONDS"
timeout 200 python3 bench/peers/peers.py --family normgate --ng-shapes 1031x48,260x48 --time-budget 180 --json $R/peers-ng-small.json > $R/peers-ng-small.log 2>&1; echo "peers ng rc=$? $SECONDS"
for k in 1 2; do
  timeout 40 $X --family swiglu --sw-shapes 128x128 --json $R/cake-sw-128-$k.json > $R/cake-sw-128-$k.log 2>&1; echo "cake sw $k rc=$? $SECONDS"
done
timeout 120 python3 bench/peers/peers.py --family swiglu --sw-shapes 128x128 --modes default --time-budget 100 --json $R/peers-sw-128.json > $R/peers-sw-128.log 2>&1; echo "peers sw rc=$? $SECONDS"
timeout 40 $X --family normgate --ops ckptg --package nondet --ng-shapes 16384x48 > $R/ckptg-16384.log 2>&1; echo "ckptg rc=$? $SECONDS"
cd $OUT && tar czf r.tgz r && rm -rf r
