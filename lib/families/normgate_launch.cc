#include "families/normgate_launch.h"

#include <algorithm>

namespace cake {

bool normgate_program_serves(const cake_program_desc &prog, int32_t d) {
  return prog.family == CAKE_FAMILY_NORMGATE && (prog.knobs[kNgD] == 0 || prog.knobs[kNgD] == d);
}

NormgateLaunch normgate_launch(const cake_program_desc &prog, int64_t rows, int64_t resident_ctas) {
  NormgateLaunch l;
  const int64_t d = prog.knobs[kNgD];
  // Tuned programs give each row a group of d/8 lanes; general ones a warp.
  const int64_t lanes_per_row = d == 0 ? 32 : d / 8;
  l.rows_per_block = (prog.threads / lanes_per_row) * prog.knobs[kNgRowsPerGroup];
  l.num_blocks = (rows + l.rows_per_block - 1) / l.rows_per_block;
  int64_t grid = l.num_blocks;
  if (prog.knobs[kNgPersistent] != 0) grid = std::min(grid, std::max<int64_t>(resident_ctas, 1));
  l.grid = static_cast<uint32_t>(std::min<int64_t>(grid, INT32_MAX));
  l.block = prog.threads;
  return l;
}

}  // namespace cake
