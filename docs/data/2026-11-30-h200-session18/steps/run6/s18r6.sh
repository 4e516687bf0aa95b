#!/usr/bin/env bash
# session 18 run 6: torch.compile's inputs kept in L2 across the cold-L2 flush (evict_last)?
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind
R=$OUT/r; mkdir -p $R; cp $0 .stageT/evict.py $R/
SECONDS=0
timeout 240 python3 .stageT/evict.py > $R/evict.log 2>&1; echo "evict rc $? at $SECONDS"
cat $R/evict.log | grep -v Warning | tail -12
echo "inductor kernels with evict_last: $(grep -rl evict_last /tmp/ind --include=*.py | wc -l) of $(grep -rl '@triton.jit' /tmp/ind --include=*.py | wc -l)"
f=$(grep -rl evict_last /tmp/ind --include=*.py | head -1); grep -n "tl.load" $f | head -8
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
