#!/usr/bin/env bash
# session 19 run 14: hold-out check of a d256 deterministic rule from run 13 (the four-stage
# walk below 80 rows per SM and in the wave band 2-5 waves, last wave 15-50% full): routing check
# (kernel time) at 24 shapes run 13 had not seen, two repetitions; x6 as in run 13.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
E=$PWD/.stageE
xz -d -k $E/x6.so.xz
B=.stage/bench/cake-bench
SH=150x56:256,137x40:256,480x16:256,111x40:256,2495x8:256,2452x8:256,42x120:256,310x40:256,55x96:256,53x72:256,232x56:256,155x40:256,190x16:256,414x40:256,119x120:256,216x16:256,439x40:256,209x16:256,162x120:256,452x16:256,561x16:256,2432x8:256,185x96:256,152x40:256
for rep in 1 2; do
timeout 100 $B --lib $E/x6.so --family normgate --ops bwdg --package det --routing --no-limit --ng-shapes $SH --json $R/ho_$rep.json > $R/ho_$rep.log 2>&1; echo "rep $rep rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
