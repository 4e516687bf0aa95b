#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
$B --family swiglu --routing --forms bwd_both,bwd_col,fwd_col,fwd_both --sw-shapes 4096x2048,4096x7168,16384x7168,131072x8192 --json $R/route.json > $R/route.log 2>&1; echo "route rc=$? $SECONDS"
python3 - $R/route.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
for r in d['routing']:
    ps=sorted(r['programs'], key=lambda p:p['time']['median_us'])
    xt=[p for p in ps if '.xt_' in p['name']]
    print(r['form'], r['shape'], 'routed', r['routed'], round(r['routed_us'],2), '| best', ps[0]['name'], round(ps[0]['time']['median_us'],2), '| xt best', xt[0]['name'] if xt else '-', round(xt[0]['time']['median_us'],2) if xt else '')
PY
.stage/tests/test_swiglu_mxfp8 > $R/test_swiglu.log 2>&1; echo "test_swiglu rc=$? $SECONDS"
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="racecheck synccheck" CAKE_SANITIZE_TIMEOUT=100 timeout 120 tools/sanitize-on-device.sh .stage $R/san > $R/san.log 2>&1; echo "sanitize rc=$? $SECONDS"
grep -E "PASS|FAIL" $R/san/summary.md
cd $OUT && tar czf r.tgz r && rm -rf r
