// What the SwiGLU GPU tests share (test_swiglu_mxfp8.cu, test_swiglu_fp8.cu,
// test_swiglu_range.cu, test_swiglu_grouped.cu): the handles and their setup and teardown, the
// measured sigmoid table, the device buffers of a shape, the outputs copied back, and one call (outputs poisoned first, synchronised, the orientations the form
// writes copied back). A family's scale element (MXFP8: bytes, FP8
// blockwise: FP32 words) and its sizes, descriptor and entry points are the template arguments.
#pragma once
#include <cuda_runtime.h>

#include <stdint.h>

#include <cmath>
#include <random>
#include <vector>

#include "gpu_common.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_sigmoid_table.cuh"

namespace cake_swiglu_gpu {

// The handles a test calls (the routed one, and one per cross-check image: the other tables'
// programs on this GPU) and the device's exact-sequence sigmoid, per BF16 gate, that the host
// model runs with. One test binary each: inline variables, defined once per program.
inline cake_handle_t g_handle = nullptr;
inline std::vector<cake_handle_t> g_cross;
inline std::vector<uint32_t> g_table;

inline int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }
inline int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

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

// Measures g_table on the device and checks it against the spec's criteria (the report, for a
// test that prints it).
inline cake_ref::SigmoidTableReport measure_sigmoid_table() {
  g_table = device_table(cake_sigmoid_table_exact);
  return cake_ref::check_sigmoid_table(g_table.data());
}

inline void require_sigmoid_table(const cake_ref::SigmoidTableReport &rep) {
  if (!rep.ok) {
    print_error("sigmoid table fails its hard criteria: %s\n", rep.detail.c_str());
    fail();
  }
}

// Must run first: the model of every later test uses the measured table.
inline void test_sigmoid_table(void **) {
  SKIP_WITHOUT_GPU();
  require_sigmoid_table(measure_sigmoid_table());
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
