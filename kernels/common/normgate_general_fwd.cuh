// The general programs' forward (any D, a multiple of 8 up to 8192; normgate_general.cuh has
// the overview and the backward) and the row reductions both directions share. Apart from the
// backward so that a host test runs the forward on the CPU (tests/host/cuda_host_emulation.h).
#pragma once
#include <stdint.h>

#include "normgate_fwd.cuh"
#include "normgate_general_group.cuh"
#include "normgate_general_layout.h"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_quant.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

struct AddOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return __fadd_rn(a, b); }
};
struct MaxOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// The group's reduction of one value per lane, in canonical tree order, in every lane of the
// group. `red` is 32 floats of shared memory owned by this call site: a site's next write comes
// after a barrier of another site, which every read of this one precedes.
template <class Op>
__device__ __forceinline__ float group_reduce(float v, const GeneralGroup &g, float *red, Op op) {
  for (int off = 1; off < g.shfl; off <<= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  if (g.warps > 1) {  // CTA-uniform
    if (g.lane == 0) red[thread_index() >> 5] = v;
    __syncthreads();
    // Each lane takes its group's warp sum lane % warps: every aligned run of `warps` lanes
    // builds the same tree from the same values. The index from thread_index(): recomputed
    // here, not held across the caller's loop.
    const unsigned t = thread_index();
    v = red[((t >> 5) & ~unsigned(g.warps - 1)) + (t & unsigned(g.warps - 1))];
    for (int off = 1; off < g.warps; off <<= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  return v;
}

// The row's rstd and whether it is left to the FP32 sequence (see group_row_stats); red: 32
// floats.
__device__ __forceinline__ void general_row_stats(const float (&xf)[8], float inv_d, float eps,
                                                  const GeneralGroup &g, float *red, bool wide,
                                                  float &rstd, bool &in_range) {
  const float ss = group_reduce(mark_wide(chunk_sumsq<false>(xf, 1.0f), wide), g, red, AddOp{});
  rstd = rstd_from_sumsq(ss, inv_d, eps);
  in_range = stats_in_range(ss, inv_d, eps);
}

__device__ __forceinline__ uint4 load_or_zero(const uint16_t *ptr, bool ok) {
  return ok ? load16<kLoadDefault>(ptr) : make_uint4(0, 0, 0, 0);
}

template <class Cfg>
__device__ __forceinline__ void fwd_general(const cake_normgate_params &p) {
  constexpr int kR = Cfg::kRowsPerGroup;
  // Two reduction sites, alternating by row: a row's single reduction reads its site after a
  // barrier, and the next write to that site comes after the next row's barrier.
  __shared__ float red[2 * 32];
  int site = 0;
  // A quantizing program's FP64 y of wide rows on their way to the quantizer (8 slots a thread).
  __shared__ float stage[Cfg::kQuant != 0 ? 8 * Cfg::kThreads : 1];
  const GeneralGroup g = general_group<Cfg::kThreads>(p.d);
  const float inv_d = inverse_width(p.d);
  const uint4 wv = load_or_zero(p.w + g.li * 8, g.holds());  // unpacked at use: 32 registers
  const bool w_wide = bf16x8_wide(wv);

  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    const int64_t row0 = b * p.rows_per_block + g.group;
    uint4 xv[kR], zv[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + int64_t(r) * g.groups;
      const bool ok = row < p.rows && g.holds();
      xv[r] = load_or_zero(p.x + row * p.x_stride + g.li * 8, ok);
      zv[r] = load_or_zero(p.z + row * p.z_stride + g.li * 8, ok);
    }
    uint32_t wide_rows = 0;  // quantizing: bit r, row r is wide (normgate_wide.cuh)
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + int64_t(r) * g.groups;
      float xf[8], zf[8], wf[8], yf[8];
      unpack8(xv[r], xf);
      unpack8(zv[r], zf);
      float rstd;
      bool in_range;
      general_row_stats(xf, inv_d, p.eps, g, red + 32 * site,
                        w_wide || bf16x8_wide(xv[r]) || bf16x8_wide(zv[r]), rstd, in_range);
      site ^= 1;
      const bool wide = g.holds() && row < p.rows && !in_range;  // rare: FP64 in place of FP32
      float rstd_out = rstd;
      if constexpr (Cfg::kQuant == 0) {
        if (wide) {
          wide_forward_store(p, false, row, g.li * 8);
        } else if (row < p.rows) {
          unpack8(wv, wf);
          gated_row(xf, zf, wf, rstd, yf);
          if (g.holds()) store16<kStoreStreaming>(p.y + row * p.y_stride + g.li * 8, pack8(yf));
          if (p.rstd != nullptr && g.li == 0) p.rstd[row] = rstd_out;
        }
      } else {
        if (wide) wide_rows |= 1u << r;  // its y and blocks again after the block
        unpack8(wv, wf);
        gated_row(xf, zf, wf, rstd, yf);
        const uint4 yv = pack8(yf);
        quant_store<Cfg::kQuant>(p, yv, g.li, min(g.lanes, 16), g.holds(), row);
        if (row < p.rows) {
          if (g.holds() && p.y != nullptr) {
            store16<kStoreStreaming>(p.y + row * p.y_stride + g.li * 8, yv);
          }
          if (p.rstd != nullptr && g.li == 0) p.rstd[row] = rstd_out;
        }
      }
    }
    // A quantizing program's wide rows after the block, as in fwd_tuned: each row r holding a
    // wide row passes again (with the whole CTA where a row spans warps), the wide lanes' y from
    // FP64 staged in shared memory.
    if constexpr (Cfg::kQuant != 0) {
      auto any = [&](bool v) { return g.warps > 1 ? __syncthreads_or(v) != 0 : __any_sync(0xffffffffu, v) != 0; };
      if (any(wide_rows != 0u)) {  // rare
#pragma unroll 1
        for (int r = 0; r < kR; ++r) {
          const bool wide = (wide_rows >> r & 1u) != 0u;
          if (!any(wide)) continue;
          const int64_t row = row0 + int64_t(r) * g.groups;
          float rstd_out = 0.0f;
          if (wide) {
            rstd_out = wide_forward8(p, wide_form(p, false), row, g.li * 8,
                                     [&](int i, float y) { stage[i * Cfg::kThreads + threadIdx.x] = y; });
          }
          const bool ok = row < p.rows && g.holds();
          float xf[8], zf[8], wf[8], yf[8], rstd;
          bool in_range;
          unpack8(load_or_zero(p.x + row * p.x_stride + g.li * 8, ok), xf);
          unpack8(load_or_zero(p.z + row * p.z_stride + g.li * 8, ok), zf);
          general_row_stats(xf, inv_d, p.eps, g, red + 32 * site, false, rstd, in_range);
          site ^= 1;
          unpack8(wv, wf);
          gated_row(xf, zf, wf, rstd, yf);
          if (wide) {
#pragma unroll
            for (int i = 0; i < 8; ++i) yf[i] = stage[i * Cfg::kThreads + threadIdx.x];
          } else {
            rstd_out = rstd;
          }
          const uint4 yv = pack8(yf);
          quant_store<Cfg::kQuant>(p, yv, g.li, min(g.lanes, 16), g.holds(), row);
          if (row < p.rows) {
            if (g.holds() && p.y != nullptr) store16<kStoreStreaming>(p.y + row * p.y_stride + g.li * 8, yv);
            if (p.rstd != nullptr && g.li == 0) p.rstd[row] = rstd_out;
          }
        }
      }
    }
  }
}

}  // namespace ng
}  // namespace cake
