// The configuration of a SwiGLU + FP8 blockwise program: a manifest line's knobs and every rule
// derived from them, one definition for the kernel (SwigluFp8Cfg) and the host
// (lib/families/swiglu_fp8_launch.cc), as swiglu_mxfp8_config.h does for MXFP8.
//
// The knobs (CAKE_SWIGLU_FP8_PROGRAM, in manifest order after threads and min_ctas):
//   tile_rows        rows per CTA tile; the tile is always 128 k-columns wide (one rowwise block
//                    a row and range). Colwise/both: 128 (one colwise block a column); rowwise:
//                    a power of two 1..128 with (tile_rows / rows_per_thread) * 8 a multiple of
//                    threads
//   rows_per_thread  1 or 2: rows a thread's slot carries (rows tile_rows/2 apart)
//   load_hint        0 ld.global.nc, 1 .L1::no_allocate, 2 .L2::cache_hint evict_first
//   sigmoid_form     1 fast, 2 packed f32x2 (sm_100+, scalar elsewhere)
//   band_form        0 inline, 1 call, 2 flagged-pair loop, 3 group guard (swiglu_sigmoid.cuh)
//   load_batch       (optional, 0 = all) passes of a tile whose loads are issued together before
//                    their arithmetic: more bytes in flight for more registers
//   pipeline         (optional, 0) 1: the next tile's loads (all passes: load_batch 0) are issued
//                    as soon as this tile's phase 1 has consumed its registers, so they are in
//                    flight during phase 2 and its barriers (colwise/both), or during the rowwise
//                    stores
//   tail             (optional, 0) 1: the program serves any M >= 1 (M not a multiple of 128:
//                    a partial last row tile). Rows past M load as zeros (their Y is +0, so a
//                    partial colwise block's amax is that of its rows) and store nothing;
//                    col_q pieces go out as 16-byte stores where the 16 rows are inside and
//                    16-byte aligned (M a multiple of 16), else byte by byte. 0 compiles none of
//                    it, so the aligned programs' code is what it was; the router sends a call
//                    to a tail program only when M is not a multiple of 128
//                    (lib/families/family.cc). Grouped forms (6..11) need it: every expert's
//                    last row tile may be partial.
//   variant          (optional, 0) 1: the program serves the SwiGLU variants (the weighted and
//                    the clamped SwiGLU, docs/spec/swiglu-mxfp8.md, "Variants") from the call's
//                    run-time cake_swiglu_variant, and only variant programs serve them. A CTA
//                    takes whole row tiles, their k-tiles in column order (a row's dp summed in
//                    registers in the spec's order); pipeline 0, every pass's loads at once
//                    (load_batch 0) and tail 1 (any M).
// Every knob changes only the schedule: all programs of a form write the same bytes.
#pragma once
#include <stdint.h>

#include "hd.h"
#include "program_desc.h"
#include "swiglu_forms.h"

namespace cake {

struct SwigluFp8Knobs {
  int form, threads, tile_rows, rows_per_thread, load_hint, sigmoid_form, band_form, load_batch;
  int pipeline, tail, variant;
};

constexpr int kFp8TileCols = 128;  // k-columns of every tile: one 1x128 block
constexpr int kFp8SlotCols = 16;   // k-columns of a thread's slot: 8 lanes a 128-column block
constexpr int kFp8BlockLanes = kFp8TileCols / kFp8SlotCols;
constexpr int kFp8YPad = 4;  // words of padding every 16 rows of the Y tile (phase 2 banks)

CAKE_HD constexpr int64_t f8_slots(const SwigluFp8Knobs &k) {
  return (k.tile_rows / k.rows_per_thread) * kFp8BlockLanes;
}
CAKE_HD constexpr int64_t f8_passes(const SwigluFp8Knobs &k) { return f8_slots(k) / k.threads; }
CAKE_HD constexpr int64_t f8_load_batch(const SwigluFp8Knobs &k) {
  return k.load_batch == 0 ? f8_passes(k) : k.load_batch;
}
// The Y tile (colwise/both), in 32-bit words: tile_rows rows of O-per-k * 64 words, 4 words of
// padding every 16 rows.
CAKE_HD constexpr int64_t f8_row_words(const SwigluFp8Knobs &k) {
  return sw_out_per_k(k.form) * (kFp8TileCols / 2);
}
CAKE_HD constexpr int64_t f8_y_words(const SwigluFp8Knobs &k) {
  return sw_colwise(k.form) ? k.tile_rows * f8_row_words(k) + (k.tile_rows / 16) * kFp8YPad : 0;
}
CAKE_HD constexpr int64_t f8_dynamic_smem_bytes(const SwigluFp8Knobs &k) {
  return f8_y_words(k) * 4;
}
// Phase 2's items: a column pair x 16 rows each, 8 lanes a 128-row block.
CAKE_HD constexpr int64_t f8_col_items(const SwigluFp8Knobs &k) {
  return sw_colwise(k.form) ? f8_row_words(k) * (k.tile_rows / 16) : 0;
}

// ---- the knob rules, in the order the host checks them ----
CAKE_HD constexpr bool f8_threads_ok(const SwigluFp8Knobs &k) {
  return k.threads > 0 && k.threads % 32 == 0 && k.threads <= 1024;
}
CAKE_HD constexpr bool f8_rows_per_thread_ok(const SwigluFp8Knobs &k) {
  return k.rows_per_thread == 1 || k.rows_per_thread == 2;
}
CAKE_HD constexpr bool f8_tile_rows_ok(const SwigluFp8Knobs &k) {
  return k.tile_rows >= k.rows_per_thread && k.tile_rows <= 128 &&
         (k.tile_rows & (k.tile_rows - 1)) == 0 && (!sw_colwise(k.form) || k.tile_rows == 128);
}
CAKE_HD constexpr bool f8_slots_ok(const SwigluFp8Knobs &k) {
  return f8_slots(k) % k.threads == 0;
}
CAKE_HD constexpr bool f8_load_batch_ok(const SwigluFp8Knobs &k) {
  return k.load_batch >= 0 && k.load_batch <= f8_passes(k) &&
         (k.load_batch == 0 || f8_passes(k) % k.load_batch == 0);
}
CAKE_HD constexpr bool f8_pipeline_ok(const SwigluFp8Knobs &k) {
  return k.pipeline == 0 || (k.pipeline == 1 && f8_load_batch(k) == f8_passes(k));
}
CAKE_HD constexpr bool f8_col_items_ok(const SwigluFp8Knobs &k) {
  return f8_col_items(k) % 32 == 0;
}
CAKE_HD constexpr bool f8_tail_ok(const SwigluFp8Knobs &k) { return k.tail == 0 || k.tail == 1; }
// Grouped forms: every expert's last row tile may be partial, so the tail code is compiled in.
CAKE_HD constexpr bool f8_grouped_ok(const SwigluFp8Knobs &k) {
  return !sw_grouped(k.form) || k.tail == 1;
}

CAKE_HD constexpr bool f8_variant_ok(const SwigluFp8Knobs &k) {
  return k.variant == 0 ||
         (k.variant == 1 && k.pipeline == 0 && k.load_batch == 0 && k.tail == 1);
}

CAKE_HD constexpr bool f8_knobs_ok(const SwigluFp8Knobs &k) {
  return sw_form_valid(k.form) && f8_threads_ok(k) && f8_rows_per_thread_ok(k) &&
         f8_tile_rows_ok(k) && f8_slots_ok(k) && f8_load_batch_ok(k) && f8_pipeline_ok(k) &&
         f8_col_items_ok(k) && f8_tail_ok(k) && f8_grouped_ok(k) && f8_variant_ok(k) &&
         sw_load_hint_ok(k) && sw_sigmoid_form_ok(k) && sw_band_form_ok(k);
}

template <int kForm_, int kThreads_, int kTileRows_, int kRowsPerThread_, int kLoadHint_,
          int kSigmoidForm_, int kBandForm_, int kLoadBatch_ = 0, int kPipeline_ = 0, int kTail_ = 0,
          int kVariant_ = 0>
struct SwigluFp8Cfg {
  static constexpr SwigluFp8Knobs kKnobs = {kForm_,       kThreads_,    kTileRows_,
                                            kRowsPerThread_, kLoadHint_, kSigmoidForm_,
                                            kBandForm_,   kLoadBatch_,  kPipeline_,
                                            kTail_,       kVariant_};
  static constexpr int kPipeline = kPipeline_;
  static constexpr bool kTail = kTail_ != 0;
  static constexpr bool kVariant = kVariant_ != 0;
  static constexpr int kForm = kForm_;
  static constexpr bool kGrouped = sw_grouped(kForm_);
  static constexpr bool kBackward = sw_backward(kForm_);
  static constexpr bool kRowwise = sw_rowwise(kForm_);
  static constexpr bool kColwise = sw_colwise(kForm_);
  static constexpr int kThreads = kThreads_;
  static constexpr int kTileRows = kTileRows_;
  static constexpr int kRpt = kRowsPerThread_;
  static constexpr int kLoadHint = kLoadHint_;
  static constexpr int kSig = kSigmoidForm_;
  static constexpr int kBand = kBandForm_;
  // What swiglu_phase1.cuh's compute_y reads of a configuration: 16-column slots.
  static constexpr int kSlotCols = kFp8SlotCols;
  static constexpr int kSlotVecs = kSlotCols / 8;
  static constexpr int kSlotWords = kSlotCols / 2;
  static constexpr int kOutPerK = static_cast<int>(sw_out_per_k(kForm_));
  static constexpr int kRowGroups = kTileRows / kRpt;
  static constexpr int kPasses = static_cast<int>(f8_passes(kKnobs));
  static constexpr int kBatch = static_cast<int>(f8_load_batch(kKnobs));
  static constexpr int kRowWords = static_cast<int>(f8_row_words(kKnobs));
  static constexpr int kColItems = static_cast<int>(f8_col_items(kKnobs));

  static_assert(sw_form_valid(kForm_), "form");
  static_assert(f8_threads_ok(kKnobs), "threads: whole warps, at most 1024");
  static_assert(f8_rows_per_thread_ok(kKnobs), "rows_per_thread is 1 or 2");
  static_assert(f8_tile_rows_ok(kKnobs),
                "tile_rows: a power of two up to 128, 128 for colwise/both");
  static_assert(f8_slots_ok(kKnobs), "(tile_rows/rows_per_thread)*8 a multiple of threads");
  static_assert(f8_load_batch_ok(kKnobs), "load_batch: 0 or a divisor of the passes");
  static_assert(f8_pipeline_ok(kKnobs), "pipeline: 0, or 1 with every pass's loads at once");
  static_assert(f8_col_items_ok(kKnobs), "phase 2 items: whole warps");
  static_assert(f8_tail_ok(kKnobs), "tail is 0 or 1");
  static_assert(f8_grouped_ok(kKnobs), "grouped forms: tail 1");
  static_assert(f8_variant_ok(kKnobs), "variant: 0, or 1 with pipeline 0, load_batch 0, tail 1");
  static_assert(sw_load_hint_ok(kKnobs), "load_hint is 0, 1 or 2");
  static_assert(sw_sigmoid_form_ok(kKnobs), "sigmoid_form is 1 or 2");
  static_assert(sw_band_form_ok(kKnobs), "band_form is 0, 1, 2 or 3");
};

}  // namespace cake
