// SwiGLU + MXFP8: the problem a schedule walks. Ungrouped, the parameters' own tiles. Grouped
// (docs/spec/swiglu-grouped.md), the row tiles of every expert: a tile found in the group table
// (swiglu_groups.cuh) is the ungrouped program's tile of its expert's view, a problem of n_e
// rows whose pointers start at the expert's rows and scales, so the schedules' steps run
// unchanged on it. A schedule asks the problem for its tile count, the parameters of a tile's
// expert (view) and, at the end, the scale padding (finish); a grouped problem also for the
// expert of a tile and the row offset within it (locate, behind `if constexpr (kGrouped)`). The
// ungrouped problem answers with the parameters themselves, so its programs' SASS is what the
// schedules compiled to before grouping existed.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "swiglu_groups.cuh"
#include "swiglu_grouped_params.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_scales.cuh"

namespace cake {
namespace swiglu {

template <class Cfg>
struct PlainProblem : swg::PlainTiles<cake_swiglu_mxfp8_params> {
  __device__ __forceinline__ explicit PlainProblem(const cake_swiglu_mxfp8_params &p_)
      : swg::PlainTiles<cake_swiglu_mxfp8_params>(p_) {}
  __device__ __forceinline__ void finish() const { zero_padding<Cfg>(p); }
};

// The group table's row tiles are the walk's row units: tiles, or pairs of them
// (swiglu_grouped_walk.cuh).
template <class Cfg>
struct GroupedProblem
    : swg::GroupedTiles<cake_swiglu_mxfp8_params, Cfg::kTileRows * Cfg::kPairRows> {
  using Tiles = swg::GroupedTiles<cake_swiglu_mxfp8_params, Cfg::kTileRows * Cfg::kPairRows>;
  using Tiles::p;
  using Tiles::t;
  __device__ __forceinline__ explicit GroupedProblem(const cake_swiglu_mxfp8_grouped_params &g)
      : Tiles(g.base, g.groups) {}
  // Expert e's problem: its rows of in, grad and row_q; its row_s tiles from padded row p[e];
  // its columns of the [O, T] col_q (col_ld stays T); its col_s tiles from column p[e] / 32.
  __device__ __forceinline__ cake_swiglu_mxfp8_params view(int32_t e) const {
    const swg::ExpertRows x = t.rows(e);
    cake_swiglu_mxfp8_params v = p;
    const int64_t n = x.rows;
    v.M = n;
    v.in = p.in + x.start * 2 * p.K;
    if constexpr (Cfg::kBackward) v.grad = p.grad + x.start * p.K;
    if constexpr (Cfg::kVariant) {  // one weight (and dp) a token
      if (p.var.p != nullptr) v.var.p = p.var.p + x.start;
      if (p.var.dp != nullptr) v.var.dp = p.var.dp + x.start;
    }
    if constexpr (Cfg::kRowwise) {
      v.row_q = p.row_q + x.start * p.O;
      v.row_s = p.row_s + x.pad_start * p.row_s_cols_padded;
      v.row_s_rows_padded = mx::scale_rows_padded(n);
    }
    if constexpr (Cfg::kColwise) {
      v.col_q = p.col_q + x.start;
      v.col_s = p.col_s + (x.pad_start / mx::kBlockElems) * p.col_s_rows_padded;
      v.col_s_cols = (n + mx::kBlockElems - 1) / mx::kBlockElems;
      v.col_s_cols_padded = mx::scale_cols_padded(v.col_s_cols);
    }
    return v;
  }
  // Each expert's scale padding, expert e by CTA e mod grid (an expert with no rows has none).
  __device__ __forceinline__ void finish() const {
    for (int32_t e = (int32_t)blockIdx.x; e < t.experts; e += (int32_t)gridDim.x) {
      if (t.rows(e).rows == 0) continue;
      const cake_swiglu_mxfp8_params v = view(e);
      if constexpr (Cfg::kRowwise) {
        zero_scale_padding_cta(v.row_s, v.M, v.row_s_cols, v.row_s_rows_padded,
                               v.row_s_cols_padded);
      }
      if constexpr (Cfg::kColwise) {
        zero_scale_padding_cta(v.col_s, v.O, v.col_s_cols, v.col_s_rows_padded,
                               v.col_s_cols_padded);
      }
    }
  }
};

}  // namespace swiglu
}  // namespace cake
