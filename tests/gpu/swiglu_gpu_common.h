// What the SwiGLU GPU tests share (test_swiglu_mxfp8.cu, test_swiglu_fp8.cu,
// test_swiglu_range.cu): the measured sigmoid table, the device buffers of a shape, the outputs
// copied back, and one call (outputs poisoned first, synchronised, the orientations the form
// writes copied back). A family's scale element (MXFP8: bytes, FP8
// blockwise: FP32 words) and its sizes, descriptor and entry points are the template arguments.
#pragma once
#include <cuda_runtime.h>

#include <stdint.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu_common.h"

namespace cake_swiglu_gpu {

// Normals times 2^k per `block` columns (k uniform in [-kmax, kmax]; unit normals when kmax is
// 0), with a jitter of +-4 binades every 16 columns when `jitter` and kmax > 0.
inline std::vector<uint16_t> random_input(int64_t rows, int64_t cols, int kmax, int block,
                                          bool jitter) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_int_distribution<int> ex(-kmax, kmax), jit(-4, 4);
  std::vector<uint16_t> v(size_t(rows) * cols);
  for (int64_t r = 0; r < rows; ++r) {
    int k = 0, j = 0;
    for (int64_t c = 0; c < cols; ++c) {
      if (c % block == 0) k = kmax ? ex(cake_test::rng()) : 0;
      if (jitter && c % 16 == 0) j = kmax ? jit(cake_test::rng()) : 0;
      v[size_t(r) * cols + c] =
          cake_test::float_to_bf16_rne(std::ldexp(dist(cake_test::rng()), k + j));
    }
  }
  return v;
}

// A table kernel's 65,536 entries (kernels/common/swiglu_sigmoid_table.cuh: 4,096 threads of 16
// gates), e.g. the device's exact-sequence sigmoid that the host model then runs with.
template <class Kernel>
std::vector<uint32_t> device_table(Kernel kernel) {
  cake_test::DeviceBuffer<uint32_t> t(65536);
  kernel<<<32, 128>>>(t.ptr);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return t.download();
}

template <class Scale, class Sizes>
struct Device {
  cake_test::DeviceBuffer<uint16_t> in, grad;
  cake_test::DeviceBuffer<uint8_t> row_q, col_q;
  cake_test::DeviceBuffer<Scale> row_s, col_s;
  Device(int64_t M, int64_t K, const Sizes &s)
      : in(size_t(M) * 2 * K, 0), grad(size_t(M) * K, 0), row_q(s.q_bytes), col_q(s.q_bytes),
        row_s(s.row_s_bytes / sizeof(Scale)), col_s(s.col_s_bytes / sizeof(Scale)) {}
  void poison() {
    row_q.poison(0xa5);
    row_s.poison(0xa5);
    col_q.poison(0xa5);
    col_s.poison(0xa5);
  }
};

template <class Scale>
struct Host {
  std::vector<uint8_t> row_q;
  std::vector<Scale> row_s;
  std::vector<uint8_t> col_q;
  std::vector<Scale> col_s;
};

template <class Desc>
using Forward = cake_status_t (*)(cake_handle_t, const Desc *, const void *, void *, void *,
                                  void *, void *, cake_stream_t);
template <class Desc>
using Backward = cake_status_t (*)(cake_handle_t, const Desc *, const void *, const void *, void *,
                                   void *, void *, void *, cake_stream_t);

// One call of `form` (backward for forms 3..5) on `h`; the orientations it writes copied back.
template <class Desc, class Scale, class Sizes>
Host<Scale> run(cake_handle_t h, Device<Scale, Sizes> &dev, const Desc &d, int form,
                Forward<Desc> forward, Backward<Desc> backward, cudaStream_t stream) {
  dev.poison();
  if (form >= 3) {
    CAKE_OK(backward(h, &d, dev.in.ptr, dev.grad.ptr, dev.row_q.ptr, dev.row_s.ptr, dev.col_q.ptr,
                     dev.col_s.ptr, stream));
  } else {
    CAKE_OK(forward(h, &d, dev.in.ptr, dev.row_q.ptr, dev.row_s.ptr, dev.col_q.ptr, dev.col_s.ptr,
                    stream));
  }
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  Host<Scale> out;
  if (form % 3 != 1) {
    out.row_q = dev.row_q.download();
    out.row_s = dev.row_s.download();
  }
  if (form % 3 != 0) {
    out.col_q = dev.col_q.download();
    out.col_s = dev.col_s.download();
  }
  return out;
}

}  // namespace cake_swiglu_gpu
