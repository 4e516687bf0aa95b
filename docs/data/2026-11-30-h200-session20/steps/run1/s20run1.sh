#!/usr/bin/env bash
# Session 20 run 1: SwiGLU smallest shapes, kernel time and paired replays; then every GPU test
# binary of HEAD (c74f508) and the demo.
set -uo pipefail
R=$OUT/r; mkdir -p $R; cp $0 .stageT/prof_small.py $R/
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps CAKE_LIBRARY=$PWD/.stage/lib
export TORCHINDUCTOR_CACHE_DIR=$R/ind
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/nvidia-smi.csv 2>&1
timeout 200 python3 .stageT/prof_small.py 128x128,256x256 fwd_row,bwd_row,fwd_col,bwd_col 300 $R/prof.json > $R/prof.log 2>&1; echo "prof rc=$?"
tail -3 $R/prof.log
(cd $R && tar czf ind.tgz ind && rm -rf ind)
timeout 330 tools/run-tests.sh .stage '.' > $R/tests.log 2>&1; echo "tests rc=$?"
grep -E "^===|FAILED|passed|SKIP" $R/tests.log | tail -40
timeout 30 .stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc=$?"; tail -3 $R/demo.log
cd $OUT && tar czf r.tgz r
