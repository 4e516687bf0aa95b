#!/usr/bin/env bash
# session 19 run 13: d256 backward, 512 threads and four stages (16-row units) against the routed
# programs (32-row units), routing check (kernel time), two repetitions, 0.5-6 waves of 32-row
# units at H = 48 and six other shapes. x6 = sm90-only 7c7b6ed + ng_bwd_{nd,det}_d256_*t512p4.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
E=$PWD/.stageE
xz -d -k $E/x6.so.xz
B=.stage/bench/cake-bench
SH=44x48:256,66x48:256,88x48:256,110x48:256,132x48:256,154x48:256,176x48:256,198x48:256,220x48:256,242x48:256,264x48:256,286x48:256,308x48:256,330x48:256,352x48:256,374x48:256,396x48:256,418x48:256,440x48:256,462x48:256,484x48:256,506x48:256,528x48:256,150x64:256,300x40:256,700x16:256,90x112:256,400x24:256,520x16:256
for rep in 1 2; do
timeout 100 $B --lib $E/x6.so --family normgate --ops bwdg --routing --no-limit --ng-shapes $SH --json $R/d256_$rep.json > $R/d256_$rep.log 2>&1; echo "rep $rep rc $? at $SECONDS"
done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
