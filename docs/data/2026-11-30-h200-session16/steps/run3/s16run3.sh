#!/usr/bin/env bash
# session 16 run 3: the group guard for the programs routed in [2^21, 2^23): interleaved graph
# replays against the programs as routed.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
B=.stage/bench/cake-bench
ab() {  # name form shapes A B rounds
  $B --family swiglu --no-limit --forms $2 --sw-shapes $3 --ab-programs sm90.$4,sm90.$5 --rounds $6 > $R/ab_$1.log 2>&1
  echo "ab $1 rc $? at $SECONDS"
}
ab bwd_row_evict bwd_row 2048x2048,4096x1024,1024x4096 sw_bwd_row_evict_g sw_bwd_row_evict 20
ab bwd_col bwd_col 1024x2048,2048x1024 sw_bwd_col_g sw_bwd_col 20
ab bwd_both bwd_both 1024x2048,2048x1024 sw_bwd_both_st2_128x64w_g sw_bwd_both_st2_128x64w 20
for f in $R/ab_*.log; do sed -n '/interleaved A\/B/,$p' $f | grep swiglu; done
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
