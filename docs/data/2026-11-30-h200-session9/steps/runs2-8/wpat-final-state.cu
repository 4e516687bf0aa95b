// Diagnostic: streaming kernels moving a SwiGLU colwise op's bytes, output written linearly (L)
// or in the transposed col_q tile pattern (T): does the write pattern cap the colwise forms?
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

// Tile TRxTC positions; NOPS input operands (2 fwd: gate|up in one [M,2K]; 3 bwd + grad [M,K]);
// OUT output bytes per position column (1 fwd, 2 bwd: dgate and dup columns).
template <int TR, int TC, int NOPS, int NOUT, bool kT, int W = TR, int MODE = 0>
__global__ void __launch_bounds__(256) stream(const uint16_t* in, const uint16_t* grad, uint8_t* out,
                                              int64_t M, int64_t K, int G, int64_t P = 0) {
  if (P == 0) P = M;
  const int64_t tiles_k = K / TC, tiles = (M / TR) * tiles_k;
  constexpr int VPR = TC / 8;  // 16-B vectors per tile row per operand
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t m0, k0;
    if (G == 0) { m0 = (t / tiles_k) * TR; k0 = (t % tiles_k) * TC; }
    else { const int64_t grp = t / (G * tiles_k), w = t % (G * tiles_k); k0 = (w / G) * TC; m0 = (grp * G + w % G) * TR; }
    // reads: each thread a few 16-B vectors, XOR-folded
    uint32_t acc = 0;
#pragma unroll
    for (int j = 0; j < TR * VPR / 256; ++j) {
      const int i = threadIdx.x + j * 256;
      const int r = i / VPR, v = i % VPR;
      const int64_t m = m0 + r, k = k0 + v * 8;
      uint4 a = __ldg(reinterpret_cast<const uint4*>(in + m * 2 * K + k));
      uint4 b = __ldg(reinterpret_cast<const uint4*>(in + m * 2 * K + K + k));
      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
      if (NOPS == 3) {
        uint4 c = __ldg(reinterpret_cast<const uint4*>(grad + m * K + k));
        acc ^= c.x ^ c.y ^ c.z ^ c.w;
      }
    }
    __syncthreads();
    if (MODE == 0) {
    // writes: the same byte count, as a W-row x CW-column tile of col_q ([O, M], o fastest)
    constexpr int CW = NOUT * TC * TR / W, SPC = W / 16;
      const int64_t tiles_o = NOUT * K / CW;
      const int64_t mw0 = (t / tiles_o) * W, ow0 = (t % tiles_o) * CW;
      for (int i = threadIdx.x; i < CW * SPC; i += blockDim.x) {
        const int c = i / SPC, p = i % SPC;
        uint8_t* dst;
        if (kT) dst = out + (ow0 + c) * P + mw0 + p * 16;
        else dst = out + (t * (NOUT * TC * TR)) + i * 16;
        *reinterpret_cast<uint4*>(dst) = make_uint4(acc, acc + 1, acc + 2, acc + i);
      }
    } else {
      // phase-2 items: 2 columns x 16 rows; MODE 1: lanes along columns (production), 2: along rows
      constexpr int PAIRS = NOUT * TC / 2, HB = TR / 16;
      for (int i = threadIdx.x; i < PAIRS * HB; i += blockDim.x) {
        int c2, hb;
        if (MODE == 1) { const int h = i & 1, rest = i >> 1; c2 = rest % PAIRS; hb = (rest / PAIRS) * 2 + h; }
        else { hb = i % HB; c2 = i / HB; }
        const int w = 2 * c2;
        const int64_t o = (w < TC) ? k0 + w : K + k0 + (w - TC);
        if (MODE == 3) {  // paired: super-tile of 2*TR rows; this CTA tile t writes both halves
          // of a 2*TR x (PAIRS) region: tiles (m, k) with m even write upper+lower of half the cols
          const int64_t tm = m0 / TR, tk = k0 / TC;
          // region: rows (tm & ~1)*TR .. +2TR, pairs [ (tm&1)*PAIRS/2, +PAIRS/2 ) of out cols of tk
          const int cc = (tm & 1) * (PAIRS / 2) + (c2 % (PAIRS / 2));
          const int half = c2 / (PAIRS / 2);
          const int ww = 2 * cc;
          const int64_t oo = (ww < TC) ? tk * TC + ww : K + tk * TC + (ww - TC);
          uint8_t* dst = out + oo * P + (tm & ~1LL) * TR + half * TR + hb * 16;
          *reinterpret_cast<uint4*>(dst) = make_uint4(acc, acc + 1, acc + 2, acc + i);
          *reinterpret_cast<uint4*>(dst + P) = make_uint4(acc, acc + 3, acc + 2, acc + i);
        } else {
        uint8_t* dst = out + o * P + m0 + hb * 16;
        *reinterpret_cast<uint4*>(dst) = make_uint4(acc, acc + 1, acc + 2, acc + i);
        *reinterpret_cast<uint4*>(dst + P) = make_uint4(acc, acc + 3, acc + 2, acc + i);
        }
      }
    }
    __syncthreads();
  }
}

__global__ void flush(uint4* p, size_t n) { for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = make_uint4(i, 1, 2, 3); }

template <class F>
float timeit(F f, uint4* fl, size_t fln) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<float> v;
  for (int r = 0; r < 25; ++r) {
    flush<<<1056, 256>>>(fl, fln);
    CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); v.push_back(ms * 1000);
  }
  std::sort(v.begin(), v.end()); return v[v.size() / 2];
}

int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t fln = (size_t)256 << 20 >> 4;  // 256 MiB
  uint4* fl; CK(cudaMalloc(&fl, fln * 16));
  const int64_t shapes[][2] = {{4096, 7168}, {16384, 7168}, {131072, 8192}};
  uint16_t *in, *grad; uint8_t* out;
  const int64_t Mx = 131072, Kx = 8192;
  CK(cudaMalloc(&in, Mx * 2 * Kx * 2)); CK(cudaMalloc(&grad, Mx * Kx * 2)); CK(cudaMalloc(&out, (Mx + 4096) * 2 * Kx));
  CK(cudaMemset(in, 1, Mx * 2 * Kx * 2)); CK(cudaMemset(grad, 2, Mx * Kx * 2));
  for (auto& s : shapes) {
    const int64_t M = s[0], K = s[1];
    const int grid = sms * 4;
    double fb = M * K * 5.0, bb = M * K * 8.0;
    auto rep = [&](const char* name, double bytes, auto f) {
      float t = timeit(f, fl, fln); CK(cudaGetLastError());
      printf("%6ldx%-5ld %-28s %9.1f us %6.0f GB/s\n", (long)M, (long)K, name, t, bytes / t / 1e3);
    };
    rep("fwd L", fb, [&] { stream<128, 64, 2, 1, false><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd T seg 128", fb, [&] { stream<128, 64, 2, 1, true, 128><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd T items prod", fb, [&] { stream<128, 64, 2, 1, true, 128, 1><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd T items rows", fb, [&] { stream<128, 64, 2, 1, true, 128, 2><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd T paired (2 halves/phase)", fb, [&] { stream<128, 64, 2, 1, true, 128, 3><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd 256x64 L", fb, [&] { stream<256, 64, 2, 1, false><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd 256x64 T items prod", fb, [&] { stream<256, 64, 2, 1, true, 256, 1><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd 256x64 T seg", fb, [&] { stream<256, 64, 2, 1, true, 256, 0><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd T seg 256", fb, [&] { stream<128, 64, 2, 1, true, 256><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd64 T items prod", fb, [&] { stream<64, 64, 2, 1, true, 64, 1><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("fwd64 T items rows", fb, [&] { stream<64, 64, 2, 1, true, 64, 2><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd L", bb, [&] { stream<128, 64, 3, 2, false><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd T seg 128", bb, [&] { stream<128, 64, 3, 2, true, 128><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd T items prod", bb, [&] { stream<128, 64, 3, 2, true, 128, 1><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd T items rows", bb, [&] { stream<128, 64, 3, 2, true, 128, 2><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd T paired (2 halves/phase)", bb, [&] { stream<128, 64, 3, 2, true, 128, 3><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd 256x64 L", bb, [&] { stream<256, 64, 3, 2, false><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd 256x64 T items prod", bb, [&] { stream<256, 64, 3, 2, true, 256, 1><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd 256x64 T seg", bb, [&] { stream<256, 64, 3, 2, true, 256, 0><<<grid, 256>>>(in, grad, out, M, K, 0); });
    rep("bwd T seg 256", bb, [&] { stream<128, 64, 3, 2, true, 256><<<grid, 256>>>(in, grad, out, M, K, 0); });
  }
  return 0;
}
