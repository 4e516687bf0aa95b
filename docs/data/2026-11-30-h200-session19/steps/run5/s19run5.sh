#!/usr/bin/env bash
# session 19 run 5: routing sweep of the backward at d = 64, 128 from 100 to 2048 x 48 rows (x5 =
# x4 + d64 t512 p4 programs), kernel time, two repetitions; then graph A/B at the crossovers.
set -u
R=$OUT/r; mkdir -p $R
cp .stageT/s19run5.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
xz -d -k $E/x5.so.xz
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
SH=""
for d in 128 64; do for t in 100 130 195 260 325 390 455 520 650 780 910 1031 1160 1290 1536 1792 2048; do SH="$SH,${t}x48:$d"; done; done
SH=${SH#,}
for rep in 1 2; do
  t0=$(date +%s)
  timeout 250 $X --lib $E/x5.so --family normgate --ops bwdg --routing --no-limit --ng-shapes $SH --json $R/routing$rep.json > $R/routing$rep.log 2>&1; echo "routing $rep rc=$? $(( $(date +%s) - t0 )) s"
done
cd $OUT && tar czf r.tgz r && rm -rf r
