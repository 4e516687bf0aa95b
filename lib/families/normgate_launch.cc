#include "families/normgate_launch.h"

#include <algorithm>

#include "normgate_workspace.h"

namespace cake {

bool normgate_program_serves(const cake_program_desc &prog, int32_t d) {
  return prog.family == CAKE_FAMILY_NORMGATE && (prog.knobs[kNgD] == 0 || prog.knobs[kNgD] == d);
}

int64_t normgate_groups_per_cta(const cake_program_desc &prog) {
  const int64_t d = prog.knobs[kNgD];
  if (d != 0) return prog.threads / (d / 8);
  return prog.op == CAKE_NG_OP_FWD ? prog.threads / 32 : 1;
}

NormgateLaunch normgate_launch(const cake_program_desc &prog, int64_t rows, int64_t resident_ctas) {
  NormgateLaunch l;
  const int64_t groups = normgate_groups_per_cta(prog);
  // Forward: each group takes rows_per_group rows per trip. Backward: each group one dw chunk.
  l.rows_per_block = prog.op == CAKE_NG_OP_FWD ? groups * prog.knobs[kNgRowsPerGroup]
                                                : groups * CAKE_NG_DW_CHUNK_ROWS;
  l.num_blocks = (rows + l.rows_per_block - 1) / l.rows_per_block;
  int64_t grid = l.num_blocks;
  if (prog.knobs[kNgPersistent] != 0) grid = std::min(grid, std::max<int64_t>(resident_ctas, 1));
  l.grid = static_cast<uint32_t>(std::min<int64_t>(grid, INT32_MAX));
  l.block = prog.threads;
  return l;
}

int64_t normgate_workspace_bytes(const cake_program_desc &prog, int64_t rows, int32_t d,
                                 bool skip_dw) {
  if (skip_dw || prog.op == CAKE_NG_OP_FWD) return 0;
  if (prog.op == CAKE_NG_OP_BWD_NONDET) return cake_ng_nondet_bytes(d);
  const cake_ng_tree tree = cake_ng_tree_of(rows, d, normgate_groups_per_cta(prog));
  return cake_ng_tree_bytes(&tree);
}

}  // namespace cake
