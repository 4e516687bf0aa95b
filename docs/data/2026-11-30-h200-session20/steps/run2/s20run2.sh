#!/usr/bin/env bash
set -uo pipefail
R=$OUT/r; mkdir -p $R; cp $0 .stageT/prof_code.py $R/
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage lib deps
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps CAKE_LIBRARY=$PWD/.stage/lib
timeout 400 python3 .stageT/prof_code.py 128x128,256x256 fwd_row,bwd_row,fwd_col,bwd_both 150 $R/code.json 2>&1 | grep -v Warning | tee $R/code.log
