// Normgate backward bodies: dx, dz (BF16) and the dw reduction of either package.
//
// Per row, recomputed from x and z (nothing saved by the forward): s = sigmoid(z), n = x*rstd,
// a = dy*z*s, g = a*w, dz = ((dy*n*w)*s) * (1 + z*(1-s)), dx = rstd*(g - n*mean(g*n)),
// dw += a*n. The two row sums (x^2 and g*n) use the canonical tree of normgate_math.cuh, so
// every program gives the same dx and dz bits.
//
// Schedule: a group of lanes owns one dw chunk (CAKE_NG_DW_CHUNK_ROWS consecutive rows) and
// walks its rows in order, kRowsPerGroup rows of loads in flight, adding a*n into FP32 in row
// order (the chunk's canonical sum). A CTA of G groups takes G consecutive chunks (a "block");
// blocks are strided over the grid.
//  - tuned (D = 64, 128, 256): a group is D/8 lanes, one 16-byte vector per tensor and row.
//  - general (any D): the whole CTA is one group; each thread holds up to kGeneralVec vectors of
//    a row; the row sums go through the shared-memory tree.
// Deterministic: the block's G chunk sums are added in FP64 as a tree in shared memory and
// published to the workspace tree (normgate_dw.cuh). Non-deterministic: each CTA adds its
// chunk sums in FP64 in any order, then one FP64 atomic per column; a ticket finalises.
#pragma once
#include <stdint.h>

#include "normgate_dw.cuh"
#include "program_desc.h"
#include "normgate_fwd.cuh"

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

// kScaled: the row was rescaled (s != 1); with s == 1 both forms give the same bits, the
// unscaled one with one multiply fewer per value.
template <bool kScaled = true>
__device__ __forceinline__ float grad_leaf(const float (&xf)[8], const float (&zf)[8],
                                           const float (&dyf)[8], const float (&wf)[8], float s,
                                           float rstd, RowGrad &r) {
  float leaf = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    r.n[i] = kScaled ? __fmul_rn(__fmul_rn(xf[i], s), rstd) : __fmul_rn(xf[i], rstd);
    r.sg[i] = sigmoid(zf[i]);
    const float g = __fmul_rn(grad_a(dyf[i], zf[i], r.sg[i]), wf[i]);
    leaf = i == 0 ? __fmul_rn(g, r.n[i]) : __fmaf_rn(g, r.n[i], leaf);
  }
  return leaf;
}

// dx, dz of one lane's 8 columns; t = a*n, this row's dw contribution.
template <bool kScaled = true>
__device__ __forceinline__ void grad_out(const float (&zf)[8], const float (&dyf)[8],
                                         const float (&wf)[8], float s, float rstd, float mean_gn,
                                         const RowGrad &r, float (&dxf)[8], float (&dzf)[8],
                                         float (&t)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const float a = grad_a(dyf[i], zf[i], r.sg[i]);
    const float g = __fmul_rn(a, wf[i]);
    const float dxs = __fmul_rn(__fmaf_rn(-r.n[i], mean_gn, g), rstd);
    dxf[i] = kScaled ? __fmul_rn(dxs, s) : dxs;
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

template <class Cfg>
__device__ __forceinline__ void bwd_tuned(const cake_normgate_params &p) {
  constexpr int kD = Cfg::kD;
  constexpr int kLanes = kD / 8;
  constexpr int kGroups = Cfg::kThreads / kLanes;
  constexpr int kR = Cfg::kRowsPerGroup;
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  static_assert(kChunk % kR == 0, "rows in flight divide the chunk");
  static_assert((kGroups & (kGroups - 1)) == 0, "groups per CTA: a power of two");
  __shared__ double red[kGroups][kD];  // chunk sums of the block, FP64
  __shared__ int flag;

  const int lane = threadIdx.x % kLanes;
  const int group = threadIdx.x / kLanes;
  const unsigned mask = group_mask<kLanes>();
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  float wf[8];
  unpack8(load16<kLoadDefault>(p.w + lane * 8), wf);
  const float inv_d = inverse_width(kD);
  if constexpr (!kDet) {  // each group's FP64 column sums live in its own slot of `red`
#pragma unroll
    for (int i = 0; i < 8; ++i) red[group][lane * 8 + i] = 0.0;
  }
  const cake_ng_tree tree = cake_ng_tree_of(p.rows, kD, kGroups);

  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    const int64_t row_base = (b * kGroups + group) * kChunk;
    float acc[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] = 0.0f;
    for (int r0 = 0; r0 < kChunk; r0 += kR) {
      uint4 xv[kR], zv[kR], dv[kR];
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        const int64_t row = row_base + r0 + r;
        if (row < p.rows) {
          xv[r] = load16<kLoadDefault>(p.x + row * p.x_stride + lane * 8);
          zv[r] = load16<kLoadDefault>(p.z + row * p.z_stride + lane * 8);
          dv[r] = load16<kLoadDefault>(p.dy + row * p.dy_stride + lane * 8);
        } else {
          xv[r] = zv[r] = dv[r] = make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        const int64_t row = row_base + r0 + r;
        float xf[8], zf[8], dyf[8], dxf[8], dzf[8], t[8];
        unpack8(xv[r], xf);
        unpack8(zv[r], zf);
        unpack8(dv[r], dyf);
        float s, rstd;
        group_row_stats<kLanes>(xf, inv_d, p.eps, mask, s, rstd);
        RowGrad rg;
        if (__all_sync(0xffffffffu, s == 1.0f)) {  // every row of the warp unscaled: the lean form
          const float leaf = grad_leaf<false>(xf, zf, dyf, wf, s, rstd, rg);
          const float m = mean_of(group_sum<kLanes>(leaf, mask), inv_d);
          grad_out<false>(zf, dyf, wf, s, rstd, m, rg, dxf, dzf, t);
        } else {
          const float leaf = grad_leaf<true>(xf, zf, dyf, wf, s, rstd, rg);
          const float m = mean_of(group_sum<kLanes>(leaf, mask), inv_d);
          grad_out<true>(zf, dyf, wf, s, rstd, m, rg, dxf, dzf, t);
        }
        const bool valid = row < p.rows;
        if (valid) {
          store16<kStoreStreaming>(p.dx + row * p.dx_stride + lane * 8, pack8(dxf));
          store16<kStoreStreaming>(p.dz + row * p.dz_stride + lane * 8, pack8(dzf));
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float ti = valid ? t[i] : 0.0f;  // rows past the end add +0
          acc[i] = (r0 + r == 0) ? ti : __fadd_rn(acc[i], ti);
        }
      }
    }
    if (!want_dw) continue;
    if constexpr (kDet) {
#pragma unroll
      for (int i = 0; i < 8; ++i) red[group][lane * 8 + i] = static_cast<double>(acc[i]);
      __syncthreads();
      for (int h = 1; h < kGroups; h <<= 1) {
        for (int idx = threadIdx.x; idx < (kGroups / (2 * h)) * kD; idx += Cfg::kThreads) {
          const int gi = (idx / kD) * 2 * h;
          const int col = idx % kD;
          red[gi][col] = __dadd_rn(red[gi][col], red[gi + h][col]);
        }
        __syncthreads();
      }
      double *node = tree_node(p, cake_ng_level_of(&tree, 0), b);
      for (int col = threadIdx.x; col < kD; col += Cfg::kThreads) node[col] = red[0][col];
      tree_publish(p, tree, b, &flag);
      __syncthreads();
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        red[group][lane * 8 + i] = __dadd_rn(red[group][lane * 8 + i], static_cast<double>(acc[i]));
      }
    }
  }
  if constexpr (!kDet) {
    if (!want_dw) return;
    __syncthreads();
    for (int col = threadIdx.x; col < kD; col += Cfg::kThreads) {
      double v = red[0][col];
      for (int gi = 1; gi < kGroups; ++gi) v = __dadd_rn(v, red[gi][col]);
      nondet_add(p, col, v);
    }
    nondet_finish(p, &flag);
  }
}

constexpr int kGeneralVec = 2;  // vectors of 8 columns per thread and row: D <= 8 * 2 * threads

// Canonical tree over a row's leaves in shared memory, the whole CTA cooperating.
__device__ __forceinline__ float cta_tree(float *leaves, const float (&mine)[kGeneralVec], int n,
                                          int p2) {
#pragma unroll
  for (int j = 0; j < kGeneralVec; ++j) {
    const int c = threadIdx.x + j * blockDim.x;
    if (c < p2) leaves[c] = c < n ? mine[j] : 0.0f;
  }
  __syncthreads();
  for (int h = 1; h < p2; h <<= 1) {
    for (int c = threadIdx.x * 2 * h; c < p2; c += blockDim.x * 2 * h) leaves[c] = __fadd_rn(leaves[c], leaves[c + h]);
    __syncthreads();
  }
  const float total = leaves[0];
  __syncthreads();
  return total;
}

__device__ __forceinline__ float cta_max(float *scratch, float v) {
  v = group_max<32>(v, 0xffffffffu);
  if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
  __syncthreads();
  float m = 0.0f;
  for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) m = fmaxf(m, scratch[i]);
  __syncthreads();
  return m;
}

// The general program: the whole CTA is one group and walks its chunk's rows one at a time;
// the per-column terms are recomputed for the outputs instead of held, to stay in registers.
template <class Cfg>
__device__ __forceinline__ void bwd_general(const cake_normgate_params &p) {
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  constexpr int kMaxLeaves = kGeneralVec * Cfg::kThreads;
  static_assert(kMaxLeaves * 8 >= 8192, "general program covers D <= 8192");
  __shared__ float leaves[kMaxLeaves];
  __shared__ float scratch[32];
  __shared__ int flag;

  const int n = p.d / 8;
  int p2 = 1;
  while (p2 < n) p2 <<= 1;
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  const cake_ng_tree tree = cake_ng_tree_of(p.rows, p.d, 1);
  const float inv_d = inverse_width(p.d);

  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    const int64_t row_base = b * kChunk;
    float acc[kGeneralVec][8];
    for (int r = 0; r < kChunk; ++r) {
      const int64_t row = row_base + r;
      const bool valid = row < p.rows;  // CTA-uniform
      float xf[kGeneralVec][8], zf[kGeneralVec][8], dyf[kGeneralVec][8], wf[kGeneralVec][8];
      float sq[kGeneralVec], amax = 0.0f;
#pragma unroll
      for (int j = 0; j < kGeneralVec; ++j) {
        const int c = threadIdx.x + j * Cfg::kThreads;
        const bool have = valid && c < n;
        const uint4 zero = make_uint4(0, 0, 0, 0);
        unpack8(have ? load16<kLoadDefault>(p.x + row * p.x_stride + c * 8) : zero, xf[j]);
        unpack8(have ? load16<kLoadDefault>(p.z + row * p.z_stride + c * 8) : zero, zf[j]);
        unpack8(have ? load16<kLoadDefault>(p.dy + row * p.dy_stride + c * 8) : zero, dyf[j]);
        unpack8(c < n ? load16<kLoadDefault>(p.w + c * 8) : zero, wf[j]);
        sq[j] = chunk_sumsq<false>(xf[j], 1.0f);
        amax = fmaxf(amax, chunk_absmax(xf[j]));
      }
      float ss = cta_tree(leaves, sq, n, p2);
      float s = 1.0f, eps = p.eps;
      if (isinf(ss)) {  // CTA-uniform
        const float m = cta_max(scratch, amax);
        if (isfinite(m)) {
          s = overflow_scale(m);
#pragma unroll
          for (int j = 0; j < kGeneralVec; ++j) sq[j] = chunk_sumsq<true>(xf[j], s);
          ss = cta_tree(leaves, sq, n, p2);
          eps = scaled_eps(p.eps, s);
        }
      }
      const float rstd = rstd_from_sumsq(ss, inv_d, eps);
      float gl[kGeneralVec];
#pragma unroll
      for (int j = 0; j < kGeneralVec; ++j) {
        RowGrad rg;
        gl[j] = grad_leaf(xf[j], zf[j], dyf[j], wf[j], s, rstd, rg);
      }
      const float m = mean_of(cta_tree(leaves, gl, n, p2), inv_d);
#pragma unroll
      for (int j = 0; j < kGeneralVec; ++j) {
        const int c = threadIdx.x + j * Cfg::kThreads;
        RowGrad rg;
        grad_leaf(xf[j], zf[j], dyf[j], wf[j], s, rstd, rg);
        float dxf[8], dzf[8], t[8];
        grad_out(zf[j], dyf[j], wf[j], s, rstd, m, rg, dxf, dzf, t);
        if (valid && c < n) {
          store16<kStoreStreaming>(p.dx + row * p.dx_stride + c * 8, pack8(dxf));
          store16<kStoreStreaming>(p.dz + row * p.dz_stride + c * 8, pack8(dzf));
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float ti = valid ? t[i] : 0.0f;
          acc[j][i] = r == 0 ? ti : __fadd_rn(acc[j][i], ti);
        }
      }
    }
    if (!want_dw) continue;
#pragma unroll
    for (int j = 0; j < kGeneralVec; ++j) {
      const int c = threadIdx.x + j * Cfg::kThreads;
      if (c >= n) continue;
      if constexpr (kDet) {
        double *node = tree_node(p, cake_ng_level_of(&tree, 0), b);
#pragma unroll
        for (int i = 0; i < 8; ++i) node[c * 8 + i] = static_cast<double>(acc[j][i]);
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) nondet_add(p, c * 8 + i, static_cast<double>(acc[j][i]));
      }
    }
    if constexpr (kDet) {
      tree_publish(p, tree, b, &flag);
      __syncthreads();
    }
  }
  if constexpr (!kDet) {
    if (want_dw) nondet_finish(p, &flag);
  }
}

}  // namespace ng

template <class Cfg>
__device__ __forceinline__ void normgate_bwd(const cake_normgate_params &p) {
  if constexpr (Cfg::kD == 0) {
    ng::bwd_general<Cfg>(p);
  } else {
    ng::bwd_tuned<Cfg>(p);
  }
}

}  // namespace cake
