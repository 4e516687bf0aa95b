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
  void *d_x, *d_z, *d_w, *d_y;
  CHECK_CUDA(cudaMalloc(&d_x, n * 2));
  CHECK_CUDA(cudaMalloc(&d_z, n * 2));
  CHECK_CUDA(cudaMalloc(&d_w, d * 2));
  CHECK_CUDA(cudaMalloc(&d_y, n * 2));
  CHECK_CUDA(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_z, z, n * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_w, w, d * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d_y, 0xff, n * 2));
  cake_normgate_desc desc;
  CHECK_CAKE(cake_normgate_desc_init(&desc));
  desc.rows = rows;
  desc.d = d;
  cake_program_info info;
  CHECK_CAKE(cake_program_info_init(&info));
  CHECK_CAKE(cake_normgate_forward_query(h, &desc, &info));
  CHECK_CAKE(cake_normgate_forward(h, &desc, d_x, d_z, d_w, d_y, NULL, NULL));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(y, d_y, n * 2, cudaMemcpyDeviceToHost));
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
  int ok = rel <= 2e-3;
  printf("normgate forward   %lld x %d  %-28s relative L2 error %.2e  %s\n", (long long)rows, d,
         info.name, rel, rel <= 2e-3 ? "OK" : "FAILED");

  /* Backward with an FP32 d_w (deterministic package), d_y = fresh random. */
  uint16_t *gy = malloc(n * 2), *gx = malloc(n * 2);
  float *gw = malloc(d * sizeof(float));
  for (size_t i = 0; i < n; ++i) gy[i] = to_bf16((float)normal());
  void *d_dy, *d_dx, *d_dz, *d_dw, *ws = NULL;
  size_t ws_bytes = 0;
  desc.dw_dtype = CAKE_DTYPE_F32;
  CHECK_CAKE(cake_normgate_workspace_size(h, &desc, &ws_bytes));
  CHECK_CUDA(cudaMalloc(&d_dy, n * 2));
  CHECK_CUDA(cudaMalloc(&d_dx, n * 2));
  CHECK_CUDA(cudaMalloc(&d_dz, n * 2));
  CHECK_CUDA(cudaMalloc(&d_dw, d * sizeof(float)));
  if (ws_bytes) {
    CHECK_CUDA(cudaMalloc(&ws, ws_bytes));
    CHECK_CUDA(cudaMemset(ws, 0, ws_bytes)); /* once: Cake leaves it ready for the next call */
  }
  CHECK_CUDA(cudaMemcpy(d_dy, gy, n * 2, cudaMemcpyHostToDevice));
  CHECK_CAKE(cake_normgate_backward_query(h, &desc, &info));
  CHECK_CAKE(cake_normgate_backward(h, &desc, d_dy, d_x, d_z, d_w, d_dx, d_dz, d_dw, ws, ws_bytes, NULL));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(gx, d_dx, n * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(gw, d_dw, d * sizeof(float), cudaMemcpyDeviceToHost));
  double *ref_dw = calloc(d, sizeof(double));
  double dx_err2 = 0, dx_ref2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0, gn = 0;
    for (int c = 0; c < d; ++c) ss += from_bf16(x[r * d + c]) * from_bf16(x[r * d + c]);
    const double rstd = 1.0 / sqrt(ss / d + 1e-6);
    for (int c = 0; c < d; ++c) {
      const double zv = from_bf16(z[r * d + c]), sg = 1.0 / (1.0 + exp(-zv));
      const double a = from_bf16(gy[r * d + c]) * zv * sg, nv = from_bf16(x[r * d + c]) * rstd;
      gn += a * from_bf16(w[c]) * nv;
      ref_dw[c] += a * nv;
    }
    for (int c = 0; c < d; ++c) {
      const double zv = from_bf16(z[r * d + c]), sg = 1.0 / (1.0 + exp(-zv));
      const double a = from_bf16(gy[r * d + c]) * zv * sg, nv = from_bf16(x[r * d + c]) * rstd;
      const double want = rstd * (a * from_bf16(w[c]) - nv * gn / d);
      const double got = from_bf16(gx[r * d + c]);
      dx_err2 += (got - want) * (got - want);
      dx_ref2 += want * want;
    }
  }
  double dw_err2 = 0, dw_ref2 = 0;
  for (int c = 0; c < d; ++c) {
    dw_err2 += (gw[c] - ref_dw[c]) * (gw[c] - ref_dw[c]);
    dw_ref2 += ref_dw[c] * ref_dw[c];
  }
  const double rel_dx = sqrt(dx_err2 / dx_ref2), rel_dw = sqrt(dw_err2 / dw_ref2);
  printf("normgate backward  %lld x %d  %-28s d_x rel L2 %.2e, d_w (FP32) rel L2 %.2e  %s\n",
         (long long)rows, d, info.name, rel_dx, rel_dw,
         rel_dx <= 2e-3 && rel_dw <= 1e-5 ? "OK" : "FAILED");
  ok = ok && rel_dx <= 2e-3 && rel_dw <= 1e-5;
  cudaFree(d_dy);
  cudaFree(d_dx);
  cudaFree(d_dz);
  cudaFree(d_dw);
  cudaFree(ws);
  free(gy);
  free(gx);
  free(gw);
  free(ref_dw);
  cudaFree(d_x);
  cudaFree(d_z);
  cudaFree(d_w);
  cudaFree(d_y);
  free(x);
  free(z);
  free(w);
  free(y);
  return ok;
}

/* E4M3 byte to its value (bias 7, no infinities, 0x7F/0xFF NaN). */
static double e4m3_value(uint8_t q) {
  const int sign = q >> 7, exp = (q >> 3) & 15, man = q & 7;
  if (exp == 15 && man == 7) return NAN;
  const double v = exp ? ldexp(1.0 + man / 8.0, exp - 7) : ldexp(man / 8.0, -6);
  return sign ? -v : v;
}

/* silu(gate) * up for M x K, quantized rowwise to MXFP8; decoded and compared in float64. */
static int demo_swiglu(cake_handle_t h) {
  const int64_t m = 4096, k = 2048;
  cake_swiglu_mxfp8_desc desc;
  CHECK_CAKE(cake_swiglu_mxfp8_desc_init(&desc));
  desc.m = m;
  desc.k = k;
  desc.orientation = CAKE_MXFP8_ROWWISE;
  cake_swiglu_mxfp8_sizes sizes;
  CHECK_CAKE(cake_swiglu_mxfp8_sizes_init(&sizes));
  CHECK_CAKE(cake_swiglu_mxfp8_buffer_sizes(&desc, 0, &sizes));
  const size_t n_in = (size_t)m * 2 * k;
  uint16_t *in = malloc(n_in * 2);
  uint8_t *q = malloc(sizes.q_bytes), *s = malloc(sizes.row_s_bytes);
  for (size_t i = 0; i < n_in; ++i) in[i] = to_bf16((float)normal());
  void *d_in, *d_q, *d_s;
  CHECK_CUDA(cudaMalloc(&d_in, n_in * 2));
  CHECK_CUDA(cudaMalloc(&d_q, sizes.q_bytes));
  CHECK_CUDA(cudaMalloc(&d_s, sizes.row_s_bytes));
  CHECK_CUDA(cudaMemcpy(d_in, in, n_in * 2, cudaMemcpyHostToDevice));
  cake_program_info info;
  CHECK_CAKE(cake_program_info_init(&info));
  CHECK_CAKE(cake_swiglu_mxfp8_query(h, &desc, 0, &info));
  CHECK_CAKE(cake_swiglu_mxfp8_forward(h, &desc, d_in, d_q, d_s, NULL, NULL, NULL));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(q, d_q, sizes.q_bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(s, d_s, sizes.row_s_bytes, cudaMemcpyDeviceToHost));
  const int64_t cols_padded = (k / 32 + 3) / 4 * 4;
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < k; ++c) {
      const double g = from_bf16(in[r * 2 * k + c]), u = from_bf16(in[r * 2 * k + k + c]);
      const double want = g / (1.0 + exp(-g)) * u;
      const int64_t j = c / 32; /* the swizzled 128x4 scale layout of the spec */
      const size_t off = (size_t)(((r / 128) * (cols_padded / 4) + j / 4) * 512 + (r % 32) * 16 +
                                  ((r % 128) / 32) * 4 + j % 4);
      const double got = e4m3_value(q[r * k + c]) * ldexp(1.0, (int)s[off] - 127);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  }
  const double rel = sqrt(err2 / ref2);
  /* E4M3 keeps 3 mantissa bits: a relative error about 2^-5 per element on average. */
  const int ok = rel < 0.05;
  printf("swiglu_mxfp8 fwd   %lld x %lld  %-28s decoded rel L2 error %.2e  %s\n", (long long)m,
         (long long)k, info.name, rel, ok ? "OK" : "FAILED");
  cudaFree(d_in);
  cudaFree(d_q);
  cudaFree(d_s);
  free(in);
  free(q);
  free(s);
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
  ok = demo_swiglu(h) && ok;
  CHECK_CAKE(cake_destroy(h));
  printf("%s\n", ok ? "all checks passed" : "CHECKS FAILED");
  return ok ? 0 : 1;
}
