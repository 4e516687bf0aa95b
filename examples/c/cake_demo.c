/* The Cake demo: runs each kernel family on fresh random data through the C ABI and checks the
 * results against a float64 host computation. Without a GPU it says so and exits 2.
 *   build/examples/cake_demo            (after the README's build command) */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cake.h"

#define CHECK_CUDA(call)                                                                 \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "cake_demo: %s failed: %s\n", #call, cudaGetErrorString(e_));      \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

#define CHECK_CAKE(call)                                                                 \
  do {                                                                                   \
    cake_status_t s_ = (call);                                                           \
    if (s_ != CAKE_STATUS_SUCCESS) {                                                     \
      fprintf(stderr, "cake_demo: %s: %s: %s\n", #call, cake_status_string(s_),          \
              cake_last_error_message());                                                \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static uint64_t g_state;
static double uniform(void) { /* xorshift64*, in (0, 1) */
  g_state ^= g_state >> 12;
  g_state ^= g_state << 25;
  g_state ^= g_state >> 27;
  return ((g_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0) + 1e-300;
}
static double normal(void) { return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform()); }

static uint16_t to_bf16(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  b += 0x7fffu + ((b >> 16) & 1u);
  return (uint16_t)(b >> 16);
}
static double from_bf16(uint16_t v) {
  uint32_t b = (uint32_t)v << 16;
  float f;
  memcpy(&f, &b, 4);
  return f;
}

/* y = rmsnorm(x) * w * silu(z) for T tokens x H heads, D = 128, like a Qwen3-Next layer. */
static int demo_normgate(cake_handle_t h) {
  const int64_t rows = 4096 * 16;
  const int d = 128;
  const size_t n = (size_t)rows * d;
  uint16_t *x = malloc(n * 2), *z = malloc(n * 2), *w = malloc(d * 2), *y = malloc(n * 2);
  for (size_t i = 0; i < n; ++i) x[i] = to_bf16((float)normal());
  for (size_t i = 0; i < n; ++i) z[i] = to_bf16((float)(2.0 * normal()));
  for (int i = 0; i < d; ++i) w[i] = to_bf16((float)(1.0 + 0.5 * normal()));
  void *dx, *dz, *dw, *dy;
  CHECK_CUDA(cudaMalloc(&dx, n * 2));
  CHECK_CUDA(cudaMalloc(&dz, n * 2));
  CHECK_CUDA(cudaMalloc(&dw, d * 2));
  CHECK_CUDA(cudaMalloc(&dy, n * 2));
  CHECK_CUDA(cudaMemcpy(dx, x, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dz, z, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dw, w, d * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dy, 0xff, n * 2));
  cake_normgate_desc desc;
  CHECK_CAKE(cake_normgate_desc_init(&desc));
  desc.rows = rows;
  desc.d = d;
  cake_program_info info;
  CHECK_CAKE(cake_program_info_init(&info));
  CHECK_CAKE(cake_normgate_forward_query(h, &desc, &info));
  CHECK_CAKE(cake_normgate_forward(h, &desc, dx, dz, dw, dy, NULL, NULL));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(y, dy, n * 2, cudaMemcpyDeviceToHost));
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int c = 0; c < d; ++c) ss += from_bf16(x[r * d + c]) * from_bf16(x[r * d + c]);
    const double rstd = 1.0 / sqrt(ss / d + 1e-6);
    for (int c = 0; c < d; ++c) {
      const double zv = from_bf16(z[r * d + c]);
      const double want = from_bf16(x[r * d + c]) * rstd * from_bf16(w[c]) * zv / (1.0 + exp(-zv));
      const double got = from_bf16(y[r * d + c]);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  }
  const double rel = sqrt(err2 / ref2);
  const int ok = rel <= 2e-3;
  printf("normgate forward  %lld x %d  program %-24s  relative L2 error %.2e  %s\n",
         (long long)rows, d, info.name, rel, ok ? "OK" : "FAILED");
  cudaFree(dx);
  cudaFree(dz);
  cudaFree(dw);
  cudaFree(dy);
  free(x);
  free(z);
  free(w);
  free(y);
  return ok;
}

int main(void) {
  g_state = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1u;
  printf("Cake %d.%d.%d demo\n", CAKE_VERSION_MAJOR, CAKE_VERSION_MINOR, CAKE_VERSION_PATCH);
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    fprintf(stderr,
            "cake_demo: no GPU here (%s). Cake's kernels need an NVIDIA GPU of compute "
            "capability 9.0 or newer; run this demo on one.\n",
            e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
    return 2;
  }
  cake_handle_t h;
  CHECK_CAKE(cake_create(&h, 0));
  cake_device_info info;
  CHECK_CAKE(cake_device_info_init(&info));
  CHECK_CAKE(cake_device_query(h, &info));
  printf("device %s (cc %d.%d, %d SMs): table sm%d, image %s%s\n", info.device_name,
         info.cc_major, info.cc_minor, info.sm_count, (int)info.table, info.image,
         info.jit ? " (PTX compiled by the driver)" : "");
  int ok = demo_normgate(h);
  CHECK_CAKE(cake_destroy(h));
  printf("%s\n", ok ? "all checks passed" : "CHECKS FAILED");
  return ok ? 0 : 1;
}
