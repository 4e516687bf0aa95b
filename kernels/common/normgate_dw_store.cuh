// The normgate backward's one rounding into dw: from the FP64 sum of a column to dw's FP32 or
// BF16, optionally added to what dw holds (CAKE_NORMGATE_DW_ACCUMULATE).
#pragma once
#include <stdint.h>

#include "normgate_params.h"
#include "vector_io.cuh"

namespace cake {
namespace ng {

enum : int32_t { kDwAccumulate = 1, kDwSkip = 2 };  // = CAKE_NORMGATE_DW_* in cake.h

// Double to FP32, rounded to odd: a later RNE into a format with at least 2 fewer bits (BF16,
// F16) then rounds v once.
__device__ __forceinline__ float double_to_f32_odd(double v) {
  float f = __double2float_rz(v);
  if (static_cast<double>(f) != v && !isnan(v)) f = __uint_as_float(__float_as_uint(f) | 1u);
  return f;
}

// Double to bf16 with one rounding: round to odd into FP32 (16 spare bits), then RNE to bf16.
__device__ __forceinline__ uint16_t double_to_bf16_rn(double v) {
  return static_cast<uint16_t>(pack_bf16x2(double_to_f32_odd(v), 0.0f) & 0xffffu);
}

// dw[col] = round(sum) or round(dw[col] + sum). The +0.0 makes an exact zero +0 whatever the
// tree's padding, so the bits never depend on how the tree was cut.
// Where dw goes: what store_dw reads of the parameters, as values, for code that must not
// take the parameters' address (an out-of-line callee would read every field through a
// generic pointer).
struct DwTarget {
  void *dw;
  int f32, accumulate;
};
__device__ __forceinline__ DwTarget dw_target(const cake_normgate_params &p) {
  return DwTarget{p.dw, p.dw_f32 ? 1 : 0, (p.dw_flags & kDwAccumulate) ? 1 : 0};
}

__device__ __forceinline__ void store_dw(const DwTarget &t, int col, double sum) {
  double v = sum + 0.0;
  if (t.f32) {  // global accesses (t.dw may come through an out-of-line call: no space known)
    float *dw = static_cast<float *>(t.dw);
    if (t.accumulate) v += static_cast<double>(__ldcg(dw + col));
    __stcg(dw + col, __double2float_rn(v));
  } else {
    unsigned short *dw = static_cast<unsigned short *>(t.dw);
    if (t.accumulate) v += static_cast<double>(__uint_as_float(uint32_t(__ldcg(dw + col)) << 16));
    __stcg(dw + col, static_cast<unsigned short>(double_to_bf16_rn(v)));
  }
}
__device__ __forceinline__ void store_dw(const cake_normgate_params &p, int col, double sum) {
  store_dw(dw_target(p), col, sum);
}

// store_dw as a functor: what the counter protocols round with unless a program passes its own
// (the variant programs add F16 dw, normgate_variant.cuh).
struct StoreDw {
  __device__ __forceinline__ void operator()(const cake_normgate_params &p, int col,
                                             double sum) const {
    store_dw(p, col, sum);
  }
};

}  // namespace ng
}  // namespace cake
