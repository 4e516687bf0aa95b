// A small SIMT emulator so that kernel bodies written for nvcc run on the CPU: every CUDA thread
// of a CTA is an OS thread, __syncthreads is a CTA barrier, __shfl_xor_sync a warp exchange
// through two warp barriers, __shared__ a static (one CTA runs at a time). The handful of PTX
// instructions the SwiGLU headers use are replaced (CAKE_HOST_EMULATION) by cake_emu:: functions
// with the host model's arithmetic: ex2.approx by a correctly rounded 2^t (the host stand-in
// table, cake_ref::host_sigmoid_table), the reciprocals by IEEE division.
//
// What it checks: indexing, tiling, shared-memory layout, shuffles, scale placement, padding,
// band-path control flow, i.e. everything but the hardware's own arithmetic, which the GPU test
// covers. Include it before any kernel header.
#pragma once
#define CAKE_HOST_EMULATION 1

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__
#define __launch_bounds__(...)

struct uint4 {
  unsigned int x, y, z, w;
};
struct uint2 {
  unsigned int x, y;
};
struct float2 {
  float x, y;
};
struct dim3e {
  unsigned int x = 0, y = 0, z = 0;
};
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float2 make_float2(float a, float b) { return {a, b}; }

namespace cake_emu {

// A reusable barrier (generation counted).
class Barrier {
 public:
  explicit Barrier(int n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> l(m_);
    const uint64_t gen = gen_;
    if (++count_ == n_) {
      count_ = 0;
      ++gen_;
      cv_.notify_all();
    } else {
      cv_.wait(l, [&] { return gen_ != gen; });
    }
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int n_, count_ = 0;
  uint64_t gen_ = 0;
};

struct Cta {
  std::unique_ptr<Barrier> block;
  std::vector<std::unique_ptr<Barrier>> warps;
  std::vector<uint32_t> slots;  // shuffle exchange, one per thread
};

inline Cta *&cta() {
  static Cta *c = nullptr;
  return c;
}

inline float f32(uint32_t b) {
  float f;
  memcpy(&f, &b, 4);
  return f;
}
inline uint32_t u32(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

inline float ex2_approx(float t) { return (float)exp2((double)t); }
inline float ex2_approx_ftz(float t) {
  const float e = (float)exp2((double)t);
  return fabsf(e) < ldexpf(1.0f, -126) ? 0.0f : e;
}
inline float rcp_rn(float d) { return 1.0f / d; }
inline float rcp_approx_ftz(float d) { return 1.0f / d; }
inline uint4 ldg16(const void *p, int /*hint*/) {
  uint4 v;
  memcpy(&v, p, 16);
  return v;
}

// F16 conversions (the normgate variant programs' cvt instructions): exact widening, and one
// round-to-nearest-even narrowing with subnormals and overflow to Inf.
inline float f16_to_f32(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0x1f) {
    v = mant ? NAN : INFINITY;
  } else if (exp == 0) {
    v = ldexpf((float)mant, -24);
  } else {
    v = ldexpf(1024.0f + (float)mant, exp - 25);
  }
  return sign ? -v : v;
}
inline uint16_t f32_to_f16_rn(float f) {
  if (isnan(f)) return 0x7e00;
  const uint16_t sign = signbit(f) ? 0x8000 : 0;
  const double a = fabs((double)f);
  if (a == 0.0) return sign;
  int e;
  frexp(a, &e);
  const int q = (e < -13 ? -13 : e) - 11;
  const double r = nearbyint(ldexp(a, -q)) * ldexp(1.0, q);
  if (r > 65504.0) return sign | 0x7c00;
  if (r < ldexp(1.0, -14)) return sign | (uint16_t)ldexp(r, 24);
  int er;
  const double m = frexp(r, &er);
  return sign | (uint16_t)((er - 1 + 15) << 10) | (uint16_t)(ldexp(m, 11) - 1024.0);
}

// Dynamic shared memory: one buffer (one CTA runs at a time), as large as an H200 CTA's.
inline void *dynamic_smem() {
  alignas(16) static unsigned char buf[227 * 1024];
  return buf;
}
inline void cp_async16(void *dst, const void *src, bool full) {
  if (full) {
    memcpy(dst, src, 16);
  } else {
    memset(dst, 0, 16);
  }
}

}  // namespace cake_emu

extern thread_local dim3e threadIdx, blockIdx;
extern dim3e blockDim, gridDim;

inline float __uint_as_float(unsigned int b) { return cake_emu::f32(b); }
inline unsigned int __float_as_uint(float f) { return cake_emu::u32(f); }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
// Double to float, to nearest and toward zero (the FP64 path of normgate_wide.cuh): the host's
// conversion rounds to nearest; toward zero truncates the nearest result back where it rounded up
// in magnitude.
inline float __double2float_rn(double v) { return static_cast<float>(v); }
inline float __double2float_rz(double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(v) && std::fabs(static_cast<double>(f)) > std::fabs(v)) {
    f = std::nextafter(f, 0.0f);
  }
  return f;
}
inline unsigned int __vmaxu2(unsigned int a, unsigned int b) {
  const unsigned lo = std::max(a & 0xFFFFu, b & 0xFFFFu), hi = std::max(a >> 16, b >> 16);
  return lo | (hi << 16);
}
inline unsigned int __vmaxs2(unsigned int a, unsigned int b) {
  const auto s16 = [](unsigned v) { return (int)(int16_t)(uint16_t)v; };
  const unsigned lo = (unsigned)(uint16_t)std::max(s16(a), s16(b));
  const unsigned hi = (unsigned)(uint16_t)std::max(s16(a >> 16), s16(b >> 16));
  return lo | (hi << 16);
}
inline int __ffs(unsigned int x) { return __builtin_ffs((int)x); }
inline unsigned int __ldg(const unsigned int *p) { return *p; }
// The cache-hinted global accesses and the bit casts of the FP64 path (normgate_wide.cuh).
template <class T>
inline T __ldcg(const T *p) { return *p; }
template <class T>
inline void __stcg(T *p, T v) { *p = v; }
inline float __int_as_float(int b) { return cake_emu::f32(static_cast<uint32_t>(b)); }
inline double __longlong_as_double(long long b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}
inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }

inline void __syncthreads() { cake_emu::cta()->block->wait(); }

inline unsigned int __shfl_xor_sync(unsigned int /*mask*/, unsigned int v, int lane_mask) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32;
  c->slots[t] = v;
  c->warps[warp]->wait();
  const unsigned r = c->slots[(t & ~31u) | ((t & 31u) ^ (unsigned)lane_mask)];
  c->warps[warp]->wait();
  return r;
}

// The indexed shuffle of a float (the normgate variant programs' group sums): every lane of
// the warp takes part, as on the device with a full mask.
inline float __shfl_sync(unsigned int /*mask*/, float v, int src_lane) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32;
  c->slots[t] = cake_emu::u32(v);
  c->warps[warp]->wait();
  const unsigned r = c->slots[(t & ~31u) | ((unsigned)src_lane & 31u)];
  c->warps[warp]->wait();
  return cake_emu::f32(r);
}
// The up shuffle within segments of `width` lanes (a lane in a segment's first `delta` keeps its
// own value): unsigned (the grouped SwiGLU programs' col_q runs, swiglu_col_runs.cuh), and over
// the whole warp for a float (the normgate variant programs' group sums) and an int (the grouped
// SwiGLU programs' scans of the experts).
inline unsigned int __shfl_up_sync(unsigned int /*mask*/, unsigned int v, unsigned int delta,
                                   int width) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32, lane = t & 31u;
  c->slots[t] = v;
  c->warps[warp]->wait();
  const unsigned r = c->slots[(t & ~31u) | (lane % (unsigned)width >= delta ? lane - delta : lane)];
  c->warps[warp]->wait();
  return r;
}
inline float __shfl_up_sync(unsigned int mask, float v, unsigned int delta) {
  return cake_emu::f32(__shfl_up_sync(mask, cake_emu::u32(v), delta, 32));
}
inline int __shfl_up_sync(unsigned int mask, int v, unsigned int delta) {
  return (int)__shfl_up_sync(mask, (unsigned int)v, delta, 32);
}

// The funnel shift (the grouped SwiGLU programs' col_q runs, swiglu_col_runs.cuh).
inline unsigned int __funnelshift_r(unsigned int lo, unsigned int hi, unsigned int shift) {
  const unsigned s = shift & 31u;
  return s == 0 ? lo : (lo >> s) | (hi << (32u - s));
}

// Float and down shuffles, and the votes (the normgate forward bodies): every lane of the warp
// takes part, as on the device with a full mask.
inline float __shfl_xor_sync(unsigned int mask, float v, int lane_mask) {
  return cake_emu::f32(__shfl_xor_sync(mask, cake_emu::u32(v), lane_mask));
}
inline unsigned int __shfl_down_sync(unsigned int /*mask*/, unsigned int v, unsigned int delta) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32, lane = t & 31u;
  c->slots[t] = v;
  c->warps[warp]->wait();
  const unsigned r = c->slots[(t & ~31u) | (lane + delta < 32 ? lane + delta : lane)];
  c->warps[warp]->wait();
  return r;
}
inline int __any_sync(unsigned int /*mask*/, int pred) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32;
  c->slots[t] = pred != 0;
  c->warps[warp]->wait();
  unsigned any = 0;
  for (unsigned i = 0; i < 32; ++i) any |= c->slots[warp * 32 + i];
  c->warps[warp]->wait();
  return (int)any;
}
inline int __all_sync(unsigned int mask, int pred) { return !__any_sync(mask, !pred); }
inline unsigned int __ballot_sync(unsigned int /*mask*/, int pred) {
  cake_emu::Cta *c = cake_emu::cta();
  const unsigned t = threadIdx.x, warp = t / 32;
  c->slots[t] = pred != 0;
  c->warps[warp]->wait();
  unsigned bits = 0;
  for (unsigned i = 0; i < 32; ++i) bits |= c->slots[warp * 32 + i] << i;
  c->warps[warp]->wait();
  return bits;
}
inline int __syncthreads_or(int pred) {
  cake_emu::Cta *c = cake_emu::cta();
  c->slots[threadIdx.x] = pred != 0;
  c->block->wait();
  unsigned any = 0;
  for (unsigned v : c->slots) any |= v;
  c->block->wait();
  return (int)any;
}

namespace cake_emu {

// Runs kernel(args) on a 1-D grid, one CTA after another, every thread of a CTA concurrently.
template <class Kernel>
void launch(Kernel kernel, unsigned grid, unsigned block) {
  gridDim.x = grid;
  gridDim.y = gridDim.z = 1;
  blockDim.x = block;
  blockDim.y = blockDim.z = 1;
  for (unsigned b = 0; b < grid; ++b) {
    Cta c;
    c.block = std::make_unique<Barrier>((int)block);
    for (unsigned w = 0; w < (block + 31) / 32; ++w) c.warps.push_back(std::make_unique<Barrier>(32));
    c.slots.assign(block, 0);
    cta() = &c;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (unsigned t = 0; t < block; ++t) {
      threads.emplace_back([&, t, b] {
        threadIdx.x = t;
        blockIdx.x = b;
        kernel();
      });
    }
    for (auto &th : threads) th.join();
    cta() = nullptr;
  }
}

}  // namespace cake_emu

#define CAKE_EMULATION_GLOBALS \
  thread_local dim3e threadIdx, blockIdx; \
  dim3e blockDim, gridDim;
