#!/usr/bin/env bash
# session 17 final (8-column slots: sw_*_t32s8 routed at the smallest shapes):
# cake-bench with the routing check (table run first on the machine); the SwiGLU forms against
# session 16's library (1d2f534, .stageB/s16.so) in kernel time at small shapes and in graph
# replays at two large ones; every GPU test binary; compute-sanitizer (4 tools) over the sm90
# table; the demo.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 300 $B --routing --json $R/cake.json > $R/cake.log 2>&1; echo "bench rc $? at $SECONDS, $(grep -c FLAG $R/cake.log) flags"
grep FLAG $R/cake.log
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/nvidia-smi.csv
timeout 100 $B --family swiglu --no-limit --sw-eager --ab-libs .stageB/s16.so,.stage/lib/libcake.so --sw-shapes 128x128,256x256,256x512,512x512,512x1024,1024x1024,1024x2048 --rounds 20 --json $R/ab_s16_head_eager.json > $R/ab_s16_head_eager.log 2>&1; echo "ab s16 eager rc $? at $SECONDS"
sed -n '/interleaved A\/B/,$p' $R/ab_s16_head_eager.log | grep swiglu
timeout 100 $B --family swiglu --no-limit --ab-libs .stageB/s16.so,.stage/lib/libcake.so --sw-shapes 128x128,256x256,4096x2048,4096x7168 --rounds 10 --json $R/ab_s16_head.json > $R/ab_s16_head.log 2>&1; echo "ab s16 rc $? at $SECONDS"
sed -n '/interleaved A\/B/,$p' $R/ab_s16_head.log | grep swiglu
timeout 330 tools/run-tests.sh .stage '.' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"
grep -E "^===|FAILED|passed|PASSED|SKIPPED" $R/tests.log | tail -30
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" timeout 200 tools/sanitize-on-device.sh .stage $R/sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS"
cat $R/sanitize/summary.md 2>/dev/null | tail -6
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
