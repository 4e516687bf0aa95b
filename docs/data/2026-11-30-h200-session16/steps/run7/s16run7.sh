#!/usr/bin/env bash
# session 16 run 7: streaming stores (st.global.cs) for the SwiGLU q outputs (row_q, col_q):
# HEAD's library against an experimental build (.stageB/exp_cs.so), every form, graph replays
# from 2048x2048 up, twice (A/B and B/A).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
S="--sw-shapes 2048x2048,4096x2048,4096x7168,16384x7168,131072x8192 --rounds 10"
$B --family swiglu --no-limit --ab-libs .stage/lib/libcake.so,.stageB/exp_cs.so $S --json $R/ab_head_cs.json > $R/ab_head_cs.log 2>&1; echo "head/cs rc $? at $SECONDS"
$B --family swiglu --no-limit --ab-libs .stageB/exp_cs.so,.stage/lib/libcake.so $S --json $R/ab_cs_head.json > $R/ab_cs_head.log 2>&1; echo "cs/head rc $? at $SECONDS"
for f in $R/ab_*.log; do echo "== $(basename $f)"; sed -n '/interleaved A\/B/,$p' $f | grep swiglu; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
