#!/usr/bin/env bash
# session 16 run 6: where the small-shape A/B bias comes from. One program (per form) against
# itself: eager (CUPTI kernel time); graph replays in two halves (twice); one pass (the old
# method); two halves with the graph execs destroyed in reverse order.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
self() {  # name, extra args
  for f in fwd_row fwd_col fwd_both bwd_row bwd_col bwd_both; do
    P=$(case $f in fwd_both) echo sw_fwd_both_t32;; *) echo sw_${f}_t32;; esac)
    $B --family swiglu --no-limit --forms $f --ab-programs sm90.$P,sm90.$P --sw-shapes 128x128,512x512 --rounds 20 $2 > $R/self_$1_$f.log 2>&1
  done
  echo "$1 at $SECONDS"
}
self eager --sw-eager
self graph1 ""
self graph2 ""
CAKE_BENCH_AB_ONE_PASS=1 self onepass ""
CAKE_BENCH_AB_REVERSE_DESTROY=1 self revdestroy ""
for k in eager graph1 graph2 onepass revdestroy; do echo "== $k"; for f in fwd_row fwd_col fwd_both bwd_row bwd_col bwd_both; do sed -n '/interleaved A\/B/,$p' $R/self_${k}_$f.log | grep swiglu; done; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
