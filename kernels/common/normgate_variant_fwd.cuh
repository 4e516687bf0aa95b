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
#include "vector_io.cuh"

namespace cake {
namespace ng {

// ---- Element I/O: 8 consecutive elements of a BF16, F16 or FP32 tensor as FP32 -------------

__device__ __forceinline__ float f16_to_f32(uint32_t bits16) {
#if defined(CAKE_HOST_EMULATION)
  return cake_emu::f16_to_f32(static_cast<uint16_t>(bits16));
#else
  float f;
  const unsigned short h = static_cast<unsigned short>(bits16);
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#endif
}

// Round-to-nearest-even pack of two FP32 into F16 (lo in the low half).
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
#if defined(CAKE_HOST_EMULATION)
  return uint32_t(cake_emu::f32_to_f16_rn(lo)) | (uint32_t(cake_emu::f32_to_f16_rn(hi)) << 16);
#else
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#endif
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
  const uint4 v = load16<kLoadDefault>(static_cast<const uint16_t *>(base) + elem);
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

// ---- The gate --------------------------------------------------------------------------------

// a(z) of the variant's gate (SiLU: z * sigmoid(z); sigmoid) and, for the backward, sigmoid(z).
__device__ __forceinline__ float gate_of(float z, float s, int32_t gate) {
  return gate == CAKE_NORMGATE_GATE_SILU ? __fmul_rn(z, s) : s;
}

// a'(z): SiLU s * (1 + z * (1 - s)); sigmoid s * (1 - s).
__device__ __forceinline__ float gate_slope(float z, float s, int32_t gate) {
  const float one_minus = __fsub_rn(1.0f, s);
  return gate == CAKE_NORMGATE_GATE_SILU ? __fmul_rn(s, __fmaf_rn(z, one_minus, 1.0f))
                                         : __fmul_rn(s, one_minus);
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
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t row = row0 + int64_t(r) * g.groups;
      float a[8], u[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        a[i] = gated ? gate_of(zf[r][i], sigmoid(zf[r][i]), p.gate) : 1.0f;
        u[i] = before ? __fmul_rn(xf[r][i], a[i]) : xf[r][i];
      }
      const float ss = variant_group_sum<false>(chunk_sumsq<false>(u, 1.0f), g, vg, red);
      const float rstd = rstd_from_sumsq(ss, inv_g, p.eps);
      float wf[8], yf[8];
      load8_as_f32(p.w, col, p.w_dtype, g.holds(), wf);
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float nw = __fmul_rn(__fmul_rn(u[i], rstd), wf[i]);
        yf[i] = (gated && !before) ? __fmul_rn(nw, a[i]) : nw;
      }
      if (row < p.rows && g.holds()) {
        store8_from_f32(p.y, row * p.y_stride + col, p.x_dtype, yf);
        if (p.rstd != nullptr && g.li == vg.gstart) p.rstd[row * ngroups + g.li / vg.q] = rstd;
      }
    }
  }
}

}  // namespace ng
}  // namespace cake
