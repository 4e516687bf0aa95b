#!/usr/bin/env bash
# session 19 run 3: routing check of the backward at small and mid shapes with unrouted programs
# (x4 = sm90-only HEAD + 512-thread, one-row-a-group variants: nondet x512p4/p5/p6 (4-6 stages),
# x512c2 (two CTAs a SM), x512 (two rows a group); det column tree ct_p4/p5/p6), d = 64, 128, 256.
set -u
R=$OUT/r; mkdir -p $R
cp .stageT/s19run3.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
xz -d -k $E/x4.so.xz
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
SH=130x48,260x48,520x48,780x48,1031x48,1536x48,2048x48,3534x48,260x48:64,1031x48:64,2048x48:64,260x48:256,1031x48:256,2048x48:256
t0=$(date +%s)
timeout 400 $X --lib $E/x4.so --family normgate --ops bwdg --routing --no-limit --ng-shapes $SH --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc=$? $(( $(date +%s) - t0 )) s"
grep -i "routing\|flag" $R/routing.log | tail -5
cd $OUT && tar czf r.tgz r && rm -rf r
