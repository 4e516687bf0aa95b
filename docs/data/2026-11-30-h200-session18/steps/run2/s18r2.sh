#!/usr/bin/env bash
# session 18 run 2: normgate forward at the small shapes. (1) every forward program incl. six
# launch-shape variants (x*: threads x rows per group), CUPTI kernel time (routing check);
# (2) graph replays, short against each variant, interleaved; (3) libraries with plain
# (default-policy) stores instead of st.global.cs: e1 = y of the forward, e2 = dx/dz of the
# backward, against HEAD, interleaved graph replays.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
mkdir -p /tmp/e && for f in e1 e2; do xz -dc .stageE/$f.so.xz > /tmp/e/$f.so; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $R/nvidia-smi.csv
B=.stage/bench/cake-bench
timeout 120 $B --family normgate --routing --no-limit --ops fwd --package nondet --ng-shapes 1031x48,260x48,3534x48,8192x32 --json $R/route_fwd.json > $R/route_fwd.log 2>&1; echo "route rc $? at $SECONDS"
grep "routing normgate fwd" $R/route_fwd.log
for v in x128r4 x128r8 x256r4 x256r2 x512r2 x128r2; do
  timeout 60 $B --family normgate --ops fwdg --no-limit --ab-programs sm90.ng_fwd_d128_short,sm90.ng_fwd_d128_$v --ng-shapes 1031x48,260x48 --rounds 10 > $R/ab_$v.log 2>&1; echo "ab $v rc $? at $SECONDS"
  sed -n '/interleaved A\/B/,$p' $R/ab_$v.log | grep normgate
done
timeout 120 $B --family normgate --ops fwdg --no-limit --ab-libs .stage/lib/libcake.so,/tmp/e/e1.so --ng-shapes 1031x48,260x48,3534x48,16384x48 --rounds 10 --json $R/ab_e1.json > $R/ab_e1.log 2>&1; echo "ab e1 rc $? at $SECONDS"
sed -n '/interleaved A\/B/,$p' $R/ab_e1.log | grep normgate
timeout 200 $B --family normgate --ops bwdg --no-limit --ab-libs .stage/lib/libcake.so,/tmp/e/e2.so --ng-shapes 1031x48,260x48,3534x48,8192x32,16384x48 --rounds 10 --json $R/ab_e2.json > $R/ab_e2.log 2>&1; echo "ab e2 rc $? at $SECONDS"
sed -n '/interleaved A\/B/,$p' $R/ab_e2.log | grep normgate
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
