// A kernel's parameters live in constant bank 0 and reach the SM through the constant cache, a
// line at a time, when the program first reads each. After a cold L2 (a graph replay that
// follows other work) those misses go to memory, and where the program's first reads of the
// lines are ordered by its dependences the misses follow one another: the SwiGLU programs read
// their 144-byte block (three 64-byte lines) at three points of the prologue (the tile count
// for the tile division, then the input strides, then the input address). Where a launch is a
// few microseconds, warm_param_lines has thread 0 read a word of every line back to back at the
// top of the kernel so that the misses overlap (the other warps' first reads join the lines in
// flight), and store their XOR to `sink`, a shared word nothing else uses (the store keeps the
// reads; a register-only use let the compiler load the words in every thread and keep them
// live, which spilled on sm100 and sm103). docs/performance.md, session 20, runs 7-8.
#pragma once
#include <stdint.h>

namespace cake {

template <class P>
__device__ __forceinline__ void warm_param_lines(const P &p, uint32_t *sink) {
#if defined(__CUDA_ARCH__)
  static_assert(sizeof(P) % 4 == 0 && sizeof(P) >= 4, "a block of 32-bit words");
  if (threadIdx.x == 0) {
    // One word every 64 bytes from the first, and the last: every 64-byte line the block
    // touches, wherever the bank places it.
    const uint32_t *w = reinterpret_cast<const uint32_t *>(&p);
    uint32_t x = w[sizeof(P) / 4 - 1];
#pragma unroll
    for (int i = 0; i < int(sizeof(P) / 4); i += 16) x ^= w[i];
    *static_cast<volatile uint32_t *>(sink) = x;
  }
#else
  (void)p;
  (void)sink;
#endif
}

}  // namespace cake
