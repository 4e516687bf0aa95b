// SwiGLU + MXFP8 staged inputs (pipeline >= 2): the cp.async copies of a tile's operands into a
// stage of the ring in dynamic shared memory, and phase 1's reads of a slot row from it.
#pragma once
#include <stdint.h>

#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_phase1.cuh"
#include "swiglu_smem_layout.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

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

// Issue the copies of the inputs of the tile at (m0, k0) into a stage and commit them as one group
// (empty when `valid` is false, past the last tile, so every thread's group count stays
// uniform). The copies of a tile are the 16-byte vectors of operand-rows (gate rows, up rows,
// grad rows), kRowVecs a row; the lanes of a warp take consecutive vectors of the same rows.
// T is a multiple of kRowVecs and T/kRowVecs divides the tile's rows (sw_stage_rows_ok), so
// thread tid copies vector v0 of rows q0, q0 + T/kRowVecs, ... of each operand: each copy is a
// pointer step and a fixed shared-memory offset (the swap bit repeats every T/kRowVecs rows, T
// being a multiple of 16), with no bounds check when the whole tile is inside. Outside the
// problem: zero-filled.
template <class Cfg>
__device__ __forceinline__ void stage_issue(const cake_swiglu_mxfp8_params &p, bool valid,
                                            int64_t m0, int64_t k0, uint4 *stage) {
  constexpr int T = Cfg::kThreads, RV = Cfg::kRowVecs, TR = Cfg::kTileRows;
  if (valid) {
    const int64_t K = p.K;
    const int tid = threadIdx.x;
    constexpr int kRowStep = T / RV;
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
  }
  cp_async_commit();
}

}  // namespace swiglu
}  // namespace cake
