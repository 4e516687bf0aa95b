#!/usr/bin/env bash
# session 15 run 10: HEAD (33d8d21's code): every GPU test binary but test_swiglu_mxfp8 (run in
# final2 on the same kernels), the demo.
set -u
export LD_LIBRARY_PATH=$PWD/.stage/lib:$PWD/.stage/deps
R=$OUT/r; mkdir -p $R; cp $0 $R/
SECONDS=0
.stage/examples/cake_demo > $R/demo.log 2>&1; echo "demo rc $? at $SECONDS"
timeout 400 tools/run-tests.sh .stage 'normgate|rel|abi|mxfp8_encode' > $R/tests.log 2>&1; echo "tests rc $? at $SECONDS"; grep -E "^===|FAILED|passed" $R/tests.log
tar czf $OUT/r.tgz -C $OUT r && rm -rf $R
