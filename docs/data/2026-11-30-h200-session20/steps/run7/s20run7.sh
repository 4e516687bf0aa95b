#!/usr/bin/env bash
# session 20 run 7: the SwiGLU programs with thread 0 reading a word of each 64-byte line of the
# parameter block first (warm_param_lines, experimental, sm90-only build of c74f508 + the patch)
# against HEAD's library, interleaved A/B, kernel time (--sw-eager) and graph replays.
set -uo pipefail
mkdir -p .stage .stageE/pw && tar xJf .stageX/stage.tar.xz -C .stage lib deps bench && tar xJf .stageE/pw.tar.xz -C .stageE/pw
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
B=.stage/bench/cake-bench; A=$PWD/.stage/lib/libcake.so; X=$PWD/.stageE/pw/lib/libcake.so
echo "== kernel time (CUPTI), A = HEAD, B = warm_param_lines"
timeout 120 $B --family swiglu --forms fwd_row,bwd_row,fwd_col,bwd_both --sw-shapes 128x128,256x256,4096x2048 --no-limit --rounds 20 --sw-eager --ab-libs $A,$X 2>&1 | grep "A/B "
echo "== graph replays"
timeout 120 $B --family swiglu --forms fwd_row,bwd_row --sw-shapes 128x128,256x256 --no-limit --rounds 20 --ab-libs $A,$X 2>&1 | grep "A/B "
