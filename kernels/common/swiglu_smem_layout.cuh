// SwiGLU + MXFP8: the two shared-memory layouts, both 16-byte swizzled so that phase 1's
// 16-byte accesses and phase 2's column reads are free of bank conflicts: the BF16 Y tile
// (colwise and both forms) and a stage of the staged schedule's input ring.
#pragma once
#include <stdint.h>

namespace cake {
namespace swiglu {

// ---- shared-memory Y tile ----
// Word (row, w) of the tile: row-major, kSmemRowWords words a row, kYPad words of padding every
// 16 rows (the kItemLanes 16-row chunks phase 2 reads together then start kYPad banks apart:
// 2 lanes, rows r and r+16 16 banks apart), and the two
// 16-byte halves of every 32-byte group swapped where bit 2 of (row*chunks_per_row + w/8) is
// set (the four lanes 4..7 of each quarter-warp of phase 1's 16-byte stores then land on the
// other half of the banks).
template <class Cfg>
__device__ __forceinline__ int smem_word(int row, int w) {
  const int f = ((row * Cfg::kYGroups + (w >> 3)) >> 2) & 1;
  return row * Cfg::kSmemRowWords + (row >> 4) * Cfg::kYPad + (w ^ (f << 2));
}

// ---- staged inputs (pipeline >= 2) ----
// Vector v of row `row` of operand `op` in a stage. The two 16-byte halves of a slot's 32 bytes
// are swapped where bit 2 of (row*chunks_per_row + chunk) is set, the Y tile's rule: each
// quarter-warp of a phase-1 read (eight slots) then covers all 32 banks once.
template <class Cfg>
__device__ __forceinline__ int stage_vec(int op, int row, int v) {
  const int f = ((row * Cfg::kChunksPerRow + (v >> 1)) >> 2) & 1;
  return (op * Cfg::kTileRows + row) * Cfg::kRowVecs + (v ^ f);
}

}  // namespace swiglu
}  // namespace cake
