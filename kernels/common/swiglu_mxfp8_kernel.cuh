// SwiGLU + MXFP8 quantization: one kernel body for all six forms (SPEC-swiglu-mxfp8.md).
//
//   forward   Y[m, k] = bf16(g*s*u),                       O = K output columns
//   backward  Y[m, k] = bf16((fma(g*s, 1-s, s)*grad)*u)    (dgate, columns [0, K))
//             Y[m, K+k] = bf16((g*s)*grad)                 (dup,   columns [K, 2K)), O = 2K
//   then Y is quantized in blocks of 32 along rows (rowwise: row_q [M, O], row_s) and/or along
//   columns (colwise: col_q = the transpose [O, M], col_s); scales in the swizzled 128x4 layout.
//
// The idea, for the H200 memory roofline (every byte read once, written once, 16 bytes a time):
//
//   CTA tile   tile_rows x tile_cols of the input's k-columns (tile_cols gate columns and the
//              matching up/grad columns; backward tiles produce 2*tile_cols output columns).
//              A 1-D grid strides over tiles (tile = blockIdx.x + i*gridDim.x, k fastest), so
//              M is limited by nothing but 64-bit indexing; the host sizes the grid to one
//              wave at the program's CTAs per SM, at one CTA a SM to the fewest CTAs that keep
//              the busiest one's tile count (lib/families/swiglu_mxfp8_launch.cc).
//   phase 1    each thread takes a slot of 16 k-columns x rows_per_thread rows (rows
//              tile_rows/rows_per_thread apart, so each load instruction of a warp is
//              coalesced along k): 16-byte loads (2 per operand per row, cache hint from the
//              program), the sigmoid in the program's sigmoid/band form, the BF16 Y.
//     rowwise  quantized straight from registers: a 32-column block is two adjacent lanes
//              (one shuffle exchanges the packed 16-bit amaxes of two blocks at once), 16 E4M3
//              bytes per lane = one 16-byte store; the even/odd lane writes the scale byte.
//     colwise  Y (BF16) goes to shared memory, row-major with a 16-byte XOR swizzle and
//              padding every 16 rows, so that phase 1's 16-byte stores and phase 2's column
//              reads are both free of bank conflicts.
//   phase 2    (colwise and both) each thread takes two adjacent columns x 16 rows (a 32-bit
//              shared load per row, the 16 words held for the amax and the conversion), the
//              lane pair (h = 0, 1) of a 32-row block exchanges the packed amax, and each lane
//              writes two 16-byte pieces of the transposed output col_q[o*M + m]: the lanes of
//              a column pair hold col_lanes consecutive 16-row chunks, so one store instruction
//              writes col_lanes * 16 contiguous bytes of each of 32 / col_lanes columns (2
//              lanes: 32-byte segments of 16 columns; 8 on a 128-row tile: 128-byte runs of 4).
//              Scale bytes go straight to col_s, or, in the staged
//              programs on 128-row tiles, into shared memory and out as whole pieces of the
//              swizzled layout after the next tile's barrier (kStagedScales).
//   NaN block  a block whose amax is Inf or NaN has the NaN scale; its multiplier is NaN, so
//              every product is the canonical NaN and converts to 0x7F with no select.
//   band path  with a fast sigmoid form, flagged gates (g below about -87.3, NaN) are recomputed
//              by sigmoid_band(), the exact sequence with a call-free rcp.rn; in the
//              flagged-pair loop form the pair's inputs are read again from global memory (an
//              L1/L2 hit) and its Y word is patched through a select chain.
//   both       Y is computed once; rowwise from registers, colwise from the same tile in shared
//              memory: both == rowwise + colwise byte for byte because the bytes come from the
//              same Y and the same encoder.
//   padding    scale padding entries (R or C not a multiple of 128 / 4) are written 0x00 by a
//              grid-stride loop at the end; with M, K multiples of 128 (the API rule) there are
//              none and the loop runs zero times.
//
// Knobs (CAKE_SWIGLU_PROGRAM, in manifest order after threads and min_ctas):
//   tile_rows        rows per CTA tile: a multiple of 32 for colwise/both; rowwise also 1 or 2
//   tile_cols        k-columns per CTA tile, a multiple of 32
//                    (tile_rows/rows_per_thread) * (tile_cols/16) must be a multiple of threads
//   rows_per_thread  1 or 2: rows a thread carries at once (more loads in flight, more registers)
//   load_hint        0 ld.global.nc (read-only path, default caching)
//                    1 ld.global.nc.L1::no_allocate (streamed once: keep L1 for others; but
//                      a slot's two 16-byte loads per operand are the halves of one sector,
//                      and without L1 each half is fetched from L2 on its own)
//                    2 ld.global.nc.L2::cache_hint with an L2::evict_first policy
//                      (createpolicy.fractional, 1.0): streamed once, let L2 drop it first
//   sigmoid_form     0 exact, 1 fast, 2 packed f32x2 (sm_100+, scalar elsewhere); see
//                    swiglu_sigmoid.cuh
//   band_form        0 inline branch, 1 out-of-line call, 2 flagged-pair loop, 3 group guard
//                    (one running max per 16-gate group, the whole group refixed when hit;
//                    ignored for sigmoid form 0)
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
//                    requests; on the H200 4 for 64-row and 128x64 tiles, 8 for 128x128 pairs,
//                    session 15, docs/performance.md)
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
// Every knob changes only the schedule: all programs of a form write the same bytes.
#pragma once
#include <stdint.h>

#include "hd.h"
#include "mxfp8_encode.h"
#include "program_desc.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_sigmoid.cuh"
#include "vector_io.cuh"

namespace cake {

template <int kForm_, int kThreads_, int kTileRows_, int kTileCols_, int kRowsPerThread_,
          int kLoadHint_, int kSigmoidForm_, int kBandForm_, int kPipeline_ = 0,
          int kGroupRows_ = 0, int kColLanes_ = 0, int kSlotCols_ = 0, int kRowFromTile_ = 0>
struct SwigluCfg {
  static constexpr int kForm = kForm_;
  static constexpr bool kBackward = kForm_ >= CAKE_SW_BWD_ROW;
  static constexpr int kOrientation = kForm_ % 3;  // 0 rowwise, 1 colwise, 2 both
  static constexpr bool kRowwise = kOrientation != 1;
  static constexpr bool kColwise = kOrientation != 0;
  static constexpr int kThreads = kThreads_;
  static constexpr int kTileRows = kTileRows_;  // rows per CTA tile
  static constexpr int kTileCols = kTileCols_;  // k-columns per CTA tile
  static constexpr int kRpt = kRowsPerThread_;
  static constexpr int kLoadHint = kLoadHint_;
  static constexpr int kSig = kSigmoidForm_;
  static constexpr int kBand = kBandForm_;
  static constexpr int kPipeline = kPipeline_;
  // group_rows >= 0: the tile order (0 k fastest, G grouped); -2: tile pairs (below), k fastest.
  static constexpr int kGroupRows = kGroupRows_ > 0 ? kGroupRows_ : 0;
  static constexpr int kPairRows = kGroupRows_ == -2 ? 2 : 1;

  // k-columns per thread slot (slot_cols knob; 0: 16). 8 halves a thread's phase-1 chain where
  // warps are few (small shapes): one 16-byte load per operand, 4 lanes a 32-column block.
  static constexpr int kSlotCols = kSlotCols_ == 0 ? 16 : kSlotCols_;
  static constexpr int kSlotVecs = kSlotCols / 8;               // 16-byte vectors per operand row
  static constexpr int kSlotWords = kSlotCols / 2;              // BF16 pairs per slot row
  static constexpr int kBlockLanes = 32 / kSlotCols;            // lanes of a 32-column block
  static constexpr int kChunksPerRow = kTileCols / kSlotCols;   // slots along k
  static constexpr int kYGroups = kTileCols / 16;               // Y tile swizzle (slot-free)
  static constexpr int kRowGroups = kTileRows / kRpt;           // slot rows
  static constexpr int kSlots = kRowGroups * kChunksPerRow;
  static constexpr int kPasses = kSlots / kThreads;
  static constexpr int kOutPerK = kBackward ? 2 : 1;
  static constexpr int kTileOutCols = kTileCols * kOutPerK;     // BF16 columns of the Y tile
  static constexpr int kSmemRowWords = kTileOutCols / 2;        // 32-bit words per tile row
  static constexpr int kColPairs = kTileOutCols / 2;            // phase 2: column pairs
  static constexpr int kColItems = kColPairs * (kTileRows / 16);
  // Both forms, row_from_tile knob: the rowwise bytes come from the Y tile after the barrier, a
  // 32-column block of one row an item, taken by the threads after phase 2's items.
  static constexpr bool kRowFromTile = kRowFromTile_ != 0;
  static constexpr int kRowItems = kRowFromTile ? kTileRows * (kTileOutCols / 32) : 0;
  // Phase 2's lanes (col_lanes knob; 0: 2): kItemLanes consecutive items take consecutive 16-row
  // chunks of one column pair, so a warp's 16-byte store writes 32 / kItemLanes columns x
  // kItemLanes * 16 contiguous bytes of col_q (with 8 on a 128-row tile: 4 columns x 128 bytes,
  // 4 L2 requests of whole lines, where 2 lanes a column make 16 requests of one sector each).
  // kYPad words of padding every 16 rows put those lanes' shared reads in distinct banks.
  static constexpr int kRowChunks = kTileRows / 16;
  static constexpr int kItemLanes = kColLanes_ == 0 ? 2 : kColLanes_;
  static constexpr int kYPad = 32 / kItemLanes;
  // Staged inputs (pipeline >= 2): a stage is one tile's operands, [op][row][16-byte vector].
  static constexpr int kStages = kPipeline_ >= 2 ? kPipeline_ : 0;
  // Staged colwise scales (staged programs on 128-row tiles of 64 or 128 k-columns): a tile's
  // col_s bytes are, per output column range (the dgate and dup halves of a backward tile) and
  // per column o%32, one contiguous piece of the swizzled 128x4 layout (4 blocks x kTileCols/32
  // column groups: 8 or 16 bytes). Phase 2 collects them in shared memory and the next tile's
  // top barrier lets one thread a piece store it whole, where byte stores put every lane of a
  // warp in its own 32-byte sector (16 sectors per instruction, 2 bytes used in each).
  static constexpr bool kStagedScales =
      kColwise && kStages >= 2 && kTileRows == 128 && (kTileCols == 64 || kTileCols == 128);
  static constexpr int kScalePiece = kTileCols / 8;             // bytes of one piece
  static constexpr int kScalePieces = 32 * kOutPerK;            // pieces of a tile
  // Staged rowwise scales (the both form of those programs on 128 k-columns): a 128x128 tile's
  // row_s bytes are one whole 512-byte block of the swizzled layout (32 rows m%32 x 16 bytes: the
  // four (m/32)%4 x the four column slots). Phase 1 writes them into a copy of the block in
  // shared memory, double-buffered by tile parity (phase 1 of the next tile runs while its first
  // threads store this one's), and after the next top barrier 32 threads store it in 16-byte
  // pieces: 4 requests of whole lines where each warp's byte store wrote 4 sectors in part, 16
  // warps a tile. (With 64 k-columns the block is half the tile's: its 2-byte stores of
  // partial sectors measured 0.97x at 32768x8192 and 131072x8192, session 15 run 9.)
  static constexpr bool kStagedRowScales = kStagedScales && kRowwise && kTileCols == 128;
  static constexpr int kRowScaleBytes = 512 * kOutPerK;         // one buffer: a block a range
  static constexpr int kYWords = kTileRows * kSmemRowWords + kRowChunks * kYPad;
  static constexpr int kSmemWords =
      kColwise ? kYWords + (kStagedScales ? kScalePieces * kScalePiece / 4 : 0) +
                     (kStagedRowScales ? 2 * kRowScaleBytes / 4 : 0)
               : 4;
  static constexpr int kOps = kBackward ? 3 : 2;                // gate, up (, grad)
  static constexpr int kRowVecs = kTileCols / 8;                // 16-byte vectors of a tile row
  static constexpr int kStageVecs = kOps * kTileRows * kRowVecs;
  static constexpr int kCopies = kStageVecs / kThreads;         // cp.async per thread and tile

  static_assert(kForm_ >= CAKE_SW_FWD_ROW && kForm_ <= CAKE_SW_BWD_BOTH, "form");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "threads: whole warps, at most 1024");
  static_assert(kRpt == 1 || kRpt == 2, "rows_per_thread is 1 or 2");
  static_assert(kTileCols % 32 == 0 && kTileCols > 0, "tile_cols: a multiple of 32");
  static_assert(kTileRows % kRpt == 0 && kTileRows > 0, "tile_rows: a multiple of rows_per_thread");
  static_assert(kSlotCols == 16 || kSlotCols == 8, "slot_cols is 0 (16) or 8");
  static_assert(kSlotCols == 16 || kPipeline_ < 2, "slot_cols 8: unstaged programs only");
  static_assert(kRowFromTile_ == 0 || (kRowFromTile_ == 1 && kOrientation == 2 && kPipeline_ < 2),
                "row_from_tile is 0, or 1 for unstaged both programs");
  static_assert(kSlots % kThreads == 0,
                "(tile_rows/rows_per_thread)*(tile_cols/slot_cols) must be a multiple of threads");
  static_assert(!kColwise || kTileRows % 32 == 0, "colwise/both: tile_rows a multiple of 32");
  static_assert(kSmemWords * 4 <= 48 * 1024, "colwise tile exceeds 48 KiB of static smem");
  static_assert(!kColwise || kColItems % 32 == 0, "phase 2 items: whole warps");
  static_assert(kLoadHint_ >= 0 && kLoadHint_ <= 2, "load_hint is 0, 1 or 2");
  static_assert(kBandForm_ >= 0 && kBandForm_ <= 3, "band_form is 0, 1, 2 or 3");
  static_assert(kPipeline_ >= 0 && kPipeline_ <= 8, "pipeline is 0, 1 or 2..8 stages");
  static_assert(kStages == 0 || kStageVecs % kThreads == 0,
                "staged: a tile's 16-byte input vectors must be a multiple of threads");
  static_assert(kGroupRows_ >= -2 && kGroupRows_ != -1 && kGroupRows_ <= 4096,
                "group_rows is 0..4096, or -2 (tile pairs)");
  static_assert(kPairRows == 1 || (kStages >= 2 && kColwise),
                "tile pairs (group_rows -2): staged colwise or both programs only");
  static_assert(!kStagedScales || kScalePieces <= kThreads, "staged scales: a thread a piece");
  static_assert(!kStagedRowScales || kRowScaleBytes / 16 <= kThreads,
                "staged row scales: a thread a store");
  static_assert(kColLanes_ == 0 || (kColwise && (kColLanes_ & (kColLanes_ - 1)) == 0 &&
                                    kColLanes_ >= 2 && kColLanes_ <= 32 &&
                                    kRowChunks % kColLanes_ == 0),
                "col_lanes: 0, or (colwise/both) a power of two 2..32 dividing tile_rows/16");
};

namespace swiglu {

namespace mx = cake::mx;

// Memory and BF16 primitives: vector_io.cuh (load16, store16, bf16_lo/hi, pack_bf16x2).

// Packed per-half amax of n words: max |x| of each half, NaN-propagating (an integer max over
// |bits| orders NaN > Inf > finite). Without masking each word first: an unsigned max over the
// raw halves finds the negative of largest magnitude if there is one (the sign bit ranks it
// above every positive), a signed max the positive of largest magnitude if there is one (else
// the negative of largest magnitude again); the larger of the two magnitudes is the amax, the
// same bits as max(|x|). Two 3-input max instructions a word pair each, two masks in all.
template <int N>
__device__ __forceinline__ uint32_t amax2(const uint32_t (&w)[N]) {
  uint32_t u = w[0], s = w[0];
#pragma unroll
  for (int i = 1; i < N; ++i) {
    u = __vmaxu2(u, w[i]);
    s = __vmaxs2(s, w[i]);
  }
  return __vmaxu2(u & 0x7FFF7FFFu, s & 0x7FFF7FFFu);
}

__device__ __forceinline__ uint32_t halves_max(uint32_t a) { return max(a & 0xFFFFu, a >> 16); }

__device__ __forceinline__ uint32_t e4m3x4(float a, float b, float c, float d) {
  return (uint32_t)mx::e4m3x2_rn_satfinite(a, b) | ((uint32_t)mx::e4m3x2_rn_satfinite(c, d) << 16);
}

// The multiplier of a block with scale S as a BF16 pattern: 2^(127-S) (exponent field 254 - S,
// a normal BF16 for the S that occur below 255: at most 247) or, for the NaN scale, a NaN: every
// product is then a NaN and its E4M3 byte 0x7F, the spec's NaN block, with no select per word.
__device__ __forceinline__ uint32_t block_multiplier_bf16(uint32_t s) {
  return s <= 253u ? (254u - s) << 7 : 0x7FFFu;
}

// Two BF16 values (the halves of y) times their blocks' multipliers (the halves of k2) to four
// E4M3 bytes with the next word: the spec's e4m3(bf16(v * 2^(127-S))). The product is formed in
// BF16 (one mul.rn.bf16x2 for two values), exact unless it falls below the normal range, where
// both it and the spec's value give +-0 in E4M3; then each half widens to FP32 for the
// conversion (the sm_90 cvt to E4M3 takes FP32 pairs or FP16 pairs, not BF16).
__device__ __forceinline__ uint32_t quantize_word_pair(uint32_t y0, uint32_t y1, uint32_t k2) {
  const uint32_t p0 = mul_bf16x2(y0, k2), p1 = mul_bf16x2(y1, k2);
  return e4m3x4(bf16_lo(p0), bf16_hi(p0), bf16_lo(p1), bf16_hi(p1));
}

// N words (2N values of one block) with scale s: 2N E4M3 bytes, N/2 words.
template <int N>
__device__ __forceinline__ void quantize_words(const uint32_t (&w)[N], uint32_t s,
                                               uint32_t (&q)[N / 2]) {
  const uint32_t k2 = block_multiplier_bf16(s) * 0x10001u;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) q[i] = quantize_word_pair(w[2 * i], w[2 * i + 1], k2);
}

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

// ---- Y of one slot row ----
// One pair of outputs from one pair of gates and their sigmoid: the only place the SwiGLU
// arithmetic is written (emit and refix both call it). Forward: yw0 = Y. Backward: yw0 = dgate,
// yw1 = dup.
template <class Cfg>
__device__ __forceinline__ void y_pair(float2 g, float2 s, uint32_t uw, uint32_t dw,
                                       uint32_t &yw0, uint32_t &yw1) {
  constexpr int kSig = Cfg::kSig;
  const float2 u = bf16x2_to_float2(uw);
  const float2 a = pmul<kSig>(g, s);  // silu(g) = g * sigmoid(g)
  if constexpr (!Cfg::kBackward) {
    const float2 y = pmul<kSig>(a, u);
    yw0 = pack_bf16x2(y.x, y.y);
  } else {
    const float2 d = bf16x2_to_float2(dw);
    const float2 oms = psub<kSig>(make_float2(1.0f, 1.0f), s);
    const float2 dact = pfma<kSig>(a, oms, s);  // d silu / dg, one rounding
    const float2 dg = pmul<kSig>(pmul<kSig>(dact, d), u);
    const float2 du = pmul<kSig>(a, d);
    yw0 = pack_bf16x2(dg.x, dg.y);
    yw1 = pack_bf16x2(du.x, du.y);
  }
}

// Y of 16 k-columns of one row. gate points at the row's 16 gates (up at gate + K, grad at
// grad); only the flagged-pair loop reads them again.
// The words of V 16-byte vectors. (Two vectors through a const initializer list, as before
// slot_cols existed: a loop of copies gives the 16-column programs the same instructions in
// another order, and their SASS was to stay as measured.)
template <int V>
__device__ __forceinline__ void words_of(const uint4 (&v)[V], uint32_t (&w)[4 * V]) {
  if constexpr (V == 2) {
    const uint32_t c[8] = {v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w};
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = c[i];
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      w[4 * i] = v[i].x;
      w[4 * i + 1] = v[i].y;
      w[4 * i + 2] = v[i].z;
      w[4 * i + 3] = v[i].w;
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void compute_y(const uint4 (&gv)[Cfg::kSlotVecs],
                                          const uint4 (&uv)[Cfg::kSlotVecs],
                                          const uint4 (&dv)[Cfg::kSlotVecs], const uint16_t *gate,
                                          const uint16_t *grad, int64_t K,
                                          uint32_t (&y0)[Cfg::kSlotWords],
                                          uint32_t (&y1)[Cfg::kSlotWords]) {
  constexpr int W = Cfg::kSlotWords;
  uint32_t gw[W], uw[W], dw[W];
  words_of(gv, gw);
  words_of(uv, uw);
  words_of(dv, dw);
  for_each_sigmoid_pair<Cfg::kSig, Cfg::kBand, W>(
      gw, [&](int i, float2 g, float2 s) { y_pair<Cfg>(g, s, uw[i], dw[i], y0[i], y1[i]); },
      [&](int j) {
        // Flagged pairs only exist in rows that were loaded (a zero-filled slot has g = 0).
        const uint32_t gword = __ldg(reinterpret_cast<const unsigned int *>(gate) + j);
        const uint32_t uword = __ldg(reinterpret_cast<const unsigned int *>(gate + K) + j);
        uint32_t dword = 0;
        if constexpr (Cfg::kBackward) {
          dword = __ldg(reinterpret_cast<const unsigned int *>(grad) + j);
        }
        uint32_t a = 0, b = 0;
        y_pair<Cfg>(bf16x2_to_float2(gword), sigmoid_exact_pair(gword), uword, dword, a, b);
#pragma unroll
        for (int i = 0; i < W; ++i) {
          y0[i] = (i == j) ? a : y0[i];
          if constexpr (Cfg::kBackward) y1[i] = (i == j) ? b : y1[i];
        }
      });
}

// ---- phase 1: one slot (16 k-columns x kRpt rows) ----
// The loaded inputs of one slot: kRpt rows of 16 gates, 16 ups and (backward) 16 grads.
template <class Cfg>
struct SlotIn {
  uint4 g[Cfg::kRpt][Cfg::kSlotVecs], u[Cfg::kRpt][Cfg::kSlotVecs], d[Cfg::kRpt][Cfg::kSlotVecs];
};

// Issue the loads of row r of a slot (zeros outside the problem).
template <class Cfg>
__device__ __forceinline__ void load_row(const cake_swiglu_mxfp8_params &p, int64_t m0, int64_t k0,
                                         int slot, int r, SlotIn<Cfg> &in) {
  const int chunk = slot % Cfg::kChunksPerRow;
  const int row_group = slot / Cfg::kChunksPerRow;
  const int64_t K = p.K;
  const int64_t k = k0 + chunk * Cfg::kSlotCols;
  const int64_t m = m0 + row_group + r * Cfg::kRowGroups;
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int v = 0; v < Cfg::kSlotVecs; ++v) in.g[r][v] = in.u[r][v] = in.d[r][v] = z;
  if (k < K && m < p.M) {
    const uint16_t *gate = p.in + m * (2 * K) + k;  // [M, 2K]: gate | up
#pragma unroll
    for (int v = 0; v < Cfg::kSlotVecs; ++v) in.g[r][v] = load16<Cfg::kLoadHint>(gate + 8 * v);
#pragma unroll
    for (int v = 0; v < Cfg::kSlotVecs; ++v) in.u[r][v] = load16<Cfg::kLoadHint>(gate + K + 8 * v);
    if constexpr (Cfg::kBackward) {
      const uint16_t *grad = p.grad + m * K + k;  // [M, K]
#pragma unroll
      for (int v = 0; v < Cfg::kSlotVecs; ++v) in.d[r][v] = load16<Cfg::kLoadHint>(grad + 8 * v);
    }
  }
}

// Row r of a slot from its loaded inputs: Y, its rowwise bytes, its shared-memory copy; Y dies
// before the next row.
template <class Cfg>
__device__ __forceinline__ void compute_row(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int slot, int r, const SlotIn<Cfg> &in,
                                            uint32_t *smem, uint8_t *rscale = nullptr) {
  constexpr int G = Cfg::kOutPerK;  // 16-value groups per row: Y, or dgate and dup
  const int chunk = slot % Cfg::kChunksPerRow;
  const int row_group = slot / Cfg::kChunksPerRow;
  const int64_t K = p.K;
  const int64_t k = k0 + chunk * Cfg::kSlotCols;
  const int row = row_group + r * Cfg::kRowGroups;  // within the tile
  const int64_t m = m0 + row;
  const bool ok = k < K && m < p.M;
  const uint16_t *gate = p.in + m * (2 * K) + k;
  uint32_t y[G][Cfg::kSlotWords];
  compute_y<Cfg>(in.g[r], in.u[r], in.d[r], gate, Cfg::kBackward ? p.grad + m * K + k : nullptr,
                 K, y[0], y[G - 1]);

  if constexpr (Cfg::kRowwise && !Cfg::kRowFromTile) {
    // The kBlockLanes adjacent lanes (2, or 4 with 8-column slots) of a 32-column block hold
    // its pieces. Backward, the dgate and dup amaxes travel in one shuffle a level, and the
    // block's first lane writes dgate's scale byte, its second dup's; forward, the first lane
    // writes the one scale byte.
    constexpr int L = Cfg::kBlockLanes;
    const int lane_in_block = threadIdx.x & (L - 1);
    uint32_t a = halves_max(amax2(y[0]));
    if constexpr (G == 2) a |= halves_max(amax2(y[1])) << 16;
#pragma unroll
    for (int lm = 1; lm < L; lm <<= 1) a = __vmaxu2(a, __shfl_xor_sync(0xFFFFFFFFu, a, lm));
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint32_t s = mx::scale_from_amax_bits(g ? a >> 16 : a & 0xFFFFu);
      uint32_t q[Cfg::kSlotWords / 2];
      quantize_words(y[g], s, q);
      if (ok) {
        const int64_t o = g ? K + k : k;
        if constexpr (Cfg::kSlotCols == 16) {
          store16(p.row_q + m * p.O + o, make_uint4(q[0], q[1], q[2], q[3]));
        } else {
          store8(p.row_q + m * p.O + o, make_uint2(q[0], q[1]));
        }
        if (lane_in_block == g) {
          if (Cfg::kStagedRowScales && rscale != nullptr) {  // the tile's block copy
            rscale[g * 512 + (row & 31) * 16 + ((row >> 5) & 3) * 4 + ((o >> 5) & 3)] =
                (uint8_t)s;
          } else {
            p.row_s[mx::swizzle_offset(m, o >> 5, p.row_s_cols_padded)] = (uint8_t)s;
          }
        }
      }
    }
  }

  if constexpr (Cfg::kColwise) {
    if (ok) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        // Words w .. w+kSlotWords-1 of the row: Y, or dgate then (kTileCols/2 words on) dup.
        const int w = (g ? Cfg::kTileCols / 2 : 0) + chunk * Cfg::kSlotWords;
        *reinterpret_cast<uint4 *>(smem + smem_word<Cfg>(row, w)) =
            make_uint4(y[g][0], y[g][1], y[g][2], y[g][3]);
        if constexpr (Cfg::kSlotVecs == 2) {
          *reinterpret_cast<uint4 *>(smem + smem_word<Cfg>(row, w + 4)) =
              make_uint4(y[g][4], y[g][5], y[g][6], y[g][7]);
        }
      }
    }
  }
}

// One slot, unpipelined: every load of the slot in flight before any arithmetic.
template <class Cfg>
__device__ __forceinline__ void phase1_slot(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int slot, uint32_t *smem) {
  SlotIn<Cfg> in;
#pragma unroll
  for (int r = 0; r < Cfg::kRpt; ++r) load_row<Cfg>(p, m0, k0, slot, r, in);
#pragma unroll
  for (int r = 0; r < Cfg::kRpt; ++r) compute_row<Cfg>(p, m0, k0, slot, r, in, smem);
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

// The inputs of row r of a slot from a stage.
template <class Cfg>
__device__ __forceinline__ void stage_row(const uint4 *stage, int slot, int r, SlotIn<Cfg> &in) {
  const int chunk = slot % Cfg::kChunksPerRow;
  const int row = slot / Cfg::kChunksPerRow + r * Cfg::kRowGroups;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    in.g[r][h] = stage[stage_vec<Cfg>(0, row, 2 * chunk + h)];
    in.u[r][h] = stage[stage_vec<Cfg>(1, row, 2 * chunk + h)];
    if constexpr (Cfg::kBackward) {
      in.d[r][h] = stage[stage_vec<Cfg>(2, row, 2 * chunk + h)];
    } else {
      in.d[r][h] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
}

// ---- phase 2: one item (2 adjacent output columns x 16 rows of the tile) ----
// The col_q pieces of one item of the first tile of a pair: column o's and o+1's 16 rows.
struct ColPieces {
  uint4 lo, hi;
};

// pair: 0 a tile on its own, 1 the first (upper) tile of a pair (pieces kept in `held`), 2 the
// second (pieces of both tiles stored: the upper tile's from `held`, tile_rows rows above).
template <class Cfg>
__device__ __forceinline__ void phase2_item(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int item, const uint32_t *smem,
                                            int pair, ColPieces &held, uint8_t *sscale) {
  constexpr int L = Cfg::kItemLanes;
  const int rest = item / L;
  const int c2 = rest % Cfg::kColPairs;                    // word column = column pair
  const int rc = (rest / Cfg::kColPairs) * L + item % L;  // 16-row chunk within the tile
  const int h = rc & 1;                                    // which 16 rows of the 32-row block
  const int blk = rc >> 1;                                 // 32-row block within the tile
  const int r0 = blk * 32 + h * 16;

  // Word (r0 + j, c2) is smem_word(r0 + j, c2), written out: r0 is a multiple of 16, so
  // r0*kYGroups is a multiple of 32 and the swap bit depends on j and c2 only. The 16 words
  // are read once and held across the shuffle (a second read per word measured no faster, run 2
  // of session 7, and every program still fits its registers without spills).
  const uint32_t *rowbase = smem + (r0 >> 4) * Cfg::kYPad;
  const int x = c2 >> 3;
  uint32_t wv[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int f = ((j * Cfg::kYGroups + x) >> 2) & 1;
    wv[j] = rowbase[(r0 + j) * Cfg::kSmemRowWords + (c2 ^ (f << 2))];
  }
  uint32_t a = amax2(wv);
  a = __vmaxu2(a, __shfl_xor_sync(0xFFFFFFFFu, a, 1));
  const uint32_t s_lo = mx::scale_from_amax_bits(a & 0xFFFFu);
  const uint32_t s_hi = mx::scale_from_amax_bits(a >> 16);

  const int w = 2 * c2;  // first of the two tile output columns
  const bool dup = Cfg::kBackward && w >= Cfg::kTileCols;
  const int64_t kk = k0 + (dup ? w - Cfg::kTileCols : w);
  const int64_t o = dup ? p.K + kk : kk;
  const int64_t mb = m0 + blk * 32;
  uint8_t *const col = p.col_q + o * p.M + mb + h * 16;  // column o, this item's 16 rows
  // The upper tile of a pair is whole (a lower tile follows it), so its pieces exist for every
  // item inside K, whether or not this (possibly partial) lower tile reaches the item's rows.
  if (Cfg::kPairRows == 2 && pair == 2 && kk < p.K) {
    store16(col - Cfg::kTileRows, held.lo);
    store16(col + p.M - Cfg::kTileRows, held.hi);
  }
  if (kk < p.K && mb < p.M) {
    // Column w's multiplier in the low half, column w+1's in the high half: one BF16 product
    // a word scales both columns' values.
    const uint32_t k2 = block_multiplier_bf16(s_lo) | (block_multiplier_bf16(s_hi) << 16);
    uint32_t q_lo[4], q_hi[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float lo[4], hi[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint32_t v = mul_bf16x2(wv[4 * i + e], k2);
        lo[e] = bf16_lo(v);
        hi[e] = bf16_hi(v);
      }
      q_lo[i] = e4m3x4(lo[0], lo[1], lo[2], lo[3]);
      q_hi[i] = e4m3x4(hi[0], hi[1], hi[2], hi[3]);
    }
    const uint4 lo = make_uint4(q_lo[0], q_lo[1], q_lo[2], q_lo[3]);
    const uint4 hi = make_uint4(q_hi[0], q_hi[1], q_hi[2], q_hi[3]);
    if (Cfg::kPairRows == 2 && pair == 1) {
      held.lo = lo;
      held.hi = hi;
    } else {
      store16(col, lo);
      store16(col + p.M, hi);
    }
    // Of the lane pair, h = 0 writes column o's scale byte, h = 1 column o+1's: into its
    // piece (staged scales, below) or straight to col_s.
    const uint8_t scale = (uint8_t)(h ? s_hi : s_lo);
    if (Cfg::kStagedScales && sscale != nullptr) {
      const int ro = (dup ? w - Cfg::kTileCols : w) + h;  // column within its range
      sscale[((dup ? 32 : 0) + (ro & 31)) * Cfg::kScalePiece + (ro >> 5) * 4 + blk] = scale;
    } else {
      p.col_s[mx::swizzle_offset(o + h, mb >> 5, p.col_s_cols_padded)] = scale;
    }
  }
}

// ---- rowwise bytes from the Y tile (row_from_tile): one 32-column block of one row ----
template <class Cfg>
__device__ __forceinline__ void row_item(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                         int64_t k0, int item, const uint32_t *smem) {
  constexpr int kBlocks = Cfg::kTileOutCols / 32;  // of a tile row
  constexpr int kRangeBlocks = Cfg::kTileCols / 32;
  const int row = item / kBlocks, blk = item % kBlocks;
  const bool dup = Cfg::kBackward && blk >= kRangeBlocks;
  const int64_t k = k0 + (dup ? blk - kRangeBlocks : blk) * 32;
  const int64_t m = m0 + row;
  if (k >= p.K || m >= p.M) return;  // phase 1 wrote no Y there
  uint32_t w[16];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const uint4 v =
        *reinterpret_cast<const uint4 *>(smem + smem_word<Cfg>(row, blk * 16 + 4 * q));
    w[4 * q] = v.x;
    w[4 * q + 1] = v.y;
    w[4 * q + 2] = v.z;
    w[4 * q + 3] = v.w;
  }
  const uint32_t s = mx::scale_from_amax_bits(halves_max(amax2(w)));
  uint32_t q[8];
  quantize_words(w, s, q);
  const int64_t o = dup ? p.K + k : k;
  store16(p.row_q + m * p.O + o, make_uint4(q[0], q[1], q[2], q[3]));
  store16(p.row_q + m * p.O + o + 16, make_uint4(q[4], q[5], q[6], q[7]));
  p.row_s[mx::swizzle_offset(m, o >> 5, p.row_s_cols_padded)] = (uint8_t)s;
}

// Zero the padding entries of a swizzled scale matrix: rows [0, R) x columns [C, C') and rows
// [R, R') x all C' columns. Grid-stride over all threads of the launch.
__device__ __forceinline__ void zero_scale_padding(uint8_t *s, int64_t rows, int64_t cols,
                                                   int64_t rows_padded, int64_t cols_padded) {
  const int64_t extra_cols = cols_padded - cols;
  const int64_t n_right = rows * extra_cols;
  const int64_t n_below = (rows_padded - rows) * cols_padded;
  const int64_t n = n_right + n_below;
  if (n == 0) return;
  const int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t r, c;
    if (i < n_right) {
      r = i / extra_cols;
      c = cols + i % extra_cols;
    } else {
      const int64_t j = i - n_right;
      r = rows + j / cols_padded;
      c = j % cols_padded;
    }
    s[mx::swizzle_offset(r, c, cols_padded)] = 0;
  }
}

// Phase 2 of one tile (colwise and both): every item once phase 1 has filled the Y tile. The
// register paths close with a barrier that keeps the next tile's phase 1 off the Y tile until
// every item has read it; the staged path's next top-of-tile barrier does that instead, and its
// item loop is unrolled (a thread's items are the same every tile, so their index arithmetic is
// loop-invariant).
template <class Cfg>
__device__ __forceinline__ void phase2_tile(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, const uint32_t *smem, int pair = 0,
                                            ColPieces *held = nullptr, uint8_t *sscale = nullptr) {
  if constexpr (Cfg::kColwise) {
    __syncthreads();
    if constexpr (Cfg::kStages >= 2) {
      constexpr int kItemPasses = (Cfg::kColItems + Cfg::kThreads - 1) / Cfg::kThreads;
#pragma unroll
      for (int i = 0; i < kItemPasses; ++i) {
        const int item = threadIdx.x + i * Cfg::kThreads;
        if (Cfg::kColItems % Cfg::kThreads == 0 || item < Cfg::kColItems) {
          ColPieces unused;
          phase2_item<Cfg>(p, m0, k0, item, smem, pair, Cfg::kPairRows == 2 ? held[i] : unused,
                           sscale);
        }
      }
    } else {
      ColPieces unused;
      // With row_from_tile the rowwise blocks follow the column items, so the threads that
      // have no column item quantize the rows (on small tiles, warps that would wait).
#pragma unroll 1
      for (int item = threadIdx.x; item < Cfg::kColItems + Cfg::kRowItems;
           item += Cfg::kThreads) {
        if (item < Cfg::kColItems) {
          phase2_item<Cfg>(p, m0, k0, item, smem, 0, unused, nullptr);
        } else if constexpr (Cfg::kRowFromTile) {
          row_item<Cfg>(p, m0, k0, item - Cfg::kColItems, smem);
        }
      }
      __syncthreads();
    }
  }
}

// Staged scales: whether the tile at (m0, k0) takes them (the whole tile inside, every range's
// first column a multiple of kTileCols so that no piece crosses a 128-row group of col_s, and
// col_s aligned for the pieces' vector stores); uniform over the CTA.
template <class Cfg>
__device__ __forceinline__ bool staged_scales_ok(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                                 int64_t k0) {
  return m0 + Cfg::kTileRows <= p.M && k0 + Cfg::kTileCols <= p.K &&
         (!Cfg::kBackward || p.K % Cfg::kTileCols == 0) &&
         (reinterpret_cast<uintptr_t>(p.col_s) & 15) == 0;
}

// Store the staged scale pieces of the tile at (m0, k0): thread t < kScalePieces stores piece t
// (range t/32, column o%32 = t%32), which starts at column o's byte of block m0/32 (a multiple
// of 4) and runs over the range's column groups.
template <class Cfg>
__device__ __forceinline__ void store_staged_scales(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                                    int64_t k0, const uint8_t *sscale) {
  const int t = threadIdx.x;
  if (t < Cfg::kScalePieces) {
    const int64_t o = (t >= 32 ? p.K : 0) + k0 + (t & 31);
    uint8_t *dst = p.col_s + mx::swizzle_offset(o, m0 >> 5, p.col_s_cols_padded);
    if constexpr (Cfg::kScalePiece == 16) {
      *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(sscale + t * 16);
    } else {
      *reinterpret_cast<uint64_t *>(dst) = *reinterpret_cast<const uint64_t *>(sscale + t * 8);
    }
  }
}

// Staged row scales: whether the tile takes them (staged_scales_ok, and row_s aligned for the
// 16-byte stores); uniform over the CTA.
template <class Cfg>
__device__ __forceinline__ bool staged_row_scales_ok(const cake_swiglu_mxfp8_params &p) {
  return (reinterpret_cast<uintptr_t>(p.row_s) & 15) == 0;
}

// Store the staged row scales of the tile at (m0, k0) from its block copies: per range, the
// 512-byte block at (m0, the range's first column block, a multiple of 4), 16 bytes a thread.
template <class Cfg>
__device__ __forceinline__ void store_staged_row_scales(const cake_swiglu_mxfp8_params &p,
                                                        int64_t m0, int64_t k0,
                                                        const uint8_t *rscale) {
  const int t = threadIdx.x;
  if (t < 32 * Cfg::kOutPerK) {
    const int g = t >> 5, q = t & 31;
    const int64_t j0 = ((g ? p.K : 0) + k0) >> 5;
    uint8_t *dst = p.row_s + mx::swizzle_offset(m0, j0, p.row_s_cols_padded) + q * 16;
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(rscale + g * 512 + q * 16);
  }
}

}  // namespace swiglu

namespace swiglu {

// The CTA's walk over its tiles (tile = blockIdx.x + i*gridDim.x) in the program's tile order
// (group_rows knob) with no division per tile: a position is (row tile, k tile) for k fastest,
// or (group, index within the group) for grouped orders, i.e. the quotient and remainder of the
// tile by a period (tiles_k, or group_rows*tiles_k); the grid stride is split the same way once,
// so a step is two adds and a carry. Only the last, partial group of a grouped order divides.
template <class Cfg>
struct TileWalk {
  struct Pos {
    uint32_t q, r;
  };
  uint32_t tiles_m, period, step_q, step_r;

  __device__ __forceinline__ TileWalk(uint32_t tiles_k, uint32_t tiles_m_, uint32_t step)
      : tiles_m(tiles_m_), period(Cfg::kGroupRows == 0 ? tiles_k : Cfg::kGroupRows * tiles_k) {
    step_q = step / period;
    step_r = step - step_q * period;
  }
  __device__ __forceinline__ Pos at(uint32_t tile) const {
    const uint32_t q = tile / period;
    return Pos{q, tile - q * period};
  }
  // r < period < 2^31 before and after (the host refuses a group of 2^31 tiles or more:
  // swiglu_mxfp8_fill_params), so r + step_r cannot wrap.
  __device__ __forceinline__ void advance(Pos &s) const {
    s.q += step_q;
    s.r += step_r;
    if (s.r >= period) {
      s.r -= period;
      ++s.q;
    }
  }
  // Row and k offsets of the tile at s (a tile of the problem).
  __device__ __forceinline__ void origin(Pos s, int64_t &m0, int64_t &k0) const {
    uint32_t tm, tk;
    if constexpr (Cfg::kGroupRows == 0) {
      tm = s.q;
      tk = s.r;
    } else {
      constexpr uint32_t G = Cfg::kGroupRows;
      const uint32_t first = s.q * G;
      const uint32_t left = tiles_m - first;
      if (left >= G) {  // a whole group: m fastest over G row tiles
        tk = s.r / G;
        tm = first + (s.r - tk * G);
      } else {
        tk = s.r / left;
        tm = first + (s.r - tk * left);
      }
    }
    m0 = (int64_t)tm * Cfg::kTileRows;
    k0 = (int64_t)tk * Cfg::kTileCols;
  }
};

// The staged loop's sequence of tiles for one CTA: the tile walk's, or with tile pairs the
// tiles of a k-fastest walk over pairs of row tiles, the upper then (where it exists) the lower
// tile of each. `idx` counts walk units (tiles, or pairs) in 32 bits: idx < units <= 2^31 and
// the stride is at most the unit count, so idx + step cannot wrap.
template <class Cfg>
struct StagedWalk {
  struct Pos {
    typename TileWalk<Cfg>::Pos w;
    uint32_t idx, half;
  };
  uint32_t tiles_m, units_m, units, step;  // units_m: row tiles, or pairs of them
  TileWalk<Cfg> walk;

  __device__ __forceinline__ StagedWalk(uint32_t tiles, uint32_t tiles_k, uint32_t step_)
      : tiles_m(tiles / tiles_k),
        units_m(Cfg::kPairRows == 2 ? (tiles_m + 1) / 2 : tiles_m),
        units(units_m * tiles_k),
        step(step_),
        walk(tiles_k, units_m, step_) {}
  __device__ __forceinline__ Pos start() const { return Pos{walk.at(blockIdx.x), blockIdx.x, 0}; }
  __device__ __forceinline__ bool valid(const Pos &u) const { return u.idx < units; }
  __device__ __forceinline__ bool has_lower(const Pos &u) const {
    return 2 * u.w.q + 1 < tiles_m;
  }
  // 0: a tile on its own; 1: the upper tile of a pair; 2: the lower one (phase2_item).
  __device__ __forceinline__ int pair_state(const Pos &u) const {
    if constexpr (Cfg::kPairRows == 2) return u.half ? 2 : (has_lower(u) ? 1 : 0);
    return 0;
  }
  __device__ __forceinline__ void origin(const Pos &u, int64_t &m0, int64_t &k0) const {
    if constexpr (Cfg::kPairRows == 2) {
      m0 = int64_t(2 * u.w.q + u.half) * Cfg::kTileRows;
      k0 = int64_t(u.w.r) * Cfg::kTileCols;
    } else {
      walk.origin(u.w, m0, k0);
    }
  }
  __device__ __forceinline__ void advance(Pos &u) const {
    if constexpr (Cfg::kPairRows == 2) {
      if (u.half == 0 && has_lower(u)) {
        u.half = 1;
        return;
      }
      u.half = 0;
    }
    walk.advance(u.w);
    u.idx += step;
  }
};

// Issue the copies of the inputs of the tile at (m0, k0) into a stage and commit them as one group
// (empty when `valid` is false, past the last tile, so every thread's group count stays
// uniform). The copies of a tile, in order, are the 16-byte vectors of operand-rows (gate rows,
// up rows, grad rows), kRowVecs a row; copy i is thread i % kThreads's: the lanes of a warp take
// consecutive vectors of the same rows. Outside the problem: zero-filled.
template <class Cfg>
__device__ __forceinline__ void stage_issue(const cake_swiglu_mxfp8_params &p, bool valid,
                                            int64_t m0, int64_t k0, uint4 *stage) {
  constexpr int T = Cfg::kThreads, RV = Cfg::kRowVecs, TR = Cfg::kTileRows;
  if (valid) {
    const int64_t K = p.K;
    const int tid = threadIdx.x;
    // Where T is a multiple of kRowVecs and T/kRowVecs divides the tile's rows (every 2-D tile),
    // thread tid copies vector v0 of rows q0, q0 + T/kRowVecs, ... of each operand: each copy is
    // a pointer step and a fixed shared-memory offset (the swap bit repeats every T/kRowVecs
    // rows, T being a multiple of 16), with no bounds check when the whole tile is inside.
    constexpr int kRowStep = T % RV == 0 ? T / RV : 0;
    constexpr bool kRegular = kRowStep > 0 && TR % kRowStep == 0;
    if constexpr (kRegular) {
      constexpr int kPerOp = TR / kRowStep;  // copies per operand
      const int v0 = tid % RV, q0 = tid / RV;
      const int64_t m = m0 + q0, k = k0 + v0 * 8;
      uint4 *dst = stage + stage_vec<Cfg>(0, q0, v0);
      if (m0 + TR <= p.M && k0 + Cfg::kTileCols <= K) {  // the whole tile inside
#pragma unroll
        for (int op = 0; op < Cfg::kOps; ++op) {
          const int64_t stride = op == 2 ? K : 2 * K;  // elements from one row to the next
          const uint16_t *src =
              op == 2 ? p.grad + m * K + k : p.in + m * (2 * K) + (op ? K : 0) + k;
#pragma unroll
          for (int j = 0; j < kPerOp; ++j) {
            cp_async16(dst + (op * TR + j * kRowStep) * RV, src + j * kRowStep * stride);
          }
        }
      } else {
#pragma unroll
        for (int op = 0; op < Cfg::kOps; ++op) {
#pragma unroll
          for (int j = 0; j < kPerOp; ++j) {
            const int64_t mj = m + j * kRowStep;
            const bool ok = mj < p.M && k < K;
            const uint16_t *src = p.in;
            if (ok) src = op == 2 ? p.grad + mj * K + k : p.in + mj * (2 * K) + (op ? K : 0) + k;
            cp_async16(dst + (op * TR + j * kRowStep) * RV, src, ok);
          }
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < Cfg::kCopies; ++j) {
        const int i = tid + j * T;
        const int v = i % RV, op = (i / RV) / TR, row = (i / RV) % TR;
        const int64_t m = m0 + row, k = k0 + v * 8;
        const bool ok = m < p.M && k < K;
        const uint16_t *src = p.in;
        if (ok) src = op == 2 ? p.grad + m * K + k : p.in + m * (2 * K) + (op ? K : 0) + k;
        cp_async16(stage + stage_vec<Cfg>(op, row, v), src, ok);
      }
    }
  }
  cp_async_commit();
}

}  // namespace swiglu

template <class Cfg>
__device__ __forceinline__ void swiglu_mxfp8_body(const cake_swiglu_mxfp8_params &p) {
  __shared__ __align__(16) uint32_t smem[Cfg::kSmemWords];  // Y tile (colwise/both)

  // Tiles are counted in 32 bits (the host checks tiles < 2^31: even a 32x32 tile gives 2^30 of
  // them at M*K = 2^40); the divisions are uniform 32-bit ones, at the start only.
  const uint32_t tiles = (uint32_t)p.tiles, tiles_k = (uint32_t)p.tiles_k;
  const uint32_t step = gridDim.x;
  const swiglu::TileWalk<Cfg> walk(tiles_k, tiles / tiles_k, step);
  using Pos = typename swiglu::TileWalk<Cfg>::Pos;
  if constexpr (Cfg::kStages >= 2) {
    // Staged: copies run S-1 tiles ahead. At the top of each tile one barrier makes the tile's
    // copies (every thread's) visible, and, since every thread has left the tile before, frees
    // that tile's stage for the next copies and its Y tile for this phase 1 (phase 2 needs no
    // closing barrier).
    uint4 *ring = dynamic_smem<uint4>();  // kStages stages of kStageVecs vectors
    constexpr int S = Cfg::kStages;
    constexpr int kItemPasses = (Cfg::kColItems + Cfg::kThreads - 1) / Cfg::kThreads;
    const swiglu::StagedWalk<Cfg> sw(tiles, tiles_k, step);
    using SPos = typename swiglu::StagedWalk<Cfg>::Pos;
    SPos at = sw.start();  // the tile being computed
    SPos ahead = at;       // the next tile to copy
    auto issue_ahead = [&](uint4 *dst) {
      const bool valid = sw.valid(ahead);
      int64_t am0 = 0, ak0 = 0;
      if (valid) sw.origin(ahead, am0, ak0);
      swiglu::stage_issue<Cfg>(p, valid, am0, ak0, dst);
      sw.advance(ahead);
    };
#pragma unroll
    for (int s = 0; s < S - 1; ++s) issue_ahead(ring + s * Cfg::kStageVecs);
    int stage = 0;  // stage of `at`
    swiglu::ColPieces held[Cfg::kPairRows == 2 ? kItemPasses : 1];  // upper tile of a pair
    // Staged scales: the pieces of the tile before, stored after the barrier that ends it; the
    // row scales' two buffers follow the column pieces.
    uint8_t *const sscale = reinterpret_cast<uint8_t *>(smem + Cfg::kYWords);
    uint8_t *const rscale = sscale + Cfg::kScalePieces * Cfg::kScalePiece;
    bool pieces = false, rpieces = false;
    int rbuf = 0;  // this tile's row-scale buffer
    int64_t pm0 = 0, pk0 = 0;
#pragma unroll 1
    while (sw.valid(at)) {
      cp_async_wait<S - 2>();  // this thread's copies of `at` have landed
      __syncthreads();
      issue_ahead(ring + (stage == 0 ? S - 1 : stage - 1) * Cfg::kStageVecs);  // (stage+S-1)%S
      if constexpr (Cfg::kStagedScales) {
        if (pieces) swiglu::store_staged_scales<Cfg>(p, pm0, pk0, sscale);
      }
      if constexpr (Cfg::kStagedRowScales) {
        if (rpieces) {
          swiglu::store_staged_row_scales<Cfg>(p, pm0, pk0, rscale + (rbuf ^ 1) * Cfg::kRowScaleBytes);
        }
      }
      int64_t m0, k0;
      sw.origin(at, m0, k0);
      const int pair = sw.pair_state(at);
      sw.advance(at);
      const uint4 *in_stage = ring + stage * Cfg::kStageVecs;
      // This tile's pieces: written in its phase 2 (column scales) or phase 1 (row scales),
      // stored after the next top barrier by the first threads before they reach the next phase
      // 2's opening barrier, the only way to the next rewrite of the column pieces; the row
      // scales alternate between two buffers, the next tile's phase 1 writing the other one.
      if constexpr (Cfg::kStagedScales) {
        pieces = swiglu::staged_scales_ok<Cfg>(p, m0, k0);
        pm0 = m0;
        pk0 = k0;
      }
      if constexpr (Cfg::kStagedRowScales) rpieces = pieces && swiglu::staged_row_scales_ok<Cfg>(p);
      uint8_t *const rs = rpieces ? rscale + rbuf * Cfg::kRowScaleBytes : nullptr;
#pragma unroll
      for (int pass = 0; pass < Cfg::kPasses; ++pass) {
        const int slot = threadIdx.x + pass * Cfg::kThreads;
        swiglu::SlotIn<Cfg> in;
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) swiglu::stage_row<Cfg>(in_stage, slot, r, in);
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) {
          swiglu::compute_row<Cfg>(p, m0, k0, slot, r, in, smem, rs);
        }
      }
      swiglu::phase2_tile<Cfg>(p, m0, k0, smem, pair, held, pieces ? sscale : nullptr);
      stage = stage == S - 1 ? 0 : stage + 1;  // no closing barrier: the next top one
      rbuf ^= 1;
    }
    if constexpr (Cfg::kStagedScales) {
      __syncthreads();
      if (pieces) swiglu::store_staged_scales<Cfg>(p, pm0, pk0, sscale);
    }
    if constexpr (Cfg::kStagedRowScales) {
      if (rpieces) {
        swiglu::store_staged_row_scales<Cfg>(p, pm0, pk0, rscale + (rbuf ^ 1) * Cfg::kRowScaleBytes);
      }
    }
    cp_async_wait<0>();  // only empty groups can be left; nothing in flight at exit
  } else if constexpr (Cfg::kPipeline == 0) {
    Pos at = walk.at(blockIdx.x);
    for (uint32_t tile = blockIdx.x; tile < tiles; tile += step) {
      int64_t m0, k0;
      walk.origin(at, m0, k0);
      walk.advance(at);

      // Phase 1: loads, sigmoid, Y; rowwise bytes; Y to shared memory for colwise.
#pragma unroll
      for (int pass = 0; pass < Cfg::kPasses; ++pass) {
        swiglu::phase1_slot<Cfg>(p, m0, k0, threadIdx.x + pass * Cfg::kThreads, smem);
      }

      swiglu::phase2_tile<Cfg>(p, m0, k0, smem);  // colwise bytes from the Y tile
    }
  } else {
    // Pipelined: the loads of the CTA's next tile are issued row by row as soon as the current
    // tile's row has been computed from the same registers, so they are in flight during the
    // rest of phase 1, phase 2 and the barriers (one input buffer per thread, no extra one).
    swiglu::SlotIn<Cfg> in[Cfg::kPasses];
    uint32_t tile = blockIdx.x;
    Pos at = walk.at(tile);
    int64_t m0 = 0, k0 = 0;
    if (tile < tiles) {
      walk.origin(at, m0, k0);
#pragma unroll
      for (int pass = 0; pass < Cfg::kPasses; ++pass) {
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) {
          swiglu::load_row<Cfg>(p, m0, k0, threadIdx.x + pass * Cfg::kThreads, r, in[pass]);
        }
      }
    }
    while (tile < tiles) {
      // tile + step < 2^32: tile < 2^31 and step <= tiles.
      const uint32_t next = tile + step;
      const bool has_next = next < tiles;
      walk.advance(at);
      int64_t nm0 = 0, nk0 = 0;
      if (has_next) walk.origin(at, nm0, nk0);

#pragma unroll
      for (int pass = 0; pass < Cfg::kPasses; ++pass) {
        const int slot = threadIdx.x + pass * Cfg::kThreads;
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) {
          swiglu::compute_row<Cfg>(p, m0, k0, slot, r, in[pass], smem);
          if (has_next) swiglu::load_row<Cfg>(p, nm0, nk0, slot, r, in[pass]);
        }
      }

      swiglu::phase2_tile<Cfg>(p, m0, k0, smem);
      tile = next;
      m0 = nm0;
      k0 = nk0;
    }
  }

  if constexpr (Cfg::kRowwise) {
    swiglu::zero_scale_padding(p.row_s, p.M, p.row_s_cols, p.row_s_rows_padded,
                               p.row_s_cols_padded);
  }
  if constexpr (Cfg::kColwise) {
    swiglu::zero_scale_padding(p.col_s, p.O, p.col_s_cols, p.col_s_rows_padded,
                               p.col_s_cols_padded);
  }
}

}  // namespace cake

// One manifest line -> one extern "C" kernel. The includer defines CAKE_KERNEL_NAME(sym), which
// pastes the architecture prefix (cake_<arch>_<sym>).
// Knobs after band_form are optional (pipeline, group_rows, col_lanes, slot_cols,
// row_from_tile; 0 when left out).
#ifndef CAKE_SWIGLU_PROGRAM
#define CAKE_SWIGLU_PROGRAM(sym, form, threads, min_ctas, tile_rows, tile_cols, rows_per_thread,  \
                            load_hint, sigmoid_form, band_form, ...)                            \
  extern "C" __global__ void __launch_bounds__(threads, min_ctas)                               \
      CAKE_KERNEL_NAME(sym)(const __grid_constant__ cake_swiglu_mxfp8_params p) {               \
    cake::swiglu_mxfp8_body<cake::SwigluCfg<form, threads, tile_rows, tile_cols,                \
                                            rows_per_thread, load_hint, sigmoid_form,          \
                                            band_form, ##__VA_ARGS__>>(p);                     \
  }
#endif
