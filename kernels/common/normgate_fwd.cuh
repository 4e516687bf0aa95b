// Normgate forward bodies: y = bf16(rmsnorm(x) * w * silu(z)).
//
// Versions (each a program knob set, all computing the same bits; see normgate_math.cuh):
//  - tuned (D = 64, 128, 256): a group of D/8 lanes holds one row, each lane one 16-byte
//    vector of x and z; kRowsPerGroup rows are loaded before the first is used, so each lane
//    has 2*kRowsPerGroup 16-byte loads in flight. Consecutive groups take consecutive rows, so
//    a warp reads one contiguous span when rows are packed.
//  - general (D = 0 in the manifest: any multiple of 8 up to 8192): normgate_general.cuh.
// Every program loops over row blocks with stride gridDim.x, so the grid is a launch choice
// (one block per CTA, or a persistent grid). With kPrefetch > 0 thread 0 also warms L2 with
// one bulk prefetch per tensor for the CTA's blocks kPrefetch trips ahead, when x and z rows
// are packed (the mid form).
#pragma once
#include <stdint.h>

#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_quant.cuh"
#include "program_desc.h"
#include "vector_io.cuh"

namespace cake {

template <int kOp_, int kD_, int kThreads_, int kRowsPerGroup_, int kPrefetch_, int kPersistent_,
          int kTree_ = 0, int kVariant_ = 0, int kQuant_ = 0, int kSlots_ = 0>
struct NormgateCfg {
  static constexpr int kOp = kOp_;
  static constexpr int kD = kD_;  // 0: general
  static constexpr int kThreads = kThreads_;
  static constexpr int kRowsPerGroup = kRowsPerGroup_;
  static constexpr int kPrefetch = kPrefetch_;
  static constexpr int kPersistent = kPersistent_;
  // Tuned deterministic backward: 0 the row tree, 1 the column tree, 2 the grouped column tree
  // (normgate_workspace.h).
  static constexpr int kTree = kTree_;
  static_assert(kTree >= 0 && kTree <= 2, "dw trees");
  // 1: a variant program (normgate_variant.cuh): every gate, placement, group size and dtype,
  // read from the parameters; general widths only.
  // 2: a variant tile program (normgate_variant_tile.cuh): the same calls with BF16 or F16 x and
  // z, kSlots leaves a thread.
  static constexpr int kVariant = kVariant_;
  static_assert(kVariant == 0 || ((kVariant == 1 || kVariant == 2) && kD == 0 && kTree == 0),
                "variant programs");
  static constexpr int kSlots = kSlots_;
  static_assert((kVariant == 2) == (kSlots >= 1) && kSlots <= 8, "tile programs' slots");
  // A quantizing forward (normgate_quant.cuh, ng::QuantFormat): 1 FP8 blockwise, 2 MXFP8; the
  // default form only, no L2 prefetch (its grid may walk padding rows past the tensors).
  static constexpr int kQuant = kQuant_;
  static_assert(kQuant == 0 || ((kQuant == 1 || kQuant == 2) && kOp == CAKE_NG_OP_FWD &&
                                kVariant == 0 && kPrefetch_ == 0),
                "quantizing programs");
  static_assert(kThreads % 32 == 0, "whole warps");
  static_assert(kD == 0 || kD == 64 || kD == 128 || kD == 256, "tuned widths");
  static_assert(kRowsPerGroup >= 1 && kRowsPerGroup <= 8, "rows per group");
};

namespace ng {

__device__ __forceinline__ void prefetch_block(const cake_normgate_params &p, int64_t b) {
  if (b >= p.num_blocks) return;
  const int64_t row0 = b * p.rows_per_block;
  const int64_t nrows = min(p.rows_per_block, p.rows - row0);
  const uint32_t bytes = static_cast<uint32_t>(nrows * p.d * 2);
  prefetch_l2_bulk(p.x + row0 * p.d, bytes);
  prefetch_l2_bulk(p.z + row0 * p.d, bytes);
}

// The row's scale s and rstd (n = (x*s)*rstd) from this lane's leaf of a group-held row.
// The overflow path is taken by the whole warp when any of its groups needs it (so every
// shuffle has the full mask); groups that did not overflow keep s = 1 and their sum.
template <int kLanes>
__device__ __forceinline__ void group_row_stats(const float (&xf)[8], float inv_d, float eps,
                                                unsigned mask, float &s, float &rstd) {
  float ss = group_sum<kLanes>(chunk_sumsq<false>(xf, 1.0f), mask);
  s = 1.0f;
  float e = eps;
  const bool overflow = isinf(ss);
  if (__any_sync(0xffffffffu, overflow)) {
    const float amax = group_max<kLanes>(chunk_absmax(xf), mask);
    const bool rescale = overflow && isfinite(amax);
    const float sc = rescale ? overflow_scale(amax) : 1.0f;
    const float ss_scaled = group_sum<kLanes>(chunk_sumsq<true>(xf, sc), mask);
    if (rescale) {
      s = sc;
      ss = ss_scaled;
      e = scaled_eps(eps, sc);
    }
  }
  rstd = rstd_from_sumsq(ss, inv_d, e);
}

// y of one lane's 8 columns, n = (x*s)*rstd. Where every row of the warp has s == 1,
// (x*1)*rstd == x*rstd: one multiply fewer, the same bits.
__device__ __forceinline__ void gated_row(const float (&xf)[8], const float (&zf)[8],
                                          const float (&wf)[8], float s, float rstd,
                                          float (&yf)[8]) {
  if (__all_sync(0xffffffffu, s == 1.0f)) {
#pragma unroll
    for (int i = 0; i < 8; ++i) yf[i] = gated(__fmul_rn(xf[i], rstd), wf[i], zf[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) yf[i] = gated(__fmul_rn(__fmul_rn(xf[i], s), rstd), wf[i], zf[i]);
  }
}

template <class Cfg>
__device__ __forceinline__ void fwd_tuned(const cake_normgate_params &p) {
  constexpr int kLanes = Cfg::kD / 8;
  constexpr int kGroups = Cfg::kThreads / kLanes;
  constexpr int kR = Cfg::kRowsPerGroup;
  const int lane = threadIdx.x % kLanes;
  const int group = threadIdx.x / kLanes;
  const unsigned mask = group_mask<kLanes>();

  float wf[8];
  unpack8(load16<kLoadDefault>(p.w + lane * 8), wf);
  const float inv_d = inverse_width(Cfg::kD);

  if (Cfg::kPrefetch > 0 && threadIdx.x == 0 && p.packed) {
    for (int k = 1; k <= Cfg::kPrefetch; ++k) prefetch_block(p, blockIdx.x + int64_t(k) * gridDim.x);
  }
  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    if (Cfg::kPrefetch > 0 && threadIdx.x == 0 && p.packed && b != blockIdx.x) {
      prefetch_block(p, b + int64_t(Cfg::kPrefetch) * gridDim.x);
    }
    const int64_t row0 = b * int64_t(kGroups * kR);
    uint4 xv[kR], zv[kR];
    // Prologue: every load of the block in flight before the first use.
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + r * kGroups + group;
      if (row < p.rows) {
        xv[r] = load16<kLoadDefault>(p.x + row * p.x_stride + lane * 8);
        zv[r] = load16<kLoadDefault>(p.z + row * p.z_stride + lane * 8);
      } else {
        xv[r] = make_uint4(0, 0, 0, 0);
        zv[r] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + r * kGroups + group;
      float xf[8], zf[8], yf[8];
      unpack8(xv[r], xf);
      unpack8(zv[r], zf);
      float s, rstd;
      group_row_stats<kLanes>(xf, inv_d, p.eps, mask, s, rstd);
      gated_row(xf, zf, wf, s, rstd, yf);
      if constexpr (Cfg::kQuant == 0) {
        if (row < p.rows) {
          store16<kStoreStreaming>(p.y + row * p.y_stride + lane * 8, pack8(yf));
          if (p.rstd != nullptr && lane == 0) p.rstd[row] = __fmul_rn(rstd, s);
        }
      } else {
        const uint4 yv = pack8(yf);
        quant_store<Cfg::kQuant>(p, yv, lane, kLanes < 16 ? kLanes : 16, true, row);
        if (row < p.rows) {
          if (p.y != nullptr) store16<kStoreStreaming>(p.y + row * p.y_stride + lane * 8, yv);
          if (p.rstd != nullptr && lane == 0) p.rstd[row] = __fmul_rn(rstd, s);
        }
      }
    }
  }
}

}  // namespace ng

}  // namespace cake
