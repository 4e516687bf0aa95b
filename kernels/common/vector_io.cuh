// 16-byte global loads/stores with the cache hints programs choose, bf16 unpacking and RNE
// packing, L2 bulk prefetch: the one home of these primitives for every family. The hint is a
// compile-time knob of a program. CAKE_HOST_EMULATION (tests/host/cuda_host_emulation.h) swaps
// the PTX for host code so the kernel bodies run on the CPU in a host-only test.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"

namespace cake {

enum LoadHint : int {
  kLoadDefault = 0,     // ld.global.nc: read-only path, normal caching
  kLoadNoAllocate = 1,  // L1::no_allocate: streamed once, keep L1 for others
  kLoadEvictFirst = 2,  // L2 evict_first policy: streamed once, let L2 drop it first
};

// Loads are non-volatile asm without a memory clobber: callers only read inputs the kernel
// never writes, so the compiler may hoist and batch them freely.
template <int kHint>
__device__ __forceinline__ uint4 load16(const void *ptr) {
  uint4 v;
#if defined(CAKE_HOST_EMULATION)
  v = cake_emu::ldg16(ptr, kHint);
#else
  if constexpr (kHint == kLoadNoAllocate) {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(ptr));
  } else if constexpr (kHint == kLoadEvictFirst) {
    // sm_90 takes the L2 eviction priority as a cache policy operand (createpolicy), not as a
    // qualifier on a 16-byte load.
    uint64_t policy;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(ptr), "l"(policy));
  } else {
    asm("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(ptr));
  }
#endif
  return v;
}

enum StoreHint : int {
  kStoreDefault = 0,    // st.global
  kStoreStreaming = 1,  // st.global.cs: written once, not read again by this kernel
};

// Intrinsics, not asm: no memory clobber, so the compiler schedules them freely.
template <int kHint = kStoreDefault>
__device__ __forceinline__ void store16(void *ptr, uint4 v) {
#if defined(CAKE_HOST_EMULATION)
  *reinterpret_cast<uint4 *>(ptr) = v;
#else
  if constexpr (kHint == kStoreStreaming) {
    __stcs(reinterpret_cast<uint4 *>(ptr), v);
  } else {
    *reinterpret_cast<uint4 *>(ptr) = v;
  }
#endif
}

// 8 bytes: the rowwise pieces of programs with 8-column slots (a warp still writes whole
// 32-byte sectors: four lanes a block).
__device__ __forceinline__ void store8(void *ptr, uint2 v) {
  *reinterpret_cast<uint2 *>(ptr) = v;
}

// Warm L2 with a contiguous byte range (16-byte aligned, size a multiple of 16). Exists from
// sm_90; the copy engine does it, the issuing thread does not wait. (The host emulation has no
// L2 to warm.)
__device__ __forceinline__ void prefetch_l2_bulk(const void *ptr, uint32_t bytes) {
#if defined(CAKE_HOST_EMULATION)
  (void)ptr;
  (void)bytes;
#else
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(ptr), "r"(bytes) : "memory");
#endif
}

// The kernel's dynamic shared memory (the launch's byte count), 16-byte aligned. The emulator
// runs one CTA at a time and hands out one static buffer.
template <class T>
__device__ __forceinline__ T *dynamic_smem() {
#if defined(CAKE_HOST_EMULATION)
  return reinterpret_cast<T *>(cake_emu::dynamic_smem());
#else
  extern __shared__ __align__(16) unsigned char cake_dynamic_smem[];
  return reinterpret_cast<T *>(cake_dynamic_smem);
#endif
}

// 16 bytes global -> shared without registers (cp.async, L1 bypassed); with full == false the
// 16 bytes are zero-filled and nothing is read. Completion: commit groups, waited per thread.
// The emulator copies at once (the earliest completion a program must be correct under).
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool full) {
#if defined(CAKE_HOST_EMULATION)
  cake_emu::cp_async16(smem, gmem, full);
#else
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem),
               "r"(full ? 16 : 0)
               : "memory");
#endif
}
// The same, all 16 bytes read.
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem) {
#if defined(CAKE_HOST_EMULATION)
  cake_emu::cp_async16(smem, gmem, true);
#else
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(gmem) : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if !defined(CAKE_HOST_EMULATION)
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Wait until at most kPending of this thread's commit groups are still in flight.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#if !defined(CAKE_HOST_EMULATION)
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
#endif
}

#if !defined(CAKE_HOST_EMULATION)

// Bulk global -> shared copies (sm_90's TMA engine, no tensor map: contiguous bytes) completing
// on a shared-memory mbarrier: one thread issues a whole block, every thread waits on the
// barrier's phase. Sizes and addresses 16-byte aligned.
__device__ __forceinline__ unsigned smem_u32(const void *p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrivals)
               : "memory");
}
// Make initialised barriers visible to the async proxy (and the CTA, after a barrier).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// This thread's arrival, announcing `bytes` of bulk copies that complete the phase.
__device__ __forceinline__ void mbar_arrive_expect(uint64_t *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_copy_g2s(void *dst, const void *src, unsigned bytes,
                                              uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}
// Wait until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n"
      "CAKE_MBAR_WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      " @!done bra CAKE_MBAR_WAIT_%=;\n}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
#endif

__device__ __forceinline__ float bf16_lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

// Both bf16 halves of a times those of b, each rounded to nearest even (mul.rn.bf16x2; an FMA
// with -0 on sm_90). With b a power of two per half the products are exact unless they fall
// below the normal range.
__device__ __forceinline__ uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
#if defined(CAKE_HOST_EMULATION)
  return uint32_t(mx::bf16_rn(bf16_lo(a) * bf16_lo(b))) |
         (uint32_t(mx::bf16_rn(bf16_hi(a) * bf16_hi(b))) << 16);
#else
  uint32_t r;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
#endif
}

// Round two floats to bf16 (round-to-nearest-even) and pack: lo in bits 0..15.
__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
#if defined(CAKE_HOST_EMULATION)
  return uint32_t(mx::bf16_rn(lo)) | (uint32_t(mx::bf16_rn(hi)) << 16);
#else
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#endif
}

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

// v through a volatile move: the compiler can neither see its value nor move it out of a loop,
// so what is computed from it is computed where it is used, not held (in a program at its
// register budget, held values are spilled).
__device__ __forceinline__ uint32_t opaque_u32(uint32_t v) {
#if defined(CAKE_HOST_EMULATION)
  return v;
#else
  uint32_t r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(v));
  return r;
#endif
}

__device__ __forceinline__ int32_t opaque_i32(int32_t v) {
  return static_cast<int32_t>(opaque_u32(static_cast<uint32_t>(v)));
}

__device__ __forceinline__ uint4 opaque_u4(uint4 v) {
  return make_uint4(opaque_u32(v.x), opaque_u32(v.y), opaque_u32(v.z), opaque_u32(v.w));
}

}  // namespace cake
