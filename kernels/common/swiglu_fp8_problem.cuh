// SwiGLU + FP8 blockwise: the problem the kernel body walks, as swiglu_mxfp8_problem.cuh is for
// MXFP8. Ungrouped, the parameters' own tiles; grouped (docs/spec/swiglu-grouped.md), every
// expert's row tiles, each the tail program's tile of its expert's view: a problem of n_e rows
// whose pointers start at the expert's rows, its row_s matrix (element p[e] * O/128), its
// [O, n_e] col_q (byte c[e-1] * O) and its col_s matrix (element p[e] / 128 * O), which are
// exactly the buffers the ungrouped call of those rows writes.
#pragma once
#include <stdint.h>

#include "fp8_blockwise_encode.h"
#include "swiglu_fp8_params.h"
#include "swiglu_groups.cuh"
#include "swiglu_grouped_params.h"

namespace cake {
namespace swiglu_fp8 {

template <class Cfg>
using PlainProblem = swg::PlainTiles<cake_swiglu_fp8_params>;

template <class Cfg>
struct GroupedProblem : swg::GroupedTiles<cake_swiglu_fp8_params, Cfg::kTileRows> {
  using Tiles = swg::GroupedTiles<cake_swiglu_fp8_params, Cfg::kTileRows>;
  using Tiles::p;
  using Tiles::t;
  __device__ __forceinline__ explicit GroupedProblem(const cake_swiglu_fp8_grouped_params &g)
      : Tiles(g.base, g.groups) {}
  // Expert e's problem: its rows of in, grad and row_q; its row_s, col_q and col_s matrices.
  __device__ __forceinline__ cake_swiglu_fp8_params view(int32_t e) const {
    const swg::ExpertRows x = t.rows(e);
    cake_swiglu_fp8_params v = p;
    v.M = x.rows;
    v.in = p.in + x.start * 2 * p.K;
    if constexpr (Cfg::kBackward) v.grad = p.grad + x.start * p.K;
    if constexpr (Cfg::kVariant) {  // one weight (and dp) a token
      if (p.var.p != nullptr) v.var.p = p.var.p + x.start;
      if (p.var.dp != nullptr) v.var.dp = p.var.dp + x.start;
    }
    if constexpr (Cfg::kRowwise) {
      v.row_q = p.row_q + x.start * p.O;
      v.row_s = p.row_s + x.pad_start * (p.O / fp8b::kBlockElems);
    }
    if constexpr (Cfg::kColwise) {
      v.col_q = p.col_q + x.start * p.O;
      v.col_s = p.col_s + (x.pad_start / fp8b::kBlockElems) * p.O;
    }
    return v;
  }
};

}  // namespace swiglu_fp8
}  // namespace cake
