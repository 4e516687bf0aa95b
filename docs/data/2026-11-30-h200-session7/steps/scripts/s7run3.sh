#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
SECONDS=0
B=.stage/bench/cake-bench
A=$PWD/.stageA/libcake.so; N=$PWD/.stage/lib/libcake.so; D=$PWD/.stageD/libcake.so; F=$PWD/.stageF/libcake.so
SH=4096x7168,16384x7168,131072x8192
$B --family swiglu --ab-libs $A,$D --forms bwd_both,fwd_col,bwd_col --sw-shapes $SH --json $R/ab_A_D.json > $R/ab_A_D.log 2>&1; echo "ab A,D rc=$? $SECONDS"
$B --family swiglu --ab-libs $D,$N --forms bwd_both,fwd_col,bwd_col --sw-shapes $SH --json $R/ab_D_N.json > $R/ab_D_N.log 2>&1; echo "ab D,N rc=$? $SECONDS"
$B --family swiglu --ab-libs $N,$F --forms fwd_col,fwd_both,bwd_row,bwd_both --sw-shapes $SH --json $R/ab_N_F.json > $R/ab_N_F.log 2>&1; echo "ab N,F rc=$? $SECONDS"
prof() {  # name program form shape
  timeout 200 ncu --section SourceCounters --section LaunchStats --section SpeedOfLight --section WarpStateStats --import-source no -k regex:$2'$' -c 1 -o $R/$1 -f \
    $B --rounds 1 --iters 1 --warmup 0 --no-limit --family swiglu --forms $3 --sw-shapes $4 --program sm90.$2 ${5:-} > $R/$1.run.log 2>&1
  ncu -i $R/$1.ncu-rep --page source --print-source sass --csv > $R/$1.sass.csv 2>&1
  ncu -i $R/$1.ncu-rep --page details --print-details all > $R/$1.details.txt 2>&1
  rm -f $R/$1.ncu-rep
  echo "$1 done at $SECONDS"
}
prof bboth sw_bwd_both_st3_t128w bwd_both 16384x7168
prof bbothA sw_bwd_both_st3_t128w bwd_both 16384x7168 "--lib $A"
grep -A30 "interleaved A/B" $R/ab_*.log | grep swiglu
cd $OUT && tar czf r.tgz r && rm -rf r
