#!/usr/bin/env bash
# session 18 run 3: FLA's forward against Cake's under Nsight Compute (launch shape, duration,
# DRAM bytes), small shapes, cold dirty L2 as in the benchmarks.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
export CAKE_LIBRARY=$PWD/.stage/lib
R=$OUT/r; mkdir -p $R; cp $0 .stageT/ncu_fwd.py $R/
SECONDS=0
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second,lts__t_sectors_srcunit_tex_op_write.sum,launch__waves_per_multiprocessor
timeout 300 ncu --profile-from-start off --cache-control none --clock-control none --metrics $M --csv python3 .stageT/ncu_fwd.py sm90.ng_fwd_d128_short,sm90.ng_fwd_d128_long > $R/ncu.csv 2> $R/ncu.err; echo "ncu rc $? at $SECONDS"
grep "best config" $R/ncu.csv
python3 - $R/ncu.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; idx = {k: i for i, k in enumerate(hdr)}
d = collections.OrderedDict()
for r in rows[1:]:
    key = (r[idx["ID"]], r[idx["Kernel Name"]][:40])
    d.setdefault(key, {})[r[idx["Metric Name"]]] = r[idx["Metric Value"]]
for (i, k), m in d.items():
    print(i, k, " ".join("%s=%s" % (n.split("__")[1][:22], v) for n, v in m.items()))
PY
tail -3 $R/ncu.err
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
