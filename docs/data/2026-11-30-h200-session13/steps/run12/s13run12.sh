#!/usr/bin/env bash
# session 13 run 12: Nsight Compute on the deterministic column tree (HEAD 3100463's kernel)
# against the non-deterministic walk on the same 512 x 2 threads (ng_bwd_nd_d128_x512, unrouted,
# sm90-only experimental build nx = HEAD + that manifest line), 3534x48, one launch each:
# warp states, scheduler, memory, speed of light.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R
cp .stageT/s13run12.sh $R/
X=.stage/bench/cake-bench
E=$PWD/.stageE
for pp in det:ng_bwd_det_d128_ct nondet:ng_bwd_nd_d128_x512; do
  pk=${pp%%:*}; pr=${pp##*:}
  timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section InstructionStats -k regex:$pr -c 1 $X --lib $E/nx.so --program sm90.$pr --rounds 1 --iters 1 --warmup 0 --no-limit --family normgate --ops bwdg --package $pk --ng-shapes 3534x48 > $R/ncu_$pr.log 2>&1; echo "ncu $pr rc=$? $SECONDS"
done
cd $OUT && tar czf r.tgz r && rm -rf r
