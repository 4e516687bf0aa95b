// Groups that the FP32 sequence of docs/spec/normgate.md cannot carry, computed in FP64.
//
// For finite inputs the FP32 sequence can overflow in an intermediate (dy * z * s at BF16's
// largest values, n * w for |w| above 2^121, the sum of squares of x * a) and end in Inf * 0 or
// Inf - Inf (NaN), in rstd = 0, or in an Inf where the value is finite; and a group whose mean
// square plus eps is below FP32's normal range loses rstd to the flush of rsqrt.approx.ftz.
// With every input of a mean-square group below 2^24 in magnitude and mean + eps in
// [2^-40, FLT_MAX] (so rstd <= 2^20), no FP32 intermediate of either direction exceeds 2^118
// (docs/spec/normgate.md, "Range"): the sequence is exact as specified. A group outside those
// bounds (a "wide" group) is computed in FP64 instead: a thread whose leaf (8 columns) holds an
// input of 2^24 or more makes its leaf's sum of squares NaN, so the group's sum is NaN in every
// lane of the group, through the program's own reduction, and stats_in_range fails for it; the
// decision costs no vote, shuffle or barrier, and every program takes it for the same groups.
// Each thread of a wide group then computes its leaf in FP64 in place of the FP32 sequence,
// reading the tensors again and summing the group's statistics itself, column by column in
// order (the same order in every program): the gate and its slope are the FP32 sequence's,
// every product and sum is FP64, where no product of four values of FP32's range overflows or
// underflows, so each output is rounded once from a value that carries no FP32-range rounding.
// A forward that holds several rows' inputs at once (a trip) writes the trip's wide groups after
// its FP32 rows, and the other programs run the FP64 code where the FP32 outputs would be
// computed: either way a program's registers hold the FP32 sequence's values or the FP64 walk's,
// not both.
#pragma once
#include <float.h>
#include <stdint.h>

#include "cake.h"
#include "normgate_dw_store.cuh"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// An input of this magnitude or more in a group sends the group to FP64.
constexpr float kWideMaxInput = 0x1p24f;
// So does mean + eps below this (rstd above 2^20) or beyond FLT_MAX.
constexpr float kWideMinMeanSquare = 0x1p-40f;

// Whether a group's sum of squares leaves it to the FP32 sequence: mean + eps (as
// rstd_from_sumsq forms it) in [kWideMinMeanSquare, FLT_MAX]. NaN (a leaf marked by
// mark_wide, or a NaN input) fails both comparisons.
__device__ __forceinline__ bool stats_in_range(float sumsq, float inv_width, float eps) {
  const float m = __fadd_rn(__fmul_rn(sumsq, inv_width), eps);
  return m >= kWideMinMeanSquare && m <= FLT_MAX;
}

// A leaf's sum of squares as it enters the group's sum: NaN when the leaf holds an input of
// kWideMaxInput or more (amax: the largest magnitude of its inputs; NaN inputs reach the sum
// anyway), which makes the group wide.
__device__ __forceinline__ float mark_wide(float leaf_sumsq, float amax) {
  return amax < kWideMaxInput ? leaf_sumsq : __int_as_float(0x7fffffff);
}
__device__ __forceinline__ float mark_wide(float leaf_sumsq, bool wide) {
  return wide ? __int_as_float(0x7fffffff) : leaf_sumsq;
}

// The exponent fields of 8 BF16 values (a 16-byte vector), their largest in each half-word
// (__vmaxu2 of further vectors combines them); bf16_exp_wide tests it.
__device__ __forceinline__ uint32_t bf16x8_exp(uint4 v) {
  constexpr uint32_t kExp = 0x7f807f80u;
  return __vmaxu2(__vmaxu2(v.x & kExp, v.y & kExp), __vmaxu2(v.z & kExp, v.w & kExp));
}

// Whether the values whose exponent fields bf16x8_exp gave hold one of kWideMaxInput or more in
// magnitude, or Inf or NaN.
__device__ __forceinline__ bool bf16_exp_wide(uint32_t m) {
  constexpr uint32_t kAt = (127u + 24u) << 7;  // the BF16 exponent field of 2^24
  return (m & 0xffffu) >= kAt || (m >> 16) >= kAt;
}

__device__ __forceinline__ bool bf16x8_wide(uint4 v) { return bf16_exp_wide(bf16x8_exp(v)); }

// An FP32 chunk sum of dw terms into the FP64 tree: an overflow (+-Inf) enters as +-FLT_MAX,
// so that opposite overflows of two chunks cannot meet as Inf - Inf. NaN stays NaN.
__device__ __forceinline__ double chunk_to_double(float acc) {
  return static_cast<double>(isinf(acc) ? copysignf(FLT_MAX, acc) : acc);
}

// ---- FP64 arithmetic ---------------------------------------------------------------------

// The function a call computes, as the FP64 path reads it: the default form (SiLU after a
// whole-row norm, BF16 tensors) or the variant fields of the parameters.
struct WideForm {
  int32_t gate, placement, group, x_dtype, z_dtype, w_dtype;
  __device__ __forceinline__ bool gated() const { return gate != CAKE_NORMGATE_GATE_NONE; }
  __device__ __forceinline__ bool before() const {
    return gated() && placement == CAKE_NORMGATE_GATE_BEFORE_NORM;
  }
};

__device__ __forceinline__ WideForm wide_form(const cake_normgate_params &p, bool variant) {
  if (!variant) {
    return WideForm{CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_AFTER_NORM, p.d,
                    CAKE_DTYPE_BF16,         CAKE_DTYPE_BF16,               CAKE_DTYPE_BF16};
  }
  return WideForm{p.gate, p.placement, p.group, p.x_dtype, p.z_dtype, p.w_dtype};
}

__device__ __forceinline__ double wide_load(const void *base, int32_t dtype, int64_t i) {
  if (dtype == CAKE_DTYPE_F32) return static_cast<double>(static_cast<const float *>(base)[i]);
  const unsigned short h = static_cast<const unsigned short *>(base)[i];
  if (dtype == CAKE_DTYPE_F16) return static_cast<double>(f16_to_f32(h));
  return static_cast<double>(__uint_as_float(static_cast<uint32_t>(h) << 16));
}

// The value to store for an output of `dtype`: the FP32 store of an FP32 output is this value;
// the BF16 and F16 stores round it again (RNE), so for them it is rounded to odd into FP32 (13 or
// more spare bits): the two roundings give the one rounding of v.
__device__ __forceinline__ float wide_round(double v, int32_t dtype) {
  return dtype == CAKE_DTYPE_F32 ? __double2float_rn(v) : double_to_f32_odd(v);
}

// A dw term into the FP32 chunk sum: rounded once, beyond FP32's range +-FLT_MAX.
__device__ __forceinline__ float wide_term(double t) {
  const float f = __double2float_rn(t);
  return isinf(f) && !isinf(t) ? copysignf(FLT_MAX, f) : f;
}

// 1 / sqrt(v) in FP64 without the library's slow path (a subroutine call): the SFU's estimate
// and three Newton steps. v = 0 gives +Inf, v = +Inf gives 0, NaN stays NaN, as 1 / sqrt(v).
__device__ __forceinline__ double wide_rsqrt(double v) {
  double r;
#if defined(CAKE_HOST_EMULATION)
  r = 1.0 / std::sqrt(v);
#else
  asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(v));
#pragma unroll
  for (int i = 0; i < 3; ++i) r = r * fma(-0.5 * v * r, r, 1.5);
#endif
  if (v == 0.0) return __longlong_as_double(0x7ff0000000000000ll);
  if (v > 1.7976931348623157e308 || v != v) return v == v ? 0.0 : v;
  return r;
}

// 1 / g for a group of g columns (8..8192), in FP64: the SFU's FP64 estimate and three Newton
// steps (no division, whose slow path is a subroutine call: a call makes the compiler spill
// the values it keeps across it). Each step doubles the estimate's bits: past 53 at the third.
__device__ __forceinline__ double wide_inverse(int32_t g) {
  const double x = static_cast<double>(g);
  double r;
#if defined(CAKE_HOST_EMULATION)
  r = 1.0 / x;
#else
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
#endif
#pragma unroll
  for (int i = 0; i < 3; ++i) r = r * fma(-x, r, 2.0);
  return r;
}

// Column c of a row: the inputs (exact in FP32), the gate a(z) and its slope a'(z) as the FP32
// sequence computes them, and n = u * rstd in FP64 (u = x * a before the norm, else x).
struct WideColumn {
  float x, dy, w, a, slope;
  double n;
  // The gradient reaching n: dn = pdy * w, with pdy = dy * a after the norm, else dy.
  __device__ __forceinline__ double pdy(bool before) const {
    return before ? static_cast<double>(dy) : static_cast<double>(dy) * a;
  }
};

__device__ __forceinline__ WideColumn wide_column(const cake_normgate_params &p, const WideForm &f,
                                                  int64_t row, int32_t c, double rstd, bool grad) {
  WideColumn k;
  k.x = static_cast<float>(wide_load(p.x, f.x_dtype, row * p.x_stride + c));
  k.a = 1.0f;
  k.slope = 0.0f;
  if (f.gated()) {
    const float z = static_cast<float>(wide_load(p.z, f.z_dtype, row * p.z_stride + c));
    const float s = sigmoid(z);
    k.a = gate_of(z, s, f.gate);
    k.slope = gate_slope(z, s, f.gate);
  }
  k.w = static_cast<float>(wide_load(p.w, f.w_dtype, c));
  k.n = (f.before() ? static_cast<double>(k.x) * k.a : static_cast<double>(k.x)) * rstd;
  k.dy = grad ? static_cast<float>(wide_load(p.dy, f.x_dtype, row * p.dy_stride + c)) : 0.0f;
  return k;
}

struct WideStats {
  double rstd;  // 1 / sqrt(mean(u^2) + eps)
  double mean;  // backward: mean(dn * n)
};

// The sums over the mean-square group of `row` that starts at column c0, its columns in order,
// column `skip` left out (-1: none) (FP64: every product of FP32-range values exact, the sums far
// from overflow): sum(u^2) and, for the backward, sum(dn * u).
__device__ __forceinline__ void wide_group_sums(const cake_normgate_params &p, const WideForm &f,
                                                int64_t row, int32_t c0, int32_t skip, bool grad,
                                                double &ss, double &su) {
  ss = 0.0;
  su = 0.0;
#pragma unroll 1
  for (int32_t c = c0; c < c0 + f.group; ++c) {
    if (c == skip) continue;
    const WideColumn k = wide_column(p, f, row, c, 1.0, grad);  // n = u
    ss = fma(k.n, k.n, ss);
    if (grad) su = fma(k.pdy(f.before()) * k.w, k.n, su);
  }
}

// The statistics of the mean-square group of `row` that holds column `col` (wide_group_sums):
// rstd and, for the backward, mean(dn * n) = rstd * sum(dn * u) / G.
__device__ __forceinline__ WideStats wide_stats(const cake_normgate_params &p, const WideForm &f,
                                                int64_t row, int32_t col, bool grad) {
  double ss, su;
  wide_group_sums(p, f, row, col - col % f.group, -1, grad, ss, su);
  const double inv = wide_inverse(f.group);
  WideStats st;
  st.rstd = wide_rsqrt(fma(ss, inv, static_cast<double>(p.eps)));
  st.mean = grad ? su * st.rstd * inv : 0.0;
  return st;
}

// Whether column k holds more than a quarter of its group's sum of squares (n^2 > G / 4; at most
// three columns of a group do): there du = (dn - n * mean(dn * n)) * rstd cancels, dn against
// n * mean, by as much as the rest of the group is small beside u (at BF16's largest u against
// ordinary values the relative residue is 2^-250, far below FP64's precision).
__device__ __forceinline__ bool wide_dominates(const WideColumn &k, int32_t group) {
  return k.n * k.n * 4.0 > static_cast<double>(group);
}

// du of a column c that wide_dominates, written out with the sums over the group's other
// columns, ss' = sum(u_j^2) and t' = sum(dn_j * u_j) (j != c), summed directly in order in a
// pass of their own (wide_group_sums without column c), so that no large term is subtracted:
//   du = rstd^3 / G * (dn_c * (ss' + G * eps) - u_c * t').
// FP64 carries every product (|dn| <= 2^384, |u| <= 2^256, |dn * u| <= 2^512, G <= 2^13).
// Column c's own values are read after the pass: the pass holds only its two sums.
__device__ __forceinline__ double wide_dominant_du(const cake_normgate_params &p, const WideForm &f,
                                                   int64_t row, int32_t c, double rstd) {
  double ss, t;
  wide_group_sums(p, f, row, c - c % f.group, c, true, ss, t);
  const WideColumn k = wide_column(p, f, row, c, 1.0, true);
  const double g = static_cast<double>(f.group);
  const double r2g = rstd * rstd * wide_inverse(f.group);  // 1 / (ss + G * eps)
  const double dn = k.pdy(f.before()) * k.w;
  return (fma(dn, fma(g, static_cast<double>(p.eps), ss), -(k.n * t)) * r2g) * rstd;
}

// One element of a BF16, F16 or FP32 tensor (a value wide_round gave).
__device__ __forceinline__ void wide_store(void *base, int32_t dtype, int64_t i, float v) {
  if (dtype == CAKE_DTYPE_F32) {
    static_cast<float *>(base)[i] = v;
  } else {
    const uint32_t h = dtype == CAKE_DTYPE_F16 ? pack_f16x2(v, 0.0f) : pack_bf16x2(v, 0.0f);
    static_cast<unsigned short *>(base)[i] = static_cast<unsigned short>(h & 0xffffu);
  }
}

// v into the last of 8 register values, the others one place down: a loop that is not
// unrolled fills an array in order without indexing it (an indexed array would live in local
// memory).
__device__ __forceinline__ void shift_in(float (&a)[8], float v) {
#pragma unroll
  for (int i = 0; i < 7; ++i) a[i] = a[i + 1];
  a[7] = v;
}

// The forward of this thread's leaf, the 8 columns [col, col + 8) of `row`, in FP64: sink(i, y)
// for each column in order (y to store as wide_round says); returns the group's rstd (FP32,
// rounded once). The loops are not unrolled: the rare path's registers stay few.
template <class Sink>
__device__ __forceinline__ float wide_forward8(const cake_normgate_params &p, const WideForm &f,
                                               int64_t row, int32_t col, Sink sink) {
  const WideStats st = wide_stats(p, f, row, col, false);
  const bool after = f.gated() && !f.before();
#pragma unroll 1
  for (int i = 0; i < 8; ++i) {
    const WideColumn k = wide_column(p, f, row, col + i, st.rstd, false);
    const double nw = k.n * k.w;
    sink(i, wide_round(after ? nw * k.a : nw, f.x_dtype));
  }
  return __double2float_rn(st.rstd);
}

// The backward of this thread's leaf in FP64: for each column in order sink(0, i, dx), then
// sink(1, i, dz), then sink(2, i, t) (dx, dz to store as wide_round says, the dw term pdy * n as
// wide_term): one output a pass over the columns, so that few FP64 values are live at once.
// scratch (two doubles of this thread's own shared memory, or null): the statistics pass
// through it, so that no register holds them across the passes (a program near its register
// budget).
template <class Sink>
__device__ __forceinline__ void wide_backward8(const cake_normgate_params &p, const WideForm &f,
                                               int64_t row, int32_t col, Sink sink,
                                               volatile double *scratch = nullptr) {
  const WideStats st = wide_stats(p, f, row, col, true);
  if (scratch != nullptr) {
    scratch[0] = st.rstd;
    scratch[1] = st.mean;
  }
  // First the dx and dz of the columns that wide_dominates, each from a pass of its own; the
  // loop below skips them.
#pragma unroll 1
  for (int i = 0; i < 8; ++i) {
    const double rstd = scratch != nullptr ? scratch[0] : st.rstd;
    if (!wide_dominates(wide_column(p, f, row, col + i, rstd, false), f.group)) continue;
    const double du = wide_dominant_du(p, f, row, col + i, rstd);
    const WideColumn k = wide_column(p, f, row, col + i, rstd, false);
    sink(0, i, wide_round(f.before() ? du * k.a : du, f.x_dtype));
    if (f.before()) sink(1, i, wide_round((du * k.x) * k.slope, f.z_dtype));
  }
#pragma unroll 1
  for (int j = 0; j < 24; ++j) {
    const int out = j >> 3, i = j & 7;
    if (out == 1 && !f.gated()) continue;
    const double rstd = scratch != nullptr ? scratch[0] : st.rstd;
    const WideColumn k = wide_column(p, f, row, col + i, rstd, true);
    const double pdy = k.pdy(f.before());
    if (out == 2) {
      sink(2, i, wide_term(pdy * k.n));
      continue;
    }
    if (out == 1 && !f.before()) {
      sink(1, i, wide_round((static_cast<double>(k.dy) * (k.n * k.w)) * k.slope, f.z_dtype));
      continue;
    }
    if (wide_dominates(k, f.group)) continue;  // written above
    const double mean = scratch != nullptr ? scratch[1] : st.mean;
    const double du = (pdy * k.w - k.n * mean) * rstd;
    if (out == 0) {
      sink(0, i, wide_round(f.before() ? du * k.a : du, f.x_dtype));
    } else {
      sink(1, i, wide_round((du * k.x) * k.slope, f.z_dtype));
    }
  }
}

// ---- What the programs call --------------------------------------------------------------

// The FP64 forward of a leaf stored in y (and rstd, index rstd_at, when the leaf starts its
// group and rstd is asked for).
__device__ __forceinline__ void wide_forward_store(const cake_normgate_params &p, bool variant,
                                                   int64_t row, int32_t col) {
  const WideForm f = wide_form(p, variant);
  const int64_t at = row * p.y_stride + col;
  const float r = wide_forward8(p, f, row, col, [&](int i, float y) { wide_store(p.y, f.x_dtype, at + i, y); });
  if (p.rstd != nullptr && col % f.group == 0) p.rstd[row * (p.d / f.group) + col / f.group] = r;
}

// The FP64 forward of a leaf into yf (for a quantizing program, which quantizes it next).
__device__ __forceinline__ float wide_forward_regs(const cake_normgate_params &p, bool variant,
                                                   int64_t row, int32_t col, float (&yf)[8]) {
  return wide_forward8(p, wide_form(p, variant), row, col, [&](int, float y) { shift_in(yf, y); });
}

// The FP64 backward of a leaf: dx, dz stored; each dw term added to the FP32 chunk sum of its
// column at acc[(i / 4) * acc_stride + i % 4] (first: the chunk's first row, stored there);
// scratch as for wide_backward8.
__device__ __forceinline__ void wide_backward_acc(const cake_normgate_params &p, bool variant,
                                                  int64_t row, int32_t col, float *acc,
                                                  int acc_stride, bool first, double *scratch) {
  const WideForm f = wide_form(p, variant);
  wide_backward8(
      p, f, row, col,
      [&](int out, int i, float v) {
        if (out == 0) {
          wide_store(p.dx, f.x_dtype, row * p.dx_stride + col + i, v);
        } else if (out == 1) {
          wide_store(p.dz, f.z_dtype, row * p.dz_stride + col + i, v);
        } else {
          float *a = acc + (i >> 2) * acc_stride + (i & 3);
          *a = first ? v : __fadd_rn(*a, v);
        }
      },
      scratch);
}

// The FP64 backward of a leaf: dx, dz stored, the dw terms at t[0..8) (not when t is null).
__device__ __forceinline__ void wide_backward_to(const cake_normgate_params &p, bool variant,
                                                 int64_t row, int32_t col, float *t) {
  const WideForm f = wide_form(p, variant);
  wide_backward8(p, f, row, col, [&](int out, int i, float v) {
    if (out == 0) {
      wide_store(p.dx, f.x_dtype, row * p.dx_stride + col + i, v);
    } else if (out == 1) {
      wide_store(p.dz, f.z_dtype, row * p.dz_stride + col + i, v);
    } else if (t != nullptr) {
      t[i] = v;
    }
  });
}

}  // namespace ng
}  // namespace cake
