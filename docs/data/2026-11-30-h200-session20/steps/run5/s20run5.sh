#!/usr/bin/env bash
# session 20 run 5: kernel time (cold / warm inputs / warm outputs / warm) of Cake's 128x128
# rowwise programs against torch.compile default (the best peer there in the final run) and
# max-autotune; the Inductor kernels kept.
set -uo pipefail
R=$OUT/r; mkdir -p $R; cp $0 .stageT/prof_mode.py $R/
mkdir -p .stage && tar xJf .stageX/stage.tar.xz -C .stage lib deps
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps CAKE_LIBRARY=$PWD/.stage/lib
export TORCHINDUCTOR_CACHE_DIR=$R/ind
for mode in default max-autotune-no-cudagraphs; do
timeout 200 python3 .stageT/prof_mode.py 128x128 fwd_row,bwd_row,fwd_both 200 $R/warm_$mode.json $mode 2>&1 | grep -v -i warn | tee $R/warm_$mode.log
done
(cd $R && tar czf ind.tgz ind && rm -rf ind)
