// What every GPU test shares: skip cleanly without a GPU, check every CUDA call, fresh random
// inputs (seed printed), poisoned device buffers.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../host/cmocka_cxx.h"
#include "cake.h"
#include "normgate_ref.h"

#define CUDA_OK(call)                                                                    \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      print_error("%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      fail();                                                                            \
    }                                                                                    \
  } while (0)

#define CAKE_OK(call)                                                                    \
  do {                                                                                   \
    const cake_status_t s_ = (call);                                                     \
    if (s_ != CAKE_STATUS_SUCCESS) {                                                     \
      print_error("%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, cake_status_string(s_), \
                  cake_last_error_message());                                            \
      fail();                                                                            \
    }                                                                                    \
  } while (0)

namespace cake_test {

// 1 when a CUDA device is usable; otherwise 0 and the reason in `why`.
inline int gpu_usable(char *why, size_t len) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    std::snprintf(why, len, "no usable CUDA driver/device (%s)", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0) {
    std::snprintf(why, len, "no CUDA device");
    return 0;
  }
  return 1;
}

// Call first in every GPU test: skips (with the reason printed) when there is no GPU.
#define SKIP_WITHOUT_GPU()                                             \
  do {                                                                 \
    char why_[256];                                                    \
    if (!cake_test::gpu_usable(why_, sizeof why_)) {                   \
      print_message("SKIP: %s\n", why_);                               \
      skip();                                                          \
    }                                                                  \
  } while (0)

// The handle of device 0 and, on an sm_90 device, handles for the sm100, sm103 and sm107 tables
// (their programs compiled for sm_90: the cross-check images), so every program's arithmetic
// runs here. Returns 0 without a GPU (each test then skips), -1 on a failure (printed).
inline int open_handles(cake_handle_t *main, std::vector<cake_handle_t> *cross) {
  char why[256];
  if (!gpu_usable(why, sizeof why)) return 0;
  if (cake_create(main, 0) != CAKE_STATUS_SUCCESS) {
    std::fprintf(stderr, "cake_create: %s\n", cake_last_error_message());
    return -1;
  }
  cake_device_info info;
  cake_device_info_init(&info);
  if (cake_device_query(*main, &info) != CAKE_STATUS_SUCCESS) return -1;
  if (info.cc_major != 9) return 0;
  for (cake_arch_t t : {CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107}) {
    cake_handle_options o;
    cake_handle_options_init(&o);
    o.table = t;
    cake_handle_t h = nullptr;
    if (cake_create_ex(&h, 0, &o) != CAKE_STATUS_SUCCESS) {
      std::fprintf(stderr, "cake_create_ex(table %d): %s\n", (int)t, cake_last_error_message());
      return -1;
    }
    cross->push_back(h);
  }
  return 0;
}

inline void close_handles(cake_handle_t main, std::vector<cake_handle_t> *cross) {
  for (cake_handle_t h : *cross) cake_destroy(h);
  cross->clear();
  cake_destroy(main);
}

inline std::mt19937_64 &rng() {
  static std::mt19937_64 gen([] {
    const char *env = std::getenv("CAKE_TEST_SEED");
    const uint64_t seed = env ? std::strtoull(env, nullptr, 0)
                              : static_cast<uint64_t>(
                                    std::chrono::steady_clock::now().time_since_epoch().count());
    std::fprintf(stderr, "[cake test] seed %llu (CAKE_TEST_SEED to repeat)\n",
                 static_cast<unsigned long long>(seed));
    return seed;
  }());
  return gen;
}

// n BF16 values drawn from offset + scale * N(0, 1), fresh from the test's generator.
inline std::vector<uint16_t> random_bf16(size_t n, float scale, float offset = 0.0f) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (auto &e : v) e = float_to_bf16_rne(offset + scale * dist(rng()));
  return v;
}

// A device allocation poisoned with `poison_byte` (0xff: BF16 NaN, FP32 NaN), freed on scope
// exit. Every CUDA call is checked; a failure fails the running test.
template <class T>
struct DeviceBuffer {
  T *ptr = nullptr;
  size_t count = 0;
  explicit DeviceBuffer(size_t n, int poison_byte = 0xff) : count(n) {
    CUDA_OK(cudaMalloc(&ptr, n * sizeof(T)));
    CUDA_OK(cudaMemset(ptr, poison_byte, n * sizeof(T)));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void upload(const std::vector<T> &h) {
    CUDA_OK(cudaMemcpy(ptr, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void poison(int byte = 0xff) { CUDA_OK(cudaMemset(ptr, byte, count * sizeof(T))); }
  std::vector<T> download() const {
    std::vector<T> h(count);
    CUDA_OK(cudaMemcpy(h.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

}  // namespace cake_test
