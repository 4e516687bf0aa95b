#!/usr/bin/env bash
# session 15 run 9: staged row scales for the both forms of the staged 128-row programs (this
# build) against 02163ea (.stageA), interleaved graph replays: routed both forms, twice, and the
# forced programs; then the SwiGLU GPU tests and the sanitizer on the SwiGLU programs.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
A=.stageA/libcake.so; N=.stage/lib/libcake.so
S=4096x2048,4096x7168,8192x7168,16384x7168,32768x8192,131072x8192
for i in 1 2; do
  timeout 100 $B --family swiglu --no-limit --ab-libs $A,$N --forms fwd_both,bwd_both --sw-shapes $S --rounds 10 > $R/ab_routed_$i.log 2>&1; echo "ab routed $i rc $? at $SECONDS"
done
for pf in sw_bwd_both_st2_128x64w:bwd_both sw_fwd_both_st2_128x128w_p2:fwd_both; do
  p=${pf%%:*}; f=${pf##*:}
  timeout 100 $B --family swiglu --no-limit --ab-libs $A,$N --program sm90.$p --forms $f --sw-shapes 4096x7168,16384x7168,131072x8192 --rounds 10 > $R/ab_$p.log 2>&1; echo "ab $p rc $? at $SECONDS"
done
timeout 150 tools/run-tests.sh .stage 'swiglu|abi|mxfp8' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; tail -1 $R/tests.log
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 200 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"; grep "| default" $R/sanitize/summary.md
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
