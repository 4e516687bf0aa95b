// The normgate variant programs' forward (normgate_variant.cuh has the backward and the
// overview) and the element I/O both directions share: 8 consecutive elements of a BF16, F16 or
// FP32 tensor as FP32, and one rounding back. Apart from the backward so that a host test runs
// the forward on the CPU (tests/host/cuda_host_emulation.h).
#pragma once
#include <stdint.h>

#include "cake.h"
#include "normgate_general_group.cuh"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_variant_group.cuh"
#include "normgate_wide.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// ---- Element I/O: 8 consecutive elements of a BF16, F16 or FP32 tensor as FP32 -------------

// 8 elements of a 16-bit tensor (BF16, or F16 when dtype says so) from one 16-byte vector.
__device__ __forceinline__ void unpack16_as_f32(uint4 v, int32_t dtype, float (&f)[8]) {
  if (dtype == CAKE_DTYPE_F16) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = f16_to_f32(w[i] & 0xffffu);
      f[2 * i + 1] = f16_to_f32(w[i] >> 16);
    }
  } else {
    unpack8(v, f);
  }
}

// elem: the element index of the first of the 8 (a multiple of 8 from a 16-byte aligned row).
__device__ __forceinline__ void load8_as_f32(const void *base, int64_t elem, int32_t dtype, bool ok,
                                             float (&f)[8]) {
  if (!ok) {
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = 0.0f;
    return;
  }
  if (dtype == CAKE_DTYPE_F32) {
    const float *q = static_cast<const float *>(base) + elem;
    const uint4 a = load16<kLoadDefault>(q), b = load16<kLoadDefault>(q + 4);
    f[0] = __uint_as_float(a.x); f[1] = __uint_as_float(a.y);
    f[2] = __uint_as_float(a.z); f[3] = __uint_as_float(a.w);
    f[4] = __uint_as_float(b.x); f[5] = __uint_as_float(b.y);
    f[6] = __uint_as_float(b.z); f[7] = __uint_as_float(b.w);
    return;
  }
  unpack16_as_f32(load16<kLoadDefault>(static_cast<const uint16_t *>(base) + elem), dtype, f);
}

// One rounding (RNE) of 8 FP32 values into the tensor's dtype, streamed out.
__device__ __forceinline__ void store8_from_f32(void *base, int64_t elem, int32_t dtype,
                                                const float (&f)[8]) {
  if (dtype == CAKE_DTYPE_F32) {
    float *q = static_cast<float *>(base) + elem;
    store16<kStoreStreaming>(q, make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]),
                                           __float_as_uint(f[2]), __float_as_uint(f[3])));
    store16<kStoreStreaming>(q + 4, make_uint4(__float_as_uint(f[4]), __float_as_uint(f[5]),
                                               __float_as_uint(f[6]), __float_as_uint(f[7])));
    return;
  }
  uint16_t *q = static_cast<uint16_t *>(base) + elem;
  if (dtype == CAKE_DTYPE_F16) {
    store16<kStoreStreaming>(q, make_uint4(pack_f16x2(f[0], f[1]), pack_f16x2(f[2], f[3]),
                                           pack_f16x2(f[4], f[5]), pack_f16x2(f[6], f[7])));
  } else {
    store16<kStoreStreaming>(q, pack8(f));
  }
}

// ---- Forward ---------------------------------------------------------------------------------

template <class Cfg>
__device__ __forceinline__ void fwd_variant(const cake_normgate_params &p) {
  constexpr int kR = Cfg::kRowsPerGroup;
  __shared__ float red[Cfg::kThreads];
  const GeneralGroup g = general_group<Cfg::kThreads>(p.d);
  const VariantGroup vg = variant_group(g, p.group);
  const float inv_g = inverse_width(p.group);
  const int64_t col = int64_t(g.li) * 8;
  const bool gated = p.gate != CAKE_NORMGATE_GATE_NONE;
  const bool before = p.placement == CAKE_NORMGATE_GATE_BEFORE_NORM;
  const int64_t ngroups = p.d / p.group;
  float w_amax;  // the largest |w| of this thread's columns (a wide group's test)
  {
    float wf[8];
    load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
    w_amax = chunk_absmax(wf);
  }

  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x) {
    const int64_t row0 = b * p.rows_per_block + g.group;
    float xf[kR][8], zf[kR][8];
#pragma unroll
    for (int r = 0; r < kR; ++r) {  // every load of the trip in flight before the first use
      const int64_t row = row0 + int64_t(r) * g.groups;
      const bool ok = row < p.rows && g.holds();
      load8_as_f32(p.x, row * p.x_stride + col, p.x_dtype, ok, xf[r]);
      load8_as_f32(p.z, row * p.z_stride + col, p.z_dtype, ok && gated, zf[r]);
    }
    bool wide[kR];  // the trip's wide groups, written after its FP32 rows: their FP64 walk
                    // re-reads the row, so the trip's inputs need not live across it
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + int64_t(r) * g.groups;
      wide[r] = false;
      float a[8], u[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        a[i] = gated ? gate_of(zf[r][i], sigmoid(zf[r][i]), p.gate) : 1.0f;
        u[i] = before ? __fmul_rn(xf[r][i], a[i]) : xf[r][i];
      }
      const float amax = fmaxf(w_amax, fmaxf(chunk_absmax(xf[r]), chunk_absmax(zf[r])));
      const float ss = variant_group_sum<false>(mark_wide(chunk_sumsq<false>(u, 1.0f), amax), g, vg, red);
      const float rstd = rstd_from_sumsq(ss, inv_g, p.eps);
      if (row < p.rows && g.holds()) {
        if (!stats_in_range(ss, inv_g, p.eps)) {  // rare: a wide group, FP64 in place of FP32
          wide[r] = true;
        } else {
          float wf[8], yf[8];
          load8_as_f32(p.w, col, p.w_dtype, true, wf);
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            const float nw = __fmul_rn(__fmul_rn(u[i], rstd), wf[i]);
            yf[i] = (gated && !before) ? __fmul_rn(nw, a[i]) : nw;
          }
          store8_from_f32(p.y, row * p.y_stride + col, p.x_dtype, yf);
          if (p.rstd != nullptr && g.li == vg.gstart) p.rstd[row * ngroups + g.li / vg.q] = rstd;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (wide[r]) wide_forward_store(p, true, row0 + int64_t(r) * g.groups, col);
    }
  }
}

}  // namespace ng
}  // namespace cake
