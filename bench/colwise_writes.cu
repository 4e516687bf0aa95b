// cake-bench-colwise-writes: what the transposed col_q layout costs a streaming kernel.
//
// The SwiGLU + MXFP8 colwise output is the transpose of Y: column o of Y is a row of col_q, M
// bytes long (docs/spec/swiglu-mxfp8.md). A tiled kernel writes each column of its tile as one
// run of tile_rows bytes at col_q + o*M + m0, one run per column, M bytes apart. This tool moves
// exactly a colwise op's bytes (forward: read gate|up, 4 B a position, write 1 B; backward:
// read gate|up and grad, 6 B, write 2 B) with streaming kernels that differ only in where the
// written bytes go:
//   linear        the output bytes in tile order, contiguous (what the limit line does)
//   runs W        col_q's layout, each CTA tile's output as W-byte runs of NOUT*64*128/W
//                 columns (W = 64 ... 1024; 128: the 128x64 tiles of the routed programs)
//   items         col_q's layout with the routed programs' phase-2 store order (a lane: two
//                 columns x 16 rows; a warp: 32 columns x 32 rows)
//   paired        a CTA stores two vertically adjacent tiles' runs together (group_rows -2)
//   grouped G     runs of 128 bytes, tiles in groups of G row tiles, m fastest in a group
// Reads are the same in every variant: 128x64 tiles, k fastest, 16-byte loads, all in flight.
// Cold L2 (a 256 MiB overwrite before each launch), event time, median of 25 launches, inputs
// drawn at random (a hash of the index), nothing checked but CUDA's status: a measurement tool.
//
//   cake-bench-colwise-writes   one table: every variant, forward and backward, at 4096x7168,
//                               16384x7168 and 131072x8192
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

namespace {

constexpr int kThreads = 256, kTR = 128, kTC = 64;  // the read tile

enum Mode { kLinear = 0, kRuns = 1, kItems = 2, kPaired = 3 };

// One launch moves a form's bytes over all 128x64 tiles (grid-stride, tile t by k fastest, or
// grouped). NOPS: 2 (forward) or 3 (backward, + grad); NOUT: output bytes a position.
template <int NOPS, int NOUT, int MODE, int W>
__global__ void __launch_bounds__(kThreads)
    stream_tiles(const uint16_t *in, const uint16_t *grad, uint8_t *out, int64_t M, int64_t K,
                 int group) {
  constexpr int VPR = kTC / 8;  // 16-byte vectors of a tile row and operand
  const int64_t tiles_k = K / kTC, tiles = (M / kTR) * tiles_k;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t m0, k0;
    if (group == 0) {
      m0 = (t / tiles_k) * kTR;
      k0 = (t % tiles_k) * kTC;
    } else {
      const int64_t g = t / (group * tiles_k), w = t % (group * tiles_k);
      k0 = (w / group) * kTC;
      m0 = (g * group + w % group) * kTR;
    }
    uint32_t acc = 0;
#pragma unroll
    for (int j = 0; j < kTR * VPR / kThreads; ++j) {
      const int i = threadIdx.x + j * kThreads, r = i / VPR, v = i % VPR;
      const int64_t m = m0 + r, k = k0 + v * 8;
      const uint4 a = __ldg(reinterpret_cast<const uint4 *>(in + m * 2 * K + k));
      const uint4 b = __ldg(reinterpret_cast<const uint4 *>(in + m * 2 * K + K + k));
      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
      if (NOPS == 3) {
        const uint4 c = __ldg(reinterpret_cast<const uint4 *>(grad + m * K + k));
        acc ^= c.x ^ c.y ^ c.z ^ c.w;
      }
    }
    __syncthreads();
    const int64_t O = NOUT * K;
    if (MODE == kLinear || MODE == kRuns) {
      // A W-row x CW-column region of col_q ([O, M]) per tile, o fastest; lanes along a run.
      constexpr int CW = NOUT * kTC * kTR / W, SPC = W / 16;
      const int64_t tiles_o = O / CW, mw0 = (t / tiles_o) * W, ow0 = (t % tiles_o) * CW;
      for (int i = threadIdx.x; i < CW * SPC; i += kThreads) {
        uint8_t *dst = MODE == kLinear
                           ? out + t * (NOUT * kTC * kTR) + int64_t(i) * 16
                           : out + (ow0 + i / SPC) * M + mw0 + (i % SPC) * 16;
        *reinterpret_cast<uint4 *>(dst) = make_uint4(acc, acc + 1, acc + 2, acc + i);
      }
    } else {
      // Phase-2 items: two columns x 16 rows, lane pairs along rows, warps along columns.
      constexpr int kPairs = NOUT * kTC / 2, kHalves = kTR / 16;
      for (int i = threadIdx.x; i < kPairs * kHalves; i += kThreads) {
        const int h = i & 1, rest = i >> 1, c2 = rest % kPairs, hb = (rest / kPairs) * 2 + h;
        int64_t o, m;
        if (MODE == kItems) {
          const int w = 2 * c2;
          o = w < kTC ? k0 + w : K + k0 + (w - kTC);
          m = m0 + hb * 16;
        } else {  // kPaired: tile (2j, k) and (2j+1, k) share rows 256j.., half the columns each
          const int64_t tm = m0 / kTR, tk = k0 / kTC;
          const int cc = int(tm & 1) * (kPairs / 2) + c2 % (kPairs / 2), half = c2 / (kPairs / 2);
          const int w = 2 * cc;
          o = w < kTC ? tk * kTC + w : K + tk * kTC + (w - kTC);
          m = (tm & ~int64_t(1)) * kTR + half * kTR + hb * 16;
        }
        uint8_t *dst = out + o * M + m;
        *reinterpret_cast<uint4 *>(dst) = make_uint4(acc, acc + 1, acc + 2, acc + i);
        *reinterpret_cast<uint4 *>(dst + M) = make_uint4(acc, acc + 3, acc + 2, acc + i);
      }
    }
    __syncthreads();
  }
}

__global__ void fill_random(uint4 *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = make_uint4(h, h * 3u + 1u, h * 5u + 7u, h ^ 0x3c3c3c3cu);
  }
}

__global__ void flush(uint4 *p, size_t n, uint32_t v) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    p[i] = make_uint4(v, uint32_t(i), v, 1u);
  }
}

struct Bench {
  uint4 *flush_buf = nullptr;
  size_t flush_n = (size_t(256) << 20) / 16;
  cudaEvent_t a, b;
  Bench() {
    CK(cudaMalloc(&flush_buf, flush_n * 16));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  template <class F>
  float median_us(F launch) {
    std::vector<float> v;
    for (int r = 0; r < 25; ++r) {
      flush<<<1056, 256>>>(flush_buf, flush_n, uint32_t(r));
      CK(cudaGetLastError());
      CK(cudaEventRecord(a));
      launch();
      CK(cudaGetLastError());
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      v.push_back(ms * 1000.0f);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

}  // namespace

int main() {
  int sms = 0;
  if (cudaGetDeviceCount(&sms) != cudaSuccess || sms == 0) {
    fprintf(stderr, "cake-bench-colwise-writes: no CUDA device\n");
    return 1;
  }
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int64_t kMaxM = 131072, kMaxK = 8192;
  uint16_t *in, *grad;
  uint8_t *out;
  CK(cudaMalloc(&in, kMaxM * 2 * kMaxK * 2));
  CK(cudaMalloc(&grad, kMaxM * kMaxK * 2));
  CK(cudaMalloc(&out, kMaxM * 2 * kMaxK));
  fill_random<<<1056, 256>>>(reinterpret_cast<uint4 *>(in), size_t(kMaxM * 2 * kMaxK * 2 / 16), 1u);
  fill_random<<<1056, 256>>>(reinterpret_cast<uint4 *>(grad), size_t(kMaxM * kMaxK * 2 / 16), 2u);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  Bench bench;
  const int grid = sms * 4;
  printf("%-12s %-4s %-16s %10s %8s %8s\n", "M x K", "dir", "writes", "us", "GB/s", "/linear");
  const int64_t shapes[][2] = {{4096, 7168}, {16384, 7168}, {131072, 8192}};
  for (const auto &sh : shapes) {
    const int64_t M = sh[0], K = sh[1];
    for (int bwd = 0; bwd < 2; ++bwd) {
      const double bytes = double(M) * K * (bwd ? 8.0 : 5.0);
      float linear_us = 0;
      auto row = [&](const char *name, float us) {
        if (linear_us == 0) linear_us = us;
        printf("%6lldx%-5lld %-4s %-16s %10.1f %8.0f %8.3f\n", (long long)M, (long long)K,
               bwd ? "bwd" : "fwd", name, us, bytes / us / 1e3, us / linear_us);
      };
#define RUN(MODE, W, G)                                                                        \
  (bwd ? bench.median_us([&] {                                                                 \
     stream_tiles<3, 2, MODE, W><<<grid, kThreads>>>(in, grad, out, M, K, G);                  \
   })                                                                                          \
       : bench.median_us([&] {                                                                 \
           stream_tiles<2, 1, MODE, W><<<grid, kThreads>>>(in, grad, out, M, K, G);            \
         }))
      row("linear", RUN(kLinear, 128, 0));
      row("runs 64", RUN(kRuns, 64, 0));
      row("runs 128", RUN(kRuns, 128, 0));
      row("runs 256", RUN(kRuns, 256, 0));
      row("runs 512", RUN(kRuns, 512, 0));
      row("runs 1024", RUN(kRuns, 1024, 0));
      row("items", RUN(kItems, 128, 0));
      row("paired", RUN(kPaired, 128, 0));
      row("grouped 2", RUN(kItems, 128, 2));
      row("grouped 8", RUN(kItems, 128, 8));
      row("grouped 32", RUN(kItems, 128, 32));
#undef RUN
    }
  }
  return 0;
}
