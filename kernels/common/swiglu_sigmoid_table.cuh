// Test kernels: the device sigmoid of every BF16 gate value in every sigmoid form x band form,
// and the hardware E4M3 conversion on every BF16 value. Compiled into the test image only.
//
//   cake_sigmoid_table_exact(out)            the exact sequence, per element: the reference bits
//   cake_sigmoid_table_f<sig>_b<band>(out)   sig 1 (fast) or 2 (packed), band 0/1/2/3
//   cake_e4m3_cvt_table(out, scale_exp)      out[b] = e4m3x2 cvt of (bf16 value b) * 2^scale_exp
//
// out has 65,536 entries indexed by the gate's BF16 bit pattern (uint32 FP32 bits, or one byte).
// Launch the sigmoid kernels with 65,536 / 16 = 4,096 threads in total (16 CTAs of 256) and the
// cvt kernel with 32,768 (128 CTAs of 256). In the sigmoid kernels each thread takes 16
// consecutive patterns, as a program's thread takes 16 k-columns, and goes through the same
// for_each_sigmoid_pair the programs run, so the band path is exercised the way they use it
// (for bands 2 and 3 the refix recomputes the pair from the gate bits, as a program recomputes it from
// the gates it reads again). The GPU test compares every table with the exact one
// (tests/gpu/swiglu_mxfp8_gpu_checks.h) and the exact one with cake_ref::check_sigmoid_table.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "swiglu_sigmoid.cuh"

namespace cake {
namespace swiglu {

template <int kSig, int kBand>
__device__ __forceinline__ void sigmoid_table_body(uint32_t *out) {
  const uint32_t base = (blockIdx.x * blockDim.x + threadIdx.x) * 16u;
  if (base >= 65536u) return;
  uint32_t gw[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) gw[j] = (base + 2 * j) | ((base + 2 * j + 1) << 16);
  uint32_t s[16];
  for_each_sigmoid_pair<kSig, kBand, 8>(
      gw,
      [&](int j, float2, float2 sp) {
        s[2 * j] = __float_as_uint(sp.x);
        s[2 * j + 1] = __float_as_uint(sp.y);
      },
      [&](int j) {
        // Run-time j: recompute from the gate bits and patch through a select chain, as the
        // programs patch their Y words.
        const float2 e = sigmoid_exact_pair((base + 2 * j) | ((base + 2 * j + 1) << 16));
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          if (k == j) {
            s[2 * k] = __float_as_uint(e.x);
            s[2 * k + 1] = __float_as_uint(e.y);
          }
        }
      });
#pragma unroll
  for (int i = 0; i < 16; ++i) out[base + i] = s[i];
}

}  // namespace swiglu
}  // namespace cake

extern "C" __global__ void cake_sigmoid_table_exact(uint32_t *out) {
  const uint32_t base = (blockIdx.x * blockDim.x + threadIdx.x) * 16u;
  if (base >= 65536u) return;
  for (int i = 0; i < 16; ++i) {
    out[base + i] = __float_as_uint(cake::swiglu::sigmoid_exact(__uint_as_float((base + i) << 16)));
  }
}

#define CAKE_SIGMOID_TABLE_KERNEL(sig, band)                                                   \
  extern "C" __global__ void cake_sigmoid_table_f##sig##_b##band(uint32_t *out) {             \
    cake::swiglu::sigmoid_table_body<sig, band>(out);                                          \
  }
CAKE_SIGMOID_TABLE_KERNEL(1, 0)
CAKE_SIGMOID_TABLE_KERNEL(1, 1)
CAKE_SIGMOID_TABLE_KERNEL(1, 2)
CAKE_SIGMOID_TABLE_KERNEL(1, 3)
CAKE_SIGMOID_TABLE_KERNEL(2, 0)
CAKE_SIGMOID_TABLE_KERNEL(2, 1)
CAKE_SIGMOID_TABLE_KERNEL(2, 2)
CAKE_SIGMOID_TABLE_KERNEL(2, 3)
#undef CAKE_SIGMOID_TABLE_KERNEL

// The encoder the programs use (hardware cvt on sm_89+) on every BF16 value times 2^scale_exp
// (the product in FP32, as the programs form it; scale_exp = 0 covers every value a program
// converts from a normal product, a large negative one the FP32-subnormal products).
extern "C" __global__ void cake_e4m3_cvt_table(uint8_t *out, int scale_exp) {
  const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= 65536u / 2) return;
  const float k = ldexpf(1.0f, scale_exp);
  const float lo = __fmul_rn(__uint_as_float((2 * b) << 16), k);
  const float hi = __fmul_rn(__uint_as_float((2 * b + 1) << 16), k);
  const uint16_t q = cake::mx::e4m3x2_rn_satfinite(lo, hi);
  out[2 * b] = (uint8_t)(q & 0xFF);
  out[2 * b + 1] = (uint8_t)(q >> 8);
}
