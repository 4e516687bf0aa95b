set -u
S=.stage-sw
export LD_LIBRARY_PATH=$PWD/$S/lib:$PWD/$S/deps
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/gpu.txt 2>&1
timeout 100 tools/run-tests.sh $S swiglu > $OUT/tests-swiglu.log 2>&1; echo "tests rc=$?"
grep -E "byte-exact|FAIL|passed|PASSED" $OUT/tests-swiglu.log | tail -6
timeout 125 $S/bench/cake-bench --family swiglu --sw-shapes 4096x7168,16384x7168,131072x8192 --rounds 5 --iters 20 --routing --json $OUT/sw1.json > $OUT/sw1.log 2>&1; echo "bench rc=$?"
grep -E "of limit|routing swiglu" $OUT/sw1.log | cut -c1-150
