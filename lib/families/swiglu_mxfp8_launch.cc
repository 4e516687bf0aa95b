#include "families/swiglu_mxfp8_launch.h"

#include <algorithm>

#include "mxfp8_encode.h"

namespace cake {

namespace {

// k-columns per thread slot (SwigluCfg::kSlotCols): the slot_cols knob, 0 meaning 16.
int64_t slot_cols(const cake_program_desc &prog) {
  return prog.knobs[kSwSlotCols] == 0 ? 16 : prog.knobs[kSwSlotCols];
}
constexpr int64_t kMaxTiles = INT32_MAX;  // the kernel counts tiles in 32 bits

bool form_ok(int form) { return form >= CAKE_SW_FWD_ROW && form <= CAKE_SW_BWD_BOTH; }

// Static shared memory of the colwise Y tile and the staged scale pieces (SwigluCfg::kSmemWords
// * 4).
int64_t smem_bytes(const cake_program_desc &prog) {
  const int form = prog.op;
  if (!swiglu_mxfp8_form_colwise(form)) return 16;
  const int64_t tile_rows = prog.knobs[kSwTileRows], tile_cols = prog.knobs[kSwTileCols];
  const int64_t ranges = swiglu_mxfp8_form_backward(form) ? 2 : 1;
  // kYPad = 32 / col_lanes words of padding every 16 rows (col_lanes 0: 2 lanes).
  const int64_t lanes = prog.knobs[kSwColLanes] == 0 ? 2 : prog.knobs[kSwColLanes];
  const int64_t y = tile_rows * (tile_cols * ranges / 2) + (tile_rows / 16) * (32 / lanes);
  const bool staged_scales = prog.knobs[kSwPipeline] >= 2 && tile_rows == 128 &&
                             (tile_cols == 64 || tile_cols == 128);
  // Staged scales: 32 pieces a range of tile_cols / 8 bytes, i.e. tile_cols words a range; the
  // both forms on 128 k-columns add two buffers of a 512-byte block a range for the row scales.
  const bool staged_row_scales =
      staged_scales && swiglu_mxfp8_form_rowwise(form) && tile_cols == 128;
  return (y + (staged_scales ? ranges * tile_cols : 0) + (staged_row_scales ? 2 * ranges * 128 : 0)) *
         4;
}

}  // namespace

uint32_t swiglu_mxfp8_dynamic_smem_bytes(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(prog.op)) return 0;
  const int64_t stages = prog.knobs[kSwPipeline];
  if (stages < 2) return 0;
  const int64_t ops = swiglu_mxfp8_form_backward(prog.op) ? 3 : 2;
  const int64_t bytes = stages * ops * prog.knobs[kSwTileRows] * prog.knobs[kSwTileCols] * 2;
  return bytes > 0 && bytes <= INT32_MAX ? static_cast<uint32_t>(bytes) : 0;
}

bool swiglu_mxfp8_form_backward(int form) { return form >= CAKE_SW_BWD_ROW; }
bool swiglu_mxfp8_form_rowwise(int form) { return form_ok(form) && form % 3 != 1; }
bool swiglu_mxfp8_form_colwise(int form) { return form_ok(form) && form % 3 != 0; }

bool swiglu_mxfp8_program_ok(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(prog.op)) return false;
  const int64_t threads = prog.threads;
  const int64_t tr = prog.knobs[kSwTileRows], tc = prog.knobs[kSwTileCols];
  const int64_t rpt = prog.knobs[kSwRowsPerThread];
  if (threads <= 0 || threads % 32 != 0 || threads > 1024) return false;
  if (prog.min_ctas_per_sm == 0) return false;
  if (rpt != 1 && rpt != 2) return false;
  if (tc <= 0 || tc % 32 != 0 || tr <= 0 || tr % rpt != 0) return false;
  // slot_cols: 0 (16) or 8 (one 16-byte load per operand row; unstaged programs only).
  const int64_t slot = slot_cols(prog);
  if (slot != 16 && slot != 8) return false;
  if (slot == 8 && prog.knobs[kSwPipeline] >= 2) return false;
  const int64_t slots = (tr / rpt) * (tc / slot);
  if (slots % threads != 0) return false;
  if (swiglu_mxfp8_form_colwise(prog.op) && tr % 32 != 0) return false;
  // col_lanes: 0, or for colwise/both a power of two 2..32 that divides the 16-row chunks.
  const int64_t lanes = prog.knobs[kSwColLanes];
  if (lanes != 0) {
    if (!swiglu_mxfp8_form_colwise(prog.op) || lanes < 2 || lanes > 32 ||
        (lanes & (lanes - 1)) != 0 || (tr / 16) % lanes != 0) {
      return false;
    }
  }
  // row_from_tile: 0, or 1 for the both forms of unstaged programs.
  const int64_t row_from_tile = prog.knobs[kSwRowFromTile];
  if (row_from_tile != 0 &&
      (row_from_tile != 1 || !swiglu_mxfp8_form_rowwise(prog.op) ||
       !swiglu_mxfp8_form_colwise(prog.op) || prog.knobs[kSwPipeline] >= 2)) {
    return false;
  }
  if (smem_bytes(prog) > 48 * 1024) return false;
  for (int k = kSwLoadHint; k <= kSwSigmoidForm; ++k) {
    if (prog.knobs[k] < 0 || prog.knobs[k] > 2) return false;
  }
  if (prog.knobs[kSwBandForm] < 0 || prog.knobs[kSwBandForm] > 3) return false;
  const int64_t pipeline = prog.knobs[kSwPipeline];
  if (pipeline < 0 || pipeline > kSwMaxStages) return false;
  // Staged: ring + Y tile within one CTA's limit. (Whole copies per thread follow from the slot
  // rule above: a tile's 16-byte input vectors are 2 * operands * rows_per_thread * slots.)
  if (pipeline >= 2) {
    const int64_t cta_smem = smem_bytes(prog) + swiglu_mxfp8_dynamic_smem_bytes(prog);
    if (cta_smem > kSwMaxSmemPerCta) return false;
    // The grid is min_ctas a SM: they must fit the SM's shared memory together.
    if (int64_t{prog.min_ctas_per_sm} * (cta_smem + kSwSmemReservedPerCta) > kSwSmemPerSm) {
      return false;
    }
  }
  // group_rows: a tile order 0..4096, or -2 (tile pairs: staged colwise/both programs only).
  const int64_t group = prog.knobs[kSwGroupRows];
  if (group == -2) return pipeline >= 2 && swiglu_mxfp8_form_colwise(prog.op);
  return group >= 0 && group <= 4096;
}

int64_t swiglu_mxfp8_tiles(const cake_program_desc &prog, int64_t M, int64_t K) {
  const int64_t tr = prog.knobs[kSwTileRows], tc = prog.knobs[kSwTileCols];
  if (M <= 0 || K <= 0 || tr <= 0 || tc <= 0) return -1;
  int64_t tiles;
  if (!mx::checked_mul(mx::ceil_div(M, tr), mx::ceil_div(K, tc), &tiles)) return -1;
  return tiles;
}

LaunchShape swiglu_mxfp8_launch_shape(const cake_program_desc &prog, int64_t M, int64_t K,
                                      int sm_count) {
  LaunchShape s{};
  s.grid[1] = s.grid[2] = 1;
  s.block = prog.threads;
  s.smem_bytes = swiglu_mxfp8_dynamic_smem_bytes(prog);
  int64_t tiles = swiglu_mxfp8_tiles(prog, M, K);
  // Tile pairs: a CTA's unit of work is a pair of row tiles (the last one alone when the row
  // tiles are odd in number).
  if (tiles >= 1 && prog.knobs[kSwGroupRows] == -2) {
    const int64_t tiles_k = mx::ceil_div(K, prog.knobs[kSwTileCols]);
    tiles = (tiles / tiles_k + 1) / 2 * tiles_k;
  }
  if (tiles < 1) tiles = 1;
  int64_t ctas = std::min(tiles, kMaxTiles);
  if (sm_count > 0) {
    const int64_t wave = int64_t{sm_count} * std::max<int64_t>(prog.min_ctas_per_sm, 1);
    ctas = std::min(ctas, wave);
    // At one CTA a SM (the 512-thread programs) the CTAs stride over the units, so the busiest
    // SM does ceil(units / ctas) of them and the others finish a unit earlier and idle: the
    // fewest CTAs that keep that count give every SM the same count but the last (1.001-1.041x
    // for the paired programs at 2048x4096 ... 8192x4096, 0.994-1.007x from 12288x7168 up;
    // H200, session 14 run 2, docs/performance.md). With several CTAs a SM the same rule leaves
    // some SMs a CTA short and the others' CTAs just as busy (0.94-1.01x, run 1), and the SMs'
    // counts differ by at most one unit anyway.
    if (ctas <= sm_count) ctas = mx::ceil_div(tiles, mx::ceil_div(tiles, ctas));
  }
  s.grid[0] = static_cast<uint32_t>(ctas);
  return s;
}

bool swiglu_mxfp8_sizes(int form, int64_t M, int64_t K, SwigluMxfp8Sizes *out) {
  if (!form_ok(form)) return false;
  mx::SwigluBufferBytes b;
  if (!mx::swiglu_buffer_bytes(swiglu_mxfp8_form_backward(form), M, K, &b)) return false;
  SwigluMxfp8Sizes s{};
  if (swiglu_mxfp8_form_rowwise(form)) {
    s.row_q_bytes = b.q_bytes;
    s.row_s_bytes = b.row_s_bytes;
  }
  if (swiglu_mxfp8_form_colwise(form)) {
    s.col_q_bytes = b.q_bytes;
    s.col_s_bytes = b.col_s_bytes;
  }
  *out = s;
  return true;
}

bool swiglu_mxfp8_fill_params(const cake_program_desc &prog, int64_t M, int64_t K,
                              const void *in, const void *grad, void *row_q, void *row_s,
                              void *col_q, void *col_s, cake_swiglu_mxfp8_params *out) {
  const int form = prog.op;
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(form)) return false;
  if (M <= 0 || K <= 0 || M % mx::kBlockElems != 0 || K % mx::kBlockElems != 0) return false;
  mx::SwigluBufferBytes b;
  if (!mx::swiglu_buffer_bytes(swiglu_mxfp8_form_backward(form), M, K, &b)) return false;
  const int64_t tiles = swiglu_mxfp8_tiles(prog, M, K);
  if (tiles < 1 || tiles > kMaxTiles) return false;
  // The kernel's tile walk keeps a position within a group of group_rows x tiles_k tiles in 32
  // bits and adds the grid stride to it before the carry: the group must stay below 2^31 tiles.
  const int64_t tiles_k = mx::ceil_div(K, prog.knobs[kSwTileCols]);
  if (prog.knobs[kSwGroupRows] > 0 && tiles_k > kMaxTiles / prog.knobs[kSwGroupRows]) return false;

  const bool bwd = swiglu_mxfp8_form_backward(form);
  const bool row = swiglu_mxfp8_form_rowwise(form), col = swiglu_mxfp8_form_colwise(form);
  cake_swiglu_mxfp8_params p{};
  p.in = static_cast<const uint16_t *>(in);
  p.grad = bwd ? static_cast<const uint16_t *>(grad) : nullptr;
  p.row_q = row ? static_cast<uint8_t *>(row_q) : nullptr;
  p.row_s = row ? static_cast<uint8_t *>(row_s) : nullptr;
  p.col_q = col ? static_cast<uint8_t *>(col_q) : nullptr;
  p.col_s = col ? static_cast<uint8_t *>(col_s) : nullptr;
  p.M = M;
  p.K = K;
  p.O = b.out_cols;
  p.row_s_cols = p.O / mx::kBlockElems;
  p.row_s_cols_padded = mx::scale_cols_padded(p.row_s_cols);
  p.row_s_rows_padded = mx::scale_rows_padded(M);
  p.col_s_cols = M / mx::kBlockElems;
  p.col_s_cols_padded = mx::scale_cols_padded(p.col_s_cols);
  p.col_s_rows_padded = mx::scale_rows_padded(p.O);
  p.tiles_k = tiles_k;
  p.tiles = tiles;
  p.form = static_cast<uint32_t>(form);
  p.reserved = 0;
  *out = p;
  return true;
}

}  // namespace cake
