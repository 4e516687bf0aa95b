// The arithmetic of the grouped SwiGLU forms that host and device share
// (docs/spec/swiglu-grouped.md): the bounds the host sizes buffers and grids with, the group
// table's size in shared memory, and the effective-offset rule. Plain C++17 without CUDA
// (CAKE_HD for nvcc), 64-bit.
#pragma once
#include <stdint.h>

#include "hd.h"

namespace cake {

constexpr int64_t kSwgMaxExperts = 1024;                      // CAKE_SWIGLU_GROUPED_MAX_EXPERTS
constexpr int64_t kSwgMaxTokens = (INT64_C(1) << 31) - (INT64_C(1) << 18);
constexpr int64_t kSwgScaleRows = 128;  // each expert's scales start on a 128-row boundary
constexpr int64_t kSwgMaxCols = INT64_C(1) << 31;  // O: every count within an expert fits 32 bits
// A grouped program's CTAs per SM are fitted to the shared memory of a group table of this many
// experts; a call with more has as many CTAs resident as fit (one at least, with 1024).
constexpr int64_t kSwgFitExperts = 256;

// Experts that can hold rows: at most one row each.
CAKE_HD constexpr int64_t swg_busy_experts(int64_t T, int64_t E) { return E < T ? E : T; }

// The most row tiles of `tile_rows` any split of T rows into E experts makes:
// sum_e ceil(n_e / tr) <= floor((T + (tr - 1) * min(E, T)) / tr).
CAKE_HD constexpr int64_t swg_row_tiles_bound(int64_t T, int64_t E, int64_t tile_rows) {
  return (T + (tile_rows - 1) * swg_busy_experts(T, E)) / tile_rows;
}

// P: the padded scale rows of every split (sum_e ceil(n_e / 128) * 128).
CAKE_HD constexpr int64_t swg_scale_rows_bound(int64_t T, int64_t E) {
  return swg_row_tiles_bound(T, E, kSwgScaleRows) * kSwgScaleRows;
}

// The group table in shared memory: three int32 arrays of E entries (effective end rows,
// cumulative row tiles, cumulative padded rows), then one word a warp of scan scratch, in
// 16-byte units.
CAKE_HD constexpr int64_t swg_table_bytes(int64_t E, int64_t threads) {
  return ((3 * E + threads / 32) * 4 + 15) / 16 * 16;
}

// The effective end row of an expert from the one before it (spec, "The rows of an expert").
CAKE_HD constexpr int64_t swg_effective_end(int64_t prev_end, int64_t offset, int64_t T) {
  return (offset > prev_end ? offset : prev_end) < T ? (offset > prev_end ? offset : prev_end)
                                                     : T;
}

}  // namespace cake
