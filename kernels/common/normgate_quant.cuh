// The norm-gate forward's quantized y (docs/spec/normgate.md, "Quantized y"): each lane of a row
// group holds the packed BF16 y of its 8 columns, exactly the words the plain forward stores,
// and quantizes them in the same pass with the family encoders: FP8 blockwise 1x128
// (fp8_block_quant.cuh: a 128-column block is 16 adjacent lanes) or MXFP8 (mxfp8_encode.h and
// swiglu_quantize.cuh: a 32-column block is 4 lanes). Lane pairs meet in one 16-byte store of
// E4M3 bytes; the MXFP8 scale bytes of 128 columns (4 of them, contiguous in the swizzled
// layout) meet in one 4-byte store.
//
// The quantized matrix is [q_rows, heads * d]: normgate row r = t * heads + h is its row t,
// columns [h d, (h + 1) d). Every lane of the warp calls quant_store (its shuffles use the full
// mask); rows past p.rows quantize zeros and store no data, and (MXFP8) write zero scales up to
// p.cover_rows: the padding rows of the swizzled scale matrix.
#pragma once
#include <stdint.h>

#include "fp8_block_quant.cuh"
#include "mxfp8_encode.h"
#include "normgate_params.h"
#include "swiglu_quantize.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// A program's quantized output (the quant knob): none, FP8 blockwise, MXFP8 (the values of
// cake_normgate_quant_format_t).
enum QuantFormat : int { kQuantNone = 0, kQuantFp8Block = 1, kQuantMxfp8 = 2 };

// Row t of the quantized matrix and head h of normgate row r. Rows are below 2^32 with
// heads > 1 (validation), so a 32-bit division.
__device__ __forceinline__ void quant_position(const cake_normgate_params &p, int64_t r,
                                               int64_t &t, int64_t &h) {
  if (p.heads == 1) {
    t = r;
    h = 0;
    return;
  }
  const uint32_t n = static_cast<uint32_t>(r), heads = static_cast<uint32_t>(p.heads);
  const uint32_t q = n / heads;
  t = q;
  h = n - q * heads;
}

// One lane's 8 values yv of normgate row `row`, columns [8 li, 8 li + 8). holds: the lane holds
// columns of the row (general programs pad a row's lanes to a power of two). tile_lanes: lanes
// of the row in its aligned run of 16 (min(16, group lanes)), over which an MXFP8 scale word
// gathers.
template <int kFormat>
__device__ __forceinline__ void quant_store(const cake_normgate_params &p, uint4 yv, int li,
                                            int tile_lanes, bool holds, int64_t row) {
  static_assert(kFormat == kQuantFp8Block || kFormat == kQuantMxfp8, "quantized formats");
  const uint32_t w[4] = {yv.x, yv.y, yv.z, yv.w};
  const bool valid = row < p.rows && holds;
  int64_t t, h;
  quant_position(p, row, t, h);
  uint32_t q[2];
  uint32_t a = fp8b_amax16(w);
  if constexpr (kFormat == kQuantFp8Block) {
    a = fp8b_group_max<16>(a);
    const fp8b::BlockScale bs = fp8b::block_scale(a & 0xFFFFu, p.scale_rule);
    fp8b_quantize_words(w, bs.r, q);
    if (valid && (li & 15) == 0) {
      const int64_t j = h * (p.d / fp8b::kBlockElems) + li / 16;  // the block's scale column
      static_cast<float *>(p.q_scale)[j * p.q_rows + t] = bs.s;
    }
  } else {
    a = fp8b_group_max<4>(a);
    const uint32_t s = valid ? mx::scale_from_amax_bits(a & 0xFFFFu) : 0u;
    swiglu::quantize_words(w, s, q);
    // Scale columns 4k .. 4k+3 of a row are 4 contiguous bytes: byte (li / 4) % 4 of the word
    // of lanes [16k, 16k + 16). Lanes past the row's end (and rows past the end) give 0x00, the
    // padding of the layout.
    uint32_t word = s << (8 * ((li >> 2) & 3));
    if (tile_lanes >= 8) word |= __shfl_xor_sync(0xFFFFFFFFu, word, 4);
    if (tile_lanes >= 16) word |= __shfl_xor_sync(0xFFFFFFFFu, word, 8);
    if (row < p.cover_rows && holds && (li & 15) == 0) {
      const int64_t c = h * (p.d / mx::kBlockElems) + li / 4;
      *reinterpret_cast<uint32_t *>(static_cast<uint8_t *>(p.q_scale) +
                                    mx::swizzle_offset(t, c, p.s_cols_padded)) = word;
    }
  }
  // The odd lane's 8 bytes join the even lane's: one 16-byte store a lane pair (a row holds an
  // even number of lanes: d is a multiple of 32).
  const uint32_t n0 = __shfl_down_sync(0xFFFFFFFFu, q[0], 1);
  const uint32_t n1 = __shfl_down_sync(0xFFFFFFFFu, q[1], 1);
  if (valid && (li & 1) == 0) {
    store16<kStoreStreaming>(p.q + row * p.d + li * 8, make_uint4(q[0], q[1], n0, n1));
  }
}

}  // namespace ng
}  // namespace cake
