// The SwiGLU sigmoid, bit-exact in every program.
//
// The exact sequence (docs/spec/swiglu-mxfp8.md, "Arithmetic"), the definition of the bits:
//   t = g * c                  c = -log2(e), FP32 bits 0xBFB8AA3B, mul.rn
//   e = ex2.approx.f32(t)      MUFU.EX2 (non-ftz form: subnormal results via a squaring)
//   d = 1 + e                  add.rn
//   s = rcp.rn.f32(d)          IEEE reciprocal; ptxas emits MUFU.RCP + one Newton step and
//                              branches to a slow subroutine when d's biased exponent is
//                              0, 253, 254 or 255 (subnormal result, huge, Inf, NaN)
//
// The fast form computes the same bits with no branch on the common path:
//   e = ex2.approx.ftz.f32(t)  differs from the non-ftz form only when t < -126, where
//                              e < 2^-126 and d = 1 + e rounds to exactly 1 either way;
//   r = rcp.approx.ftz(d)      MUFU.RCP, the same instruction ptxas's rcp.rn starts with;
//   s = fma(r, fma(-d, r, 1), r)  the Newton step of ptxas's rcp.rn fast path (it computes
//                              -(d*r - 1), the same rounding since RN is sign-symmetric).
// So for d in [1, 2^126), biased exponent 127..252, it is the compiler's own fast path,
// instruction for instruction. Outside (d >= 2^126, i.e. g below about -87.3, d = Inf, or NaN) the
// guard flags the value and the band path recomputes it with sigmoid_band(): the exact sequence
// with rcp_rn_nocall(), which gives rcp.rn's bits without ptxas's slow-path subroutine call (see
// there; the call made ptxas spill around it). The GPU test checks all 65,536 BF16 gates in every
// sigmoid form x band form against the exact sequence (cake_sigmoid_table_exact).
//
// Sigmoid forms (program knob sigmoid_form), both the fast form with the band path: the same
// bits as the exact sequence per element, without its slow-path branch on every value:
//   1 fast    scalar fast form + guard + band path.
//   2 packed  like 1 with the FP32 arithmetic in packed f32x2 (mul/add/fma.rn.f32x2) where the
//             architecture has it (sm_100+); elsewhere the scalar ops, which give the same bits
//             (a packed op is two independent RN ops). MUFU stays scalar everywhere.
// Band forms (program knob band_form), how flagged pairs are recomputed:
//   0 inline  a branch per pair around an inlined exact pair;
//   1 call    a branch per pair around an out-of-line (__noinline__) exact pair: less code and
//             fewer registers live in the hot loop, a call when taken;
//   2 loop    the fast pass only collects a bitmask of flagged pairs; one loop then visits the
//             set bits and recomputes those pairs (select chains, no local memory).
//   3 group   the fast pass only folds the guard into one running unsigned max (two integer
//             max per pair, no branch, no per-pair mask); if the group (a thread's 16 gates of
//             one row) holds any flagged value, every pair of the group is recomputed by the
//             loop of form 2. The hot path carries no convergence barrier, so the compiler can
//             interleave the pairs' MUFU latencies; a flagged gate costs a whole group's refix.
//
// CAKE_HOST_EMULATION: the CPU emulation test (tests/host/test_swiglu_mxfp8_emulated.cc) compiles
// these headers with g++, the few PTX instructions replaced by cake_emu:: functions.
#pragma once
#include <stdint.h>

namespace cake {
namespace swiglu {

enum SigmoidForm : int { kSigFast = 1, kSigPacked = 2 };
enum BandForm : int { kBandInline = 0, kBandCall = 1, kBandLoop = 2, kBandGroup = 3 };

constexpr uint32_t kNegLog2eBits = 0xBFB8AA3Bu;  // -log2(e) rounded to FP32
constexpr uint32_t kGuardBits = 0x7E800000u;     // 2^126: fast form exact for d below it

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
#define CAKE_SWIGLU_HAS_F32X2 1
#else
#define CAKE_SWIGLU_HAS_F32X2 0
#endif

__device__ __forceinline__ float neg_log2e() { return __uint_as_float(kNegLog2eBits); }

__device__ __forceinline__ float ex2_approx(float t) {
#if defined(CAKE_HOST_EMULATION)
  return cake_emu::ex2_approx(t);
#else
  float e;
  asm("ex2.approx.f32 %0, %1;" : "=f"(e) : "f"(t));
  return e;
#endif
}

__device__ __forceinline__ float ex2_approx_ftz(float t) {
#if defined(CAKE_HOST_EMULATION)
  return cake_emu::ex2_approx_ftz(t);
#else
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(t));
  return e;
#endif
}

__device__ __forceinline__ float rcp_rn(float d) {
#if defined(CAKE_HOST_EMULATION)
  return cake_emu::rcp_rn(d);
#else
  float s;
  asm("rcp.rn.f32 %0, %1;" : "=f"(s) : "f"(d));
  return s;
#endif
}

__device__ __forceinline__ float rcp_approx_ftz(float d) {
#if defined(CAKE_HOST_EMULATION)
  return cake_emu::rcp_approx_ftz(d);
#else
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
#endif
}

// The exact sequence: the definition of the sigmoid bits (the GPU test's reference table).
__device__ __forceinline__ float sigmoid_exact(float g) {
  const float t = __fmul_rn(g, neg_log2e());
  const float e = ex2_approx(t);
  const float d = __fadd_rn(1.0f, e);
  return rcp_rn(d);
}

// rcp.rn.f32 for d >= 1 or NaN (every d the sequence produces), with no subroutine call:
// ptxas's rcp.rn calls a slow-path subroutine for biased exponents 0, 253, 254, 255, and a call
// inside the guarded band path makes ptxas keep or spill registers around it in the hot loop.
//   exponent 1..252   MUFU.RCP + the Newton step: ptxas's own fast path, instruction for
//                     instruction;
//   exponent 255      (Inf, NaN) MUFU.RCP(d): what ptxas's slow path executes for them;
//   exponent 253, 254 (d in [2^126, 2^128), result subnormal) 1/d in FP64 by MUFU.RCP64H and
//                     two Newton steps (relative error far below 2^-48), then one rounding to
//                     FP32 (cvt.rn.f32.f64, subnormals kept). That single rounding is the correct
//                     one: for d = m*2^e (m < 2^24, e >= 103) a rounding tie of the FP32
//                     subnormal grid T = (2j+1)*2^-150 satisfies |1/d - T| >= 2^-174, i.e. a
//                     relative distance >= 2^-48 from 1/d, so an approximation closer than that
//                     rounds to RN(1/d).
// The GPU test checks the band forms that use it against rcp.rn on all 65,536 gates.
__device__ __forceinline__ float rcp_rn_nocall(float d) {
  const uint32_t exp = (__float_as_uint(d) >> 23) & 0xFFu;
  const float r = rcp_approx_ftz(d);
  if (exp - 1u < 252u) return __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
  if (exp == 0xFFu) return r;
#if defined(CAKE_HOST_EMULATION)
  return (float)(1.0 / (double)d);
#else
  const double dd = (double)d;
  double q;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(q) : "d"(dd));
  q = __fma_rn(q, __fma_rn(-dd, q, 1.0), q);
  q = __fma_rn(q, __fma_rn(-dd, q, 1.0), q);
  return __double2float_rn(q);
#endif
}

// The exact sequence's bits without the rcp.rn subroutine call: what the band paths recompute
// flagged pairs with (sigmoid_exact(), the reference table's, keeps the literal rcp.rn.f32).
__device__ __forceinline__ float sigmoid_band(float g) {
  const float t = __fmul_rn(g, neg_log2e());
  const float e = ex2_approx(t);
  const float d = __fadd_rn(1.0f, e);
  return rcp_rn_nocall(d);
}

// Out-of-line exact pair for band form 1.
static __device__ __noinline__ float2 sigmoid_exact_pair_call(float g0, float g1) {
  return make_float2(sigmoid_band(g0), sigmoid_band(g1));
}

// ---- packed f32x2 arithmetic (sm_100+), scalar elsewhere with the same bits ----
// Operands travel as two floats; on sm_100+ they are packed into a .b64 for the one instruction
// (mov.b64 of an adjacent register pair costs nothing after register allocation).

#if CAKE_SWIGLU_HAS_F32X2
__device__ __forceinline__ uint64_t f2_pack(float lo, float hi) {
  uint64_t r;
  asm("mov.b64 %0, {%1, %2};" : "=l"(r) : "f"(lo), "f"(hi));
  return r;
}
__device__ __forceinline__ float2 f2_unpack(uint64_t v) {
  float2 r;
  asm("mov.b64 {%0, %1}, %2;" : "=f"(r.x), "=f"(r.y) : "l"(v));
  return r;
}
#endif

__device__ __forceinline__ float2 mul2_rn(float2 a, float2 b) {
#if CAKE_SWIGLU_HAS_F32X2
  uint64_t d;
  asm("mul.rn.f32x2 %0, %1, %2;" : "=l"(d) : "l"(f2_pack(a.x, a.y)), "l"(f2_pack(b.x, b.y)));
  return f2_unpack(d);
#else
  return make_float2(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y));
#endif
}

__device__ __forceinline__ float2 add2_rn(float2 a, float2 b) {
#if CAKE_SWIGLU_HAS_F32X2
  uint64_t d;
  asm("add.rn.f32x2 %0, %1, %2;" : "=l"(d) : "l"(f2_pack(a.x, a.y)), "l"(f2_pack(b.x, b.y)));
  return f2_unpack(d);
#else
  return make_float2(__fadd_rn(a.x, b.x), __fadd_rn(a.y, b.y));
#endif
}

__device__ __forceinline__ float2 sub2_rn(float2 a, float2 b) {
#if CAKE_SWIGLU_HAS_F32X2
  uint64_t d;
  asm("sub.rn.f32x2 %0, %1, %2;" : "=l"(d) : "l"(f2_pack(a.x, a.y)), "l"(f2_pack(b.x, b.y)));
  return f2_unpack(d);
#else
  return make_float2(__fsub_rn(a.x, b.x), __fsub_rn(a.y, b.y));
#endif
}

__device__ __forceinline__ float2 fma2_rn(float2 a, float2 b, float2 c) {
#if CAKE_SWIGLU_HAS_F32X2
  uint64_t d;
  asm("fma.rn.f32x2 %0, %1, %2, %3;"
      : "=l"(d)
      : "l"(f2_pack(a.x, a.y)), "l"(f2_pack(b.x, b.y)), "l"(f2_pack(c.x, c.y)));
  return f2_unpack(d);
#else
  return make_float2(__fmaf_rn(a.x, b.x, c.x), __fmaf_rn(a.y, b.y, c.y));
#endif
}

// Arithmetic of a pair in the program's sigmoid form: packed only in form 2.
template <int kSig>
__device__ __forceinline__ float2 pmul(float2 a, float2 b) {
  if constexpr (kSig == kSigPacked) return mul2_rn(a, b);
  return make_float2(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y));
}
template <int kSig>
__device__ __forceinline__ float2 psub(float2 a, float2 b) {
  if constexpr (kSig == kSigPacked) return sub2_rn(a, b);
  return make_float2(__fsub_rn(a.x, b.x), __fsub_rn(a.y, b.y));
}
template <int kSig>
__device__ __forceinline__ float2 pfma(float2 a, float2 b, float2 c) {
  if constexpr (kSig == kSigPacked) return fma2_rn(a, b, c);
  return make_float2(__fmaf_rn(a.x, b.x, c.x), __fmaf_rn(a.y, b.y, c.y));
}

// Fast form of one pair. Returns the larger of the two d bit patterns: the pair is outside the
// proven range (d >= 2^126 or NaN) and must be recomputed with the exact sequence when it is
// >= kGuardBits.
template <int kSig>
__device__ __forceinline__ uint32_t sigmoid_fast_pair_guard(float2 g, float2 &s) {
  const float c = neg_log2e();
  float2 t, d;
  if constexpr (kSig == kSigPacked) {
    t = mul2_rn(g, make_float2(c, c));
    const float2 e = make_float2(ex2_approx_ftz(t.x), ex2_approx_ftz(t.y));
    d = add2_rn(make_float2(1.0f, 1.0f), e);
    const float2 r = make_float2(rcp_approx_ftz(d.x), rcp_approx_ftz(d.y));
    const float2 err = fma2_rn(make_float2(-d.x, -d.y), r, make_float2(1.0f, 1.0f));
    s = fma2_rn(r, err, r);
  } else {
    t = make_float2(__fmul_rn(g.x, c), __fmul_rn(g.y, c));
    d = make_float2(__fadd_rn(1.0f, ex2_approx_ftz(t.x)), __fadd_rn(1.0f, ex2_approx_ftz(t.y)));
    const float rx = rcp_approx_ftz(d.x), ry = rcp_approx_ftz(d.y);
    s.x = __fmaf_rn(rx, __fmaf_rn(-d.x, rx, 1.0f), rx);
    s.y = __fmaf_rn(ry, __fmaf_rn(-d.y, ry, 1.0f), ry);
  }
  // d >= 1 always (or NaN), so "not below 2^126" is an unsigned compare of the larger pattern;
  // a NaN of either sign is above 0x7E800000 as an unsigned pattern.
  return max(__float_as_uint(d.x), __float_as_uint(d.y));
}

// Fast form of one pair. Returns true when either value is outside the proven range
// (d >= 2^126 or NaN) and must be recomputed with the exact sequence.
template <int kSig>
__device__ __forceinline__ bool sigmoid_fast_pair(float2 g, float2 &s) {
  return sigmoid_fast_pair_guard<kSig>(g, s) >= kGuardBits;
}

// Sigmoid of one pair in a per-pair form: the fast form with the flagged pair recomputed inline
// (band 0) or by an out-of-line call (band 1).
template <int kSig, int kBand>
__device__ __forceinline__ float2 sigmoid_pair(float2 g) {
  static_assert(kSig == kSigFast || kSig == kSigPacked, "sigmoid_form is 1 or 2");
  static_assert(kBand == kBandInline || kBand == kBandCall, "per-pair band forms are 0 and 1");
  float2 s;
  const bool flagged = sigmoid_fast_pair<kSig>(g, s);
  if constexpr (kBand == kBandInline) {
    if (flagged) s = make_float2(sigmoid_band(g.x), sigmoid_band(g.y));
  } else {
    if (flagged) s = sigmoid_exact_pair_call(g.x, g.y);
  }
  return s;
}

__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));
}

// The sigmoid of NP pairs of BF16 gates (packed two per word, lo first), handed pair by pair to
// emit(j, g, s) (j a compile-time index after unrolling; g and s as float2). Every program and the
// table kernels go through here.
//   band 0, band 1: pair j is computed (and fixed) and emitted in turn;
//   band 2 (loop): the fast form is emitted for every pair while a bitmask collects the flagged
//   ones (band 3: while one running max says whether any is flagged; then all are refixed);
//   then one loop visits only the set bits and calls refix(j) (j a run-time index), which
//   recomputes pair j with the exact sequence and overwrites what emit produced for it. Nothing
//   but the outputs and the mask stays live across the fast pass; refix fetches its inputs again
//   (the kernel from global memory, a cache hit) rather than keeping all gates in registers.
// more() (optional) is asked once after the fast pass for a mask of further pairs to hand to
// refix(j) (the SwiGLU backward's rows whose dact * grad overflowed FP32, swiglu_phase1.cuh); in
// band forms 0 and 1 that is the only refix loop, absent when more() is the constant 0.
// pre(g) (optional) is what the sigmoid is taken of: the clamped SwiGLU's alpha * min(g, limit)
// (swiglu_variant.cuh); emit still receives the gate g itself.
template <int kSig, int kBand, int NP, class Pre, class Emit, class Refix, class More>
__device__ __forceinline__ void for_each_sigmoid_pair_of(const uint32_t (&gw)[NP], Pre &&pre,
                                                         Emit &&emit, Refix &&refix,
                                                         More &&more) {
  static_assert(NP >= 1 && NP <= 32, "up to 32 pairs");
  static_assert(kBand >= kBandInline && kBand <= kBandGroup, "band_form is 0, 1, 2 or 3");
  if constexpr (kBand == kBandInline || kBand == kBandCall) {
#pragma unroll
    for (int j = 0; j < NP; ++j) {
      const float2 g = bf16x2_to_float2(gw[j]);
      emit(j, g, sigmoid_pair<kSig, kBand>(pre(g)));
    }
    uint32_t flagged = more();
#pragma unroll 1
    while (flagged != 0) {
      const int j = __ffs(flagged) - 1;
      flagged &= flagged - 1;
      refix(j);
    }
  } else {
    uint32_t flagged = 0;
    if constexpr (kBand == kBandLoop) {
#pragma unroll
      for (int j = 0; j < NP; ++j) {
        const float2 g = bf16x2_to_float2(gw[j]);
        float2 s;
        flagged |= (uint32_t)sigmoid_fast_pair<kSig>(pre(g), s) << j;
        emit(j, g, s);
      }
    } else {
      uint32_t guard = 0;
#pragma unroll
      for (int j = 0; j < NP; ++j) {
        const float2 g = bf16x2_to_float2(gw[j]);
        float2 s;
        guard = max(guard, sigmoid_fast_pair_guard<kSig>(pre(g), s));
        emit(j, g, s);
      }
      constexpr uint32_t kAll = NP == 32 ? 0xFFFFFFFFu : (1u << NP) - 1u;
      flagged = guard >= kGuardBits ? kAll : 0u;
    }
    flagged |= more();
#pragma unroll 1
    while (flagged != 0) {
      const int j = __ffs(flagged) - 1;
      flagged &= flagged - 1;
      refix(j);
    }
  }
}

template <int kSig, int kBand, int NP, class Emit, class Refix, class More>
__device__ __forceinline__ void for_each_sigmoid_pair(const uint32_t (&gw)[NP], Emit &&emit,
                                                      Refix &&refix, More &&more) {
  for_each_sigmoid_pair_of<kSig, kBand, NP>(
      gw, [](float2 g) { return g; }, emit, refix, more);
}

template <int kSig, int kBand, int NP, class Emit, class Refix>
__device__ __forceinline__ void for_each_sigmoid_pair(const uint32_t (&gw)[NP], Emit &&emit,
                                                      Refix &&refix) {
  for_each_sigmoid_pair<kSig, kBand, NP>(gw, emit, refix, [] { return 0u; });
}

// The exact pair from a packed gate word: what refix computes.
__device__ __forceinline__ float2 sigmoid_exact_pair(uint32_t gate_word) {
  const float2 g = bf16x2_to_float2(gate_word);
  return make_float2(sigmoid_band(g.x), sigmoid_band(g.y));
}

}  // namespace swiglu
}  // namespace cake
