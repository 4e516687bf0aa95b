// 16-byte global loads/stores with the cache hints programs choose, bf16 packing, L2 prefetch.
// Shared by every family; the hint is a compile-time knob of a program.
#pragma once
#include <stdint.h>

namespace cake {

enum LoadHint : int {
  kLoadDefault = 0,     // ld.global.nc: read-only path, normal caching
  kLoadNoAllocate = 1,  // L1::no_allocate: streamed once, keep L1 for others
  kLoadEvictFirst = 2,  // L2::evict_first: streamed once, let L2 drop it first
};

template <int kHint>
__device__ __forceinline__ uint4 load16(const void *ptr) {
  uint4 v;
  if constexpr (kHint == kLoadNoAllocate) {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr));
  } else if constexpr (kHint == kLoadEvictFirst) {
    asm volatile("ld.global.nc.L2::evict_first.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr));
  } else {
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(ptr));
  }
  return v;
}

// Outputs are written once and not read again by this kernel: streaming store.
__device__ __forceinline__ void store16(void *ptr, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(ptr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

// Warm L2 with a contiguous byte range (16-byte aligned, size a multiple of 16). Exists from
// sm_90; the copy engine does it, the issuing thread does not wait.
__device__ __forceinline__ void prefetch_l2_bulk(const void *ptr, uint32_t bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(ptr), "r"(bytes) : "memory");
}

__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

// Round two floats to bf16 (round-to-nearest-even) and pack: lo in bits 0..15.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Eight bf16 values of a 16-byte vector, in column order.
__device__ __forceinline__ void unpack8(uint4 v, float (&f)[8]) {
  f[0] = bf16_lo(v.x); f[1] = bf16_hi(v.x);
  f[2] = bf16_lo(v.y); f[3] = bf16_hi(v.y);
  f[4] = bf16_lo(v.z); f[5] = bf16_hi(v.z);
  f[6] = bf16_lo(v.w); f[7] = bf16_hi(v.w);
}

__device__ __forceinline__ uint4 pack8(const float (&f)[8]) {
  return make_uint4(pack_bf16x2(f[0], f[1]), pack_bf16x2(f[2], f[3]), pack_bf16x2(f[4], f[5]),
                    pack_bf16x2(f[6], f[7]));
}

}  // namespace cake
