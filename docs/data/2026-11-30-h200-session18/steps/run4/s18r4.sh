#!/usr/bin/env bash
# session 18 run 4: (1) where y lives (outside / inside the graph's pool) for Cake's forward
# against FLA's, peers.py's timer, interleaved; (2) torch.compile's SwiGLU kernels at 128x128
# against Cake's under Nsight Compute.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 .stageT/place.py .stageT/ncu_sw.py $R/
SECONDS=0
timeout 200 python3 .stageT/place.py > $R/place.log 2>&1; echo "place rc $? at $SECONDS"; cat $R/place.log | grep median
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic
timeout 300 ncu --profile-from-start off --cache-control none --clock-control none --metrics $M --csv python3 .stageT/ncu_sw.py > $R/ncu_sw.csv 2> $R/ncu_sw.err; echo "ncu rc $? at $SECONDS"
python3 - $R/ncu_sw.csv <<'PY'
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
tail -3 $R/ncu_sw.err
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
