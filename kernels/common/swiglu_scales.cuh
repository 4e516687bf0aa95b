// SwiGLU + MXFP8 scale stores outside the quantize steps: the staged programs' scale pieces
// (collected in shared memory by phase 1 / phase 2, stored whole after the next tile's top
// barrier), and the zero bytes of a swizzled scale matrix's padding.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"

namespace cake {
namespace swiglu {

namespace mx = cake::mx;


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

// Zero the padding of one expert's swizzled scale matrix (grouped forms), by the threads of one
// CTA: rows [rows, rows_padded) a 32-bit word (four columns of a row) a store, then columns
// [cols, cols_padded) of rows [0, rows) a byte a store. Every count fits 32 bits (the host's
// rules on T and K).
__device__ __forceinline__ void zero_scale_padding_cta(uint8_t *s, int64_t rows, int64_t cols,
                                                       int64_t rows_padded, int64_t cols_padded) {
  const uint32_t pad_rows = (uint32_t)(rows_padded - rows);
  const uint32_t n_below = pad_rows * (uint32_t)(cols_padded / 4);
  for (uint32_t i = threadIdx.x; i < n_below; i += blockDim.x) {
    const uint32_t g = i / pad_rows, r = (uint32_t)rows + i % pad_rows;
    *reinterpret_cast<uint32_t *>(s + mx::swizzle_offset(r, 4 * g, cols_padded)) = 0u;
  }
  if (cols_padded == cols) return;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    for (int64_t c = cols; c < cols_padded; ++c) s[mx::swizzle_offset(r, c, cols_padded)] = 0;
  }
}

// Zero the padding of the program's scale matrices (none with M, K multiples of 128).
template <class Cfg>
__device__ __forceinline__ void zero_padding(const cake_swiglu_mxfp8_params &p) {
  if constexpr (Cfg::kRowwise) {
    zero_scale_padding(p.row_s, p.M, p.row_s_cols, p.row_s_rows_padded, p.row_s_cols_padded);
  }
  if constexpr (Cfg::kColwise) {
    zero_scale_padding(p.col_s, p.O, p.col_s_cols, p.col_s_rows_padded, p.col_s_cols_padded);
  }
}

}  // namespace swiglu
}  // namespace cake
