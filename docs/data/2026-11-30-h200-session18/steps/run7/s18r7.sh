#!/usr/bin/env bash
# session 18 run 7: (1) torch.compile max-autotune's rowwise kernels at 128x128 against Cake's
# under ncu; (2) the max-autotune peer for fwd_col and fwd_both at 131072x8192 (skipped for time
# in the final run), Cake paired.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
export TORCHINDUCTOR_CACHE_DIR=/tmp/ind
R=$OUT/r; mkdir -p $R; cp $0 .stageT/ncu_max.py $R/
SECONDS=0
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum
timeout 200 ncu --profile-from-start off --cache-control none --clock-control none --metrics $M --csv python3 .stageT/ncu_max.py > $R/ncu_max.csv 2> $R/ncu_max.err; echo "ncu rc $? at $SECONDS"
python3 - $R/ncu_max.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; idx = {k: i for i, k in enumerate(hdr)}
d = collections.OrderedDict()
for r in rows[1:]:
    d.setdefault((int(r[idx["ID"]]), r[idx["Kernel Name"]][:44]), {})[r[idx["Metric Name"]]] = r[idx["Metric Value"]]
for (i, k), m in d.items():
    if "elementwise" in k: continue
    print(i, k, " ".join("%s=%s" % (n.split("__")[1][:18], v) for n, v in m.items()))
PY
for f in $(grep -rl "@triton.jit" /tmp/ind --include=*.py | head -20); do grep -l "triton_per_fused\|triton_poi_fused" $f >/dev/null && cp $f $R/ 2>/dev/null; done
timeout 330 python3 bench/peers/peers.py --family swiglu --peers compile --modes max-autotune-no-cudagraphs --forms fwd_col,fwd_both --sw-shapes 131072x8192 --json $R/peers_max_131072.json > $R/peers_max_131072.log 2>&1; echo "peers rc $? at $SECONDS"
sed -n '/== Cake against/,$p' $R/peers_max_131072.log | head -6
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
