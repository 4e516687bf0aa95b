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
#include "normgate_wide.cuh"
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
  // Leaves a thread of a tile program: a variant tile program's, or a default-form tile forward
  // (kVariant 0: the same layout in the default form's row order).
  static constexpr int kSlots = kSlots_;
  static_assert((kVariant != 2 || kSlots >= 1) && kSlots <= 8, "tile programs' slots");
  static_assert(kVariant == 2 || kSlots == 0 ||
                    (kVariant == 0 && kOp == CAKE_NG_OP_FWD && kD == 0 && kTree == 0),
                "default-form tile programs: the forward");
  // A quantizing forward (normgate_quant.cuh, ng::QuantFormat): 1 FP8 blockwise, 2 MXFP8; the
  // default form only, no L2 prefetch (its grid may walk padding rows past the tensors).
  static constexpr int kQuant = kQuant_;
  static_assert(kQuant == 0 || ((kQuant == 1 || kQuant == 2) && kOp == CAKE_NG_OP_FWD &&
                                kVariant == 0 && kSlots == 0 && kPrefetch_ == 0),
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

// The row's rstd from this lane's leaf of a group-held row. wide: this lane's leaf holds an
// input of kWideMaxInput or more; in_range: the row is left to the FP32 sequence
// (stats_in_range), else it is wide, computed in FP64 (normgate_wide.cuh).
template <int kLanes>
__device__ __forceinline__ void group_row_stats(const float (&xf)[8], float inv_d, float eps,
                                                unsigned mask, bool wide, float &rstd,
                                                bool &in_range) {
  const float ss = group_sum<kLanes>(mark_wide(chunk_sumsq<false>(xf, 1.0f), wide), mask);
  rstd = rstd_from_sumsq(ss, inv_d, eps);
  in_range = stats_in_range(ss, inv_d, eps);
}

// y of one lane's 8 columns, n = x * rstd.
__device__ __forceinline__ void gated_row(const float (&xf)[8], const float (&zf)[8],
                                          const float (&wf)[8], float rstd, float (&yf)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) yf[i] = gated(__fmul_rn(xf[i], rstd), wf[i], zf[i]);
}

template <class Cfg>
__device__ __forceinline__ void fwd_tuned(const cake_normgate_params &p) {
  constexpr int kLanes = Cfg::kD / 8;
  constexpr int kGroups = Cfg::kThreads / kLanes;
  constexpr int kR = Cfg::kRowsPerGroup;
  const int lane = threadIdx.x % kLanes;
  const int group = threadIdx.x / kLanes;
  const unsigned mask = group_mask<kLanes>();

  // A quantizing program's FP64 y of wide rows on their way to the quantizer (8 slots a thread).
  __shared__ float stage[Cfg::kQuant != 0 ? 8 * Cfg::kThreads : 1];
  // A plain program keeps w in registers; a quantizing one reads it each block (an L1 hit), so
  // that its rare pass after the block has their registers.
  float w_kept[8];
  uint32_t w_exp = 0;
  if constexpr (Cfg::kQuant == 0) {
    const uint4 wv = load16<kLoadDefault>(p.w + lane * 8);
    unpack8(wv, w_kept);
    w_exp = bf16x8_exp(wv);
  }
  const float inv_d = inverse_width(Cfg::kD);

  if (Cfg::kPrefetch > 0 && threadIdx.x == 0 && p.packed) {
    for (int k = 1; k <= Cfg::kPrefetch; ++k) prefetch_block(p, blockIdx.x + int64_t(k) * gridDim.x);
  }
  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    if (Cfg::kPrefetch > 0 && threadIdx.x == 0 && p.packed && b != blockIdx.x) {
      prefetch_block(p, b + int64_t(Cfg::kPrefetch) * gridDim.x);
    }
    const int64_t row0 = b * int64_t(kGroups * kR);
    float wf[8];
    if constexpr (Cfg::kQuant == 0) {
#pragma unroll
      for (int i = 0; i < 8; ++i) wf[i] = w_kept[i];
    } else {
      const uint4 wv = load16<kLoadDefault>(p.w + lane * 8);
      unpack8(wv, wf);
      w_exp = bf16x8_exp(wv);
    }
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
    uint32_t wide_rows = 0;  // bit r: row r is wide, computed after the block (normgate_wide.cuh)
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + r * kGroups + group;
      float xf[8], zf[8], yf[8];
      unpack8(xv[r], xf);
      unpack8(zv[r], zf);
      float rstd;
      bool in_range;
      group_row_stats<kLanes>(xf, inv_d, p.eps, mask,
                              bf16_exp_wide(__vmaxu2(w_exp, __vmaxu2(bf16x8_exp(xv[r]), bf16x8_exp(zv[r])))),
                              rstd, in_range);
      const bool wide = row < p.rows && !in_range;  // rare: FP64 in place of the FP32 sequence
      float rstd_out = rstd;
      if constexpr (Cfg::kQuant == 0) {
        if (wide) {
          wide_rows |= 1u << r;
        } else if (row < p.rows) {
          gated_row(xf, zf, wf, rstd, yf);
          store16<kStoreStreaming>(p.y + row * p.y_stride + lane * 8, pack8(yf));
          if (p.rstd != nullptr && lane == 0) p.rstd[row] = rstd_out;
        }
      } else {
        if (wide) wide_rows |= 1u << r;  // its y and blocks again after the block
        gated_row(xf, zf, wf, rstd, yf);
        const uint4 yv = pack8(yf);
        quant_store<Cfg::kQuant>(p, yv, lane, kLanes < 16 ? kLanes : 16, true, row);
        if (row < p.rows) {
          if (p.y != nullptr) store16<kStoreStreaming>(p.y + row * p.y_stride + lane * 8, yv);
          if (p.rstd != nullptr && lane == 0) p.rstd[row] = rstd_out;
        }
      }
    }
    // The wide rows in FP64 after the block, when its rows' data have left the registers. A
    // quantizing program's blocks span lanes (and, at d = 64, rows): its warp passes each row r
    // that holds a wide row again, the wide lanes' y from FP64 (staged in shared memory, one
    // thread's own slots), the others' from the FP32 sequence again, and quantizes them again.
    if constexpr (Cfg::kQuant == 0) {
      if (wide_rows != 0u) {  // rare
#pragma unroll 1
        for (int r = 0; r < kR; ++r) {
          if (wide_rows >> r & 1u) wide_forward_store(p, false, row0 + r * kGroups + group, lane * 8);
        }
      }
    } else if (__any_sync(0xffffffffu, wide_rows != 0u)) {  // rare
#pragma unroll 1
      for (int r = 0; r < kR; ++r) {
        const bool wide = (wide_rows >> r & 1u) != 0u;
        if (!__any_sync(0xffffffffu, wide)) continue;
        const int64_t row = row0 + r * kGroups + group;
        float rstd_out = 0.0f;
        if (wide) {
          rstd_out = wide_forward8(p, wide_form(p, false), row, lane * 8,
                                   [&](int i, float y) { stage[i * Cfg::kThreads + threadIdx.x] = y; });
        }
        const bool ok = row < p.rows;
        const uint4 xr = ok ? load16<kLoadDefault>(p.x + row * p.x_stride + lane * 8) : make_uint4(0, 0, 0, 0);
        const uint4 zr = ok ? load16<kLoadDefault>(p.z + row * p.z_stride + lane * 8) : make_uint4(0, 0, 0, 0);
        float xf[8], zf[8], yf[8], rstd;
        bool in_range;
        unpack8(xr, xf);
        unpack8(zr, zf);
        group_row_stats<kLanes>(xf, inv_d, p.eps, mask, false, rstd, in_range);
        float wr[8];
        unpack8(load16<kLoadDefault>(p.w + lane * 8), wr);
        gated_row(xf, zf, wr, rstd, yf);
        if (wide) {
#pragma unroll
          for (int i = 0; i < 8; ++i) yf[i] = stage[i * Cfg::kThreads + threadIdx.x];
        } else {
          rstd_out = rstd;
        }
        const uint4 yv = pack8(yf);
        quant_store<Cfg::kQuant>(p, yv, lane, kLanes < 16 ? kLanes : 16, true, row);
        if (ok) {
          if (p.y != nullptr) store16<kStoreStreaming>(p.y + row * p.y_stride + lane * 8, yv);
          if (p.rstd != nullptr && lane == 0) p.rstd[row] = rstd_out;
        }
      }
    }
  }
}

}  // namespace ng

}  // namespace cake
