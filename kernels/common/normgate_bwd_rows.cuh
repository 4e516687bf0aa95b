// Normgate backward, one row: the arithmetic every backward program shares (tuned and general),
// dx and dz of a lane's 8 columns and the row's dw terms a*n.
#pragma once
#include <stdint.h>

#include "normgate_fwd.cuh"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_wide.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// What a row's backward keeps per column between its two passes (the rest is recomputed:
// a = dy*z*s and g = a*w cost two multiplies, a register costs occupancy).
struct RowGrad {
  float n[8], sg[8];
};

__device__ __forceinline__ float grad_a(float dy, float z, float sg) {
  return __fmul_rn(dy, __fmul_rn(z, sg));
}

__device__ __forceinline__ float grad_leaf(const float (&xf)[8], const float (&zf)[8],
                                           const float (&dyf)[8], const float (&wf)[8], float rstd,
                                           RowGrad &r) {
  float leaf = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    r.n[i] = __fmul_rn(xf[i], rstd);
    r.sg[i] = sigmoid(zf[i]);
    const float g = __fmul_rn(grad_a(dyf[i], zf[i], r.sg[i]), wf[i]);
    leaf = i == 0 ? __fmul_rn(g, r.n[i]) : __fmaf_rn(g, r.n[i], leaf);
  }
  return leaf;
}

// dx, dz of one lane's 8 columns; t = a*n, this row's dw contribution.
__device__ __forceinline__ void grad_out(const float (&zf)[8], const float (&dyf)[8],
                                         const float (&wf)[8], float rstd, float mean_gn,
                                         const RowGrad &r, float (&dxf)[8], float (&dzf)[8],
                                         float (&t)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float a = grad_a(dyf[i], zf[i], r.sg[i]);
    const float g = __fmul_rn(a, wf[i]);
    dxf[i] = __fmul_rn(__fmaf_rn(-r.n[i], mean_gn, g), rstd);
    const float h = __fmul_rn(r.n[i], wf[i]);
    const float q = __fmaf_rn(zf[i], __fsub_rn(1.0f, r.sg[i]), 1.0f);
    dzf[i] = __fmul_rn(__fmul_rn(__fmul_rn(dyf[i], h), r.sg[i]), q);
    t[i] = __fmul_rn(a, r.n[i]);
  }
}

// mean(g*n) from the row's tree sum; +0.0f makes an exact zero +0 in every program.
__device__ __forceinline__ float mean_of(float sum, float inv_d) {
  return __fadd_rn(__fmul_rn(sum, inv_d), 0.0f);
}

// One row's backward for one lane's 8 columns: dx, dz stored at dx_at, dz_at (the lane's
// columns of the row) when the row is valid, t = a*n returned (the caller zeroes it for rows
// past the end). Returns whether the row is wide (normgate_wide.cuh): then nothing is stored
// and the caller computes the lane's columns in FP64 (wide_backward_to) where its registers
// allow.
template <int kLanes>
__device__ __forceinline__ bool row_backward(const cake_normgate_params &p, uint16_t *dx_at,
                                             uint16_t *dz_at, bool valid, uint4 xv, uint4 zv,
                                             uint4 dv, const float (&wf)[8], bool w_wide,
                                             float inv_d, float (&t)[8]) {
  float xf[8], zf[8], dyf[8], dxf[8], dzf[8];
  unpack8(xv, xf);
  unpack8(zv, zf);
  unpack8(dv, dyf);
  float rstd;
  bool in_range;
  group_row_stats<kLanes>(xf, inv_d, p.eps, group_mask<kLanes>(),
                          w_wide || bf16x8_wide(xv) || bf16x8_wide(zv) || bf16x8_wide(dv), rstd,
                          in_range);
  RowGrad rg;
  const float leaf = grad_leaf(xf, zf, dyf, wf, rstd, rg);
  const float m = mean_of(group_sum<kLanes>(leaf, group_mask<kLanes>()), inv_d);
  grad_out(zf, dyf, wf, rstd, m, rg, dxf, dzf, t);
  const bool wide = valid && !in_range;
  if (valid && !wide) {
    store16<kStoreStreaming>(dx_at, pack8(dxf));
    store16<kStoreStreaming>(dz_at, pack8(dzf));
  }
  return wide;
}

}  // namespace ng
}  // namespace cake
