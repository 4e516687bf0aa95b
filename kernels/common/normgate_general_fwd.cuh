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
    if (g.lane == 0) red[g.warp] = v;
    __syncthreads();
    // Each lane takes its group's warp sum lane % warps: every aligned run of `warps` lanes
    // builds the same tree from the same values.
    v = red[(g.warp & ~(g.warps - 1)) + (g.lane & (g.warps - 1))];
    for (int off = 1; off < g.warps; off <<= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, off));
  }
  return v;
}

// The row's scale s and rstd (see group_row_stats); red: 3 x 32 floats. The overflow path is
// taken by the whole warp (or, for groups spanning warps, the whole CTA) when any row needs it.
__device__ __forceinline__ void general_row_stats(const float (&xf)[8], float inv_d, float eps,
                                                  const GeneralGroup &g, float *red, float &s,
                                                  float &rstd) {
  float ss = group_reduce(chunk_sumsq<false>(xf, 1.0f), g, red, AddOp{});
  s = 1.0f;
  float e = eps;
  const bool overflow = isinf(ss);
  const bool any = g.warps > 1 ? __syncthreads_or(overflow) != 0 : __any_sync(0xffffffffu, overflow);
  if (any) {
    const float amax = group_reduce(chunk_absmax(xf), g, red + 32, MaxOp{});
    const bool rescale = overflow && isfinite(amax);
    const float sc = rescale ? overflow_scale(amax) : 1.0f;
    const float ss_scaled = group_reduce(chunk_sumsq<true>(xf, sc), g, red + 64, AddOp{});
    if (rescale) {
      s = sc;
      ss = ss_scaled;
      e = scaled_eps(eps, sc);
    }
  }
  rstd = rstd_from_sumsq(ss, inv_d, e);
}

__device__ __forceinline__ uint4 load_or_zero(const uint16_t *ptr, bool ok) {
  return ok ? load16<kLoadDefault>(ptr) : make_uint4(0, 0, 0, 0);
}

template <class Cfg>
__device__ __forceinline__ void fwd_general(const cake_normgate_params &p) {
  constexpr int kR = Cfg::kRowsPerGroup;
  __shared__ float red[3 * 32];
  const GeneralGroup g = general_group<Cfg::kThreads>(p.d);
  const float inv_d = inverse_width(p.d);
  const uint4 wv = load_or_zero(p.w + g.li * 8, g.holds());  // unpacked at use: 32 registers

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
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + int64_t(r) * g.groups;
      float xf[8], zf[8], wf[8], yf[8];
      unpack8(xv[r], xf);
      unpack8(zv[r], zf);
      float s, rstd;
      general_row_stats(xf, inv_d, p.eps, g, red, s, rstd);
      unpack8(wv, wf);
      gated_row(xf, zf, wf, s, rstd, yf);
      if constexpr (Cfg::kQuant == 0) {
        if (row < p.rows) {
          if (g.holds()) store16<kStoreStreaming>(p.y + row * p.y_stride + g.li * 8, pack8(yf));
          if (p.rstd != nullptr && g.li == 0) p.rstd[row] = __fmul_rn(rstd, s);
        }
      } else {
        const uint4 yv = pack8(yf);
        quant_store<Cfg::kQuant>(p, yv, g.li, min(g.lanes, 16), g.holds(), row);
        if (row < p.rows) {
          if (g.holds() && p.y != nullptr) {
            store16<kStoreStreaming>(p.y + row * p.y_stride + g.li * 8, yv);
          }
          if (p.rstd != nullptr && g.li == 0) p.rstd[row] = __fmul_rn(rstd, s);
        }
      }
    }
  }
}

}  // namespace ng
}  // namespace cake
