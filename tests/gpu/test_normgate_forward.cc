// Normgate forward on the GPU: accuracy against the float64 reference (spec's contract for y),
// every program of every table forced to the same bytes, packed and strided rows, special
// rows, rstd, and a CUDA graph replaying to the eager bytes. Skips without a GPU.
#include <cmath>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "normgate_ref.h"

using cake_test::DeviceBuffer;
using cake_test::NormgateShape;

namespace {

cake_handle_t g_handle = nullptr;

uint16_t bf16(float f) { return cake_test::float_to_bf16_rne(f); }

using cake_test::random_bf16;

struct Case {
  int64_t rows;
  int d;
  int64_t x_pad, z_pad, y_pad;  // extra elements per row (0: packed)
};

struct Inputs {
  NormgateShape shape;
  std::vector<uint16_t> x, z, w;
};

Inputs make_inputs(const Case &c) {
  Inputs in;
  in.shape = {c.rows, c.d, c.d + c.x_pad, c.d + c.z_pad, c.d + c.y_pad, 1e-6f};
  in.x = random_bf16(size_t(c.rows) * in.shape.x_stride, 1.0f);
  in.z = random_bf16(size_t(c.rows) * in.shape.z_stride, 2.0f);
  in.w = random_bf16(size_t(c.d), 0.5f, 1.0f);
  return in;
}

struct Outputs {
  std::vector<uint16_t> y;
  std::vector<float> rstd;
};

// Runs one forward (program forced when non-null) on `handle` and returns y and rstd.
Outputs run_forward(cake_handle_t handle, const Inputs &in, const char *program,
                    cudaStream_t stream = nullptr) {
  const NormgateShape &s = in.shape;
  DeviceBuffer<uint16_t> x(in.x.size(), 0), z(in.z.size(), 0), w(in.w.size(), 0);
  DeviceBuffer<uint16_t> y(size_t(s.rows) * s.y_stride);  // poisoned: NaN
  DeviceBuffer<float> rstd(size_t(s.rows));
  x.upload(in.x);
  z.upload(in.z);
  w.upload(in.w);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = s.rows;
  desc.d = s.d;
  desc.eps = s.eps;
  desc.x_stride = s.x_stride;
  desc.z_stride = s.z_stride;
  desc.y_stride = s.y_stride;
  desc.program = program;
  CAKE_OK(cake_normgate_forward(handle, &desc, x.ptr, z.ptr, w.ptr, y.ptr, rstd.ptr, stream));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return {y.download(), rstd.download()};
}

// statistical: also the spec's relative L2 bound, a statement about many comparable elements.
// The special rows are built so that a few elements dominate the norm (row 3's gate at BF16 max
// makes half its y near 1e38: d/2 elements decide the L2, each allowed its 1 ulp); there every
// element is held to 1 ulp instead (on the H200, seed 118121613787: 2.03e-3 at d = 64 with every
// element within 1 ulp).
void check_against_reference(const Inputs &in, const Outputs &out, const char *label,
                             bool statistical = true) {
  const NormgateShape &s = in.shape;
  std::vector<double> ref_y, ref_rstd;
  cake_test::normgate_forward_ref(s, in.x.data(), in.z.data(), in.w.data(), &ref_y, &ref_rstd);
  char first[256] = {0};
  const int64_t bad = cake_test::check_forward_y(s, ref_y, out.y.data(), first, sizeof first);
  if (bad != 0) {
    print_error("%s rows=%lld d=%d: %lld elements outside 1 BF16 ulp; first: %s\n", label,
                (long long)s.rows, s.d, (long long)bad, first);
    fail();
  }
  // Gaps between strided rows are never written: still poison.
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int64_t c = s.d; c < s.y_stride; ++c) {
      if (out.y[r * s.y_stride + c] != 0xffff) {
        print_error("%s: y gap written at row %lld col %lld\n", label, (long long)r, (long long)c);
        fail();
      }
    }
  }
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < s.rows; ++r) {
    const double want = ref_rstd[r];
    const double got = out.rstd[r];
    if (std::isnan(want) ? !std::isnan(got) : std::fabs(got - want) > 1e-5 * std::fabs(want)) {
      print_error("%s: rstd row %lld: got %.9g want %.9g\n", label, (long long)r, got, want);
      fail();
    }
    for (int c = 0; c < s.d; ++c) {
      const double w = ref_y[size_t(r) * s.d + c];
      const double g = cake_test::bf16_to_double(out.y[r * s.y_stride + c]);
      if (std::isfinite(w) && std::isfinite(g)) {  // overflow to Inf is judged per element
        err2 += (g - w) * (g - w);
        ref2 += w * w;
      }
    }
  }
  // The relative L2 bound is a statement about many elements (BF16 rounding averages to about
  // 1.1e-3); a handful of elements can sit near half an ulp each, so small tensors skip it.
  if (statistical && s.rows * s.d >= 4096 && ref2 > 0 && std::sqrt(err2 / ref2) > 2e-3) {
    print_error("%s rows=%lld d=%d: relative L2 error %.3g > 2e-3\n", label, (long long)s.rows,
                s.d, std::sqrt(err2 / ref2));
    fail();
  }
}

// Every program of `handle`'s table that computes this width, forced: bytes equal `want`.
int check_every_program(cake_handle_t handle, const Inputs &in, const Outputs &want,
                        const char *label) {
  int checked = 0;
  const int n = cake_program_count(handle);
  for (int i = 0; i < n; ++i) {
    const char *name = cake_program_name(handle, i);
    cake_normgate_desc desc;
    cake_normgate_desc_init(&desc);
    desc.rows = in.shape.rows;
    desc.d = in.shape.d;
    desc.program = name;
    cake_program_info info;
    cake_program_info_init(&info);
    if (cake_normgate_forward_query(handle, &desc, &info) != CAKE_STATUS_SUCCESS) continue;
    const Outputs got = run_forward(handle, in, name);
    if (got.y != want.y || std::memcmp(got.rstd.data(), want.rstd.data(), want.rstd.size() * 4) != 0) {
      print_error("%s: program %s differs from the routed program's bytes (rows=%lld d=%d)\n",
                  label, name, (long long)in.shape.rows, in.shape.d);
      fail();
    }
    ++checked;
  }
  return checked;
}

std::vector<cake_handle_t> g_cross;  // sm100/sm103/sm107 tables from the cross-check images

}  // namespace

static int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }

static int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

static void test_device_query(void **) {
  SKIP_WITHOUT_GPU();
  cake_device_info info;
  cake_device_info_init(&info);
  CAKE_OK(cake_device_query(g_handle, &info));
  print_message("device: %s cc %d.%d, %d SMs, table %d, image %s, jit %d\n", info.device_name,
                info.cc_major, info.cc_minor, info.sm_count, (int)info.table, info.image, info.jit);
  assert_true(info.sm_count > 0);
  assert_int_equal(info.cross_check, 0);
  assert_int_equal(info.program_count, cake_program_count(g_handle));
  if (info.cc_major == 9 && info.cc_minor == 0) {
    assert_int_equal(info.table, CAKE_ARCH_SM90);
    assert_int_equal(info.jit, 0);
  }
  for (cake_handle_t h : g_cross) {
    cake_device_info x;
    cake_device_info_init(&x);
    CAKE_OK(cake_device_query(h, &x));
    assert_int_equal(x.cross_check, 1);
    assert_true(x.table != CAKE_ARCH_SM90);
  }
}

static void test_forward_accuracy_and_programs(void **) {
  SKIP_WITHOUT_GPU();
  const Case cases[] = {
      {1, 8, 0, 0, 0},      {37, 8, 8, 16, 8},    {1000, 64, 0, 0, 0},  {333, 64, 8, 0, 16},
      {3, 96, 0, 0, 0},     {2049, 96, 8, 8, 8},  {1, 128, 0, 0, 0},    {5000, 128, 0, 0, 0},
      {777, 128, 64, 128, 8}, {70000, 128, 0, 0, 0}, {1000, 256, 0, 0, 0}, {129, 256, 8, 24, 0},
      {513, 1000, 0, 0, 0}, {100, 1000, 24, 8, 16}, {64, 8192, 0, 0, 0}, {9, 8192, 8, 8, 8},
      {3001, 264, 0, 0, 0}, {700, 2056, 16, 8, 0}, {20000, 1000, 0, 0, 0},
  };
  int programs = 0;
  for (const Case &c : cases) {
    const Inputs in = make_inputs(c);
    const Outputs routed = run_forward(g_handle, in, nullptr);
    check_against_reference(in, routed, "routed");
    programs += check_every_program(g_handle, in, routed, "sm90");
    for (cake_handle_t h : g_cross) programs += check_every_program(h, in, routed, "cross-check");
  }
  print_message("%zu cases, %d forced program runs byte-identical\n",
                sizeof cases / sizeof cases[0], programs);
  assert_true(programs > 0);
}

static void test_forward_large(void **) {
  SKIP_WITHOUT_GPU();
  // 800k rows: the long form, and a grid far beyond one wave.
  const Inputs in = make_inputs({800000, 128, 0, 0, 0});
  const Outputs routed = run_forward(g_handle, in, nullptr);
  check_against_reference(in, routed, "800k rows");
  int n = check_every_program(g_handle, in, routed, "800k rows");
  assert_true(n >= 4);
}

static void test_forward_special_rows(void **) {
  SKIP_WITHOUT_GPU();
  for (int d : {128, 96, 64, 256, 1000}) {
    Inputs in = make_inputs({64, d, 0, 0, 0});
    auto X = [&](int r, int c) -> uint16_t & { return in.x[size_t(r) * d + c]; };
    auto Z = [&](int r, int c) -> uint16_t & { return in.z[size_t(r) * d + c]; };
    for (int c = 0; c < d; ++c) {
      X(0, c) = 0;                                               // all-zero row
      X(1, c) = (c & 1) ? 0x7f7f : 0xff7f;                       // +-BF16 max: sum of squares overflows FP32
      X(2, c) = (c % 7 == 0) ? 0x7f00 : bf16(1e-3f * (c + 1));   // a few huge among small
      Z(3, c) = (c & 1) ? 0x7f7f : 0xff7f;                       // |z| at BF16 max
      Z(8, c) = (c & 1) ? bf16(-100.0f) : bf16(90.0f);           // saturated gates
    }
    X(4, 5) = 0x7fc0;  // NaN in x
    X(5, 3) = 0x7f80;  // +Inf in x
    Z(6, 7) = 0x7fc0;  // NaN in z
    Z(7, 1) = 0xff80;  // -Inf in z
    const Outputs out = run_forward(g_handle, in, nullptr);
    check_against_reference(in, out, "special rows", false);
    // Finite rows stay finite (no NaN from huge values or saturated gates).
    for (int r : {0, 1, 2, 3, 8}) {
      for (int c = 0; c < d; ++c) assert_false(std::isnan(cake_test::bf16_to_float(out.y[size_t(r) * d + c])));
    }
    // Rows after the NaN/Inf rows are untouched by them.
    for (int r = 9; r < 64; ++r) {
      for (int c = 0; c < d; ++c) assert_true(std::isfinite(cake_test::bf16_to_float(out.y[size_t(r) * d + c])));
    }
    check_every_program(g_handle, in, out, "special rows");
    for (cake_handle_t h : g_cross) check_every_program(h, in, out, "special rows cross-check");
  }
}

static void test_forward_graph_replay(void **) {
  SKIP_WITHOUT_GPU();
  const Case c = {5000, 128, 0, 0, 0};
  Inputs in = make_inputs(c);
  const NormgateShape &s = in.shape;
  DeviceBuffer<uint16_t> x(in.x.size(), 0), z(in.z.size(), 0), w(in.w.size(), 0);
  DeviceBuffer<uint16_t> y(size_t(s.rows) * s.d);
  w.upload(in.w);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = s.rows;
  desc.d = s.d;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CAKE_OK(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y.ptr, nullptr, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    Inputs fresh = make_inputs(c);
    fresh.w = in.w;
    x.upload(fresh.x);
    z.upload(fresh.z);
    y.poison();
    // The uploads and poisoning run on the legacy stream, which the non-blocking replay stream
    // does not wait for.
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> replayed = y.download();
    const Outputs eager = run_forward(g_handle, fresh, nullptr);
    assert_true(replayed == eager.y);
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

static void test_forward_rejects_without_writing(void **) {
  SKIP_WITHOUT_GPU();
  DeviceBuffer<uint16_t> x(4096, 0), z(4096, 0), w(128, 0), y(4096);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = 32;
  desc.d = 128;
  desc.y_stride = 100;  // < d
  assert_int_equal(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y.ptr, nullptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  desc.y_stride = 0;
  assert_int_equal(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y.ptr + 1, nullptr, nullptr),
                   CAKE_STATUS_MISALIGNED);
  // Pageable host memory is refused by name, not handed to the kernel.
  std::vector<uint16_t> host_x(4096);
  assert_int_equal(cake_normgate_forward(g_handle, &desc, host_x.data(), z.ptr, w.ptr, y.ptr, nullptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_non_null(std::strstr(cake_last_error_message(), "x = "));
  CUDA_OK(cudaDeviceSynchronize());
  for (uint16_t v : y.download()) assert_int_equal(v, 0xffff);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_query),
      cmocka_unit_test(test_forward_accuracy_and_programs),
      cmocka_unit_test(test_forward_large),
      cmocka_unit_test(test_forward_special_rows),
      cmocka_unit_test(test_forward_graph_replay),
      cmocka_unit_test(test_forward_rejects_without_writing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
