// SwiGLU + MXFP8 phase 2 (colwise and both forms): the colwise bytes from the Y tile, an item
// (two adjacent output columns x 16 rows) a thread, written as 16-byte pieces of the transposed
// col_q; with row_from_tile also the rowwise bytes from the Y tile, a 32-column block an item.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "swiglu_col_runs.cuh"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_quantize.cuh"
#include "swiglu_smem_layout.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

namespace mx = cake::mx;

// ---- phase 2: one item (2 adjacent output columns x 16 rows of the tile) ----
// The col_q pieces of one item of the first tile of a pair: column o's and o+1's 16 rows.
struct ColPieces {
  uint4 lo, hi;
};

// The E4M3 bytes of an item's two columns: column w's multiplier in the low half of k2,
// column w+1's in the high half, so one BF16 product a word scales both columns' values.
__device__ __forceinline__ ColPieces quantize_pieces(const uint32_t (&wv)[16], uint32_t s_lo,
                                                     uint32_t s_hi) {
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
  return ColPieces{make_uint4(q_lo[0], q_lo[1], q_lo[2], q_lo[3]),
                   make_uint4(q_hi[0], q_hi[1], q_hi[2], q_hi[3])};
}

// Of the lane pair of a 32-row block, h = 0 writes column o's scale byte, h = 1 column o+1's:
// into its piece (staged scales) or straight to col_s.
template <class Cfg>
__device__ __forceinline__ void store_col_scale(const cake_swiglu_mxfp8_params &p, int64_t o,
                                                int64_t mb, int h, bool dup, int w, int blk,
                                                uint32_t s_lo, uint32_t s_hi, uint8_t *sscale) {
  const uint8_t scale = (uint8_t)(h ? s_hi : s_lo);
  if (Cfg::kStagedScales && sscale != nullptr) {
    const int ro = (dup ? w - Cfg::kTileCols : w) + h;  // column within its range
    sscale[((dup ? 32 : 0) + (ro & 31)) * Cfg::kScalePiece + (ro >> 5) * 4 + blk] = scale;
  } else {
    p.col_s[mx::swizzle_offset(o + h, mb >> 5, p.col_s_cols_padded)] = scale;
  }
}

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
  // are read once and held across the shuffle (a second read per word measured no faster on the
  // H200, and every program still fits its registers without spills).
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
  // col_q's row stride: M (a grouped view's is T; an ungrouped program reads M, as it always
  // has, and M == col_ld there).
  const int64_t ld = Cfg::kGrouped ? p.col_ld : p.M;
  uint8_t *const col = p.col_q + o * ld + mb + h * 16;  // column o, this item's 16 rows
  // The upper tile of a pair is whole (a lower tile follows it), so its pieces exist for every
  // item inside K, whether or not this (possibly partial) lower tile reaches the item's rows.
  if (Cfg::kPairRows == 2 && pair == 2 && kk < p.K) {
    store16(col - Cfg::kTileRows, held.lo);
    store16(col + ld - Cfg::kTileRows, held.hi);
  }
  if constexpr (Cfg::kColRuns) {
    // Every lane quantizes (a lane past K or the expert's rows stores nothing) and, unless the
    // whole warp's pieces are whole and aligned, joins the runs' shuffle.
    const bool in = kk < p.K && mb < p.M;
    const ColPieces q = quantize_pieces(wv, s_lo, s_hi);
    if (Cfg::kPairRows == 2 && pair == 1) {
      if (in) held = q;
    } else {
      const int64_t valid = in ? p.M - (mb + h * 16) : 0;
      const bool plain = valid >= 16 &&
                         ((reinterpret_cast<uintptr_t>(col) | (uintptr_t)ld) & 15) == 0;
      if (__all_sync(0xFFFFFFFFu, plain || !in)) {
        if (in) {
          store16(col, q.lo);
          store16(col + ld, q.hi);
        }
      } else {
        store_col_runs<L>(col, ld, q.lo, q.hi, valid, item % L);
      }
    }
    if (in) store_col_scale<Cfg>(p, o, mb, h, dup, w, blk, s_lo, s_hi, sscale);
  } else if (kk < p.K && mb < p.M) {
    const ColPieces q = quantize_pieces(wv, s_lo, s_hi);
    const uint4 lo = q.lo, hi = q.hi;
    if (Cfg::kPairRows == 2 && pair == 1) {
      held.lo = lo;
      held.hi = hi;
    } else if (!Cfg::kGrouped ||
               (mb + h * 16 + 16 <= p.M &&
                ((reinterpret_cast<uintptr_t>(col) | (uintptr_t)ld) & 15) == 0)) {
      store16(col, lo);
      store16(col + ld, hi);
    } else {
      // Grouped: the item's 16 rows pass the expert's end (a partial block), or start at a row
      // of col_q that is not 16-byte aligned (T or the expert's first row not a multiple of
      // 16): the bytes of its rows one by one.
      const int64_t n = p.M - (mb + h * 16);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        if (i < n) {
          const int w4 = i >> 2, sh = 8 * (i & 3);
          const uint32_t wl = w4 == 0 ? lo.x : w4 == 1 ? lo.y : w4 == 2 ? lo.z : lo.w;
          const uint32_t wh = w4 == 0 ? hi.x : w4 == 1 ? hi.y : w4 == 2 ? hi.z : hi.w;
          col[i] = (uint8_t)(wl >> sh);
          col[ld + i] = (uint8_t)(wh >> sh);
        }
      }
    }
    store_col_scale<Cfg>(p, o, mb, h, dup, w, blk, s_lo, s_hi, sscale);
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

}  // namespace swiglu
}  // namespace cake
