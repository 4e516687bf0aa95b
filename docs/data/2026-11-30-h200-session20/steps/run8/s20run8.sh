#!/usr/bin/env bash
# session 20 run 8: warm_param_lines in the 8-column-slot rowwise programs (working tree on
# c74f508, full build) against HEAD's library: interleaved A/B, kernel time and graph replays;
# then test_swiglu_mxfp8 (every SwiGLU program forced, byte-exact), test_rel_graph_first and the
# demo on the new build.
set -uo pipefail
mkdir -p .stage .stageN && tar xJf .stageX/stage.tar.xz -C .stage lib deps bench && tar xJf .stageY/new.tar.xz -C .stageN
export LD_LIBRARY_PATH=$PWD/.stageN/lib:$PWD/.stageN/deps
B=.stageN/bench/cake-bench; A=$PWD/.stage/lib/libcake.so; X=$PWD/.stageN/lib/libcake.so
SECONDS=0
echo "== kernel time (CUPTI), A = HEAD, B = new"
timeout 60 $B --family swiglu --forms fwd_row,bwd_row --sw-shapes 128x128,256x256,128x1024 --no-limit --rounds 20 --sw-eager --ab-libs $A,$X 2>&1 | grep "A/B "
echo "== graph replays"
timeout 60 $B --family swiglu --forms fwd_row,bwd_row --sw-shapes 128x128,256x256 --no-limit --rounds 20 --ab-libs $A,$X 2>&1 | grep "A/B "
echo "ab done at $SECONDS s"
for t in test_swiglu_mxfp8 test_rel_graph_first; do timeout 150 .stageN/tests/$t > /tmp/$t.log 2>&1; echo "$t rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|SKIPPED" /tmp/$t.log | tail -3; done
timeout 20 .stageN/examples/cake_demo 2>&1 | tail -2; echo "demo at $SECONDS s"
