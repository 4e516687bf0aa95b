#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
prof() {  # name program form shape
  timeout 200 ncu --section SourceCounters --section LaunchStats --section SpeedOfLight --import-source no -k regex:$2'$' -c 1 -o $R/$1 -f \
    $B --rounds 1 --iters 1 --warmup 0 --no-limit --family swiglu --forms $3 --sw-shapes $4 --program sm90.$2 > $R/$1.run.log 2>&1
  ncu -i $R/$1.ncu-rep --page source --print-source sass --csv > $R/$1.sass.csv 2>&1
  ncu -i $R/$1.ncu-rep --page details --print-details all > $R/$1.details.txt 2>&1
  rm -f $R/$1.ncu-rep
  echo "$1 done at $SECONDS"
}
prof bboth sw_bwd_both_st3_t128w bwd_both 16384x7168
prof fboth sw_fwd_both_st2 fwd_both 16384x7168
prof fcol sw_fwd_col_st2_t128 fwd_col 16384x7168
prof bcol sw_bwd_col_t128 bwd_col 16384x7168
ls -la $R; head -5 $R/bboth.sass.csv
cd $OUT && tar czf r.tgz r && rm -rf r
