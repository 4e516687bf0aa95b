// The configuration of a SwiGLU + MXFP8 program: a manifest line's knobs and every rule derived
// from them (slot and tile geometry, the shared-memory layouts' sizes, which scale paths a
// program takes, which knob values a kernel can be compiled with).
//
// One definition for both sides. The kernels' SwigluCfg (below) takes its compile-time
// constants from these functions; lib/families/swiglu_mxfp8_launch.cc calls the same functions
// at run time on a program's knobs to size shared memory, the grid's units and to check a
// manifest line, so the host cannot re-derive a rule differently. Plain host C++17 without CUDA
// (CAKE_HD marks the functions for nvcc). Sizes are computed in 64 bits: the host evaluates
// them on knobs it has not validated yet.
//
// The knobs (CAKE_SWIGLU_PROGRAM, in manifest order after threads and min_ctas):
//   tile_rows        rows per CTA tile: a multiple of 32 for colwise/both; rowwise also 1 or 2
//   tile_cols        k-columns per CTA tile, a multiple of 32
//                    (tile_rows/rows_per_thread) * (tile_cols/slot_cols) a multiple of threads
//   rows_per_thread  1 or 2: rows a thread carries at once (more loads in flight, more registers)
//   load_hint        0 ld.global.nc (read-only path, default caching)
//                    1 ld.global.nc.L1::no_allocate (streamed once: keep L1 for others; but
//                      a slot's two 16-byte loads per operand are the halves of one sector,
//                      and without L1 each half is fetched from L2 on its own)
//                    2 ld.global.nc.L2::cache_hint with an L2::evict_first policy
//                      (createpolicy.fractional, 1.0): streamed once, let L2 drop it first
//   sigmoid_form     1 fast, 2 packed f32x2 (sm_100+, scalar elsewhere); see swiglu_sigmoid.cuh
//   band_form        0 inline branch, 1 out-of-line call, 2 flagged-pair loop, 3 group guard
//                    (one running max per 16-gate group, the whole group refixed when hit)
//   pipeline         (optional, default 0) 0: each tile's loads issued at the tile's start;
//                    1: the next tile's loads issued row by row as soon as the current tile's
//                    row has been computed, so they fly during the rest of phase 1 and phase 2;
//                    S >= 2: staged. The inputs of the CTA's next S-1 tiles are in flight
//                    through a ring of S tiles in dynamic shared memory (cp.async, 16 bytes,
//                    no registers held): each warp instruction copies 512 contiguous bytes
//                    (whole sectors, where the slot loads cover half of each), and phase 1
//                    reads its slots from the ring (load_hint then only applies to the
//                    flagged-pair loop's re-reads). One CTA barrier a tile makes the copies
//                    visible and frees the stage and Y tile of the tile before.
//   group_rows       (optional, default 0) tile order. 0: k fastest (the CTAs of a wave cover
//                    whole input rows, few row tiles). G > 0: tiles in groups of G row tiles
//                    x all k-tiles, m fastest inside a group, so the CTAs running together
//                    write longer runs of each col_q column (G x tile_rows bytes) and read
//                    shorter runs of each input row
//                    -2 (staged colwise/both only): tile pairs. A CTA takes two vertically
//                    adjacent tiles one after the other (pairs in k-fastest order); the first
//                    tile's col_q pieces wait in registers and both tiles' pieces are stored
//                    in the second tile's phase 2, so every column gets 2 x tile_rows
//                    contiguous bytes from one CTA at once. (A streaming kernel writing col_q
//                    in 128-byte column runs loses 5-11% of its bandwidth against linear writes
//                    on the H200 at 16384x7168 and 131072x8192, 256-byte runs 3-6%; adjacent
//                    runs written by different CTAs do not recover it. docs/performance.md.)
//   col_lanes        (optional, default 0 = 2; colwise/both) phase 2's lanes a column pair:
//                    a power of two 2..32 dividing tile_rows/16. A warp's col_q store writes
//                    32/col_lanes columns x col_lanes*16 contiguous bytes (fewer, whole-line L2
//                    requests; on the H200 4 for 64-row and 128x64 tiles, 8 for 128x128 pairs:
//                    docs/performance.md)
//   slot_cols        (optional, default 0 = 16) k-columns of a thread's slot: 16, or 8 (unstaged
//                    programs): one 16-byte load per operand row, half the sigmoids and
//                    conversions a thread, so twice the threads for a tile; a 32-column block's
//                    rowwise bytes come from 4 lanes (two shuffle levels, 8-byte stores: a
//                    warp's store still covers whole sectors). Where a tile's warps are alone on
//                    their schedulers (small shapes), a thread's dependent chain is the kernel's
//                    time and halving it is what counts.
//   row_from_tile    (optional, default 0) both forms, unstaged: 1 takes the rowwise bytes out of
//                    phase 1 and quantizes them from the Y tile after its barrier, one 32-column
//                    block of a row a thread (four 16-byte shared reads, no shuffle), as items
//                    after phase 2's: where phase 2 has fewer items than threads (small tiles)
//                    the otherwise waiting warps take them.
//   variant          (optional, default 0) 1: the program serves the SwiGLU variants (the weighted
//                    and the clamped SwiGLU, docs/spec/swiglu-mxfp8.md, "Variants") from the
//                    call's run-time cake_swiglu_variant, and only variant programs serve them.
//                    A CTA takes whole row tiles, their k-tiles in column order, so that a
//                    row's dp is summed in registers in the spec's order (register schedule,
//                    k-fastest tiles of its own: pipeline 0, group_rows 0, row_from_tile 0;
//                    a tile row's slots in one warp: tile_cols / slot_cols a power of two up
//                    to 32).
//   col_runs         (optional, default 0) grouped colwise and both programs: 1 stores the col_q
//                    pieces of an expert whose first row is not 16-byte aligned in col_q, or
//                    that ends inside a piece, as aligned 16-byte runs (a lane's window takes
//                    the lane before's last bytes by a shuffle) and the fewest narrow stores at
//                    the run's ends (swiglu_col_runs.cuh); 0 stores such a piece byte by byte.
// Grouped forms (6..11, docs/spec/swiglu-grouped.md) take the same knobs, in k-fastest order one
// tile or one pair of an expert's tiles at a time (sw_grouped_ok).
// Every knob changes only the schedule: all programs of a form write the same bytes.
#pragma once
#include <stdint.h>

#include "hd.h"
#include "program_desc.h"
#include "swiglu_forms.h"

namespace cake {

constexpr int kSwMaxStages = 8;                 // pipeline knob: 0, 1 or 2..8 stages
constexpr int kSwMaxGroupRows = 4096;           // group_rows knob: 0..4096, or -2
constexpr int64_t kSwMaxStaticSmemBytes = 48 * 1024;  // static shared memory of one CTA

// A manifest line's knobs as written (0 for an optional knob left out).
struct SwigluKnobs {
  int form, threads, tile_rows, tile_cols, rows_per_thread, load_hint, sigmoid_form, band_form;
  int pipeline, group_rows, col_lanes, slot_cols, row_from_tile, variant, col_runs;
};

// ---- knob defaults and decodings ----
// k-columns of a thread's slot (slot_cols, 0: 16).
CAKE_HD constexpr int64_t sw_slot_cols(const SwigluKnobs &k) {
  return k.slot_cols == 0 ? 16 : k.slot_cols;
}
// Phase 2's lanes a column pair (col_lanes, 0: 2).
CAKE_HD constexpr int64_t sw_item_lanes(const SwigluKnobs &k) {
  return k.col_lanes == 0 ? 2 : k.col_lanes;
}
// Input stages of the staged schedule (pipeline >= 2), else 0.
CAKE_HD constexpr int64_t sw_stages(const SwigluKnobs &k) {
  return k.pipeline >= 2 ? k.pipeline : 0;
}
// The tile order's group of row tiles (0: k fastest; tile pairs walk k fastest too).
CAKE_HD constexpr int64_t sw_group_rows(const SwigluKnobs &k) {
  return k.group_rows > 0 ? k.group_rows : 0;
}
// Row tiles a CTA takes at once: 2 for tile pairs (group_rows -2), else 1.
CAKE_HD constexpr int64_t sw_pair_rows(const SwigluKnobs &k) { return k.group_rows == -2 ? 2 : 1; }

// ---- slot and tile geometry ----
CAKE_HD constexpr int64_t sw_tile_out_cols(const SwigluKnobs &k) {  // BF16 columns of the Y tile
  return k.tile_cols * sw_out_per_k(k.form);
}
CAKE_HD constexpr int64_t sw_slots(const SwigluKnobs &k) {  // slot rows x slots along k
  return (k.tile_rows / k.rows_per_thread) * (k.tile_cols / sw_slot_cols(k));
}
CAKE_HD constexpr int64_t sw_row_chunks(const SwigluKnobs &k) { return k.tile_rows / 16; }
// Phase 2's items: a column pair x 16 rows each.
CAKE_HD constexpr int64_t sw_col_items(const SwigluKnobs &k) {
  return (sw_tile_out_cols(k) / 2) * sw_row_chunks(k);
}
// row_from_tile's items: a 32-column block of one tile row each.
CAKE_HD constexpr int64_t sw_row_items(const SwigluKnobs &k) {
  return k.row_from_tile != 0 ? k.tile_rows * (sw_tile_out_cols(k) / 32) : 0;
}

// ---- the Y tile and the staged scale pieces (static shared memory) ----
// Words of padding every 16 rows of the Y tile: the lanes of a column pair read distinct banks.
CAKE_HD constexpr int64_t sw_y_pad(const SwigluKnobs &k) { return 32 / sw_item_lanes(k); }
CAKE_HD constexpr int64_t sw_y_words(const SwigluKnobs &k) {
  return k.tile_rows * (sw_tile_out_cols(k) / 2) + sw_row_chunks(k) * sw_y_pad(k);
}
// Staged colwise scales: staged programs on 128-row tiles of 64 or 128 k-columns collect a
// tile's col_s bytes as whole pieces of the swizzled layout (swiglu_mxfp8_kernel.cuh).
CAKE_HD constexpr bool sw_staged_scales(const SwigluKnobs &k) {
  return sw_colwise(k.form) && sw_stages(k) >= 2 && k.tile_rows == 128 &&
         (k.tile_cols == 64 || k.tile_cols == 128);
}
CAKE_HD constexpr int64_t sw_scale_piece_bytes(const SwigluKnobs &k) { return k.tile_cols / 8; }
CAKE_HD constexpr int64_t sw_scale_pieces(const SwigluKnobs &k) {  // a column o%32 a range
  return 32 * sw_out_per_k(k.form);
}
// Staged rowwise scales: the both forms of those programs on 128 k-columns, whose row_s bytes
// are one whole 512-byte block of the swizzled layout a range.
CAKE_HD constexpr bool sw_staged_row_scales(const SwigluKnobs &k) {
  return sw_staged_scales(k) && sw_rowwise(k.form) && k.tile_cols == 128;
}
CAKE_HD constexpr int64_t sw_row_scale_bytes(const SwigluKnobs &k) {  // one of two buffers
  return 512 * sw_out_per_k(k.form);
}
// Static shared memory in 32-bit words: the Y tile, the column pieces, the row blocks' two
// buffers (colwise/both); a token 4 words for rowwise programs.
CAKE_HD constexpr int64_t sw_smem_words(const SwigluKnobs &k) {
  return sw_colwise(k.form)
             ? sw_y_words(k) +
                   (sw_staged_scales(k) ? sw_scale_pieces(k) * sw_scale_piece_bytes(k) / 4 : 0) +
                   (sw_staged_row_scales(k) ? 2 * sw_row_scale_bytes(k) / 4 : 0)
             : 4;
}

// ---- the staged input ring (dynamic shared memory) ----
CAKE_HD constexpr int64_t sw_row_vecs(const SwigluKnobs &k) {  // 16-byte vectors of a tile row
  return k.tile_cols / 8;
}
CAKE_HD constexpr int64_t sw_stage_vecs(const SwigluKnobs &k) {  // [op][row][vector]
  return sw_ops(k.form) * k.tile_rows * sw_row_vecs(k);
}
CAKE_HD constexpr int64_t sw_dynamic_smem_bytes(const SwigluKnobs &k) {
  return sw_stages(k) * sw_stage_vecs(k) * 16;
}

// ---- the walk ----
// Walk units along M: row tiles, or pairs of them (the last one alone when they are odd).
template <class T>
CAKE_HD constexpr T sw_walk_rows(T tiles_m, int64_t pair_rows) {
  return pair_rows == 2 ? (tiles_m + 1) / 2 : tiles_m;
}

// ---- the knob rules: each one a static_assert of SwigluCfg and a check of the host's ----
// The checks run in this order on the host, so that each one's arithmetic only sees knobs the
// ones before it accepted (no division by zero).
CAKE_HD constexpr bool sw_threads_ok(const SwigluKnobs &k) {
  return k.threads > 0 && k.threads % 32 == 0 && k.threads <= 1024;
}
CAKE_HD constexpr bool sw_rows_per_thread_ok(const SwigluKnobs &k) {
  return k.rows_per_thread == 1 || k.rows_per_thread == 2;
}
CAKE_HD constexpr bool sw_tile_cols_ok(const SwigluKnobs &k) {
  return k.tile_cols > 0 && k.tile_cols % 32 == 0;
}
CAKE_HD constexpr bool sw_tile_rows_ok(const SwigluKnobs &k) {
  return k.tile_rows > 0 && k.tile_rows % k.rows_per_thread == 0;
}
CAKE_HD constexpr bool sw_slot_cols_ok(const SwigluKnobs &k) {
  return sw_slot_cols(k) == 16 || sw_slot_cols(k) == 8;
}
CAKE_HD constexpr bool sw_slot_cols_unstaged_ok(const SwigluKnobs &k) {
  return sw_slot_cols(k) == 16 || k.pipeline < 2;
}
CAKE_HD constexpr bool sw_row_from_tile_ok(const SwigluKnobs &k) {
  return k.row_from_tile == 0 ||
         (k.row_from_tile == 1 && sw_orientation(k.form) == 2 && k.pipeline < 2);
}
CAKE_HD constexpr bool sw_slots_ok(const SwigluKnobs &k) { return sw_slots(k) % k.threads == 0; }
CAKE_HD constexpr bool sw_colwise_rows_ok(const SwigluKnobs &k) {
  return !sw_colwise(k.form) || k.tile_rows % 32 == 0;
}
CAKE_HD constexpr bool sw_col_lanes_ok(const SwigluKnobs &k) {
  return k.col_lanes == 0 ||
         (sw_colwise(k.form) && (k.col_lanes & (k.col_lanes - 1)) == 0 && k.col_lanes >= 2 &&
          k.col_lanes <= 32 && sw_row_chunks(k) % k.col_lanes == 0);
}
CAKE_HD constexpr bool sw_static_smem_ok(const SwigluKnobs &k) {
  return sw_smem_words(k) * 4 <= kSwMaxStaticSmemBytes;
}
CAKE_HD constexpr bool sw_col_items_ok(const SwigluKnobs &k) {  // phase 2 in whole warps
  return !sw_colwise(k.form) || sw_col_items(k) % 32 == 0;
}
CAKE_HD constexpr bool sw_pipeline_ok(const SwigluKnobs &k) {
  return k.pipeline >= 0 && k.pipeline <= kSwMaxStages;
}
// Staged: a thread copies one 16-byte vector of every threads/row_vecs-th tile row, so threads
// is a multiple of a tile row's vectors and threads/row_vecs divides tile_rows (every copy a
// fixed offset; the ring's copies are then whole vectors a thread).
CAKE_HD constexpr bool sw_stage_rows_ok(const SwigluKnobs &k) {
  return sw_stages(k) == 0 || (k.threads % sw_row_vecs(k) == 0 &&
                               k.tile_rows % (k.threads / sw_row_vecs(k)) == 0);
}
CAKE_HD constexpr bool sw_group_rows_ok(const SwigluKnobs &k) {
  return k.group_rows >= -2 && k.group_rows != -1 && k.group_rows <= kSwMaxGroupRows;
}
CAKE_HD constexpr bool sw_tile_pairs_ok(const SwigluKnobs &k) {
  return sw_pair_rows(k) == 1 || (sw_stages(k) >= 2 && sw_colwise(k.form));
}
// Grouped forms walk in k-fastest order, from registers or the staged ring, one tile at a time
// or (staged) in tile pairs within an expert: no m-fastest groups, no pipelined register loads
// (a tile's expert is found at the tile or the pair, swiglu_groups.cuh).
CAKE_HD constexpr bool sw_grouped_ok(const SwigluKnobs &k) {
  return !sw_grouped(k.form) || ((k.group_rows == 0 || k.group_rows == -2) && k.pipeline != 1);
}
// Variant programs: the register schedule over whole row tiles, a tile row's slots in a warp.
CAKE_HD constexpr bool sw_variant_ok(const SwigluKnobs &k) {
  return k.variant == 0 ||
         (k.variant == 1 && k.pipeline == 0 && k.group_rows == 0 && k.row_from_tile == 0 &&
          k.tile_cols / sw_slot_cols(k) <= 32 &&
          ((k.tile_cols / sw_slot_cols(k)) & (k.tile_cols / sw_slot_cols(k) - 1)) == 0);
}
// Aligned col_q runs: grouped colwise and both programs only (ungrouped ones never meet an
// unaligned or partial piece: M is a multiple of 32 and every expert view's first row is 0).
CAKE_HD constexpr bool sw_col_runs_ok(const SwigluKnobs &k) {
  return k.col_runs == 0 || (k.col_runs == 1 && sw_grouped(k.form) && sw_colwise(k.form));
}
CAKE_HD constexpr bool sw_staged_scales_ok(const SwigluKnobs &k) {  // a thread a piece
  return !sw_staged_scales(k) || sw_scale_pieces(k) <= k.threads;
}
CAKE_HD constexpr bool sw_staged_row_scales_ok(const SwigluKnobs &k) {  // a thread a store
  return !sw_staged_row_scales(k) || sw_row_scale_bytes(k) / 16 <= k.threads;
}

// Every rule above: the knobs a kernel compiles with.
CAKE_HD constexpr bool sw_knobs_ok(const SwigluKnobs &k) {
  return sw_form_valid(k.form) && sw_threads_ok(k) && sw_rows_per_thread_ok(k) &&
         sw_tile_cols_ok(k) && sw_tile_rows_ok(k) && sw_slot_cols_ok(k) &&
         sw_slot_cols_unstaged_ok(k) && sw_row_from_tile_ok(k) && sw_slots_ok(k) &&
         sw_colwise_rows_ok(k) && sw_col_lanes_ok(k) && sw_static_smem_ok(k) &&
         sw_col_items_ok(k) && sw_load_hint_ok(k) && sw_sigmoid_form_ok(k) &&
         sw_band_form_ok(k) && sw_pipeline_ok(k) && sw_stage_rows_ok(k) &&
         sw_group_rows_ok(k) && sw_tile_pairs_ok(k) && sw_staged_scales_ok(k) &&
         sw_staged_row_scales_ok(k) && sw_grouped_ok(k) && sw_variant_ok(k) && sw_col_runs_ok(k);
}

// The compile-time configuration of one program: the knobs, and the constants the kernel's
// steps read, each from the rule above of the same name.
template <int kForm_, int kThreads_, int kTileRows_, int kTileCols_, int kRowsPerThread_,
          int kLoadHint_, int kSigmoidForm_, int kBandForm_, int kPipeline_ = 0,
          int kGroupRows_ = 0, int kColLanes_ = 0, int kSlotCols_ = 0, int kRowFromTile_ = 0,
          int kVariant_ = 0, int kColRuns_ = 0>
struct SwigluCfg {
  static constexpr SwigluKnobs kKnobs = {
      kForm_,    kThreads_,   kTileRows_, kTileCols_, kRowsPerThread_, kLoadHint_,   kSigmoidForm_,
      kBandForm_, kPipeline_, kGroupRows_, kColLanes_, kSlotCols_,     kRowFromTile_,
      kVariant_, kColRuns_};

  static constexpr int kForm = kForm_;
  static constexpr bool kGrouped = sw_grouped(kForm_);
  static constexpr bool kBackward = sw_backward(kForm_);
  static constexpr int kOrientation = sw_orientation(kForm_);
  static constexpr bool kRowwise = sw_rowwise(kForm_);
  static constexpr bool kColwise = sw_colwise(kForm_);
  static constexpr int kThreads = kThreads_;
  static constexpr int kTileRows = kTileRows_;  // rows per CTA tile
  static constexpr int kTileCols = kTileCols_;  // k-columns per CTA tile
  static constexpr int kRpt = kRowsPerThread_;
  static constexpr int kLoadHint = kLoadHint_;
  static constexpr int kSig = kSigmoidForm_;
  static constexpr int kBand = kBandForm_;
  static constexpr int kPipeline = kPipeline_;
  static constexpr int kGroupRows = static_cast<int>(sw_group_rows(kKnobs));
  static constexpr int kPairRows = static_cast<int>(sw_pair_rows(kKnobs));

  // Slots: 8 k-columns halve a thread's phase-1 chain where warps are few (small shapes): one
  // 16-byte load per operand, 4 lanes a 32-column block.
  static constexpr int kSlotCols = static_cast<int>(sw_slot_cols(kKnobs));
  static constexpr int kSlotVecs = kSlotCols / 8;               // 16-byte vectors per operand row
  static constexpr int kSlotWords = kSlotCols / 2;              // BF16 pairs per slot row
  static constexpr int kBlockLanes = 32 / kSlotCols;            // lanes of a 32-column block
  static constexpr int kChunksPerRow = kTileCols / kSlotCols;   // slots along k
  static constexpr int kYGroups = kTileCols / 16;               // Y tile swizzle (slot-free)
  static constexpr int kRowGroups = kTileRows / kRpt;           // slot rows
  static constexpr int kSlots = static_cast<int>(sw_slots(kKnobs));
  static constexpr int kPasses = kSlots / kThreads;
  static constexpr int kOutPerK = static_cast<int>(sw_out_per_k(kForm_));
  static constexpr int kTileOutCols = static_cast<int>(sw_tile_out_cols(kKnobs));
  static constexpr int kSmemRowWords = kTileOutCols / 2;        // 32-bit words per tile row
  static constexpr int kColPairs = kTileOutCols / 2;            // phase 2: column pairs
  static constexpr int kColItems = static_cast<int>(sw_col_items(kKnobs));
  static constexpr bool kRowFromTile = kRowFromTile_ != 0;
  static constexpr bool kVariant = kVariant_ != 0;
  static constexpr bool kColRuns = kColRuns_ != 0;
  static constexpr int kRowItems = static_cast<int>(sw_row_items(kKnobs));
  static constexpr int kRowChunks = static_cast<int>(sw_row_chunks(kKnobs));
  static constexpr int kItemLanes = static_cast<int>(sw_item_lanes(kKnobs));
  static constexpr int kYPad = static_cast<int>(sw_y_pad(kKnobs));
  static constexpr int kStages = static_cast<int>(sw_stages(kKnobs));
  static constexpr bool kStagedScales = sw_staged_scales(kKnobs);
  static constexpr int kScalePiece = static_cast<int>(sw_scale_piece_bytes(kKnobs));
  static constexpr int kScalePieces = static_cast<int>(sw_scale_pieces(kKnobs));
  static constexpr bool kStagedRowScales = sw_staged_row_scales(kKnobs);
  static constexpr int kRowScaleBytes = static_cast<int>(sw_row_scale_bytes(kKnobs));
  static constexpr int kYWords = static_cast<int>(sw_y_words(kKnobs));
  static constexpr int kSmemWords = static_cast<int>(sw_smem_words(kKnobs));
  static constexpr int kOps = static_cast<int>(sw_ops(kForm_));
  static constexpr int kRowVecs = static_cast<int>(sw_row_vecs(kKnobs));
  static constexpr int kStageVecs = static_cast<int>(sw_stage_vecs(kKnobs));

  static_assert(sw_form_valid(kForm_), "form");
  static_assert(sw_threads_ok(kKnobs), "threads: whole warps, at most 1024");
  static_assert(sw_rows_per_thread_ok(kKnobs), "rows_per_thread is 1 or 2");
  static_assert(sw_tile_cols_ok(kKnobs), "tile_cols: a multiple of 32");
  static_assert(sw_tile_rows_ok(kKnobs), "tile_rows: a multiple of rows_per_thread");
  static_assert(sw_slot_cols_ok(kKnobs), "slot_cols is 0 (16) or 8");
  static_assert(sw_slot_cols_unstaged_ok(kKnobs), "slot_cols 8: unstaged programs only");
  static_assert(sw_row_from_tile_ok(kKnobs), "row_from_tile is 0, or 1 for unstaged both programs");
  static_assert(sw_slots_ok(kKnobs),
                "(tile_rows/rows_per_thread)*(tile_cols/slot_cols) must be a multiple of threads");
  static_assert(sw_colwise_rows_ok(kKnobs), "colwise/both: tile_rows a multiple of 32");
  static_assert(sw_static_smem_ok(kKnobs), "colwise tile exceeds 48 KiB of static smem");
  static_assert(sw_col_items_ok(kKnobs), "phase 2 items: whole warps");
  static_assert(sw_load_hint_ok(kKnobs), "load_hint is 0, 1 or 2");
  static_assert(sw_sigmoid_form_ok(kKnobs), "sigmoid_form is 1 (fast) or 2 (packed)");
  static_assert(sw_band_form_ok(kKnobs), "band_form is 0, 1, 2 or 3");
  static_assert(sw_pipeline_ok(kKnobs), "pipeline is 0, 1 or 2..8 stages");
  static_assert(sw_stage_rows_ok(kKnobs),
                "staged: threads a multiple of tile_cols/8, and threads/(tile_cols/8) dividing "
                "tile_rows");
  static_assert(sw_group_rows_ok(kKnobs), "group_rows is 0..4096, or -2 (tile pairs)");
  static_assert(sw_tile_pairs_ok(kKnobs),
                "tile pairs (group_rows -2): staged colwise or both programs only");
  static_assert(sw_staged_scales_ok(kKnobs), "staged scales: a thread a piece");
  static_assert(sw_staged_row_scales_ok(kKnobs), "staged row scales: a thread a store");
  static_assert(sw_col_lanes_ok(kKnobs),
                "col_lanes: 0, or (colwise/both) a power of two 2..32 dividing tile_rows/16");
  static_assert(sw_grouped_ok(kKnobs),
                "grouped forms: group_rows 0 and pipeline 0 or staged (2..8)");
  static_assert(sw_variant_ok(kKnobs),
                "variant: 0, or 1 with pipeline 0, group_rows 0, row_from_tile 0 and "
                "tile_cols / slot_cols a power of two up to 32");
  static_assert(sw_col_runs_ok(kKnobs), "col_runs is 0, or 1 for grouped colwise and both programs");
  static_assert(sw_knobs_ok(kKnobs), "every rule above");
};

}  // namespace cake
