#!/usr/bin/env bash
# session 11 final: demo, every GPU test, the benchmark table with the routing check, A/B of the
# deterministic (and non-deterministic) backward against session 10's library (.stageA =
# 717f1d4), the four sanitizer tools over every sm90 program.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
cp .stageT/s11final.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $R/nvidia-smi.csv 2>&1
timeout 60 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$? $SECONDS"
timeout 240 tools/run-tests.sh .stage > $R/tests.log 2>&1; echo "tests rc=$? $SECONDS: $(tail -n 1 $R/tests.log)"
timeout 170 .stage/bench/cake-bench --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc=$? $SECONDS"
grep -E "SLOWER|FLAG" $R/cake.log | head
A=$PWD/.stageA/libcake.so; C=$PWD/.stage/lib/libcake.so
timeout 60 .stage/bench/cake-bench --family normgate --ops bwdg --package det --ab-libs $A,$C --ng-shapes 260x48,1031x48,3534x48,7684x48,16384x48,32768x48,16384x48:256,3534x48:64 --json $R/ab_s10_s11_det.json > $R/ab_s10_s11_det.log 2>&1; echo "ab det rc=$? $SECONDS"
for pr in g ct; do
  timeout 40 .stage/bench/cake-bench --family normgate --ops bwdg --package det --no-limit --ab-libs $A,$C --program sm90.ng_bwd_det_d128_$pr --ng-shapes 260x48,1031x48,3534x48,7684x48,16384x48 --json $R/ab_s10_s11_$pr.json > $R/ab_s10_s11_$pr.log 2>&1; echo "ab $pr rc=$? $SECONDS"
done
timeout 40 .stage/bench/cake-bench --family normgate --ops bwdg --package nondet --ab-libs $A,$C --ng-shapes 260x48,3534x48,16384x48 --json $R/ab_s10_s11_nondet.json > $R/ab_s10_s11_nondet.log 2>&1; echo "ab nondet rc=$? $SECONDS"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" CAKE_SANITIZE_TIMEOUT=120 timeout 230 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/sanitize/summary.md | head -20
cd $OUT && tar czf r.tgz r && rm -rf r
