// Host interface of the benchmark's own kernels (bench_kernels.cu): the L2 flush, the random
// BF16 fill, and the streaming "limit line" kernels. Plain C++ types only, so the host sources
// are compiled by the C++ compiler and only bench_kernels.cu by nvcc.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_bench {

// Overwrites `bytes` (a multiple of 16) at `buf` with 16-byte stores of `value`: evicts the L2.
// Its kernel's name starts with "cake_bench_l2_flush" (the CUPTI grouping keys on it).
cudaError_t launch_l2_flush(void *buf, size_t bytes, uint32_t value, int sm_count,
                            cudaStream_t stream);

// Fills `count` BF16 values at `dst` with `offset + scale * N(0,1)` drawn from a counter-based
// hash of (seed, index); exact zeros are replaced by `scale` (never zeros). With
// `block_exponent_range` > 0, every 32 consecutive values are multiplied by 2^k, k uniform in
// [-range, range] (block-scaled inputs).
cudaError_t launch_fill_bf16(void *dst, size_t count, uint64_t seed, float scale, float offset,
                             int block_exponent_range, cudaStream_t stream);

// An empty kernel (one CTA of 32 threads that does nothing): the launch floor.
cudaError_t launch_empty(cudaStream_t stream);

// One tensor the streaming kernel touches: `bytes` (rounded up to 16) at `ptr`.
struct StreamTensor {
  void *ptr = nullptr;
  uint64_t bytes = 0;
  bool write = false;  // false: read (16-byte loads); true: written (16-byte stores)
  std::string name;
};

// How a streaming kernel walks its tiles. A tile holds kThreads*unroll 16-byte chunks of the
// largest tensor and the proportional part of every other tensor, so reads and writes of all
// tensors are interleaved at tile granularity, as in a fused kernel.
enum class StreamSched : int {
  kGridStride = 0,  // persistent grid (sms * ctas_per_sm), tile b, b + grid, ...
  kChunked = 1,     // persistent grid, each CTA one contiguous range of tiles
  kFlat = 2,        // one CTA per tile (no persistence)
};

struct StreamVariant {
  StreamSched sched = StreamSched::kGridStride;
  int unroll = 1;       // 1, 2, 4: 16-byte loads in flight per thread per tensor
  int ctas_per_sm = 4;  // persistent schedules: grid = sms * ctas_per_sm (256 threads each)
  bool prefetch = false;  // thread 0 bulk-prefetches the CTA's next tile into L2
  std::string name() const;
};

// All variants the limit search tries.
std::vector<StreamVariant> all_stream_variants();

// A prepared streaming launch over `tensors` (pointers and sizes fixed).
struct StreamPlan {
  std::vector<StreamTensor> tensors;
  uint64_t read_bytes = 0, write_bytes = 0;
};

// Launches the streaming kernel for `plan` with `variant`. `sink` is 16 device bytes that the
// kernel writes only when its XOR of all loaded data equals a constant (never, in practice:
// it keeps the loads alive).
cudaError_t launch_stream(const StreamPlan &plan, const StreamVariant &variant, int sm_count,
                          void *sink, cudaStream_t stream);

// The kernel-name prefixes, for CUPTI record grouping.
constexpr const char *kFlushKernelPrefix = "cake_bench_l2_flush";

}  // namespace cake_bench
