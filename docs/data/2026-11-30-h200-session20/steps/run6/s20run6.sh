#!/usr/bin/env bash
# session 20 run 6: rowwise programs on 8- and 16-row tiles (32 / 64 threads, 8-column slots;
# 64 / 32 CTAs at 128x128) against the routed t32s8 programs: byte-identical outputs, then
# interleaved A/B at 128x128 and 256x256 in graph replays and in kernel time.
set -uo pipefail
R=$OUT/r; mkdir -p $R; cp $0 .stageT/check_tiny.py $R/
mkdir -p .stageE/t && tar xJf .stageE/tiny.tar.xz -C .stageE/t
export LD_LIBRARY_PATH=$PWD/.stageE/t/lib:$PWD/.stageE/t/deps CAKE_LIBRARY=$PWD/.stageE/t/lib
timeout 60 python3 .stageT/check_tiny.py > $R/check.log 2>&1; echo "check rc=$?"; tail -1 $R/check.log
B=.stageE/t/bench/cake-bench
for f in fwd bwd; do for t in t8s8 t16s8; do
  timeout 60 $B --family swiglu --forms ${f}_row --sw-shapes 128x128,256x256 --no-limit --rounds 20 --ab-programs sm90.sw_${f}_row_t32s8,sm90.sw_${f}_row_$t --json $R/ab_${f}_$t.json > $R/ab_${f}_$t.log 2>&1
  timeout 60 $B --family swiglu --forms ${f}_row --sw-shapes 128x128,256x256 --no-limit --rounds 20 --sw-eager --ab-programs sm90.sw_${f}_row_t32s8,sm90.sw_${f}_row_$t --json $R/abk_${f}_$t.json > $R/abk_${f}_$t.log 2>&1
  tail -n 4 $R/ab_${f}_$t.log $R/abk_${f}_$t.log
done; done
