#!/usr/bin/env bash
# session 19 run 1: the non-deterministic backward's granularity. Experimental sm90-only build x1
# (HEAD e39a81e + unrouted programs): 32- and 16-row units on 512 / 256 threads with two to four
# CTAs a SM or deeper rings, against the routed ng_bwd_nd_d128_t1024 (64-row units, one CTA).
# Forced A/B, interleaved graph replays (ratio = A/B, > 1: B faster).
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s19run1.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
xz -d -k $E/x1.so.xz
SH=260x48,1031x48,3534x48,4097x48,8192x32,6000x48,7684x48,16384x48
for B in x512c2 x256c4 x256c3p4 x512p5 x512p6 x256c2p6; do
  t0=$(date +%s)
  timeout 120 $X --lib $E/x1.so --family normgate --ops bwdg --package nondet --no-limit --ab-programs sm90.ng_bwd_nd_d128_t1024,sm90.ng_bwd_nd_d128_$B --ng-shapes $SH --json $R/ab_$B.json > $R/ab_$B.log 2>&1; echo "ab $B rc=$? $(( $(date +%s) - t0 )) s"
  grep "A/B" $R/ab_$B.log | head -8
done
timeout 120 $X --lib $E/x1.so --family normgate --ops bwdg --package det --no-limit --ab-programs sm90.ng_bwd_det_d128_ct,sm90.ng_bwd_det_d128_ct_c2 --ng-shapes 260x48,1031x48,3534x48,4097x48 --json $R/ab_ctc2.json > $R/ab_ctc2.log 2>&1; echo "ab ctc2 rc=$?"
grep "A/B" $R/ab_ctc2.log | head -4
cd $OUT && tar czf r.tgz r && rm -rf r
