#!/usr/bin/env bash
# session 15 run 5: the col_lanes knob in the manifest (4 lanes for the routed 64-row and 128x64
# colwise/both programs, 8 for the 128x128 fwd_both pairs and a bwd_col pair program routed from
# 2^26): routed colwise/both forms against HEAD 0d53841 (.stageA) interleaved; routing sweep of
# the colwise/both forms over 20 shapes; the SwiGLU GPU tests.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
A=.stageA/libcake.so; N=.stage/lib/libcake.so
timeout 150 $B --family swiglu --no-limit --ab-libs $A,$N --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes 4096x2048,4096x7168,8192x7168,16384x7168,32768x8192,131072x8192 --rounds 10 --json $R/ab_routed.json > $R/ab_routed.log 2>&1; echo "ab routed rc $? at $SECONDS"
S=1024x1024,1024x2048,2048x1024,2048x2048,1024x4096,4096x2048,2048x4096,2048x7168,1024x14336,4096x4096,8192x2048,4096x7168,8192x4096,6144x7168,16384x4096,16384x7168,8192x14336,32768x4096,32768x8192,131072x8192
timeout 200 $B --family swiglu --routing --no-limit --rounds 5 --forms fwd_col,fwd_both,bwd_col,bwd_both --sw-shapes $S --json $R/routing.json > $R/routing.log 2>&1; echo "routing rc $? at $SECONDS, $(grep -c FLAG $R/routing.log) flags"
grep FLAG $R/routing.log
timeout 420 tools/run-tests.sh .stage 'swiglu|abi|mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
