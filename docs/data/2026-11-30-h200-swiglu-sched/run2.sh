set -u
S=.stage-sw
export LD_LIBRARY_PATH=$PWD/$S/lib:$PWD/$S/deps
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
timeout 90 tools/run-tests.sh $S swiglu > $OUT/tests-swiglu.log 2>&1; echo "tests rc=$?"
grep -E "byte-exact|FAIL|passed|PASSED" $OUT/tests-swiglu.log | tail -6
timeout 140 $S/bench/cake-bench --family swiglu --forms fwd_col,fwd_both,bwd_row,bwd_col,bwd_both --sw-shapes 4096x7168,16384x7168,131072x8192,130944x8192 --rounds 5 --iters 20 --routing --json $OUT/sw2.json > $OUT/sw2.log 2>&1; echo "bench rc=$?"
grep -E "of limit|routing swiglu" $OUT/sw2.log | cut -c1-150
