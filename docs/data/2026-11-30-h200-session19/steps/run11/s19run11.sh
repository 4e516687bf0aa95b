#!/usr/bin/env bash
# session 19 run 11: hold-out check of a wave-fraction rule for the backward (route the 512-thread
# four-stage programs where the routed program's units fill 2-5 waves of CTAs with the last wave
# 15-50% full), fitted on run 5: routing check (kernel time) at 56 shapes the fit did not see,
# d = 64 and 128, H = 16 ... 96, two repetitions; library ebb8cf0.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
B=.stage/bench/cake-bench
SH=5446x16:128,314x96:128,1673x32:128,464x96:128,2214x32:128,2634x16:128,2142x48:128,5384x16:128,453x48:128,386x96:128,6173x16:128,4146x16:128,1470x64:128,5543x16:128,331x64:128,856x96:128,1617x64:64,2551x48:64,1673x96:64,1147x64:64,1284x96:64,9748x16:64,1053x64:64,4079x32:64,7440x16:64,634x64:64,2674x64:64,593x96:64,2489x64:64,1456x64:64,1722x96:64,4697x16:64,607x32:128,323x64:128,237x96:128,752x32:128,422x64:128,303x96:128,950x32:128,501x64:128,374x96:128,1188x32:128,620x64:128,431x96:128,1214x32:64,646x64:64,475x96:64,1504x32:64,844x64:64,607x96:64,1900x32:64,1003x64:64,748x96:64,2376x32:64,1240x64:64,862x96:64
for rep in 1 2; do
timeout 200 $B --family normgate --ops bwdg --routing --no-limit --ng-shapes $SH --json $R/val$rep.json > $R/val$rep.log 2>&1; echo "val $rep rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
