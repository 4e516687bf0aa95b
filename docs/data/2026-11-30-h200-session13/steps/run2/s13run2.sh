#!/usr/bin/env bash
# session 13 run 2: SwiGLU phase groups (sm90-only experimental builds): g1 = the 512-thread
# backward programs' mid-tile CTA barrier replaced by one named barrier per 4-warp group;
# g2 = also the top-of-tile barrier, each group copying its own rows. Against HEAD 1127863
# (sm90-only build), routed bwd_col / bwd_both, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run2.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for v in g1 g2; do
  timeout 200 $X --family swiglu --forms bwd_col,bwd_both --sw-shapes 4096x7168,16384x7168,131072x8192 --no-limit --ab-libs $E/base.so,$E/$v.so --json $R/ab_$v.json > $R/ab_$v.log 2>&1; echo "ab $v rc=$?"
done
cd $OUT && tar czf r.tgz r && rm -rf r
