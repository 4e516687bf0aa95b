// Normgate backward on the GPU: dx, dz, dw (BF16 and FP32) against the float64 reference, both
// packages, every program of every table forced (deterministic dw bit-identical, dx/dz
// bit-identical everywhere), 50 repeats on two streams, accumulate and skip, special rows,
// workspace left reusable, and the checkpointed step (forward, forward, backward) as a CUDA
// graph replaying to the eager bytes. Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gpu_common.h"
#include "normgate_ref.h"

using cake_test::DeviceBuffer;
using cake_test::NormgateBwdShape;

namespace {

cake_handle_t g_handle = nullptr;
std::vector<cake_handle_t> g_cross;

uint16_t bf16(float f) { return cake_test::float_to_bf16_rne(f); }

using cake_test::random_bf16;

struct Inputs {
  NormgateBwdShape s;
  std::vector<uint16_t> dy, x, z, w;
};

Inputs make_inputs(int64_t rows, int d, int64_t pad) {
  Inputs in;
  // Strides differ per tensor when padded (z as a view into a fused projection, and so on).
  in.s = {rows, d, d + pad, d + 2 * pad, d + 3 * pad, d + pad, d, 1e-6f};
  in.dy = random_bf16(size_t(rows) * in.s.dy_stride, 1.0f);
  in.x = random_bf16(size_t(rows) * in.s.x_stride, 1.0f);
  in.z = random_bf16(size_t(rows) * in.s.z_stride, 2.0f);
  in.w = random_bf16(size_t(d), 0.5f, 1.0f);
  return in;
}

struct Run {
  cake_normgate_package_t package = CAKE_NORMGATE_DETERMINISTIC;
  cake_dtype_t dw_dtype = CAKE_DTYPE_BF16;
  uint32_t flags = 0;
  const char *program = nullptr;
  const std::vector<uint8_t> *dw_init = nullptr;  // bytes, for ACCUMULATE
  cudaStream_t stream = nullptr;
};

struct Outputs {
  std::vector<uint16_t> dx, dz;
  std::vector<uint8_t> dw;  // raw bytes (BF16 or FP32)
  std::vector<uint8_t> workspace_after;
  std::string program;
};

cake_normgate_desc make_desc(const NormgateBwdShape &s, const Run &run) {
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = s.rows;
  desc.d = s.d;
  desc.eps = s.eps;
  desc.dy_stride = s.dy_stride;
  desc.x_stride = s.x_stride;
  desc.z_stride = s.z_stride;
  desc.dx_stride = s.dx_stride;
  desc.dz_stride = s.dz_stride;
  desc.package = run.package;
  desc.dw_dtype = run.dw_dtype;
  desc.flags = run.flags;
  desc.program = run.program;
  return desc;
}

Outputs run_backward(cake_handle_t h, const Inputs &in, const Run &run) {
  const NormgateBwdShape &s = in.s;
  const cake_normgate_desc desc = make_desc(s, run);
  size_t ws_bytes = 0;
  CAKE_OK(cake_normgate_workspace_size(h, &desc, &ws_bytes));
  DeviceBuffer<uint16_t> dy(in.dy.size(), 0), x(in.x.size(), 0), z(in.z.size(), 0), w(in.w.size(), 0);
  DeviceBuffer<uint16_t> dx(size_t(s.rows) * s.dx_stride), dz(size_t(s.rows) * s.dz_stride);
  const size_t dw_bytes = size_t(s.d) * (run.dw_dtype == CAKE_DTYPE_F32 ? 4 : 2);
  DeviceBuffer<uint8_t> dw(dw_bytes);
  DeviceBuffer<uint8_t> ws(ws_bytes > 0 ? ws_bytes : 16, 0);
  dy.upload(in.dy);
  x.upload(in.x);
  z.upload(in.z);
  w.upload(in.w);
  if (run.dw_init != nullptr) dw.upload(*run.dw_init);
  cake_program_info info;
  cake_program_info_init(&info);
  CAKE_OK(cake_normgate_backward_query(h, &desc, &info));
  CAKE_OK(cake_normgate_backward(h, &desc, dy.ptr, x.ptr, z.ptr, w.ptr, dx.ptr, dz.ptr, dw.ptr,
                                 ws_bytes ? ws.ptr : nullptr, ws_bytes, run.stream));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return {dx.download(), dz.download(), dw.download(), ws.download(), info.name};
}

float f32_at(const std::vector<uint8_t> &b, int i) {
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}
uint16_t bf16_at(const std::vector<uint8_t> &b, int i) {
  uint16_t v;
  std::memcpy(&v, b.data() + 2 * i, 2);
  return v;
}

int64_t f32_ordinal(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}

// dx, dz against the reference; dw against the reference sum (plus `base` when accumulating).
// statistical: also the relative L2 bound, meaningful for random rows; rows built to be
// extreme are dominated by a few values, and each element is held to 1 ulp instead.
void check_reference(const Inputs &in, const Run &run, const Outputs &out,
                     const std::vector<double> *base = nullptr, bool statistical = true) {
  std::vector<double> rdx, rdz, rdw, rdw_abs;
  cake_test::normgate_backward_ref(in.s, in.dy.data(), in.x.data(), in.z.data(), in.w.data(), &rdx,
                                   &rdz, &rdw, &rdw_abs);
  char first[256] = {0};
  double l2;
  for (int t = 0; t < 2; ++t) {
    const bool is_dx = t == 0;
    const int64_t bad = cake_test::check_grad(is_dx ? "dx" : "dz", in.s.rows, in.s.d, is_dx ? rdx : rdz,
                                              is_dx ? out.dx.data() : out.dz.data(),
                                              is_dx ? in.s.dx_stride : in.s.dz_stride, &l2, first, sizeof first,
                                              statistical);
    if (bad != 0) {
      print_error("%s rows=%lld d=%d: %lld failures; first: %s\n", out.program.c_str(),
                  (long long)in.s.rows, in.s.d, (long long)bad, first);
      fail();
    }
  }
  if (run.flags & CAKE_NORMGATE_DW_SKIP) return;
  double err2 = 0, ref2 = 0;
  for (int c = 0; c < in.s.d; ++c) {
    const double want = rdw[c] + (base ? (*base)[c] : 0.0);
    if (run.dw_dtype == CAKE_DTYPE_F32) {
      const double got = f32_at(out.dw, c);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    } else {
      const uint16_t got = bf16_at(out.dw, c);
      const uint16_t rounded = cake_test::double_to_bf16(want);
      // Within 1 ulp, or within what the spec's order can promise where a column's sum cancels:
      // each FP32 chunk sum of 16 terms (each a rounded product) errs by at most about
      // 20 * 2^-24 * sum |a*n|. Seed 28071252272 on the H200: rows 40, d 8192, dw[879] is
      // 2.3724e-5 in float64 from terms summing 17.9 in magnitude; the GPU gave 2.4319e-5 (5 BF16
      // ulp off) and a host emulation of the FP32 chunk sums 2.4676e-5: the order's rounding.
      const double chunk_bound = 32.0 * std::ldexp(1.0, -24) * rdw_abs[c] +
                                 std::fabs(cake_test::bf16_to_double(rounded)) * std::ldexp(1.0, -8);
      const bool near = std::fabs(cake_test::bf16_to_double(got) - want) <= chunk_bound;
      if (std::llabs(cake_test::bf16_ordinal(got) - cake_test::bf16_ordinal(rounded)) > 1 && !near) {
        print_error("%s: dw[%d] = %.9g (0x%04x), want %.9g (0x%04x)\n", out.program.c_str(), c,
                    cake_test::bf16_to_double(got), got, want, rounded);
        fail();
      }
    }
  }
  if (run.dw_dtype == CAKE_DTYPE_F32 && ref2 > 0 && std::sqrt(err2 / ref2) > 1e-5) {
    print_error("%s rows=%lld d=%d: dw FP32 relative L2 %.3g > 1e-5\n", out.program.c_str(),
                (long long)in.s.rows, in.s.d, std::sqrt(err2 / ref2));
    fail();
  }
}

// dw of two runs within 1 ulp of each other (non-deterministic against deterministic).
void check_dw_within_ulp(const Outputs &a, const Outputs &b, cake_dtype_t dt, int d) {
  for (int c = 0; c < d; ++c) {
    const int64_t da = dt == CAKE_DTYPE_F32 ? f32_ordinal(f32_at(a.dw, c)) : cake_test::bf16_ordinal(bf16_at(a.dw, c));
    const int64_t db = dt == CAKE_DTYPE_F32 ? f32_ordinal(f32_at(b.dw, c)) : cake_test::bf16_ordinal(bf16_at(b.dw, c));
    if (std::llabs(da - db) > 1) {
      print_error("dw[%d]: %s and %s differ by %lld ulp\n", c, a.program.c_str(), b.program.c_str(),
                  (long long)std::llabs(da - db));
      fail();
    }
  }
}

void check_same_bits(const Outputs &a, const Outputs &b, bool with_dw) {
  if (a.dx != b.dx || a.dz != b.dz || (with_dw && a.dw != b.dw)) {
    print_error("%s and %s differ (dx %d, dz %d, dw %d)\n", a.program.c_str(), b.program.c_str(),
                a.dx != b.dx, a.dz != b.dz, with_dw && a.dw != b.dw);
    fail();
  }
}

// Every program of `h`'s table for this package and width, forced.
int for_each_program(cake_handle_t h, const Inputs &in, Run run, const Outputs &want, bool same_dw) {
  int count = 0;
  for (int i = 0; i < cake_program_count(h); ++i) {
    run.program = cake_program_name(h, i);
    const cake_normgate_desc desc = make_desc(in.s, run);
    cake_program_info info;
    cake_program_info_init(&info);
    if (cake_normgate_backward_query(h, &desc, &info) != CAKE_STATUS_SUCCESS) continue;
    const Outputs got = run_backward(h, in, run);
    check_same_bits(got, want, same_dw);
    for (uint8_t b : got.workspace_after) assert_int_equal(b, 0);  // left for any later call
    if (!same_dw) check_dw_within_ulp(got, want, run.dw_dtype, in.s.d);
    ++count;
  }
  return count;
}

}  // namespace

static int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }

static int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

static void test_backward_accuracy_and_programs(void **) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t rows;
    int d;
    int64_t pad;
  } cases[] = {{1, 8, 0},      {45, 8, 8},    {1000, 64, 0},  {333, 64, 8}, {17, 96, 0},
               {2049, 96, 8},  {1, 128, 0},   {5000, 128, 0}, {777, 128, 64}, {40000, 128, 0},
               {1000, 256, 0}, {129, 256, 8}, {300, 1000, 0}, {50, 1000, 24}, {40, 8192, 0},
               {9, 8192, 8},
               // Tuned deterministic grouped trees: units past eight per CTA go out in groups
               // (the cross handles' small grids: nearly all in groups).
               {200000, 128, 0}, {150000, 64, 0}, {100000, 256, 8},
               // General programs: groups spanning 2 and 16 warps, and a dw tree of three
               // levels with several blocks per persistent CTA.
               {3001, 264, 0}, {700, 2056, 16}, {20000, 1000, 0}};
  int forced = 0, checked = 0;
  for (const Case &c : cases) {
    const Inputs in = make_inputs(c.rows, c.d, c.pad);
    for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
      Run det;
      det.dw_dtype = dt;
      const Outputs d0 = run_backward(g_handle, in, det);
      check_reference(in, det, d0);
      Run nd = det;
      nd.package = CAKE_NORMGATE_NONDETERMINISTIC;
      const Outputs n0 = run_backward(g_handle, in, nd);
      check_reference(in, nd, n0);
      check_same_bits(n0, d0, false);
      check_dw_within_ulp(n0, d0, dt, c.d);
      // Both packages leave their workspace all zero (any later call may reuse it).
      for (uint8_t b : n0.workspace_after) assert_int_equal(b, 0);
      for (uint8_t b : d0.workspace_after) assert_int_equal(b, 0);
      forced += for_each_program(g_handle, in, det, d0, true);
      forced += for_each_program(g_handle, in, nd, d0, false);
      for (cake_handle_t h : g_cross) {
        forced += for_each_program(h, in, det, d0, true);
        forced += for_each_program(h, in, nd, d0, false);
      }
      checked += 2;
    }
  }
  print_message("%d reference checks, %d forced program runs consistent\n", checked, forced);
  assert_true(forced > 0);
}

static void test_backward_deterministic_repeats(void **) {
  SKIP_WITHOUT_GPU();
  const Inputs in = make_inputs(120000, 128, 0);  // the grouped tree's groups and singles
  cudaStream_t streams[2];
  for (auto &st : streams) CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
    Run run;
    run.dw_dtype = dt;
    const Outputs first = run_backward(g_handle, in, run);
    for (int rep = 0; rep < 50; ++rep) {
      run.stream = streams[rep % 2];
      const Outputs again = run_backward(g_handle, in, run);
      check_same_bits(again, first, true);
    }
  }
  for (auto &st : streams) CUDA_OK(cudaStreamDestroy(st));
}

// One workspace, sized for the largest call, serves calls of other shapes and packages in any
// order (the buffer a framework caches per stream).
static void test_workspace_reuse_across_shapes(void **) {
  SKIP_WITHOUT_GPU();
  struct Shape {
    int64_t rows;
    int d;
  } shapes[] = {{4096, 128}, {1000, 256}, {77, 8192}, {50000, 64}, {5, 96}, {4096, 128}};
  size_t max_ws = 0;
  for (const Shape &sh : shapes) {
    for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
      Run r;
      r.dw_dtype = dt;
      const Inputs in = make_inputs(sh.rows, sh.d, 0);
      const cake_normgate_desc desc = make_desc(in.s, r);
      size_t ws = 0;
      CAKE_OK(cake_normgate_workspace_size(g_handle, &desc, &ws));
      max_ws = std::max(max_ws, ws);
    }
  }
  DeviceBuffer<uint8_t> ws(max_ws, 0);
  for (int round = 0; round < 2; ++round) {
    for (const Shape &sh : shapes) {
      const Inputs in = make_inputs(sh.rows, sh.d, 0);
      Run r;
      r.dw_dtype = round ? CAKE_DTYPE_F32 : CAKE_DTYPE_BF16;
      r.package = (sh.rows % 2) ? CAKE_NORMGATE_NONDETERMINISTIC : CAKE_NORMGATE_DETERMINISTIC;
      const Outputs fresh = run_backward(g_handle, in, r);  // its own zeroed workspace
      const cake_normgate_desc desc = make_desc(in.s, r);
      DeviceBuffer<uint16_t> dy(in.dy.size(), 0), x(in.x.size(), 0), z(in.z.size(), 0), w(in.w.size(), 0);
      DeviceBuffer<uint16_t> dx(size_t(in.s.rows) * in.s.dx_stride), dz(size_t(in.s.rows) * in.s.dz_stride);
      DeviceBuffer<uint8_t> dw(fresh.dw.size());
      dy.upload(in.dy);
      x.upload(in.x);
      z.upload(in.z);
      w.upload(in.w);
      CAKE_OK(cake_normgate_backward(g_handle, &desc, dy.ptr, x.ptr, z.ptr, w.ptr, dx.ptr, dz.ptr, dw.ptr,
                                     ws.ptr, max_ws, nullptr));
      CUDA_OK(cudaDeviceSynchronize());
      assert_true(dw.download() == fresh.dw);
      for (uint8_t b : ws.download()) assert_int_equal(b, 0);
    }
  }
}

static void test_backward_accumulate_and_skip(void **) {
  SKIP_WITHOUT_GPU();
  const Inputs in = make_inputs(3000, 128, 0);
  for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
    for (cake_normgate_package_t pk : {CAKE_NORMGATE_DETERMINISTIC, CAKE_NORMGATE_NONDETERMINISTIC}) {
      std::vector<uint8_t> init(size_t(in.s.d) * (dt == CAKE_DTYPE_F32 ? 4 : 2));
      std::vector<double> base(in.s.d);
      std::normal_distribution<float> dist(0.0f, 50.0f);
      for (int c = 0; c < in.s.d; ++c) {
        const float v = dist(cake_test::rng());
        if (dt == CAKE_DTYPE_F32) {
          std::memcpy(init.data() + 4 * c, &v, 4);
          base[c] = v;
        } else {
          const uint16_t b = bf16(v);
          std::memcpy(init.data() + 2 * c, &b, 2);
          base[c] = cake_test::bf16_to_double(b);
        }
      }
      Run run;
      run.dw_dtype = dt;
      run.package = pk;
      run.flags = CAKE_NORMGATE_DW_ACCUMULATE;
      run.dw_init = &init;
      check_reference(in, run, run_backward(g_handle, in, run), &base);
      run.flags = CAKE_NORMGATE_DW_SKIP;
      const Outputs skipped = run_backward(g_handle, in, run);
      check_reference(in, run, skipped);
      assert_true(skipped.dw == init);  // untouched
    }
  }
}

// 800000 x 128: 12500 units of the column tree, one level. 560000 x 256: 17500 units, more than
// a span (CAKE_NG_COLUMN_SPAN), so the column tree's out-of-line levels run too.
static void test_backward_large(void **) {
  SKIP_WITHOUT_GPU();
  for (const auto &[rows, d] : {std::pair<int64_t, int>{800000, 128}, {560000, 256}}) {
    const Inputs in = make_inputs(rows, d, 0);
    Run det;
    det.dw_dtype = CAKE_DTYPE_F32;
    const Outputs d0 = run_backward(g_handle, in, det);
    check_reference(in, det, d0);
    Run nd = det;
    nd.package = CAKE_NORMGATE_NONDETERMINISTIC;
    const Outputs n0 = run_backward(g_handle, in, nd);
    check_same_bits(n0, d0, false);
    check_dw_within_ulp(n0, d0, det.dw_dtype, in.s.d);
    assert_true(for_each_program(g_handle, in, det, d0, true) >= 2);  // tuned + general
  }
}

static void test_backward_special_rows(void **) {
  SKIP_WITHOUT_GPU();
  for (int d : {128, 96, 1000}) {
    Inputs in = make_inputs(64, d, 0);
    auto X = [&](int r, int c) -> uint16_t & { return in.x[size_t(r) * d + c]; };
    auto Z = [&](int r, int c) -> uint16_t & { return in.z[size_t(r) * d + c]; };
    auto DY = [&](int r, int c) -> uint16_t & { return in.dy[size_t(r) * d + c]; };
    for (int c = 0; c < d; ++c) {
      X(0, c) = 0;
      X(1, c) = (c & 1) ? 0x7f7f : 0xff7f;
      Z(3, c) = (c & 1) ? 0x7f7f : 0xff7f;  // |z| at BF16 max; dy small enough that the true
      DY(3, c) = bf16(std::ldexp(cake_test::bf16_to_float(DY(3, c)), -100));  // grads are finite
      Z(8, c) = (c & 1) ? bf16(-100.0f) : bf16(90.0f);
      DY(9, c) = 0;
    }
    // NaN/Inf rows change dw for everyone (a sum over rows), so they get their own call below.
    Run run;
    run.dw_dtype = CAKE_DTYPE_F32;
    const Outputs out = run_backward(g_handle, in, run);
    check_reference(in, run, out, nullptr, false);
    for (int r : {0, 1, 3, 8, 9}) {
      for (int c = 0; c < d; ++c) {
        assert_false(std::isnan(cake_test::bf16_to_float(out.dx[size_t(r) * d + c])));
        assert_false(std::isnan(cake_test::bf16_to_float(out.dz[size_t(r) * d + c])));
      }
    }
    for (int c = 0; c < d; ++c) assert_false(std::isnan(f32_at(out.dw, c)));
    X(4, 5) = 0x7fc0;
    Z(6, 7) = 0xff80;
    Run skip = run;
    skip.flags = CAKE_NORMGATE_DW_SKIP;
    const Outputs bad = run_backward(g_handle, in, skip);
    check_reference(in, skip, bad, nullptr, false);
    for (int r = 10; r < 64; ++r) {
      for (int c = 0; c < d; ++c) assert_true(std::isfinite(cake_test::bf16_to_float(bad.dx[size_t(r) * d + c])));
    }
  }
}

// forward, forward again, backward: one graph, one workspace, replayed with new inputs.
static void test_checkpointed_step_graph(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t rows = 20000;
  const int d = 128;
  for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
    Inputs in = make_inputs(rows, d, 0);
    Run run;
    run.dw_dtype = dt;
    const cake_normgate_desc desc = make_desc(in.s, run);
    size_t ws_bytes = 0;
    CAKE_OK(cake_normgate_workspace_size(g_handle, &desc, &ws_bytes));
    DeviceBuffer<uint16_t> dy(in.dy.size(), 0), x(in.x.size(), 0), z(in.z.size(), 0), w(d, 0);
    DeviceBuffer<uint16_t> y1(size_t(rows) * d), y2(size_t(rows) * d), dx(size_t(rows) * d), dz(size_t(rows) * d);
    DeviceBuffer<uint8_t> dw(size_t(d) * 4), ws(ws_bytes + 16, 0);
    w.upload(in.w);
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CAKE_OK(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y1.ptr, nullptr, stream));
    CAKE_OK(cake_normgate_forward(g_handle, &desc, x.ptr, z.ptr, w.ptr, y2.ptr, nullptr, stream));
    CAKE_OK(cake_normgate_backward(g_handle, &desc, dy.ptr, x.ptr, z.ptr, w.ptr, dx.ptr, dz.ptr, dw.ptr,
                                   ws.ptr, ws_bytes, stream));
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 4; ++replay) {
      in = make_inputs(rows, d, 0);
      in.w = random_bf16(d, 0.5f, 1.0f);
      dy.upload(in.dy);
      x.upload(in.x);
      z.upload(in.z);
      w.upload(in.w);
      // The uploads and poisoning run on the legacy stream, which the non-blocking replay stream
      // does not wait for.
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      const Outputs eager = run_backward(g_handle, in, run);
      assert_true(dx.download() == eager.dx);
      assert_true(dz.download() == eager.dz);
      std::vector<uint8_t> got_dw = dw.download();
      got_dw.resize(eager.dw.size());
      assert_true(got_dw == eager.dw);
      assert_true(y1.download() == y2.download());
    }
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(stream));
  }
}

static void test_backward_rejects_without_writing(void **) {
  SKIP_WITHOUT_GPU();
  const Inputs in = make_inputs(64, 128, 0);
  DeviceBuffer<uint16_t> buf(64 * 128 * 4, 0), dx(64 * 128), dz(64 * 128), dw(128);
  Run run;
  cake_normgate_desc desc = make_desc(in.s, run);
  size_t need = 0;
  CAKE_OK(cake_normgate_workspace_size(g_handle, &desc, &need));
  assert_true(need > 0);
  DeviceBuffer<uint8_t> ws(need, 0);
  const uint16_t *b = buf.ptr;
  assert_int_equal(cake_normgate_backward(g_handle, &desc, b, b, b, b, dx.ptr, dz.ptr, dw.ptr, ws.ptr, need - 1, nullptr),
                   CAKE_STATUS_INSUFFICIENT_WORKSPACE);
  assert_int_equal(cake_normgate_backward(g_handle, &desc, b, b, b, b, dx.ptr, dz.ptr, nullptr, ws.ptr, need, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  desc.package = static_cast<cake_normgate_package_t>(7);
  assert_int_equal(cake_normgate_backward(g_handle, &desc, b, b, b, b, dx.ptr, dz.ptr, dw.ptr, ws.ptr, need, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaDeviceSynchronize());
  for (uint16_t v : dx.download()) assert_int_equal(v, 0xffff);
  for (uint16_t v : dw.download()) assert_int_equal(v, 0xffff);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_backward_accuracy_and_programs),
      cmocka_unit_test(test_backward_deterministic_repeats),
      cmocka_unit_test(test_backward_accumulate_and_skip),
      cmocka_unit_test(test_workspace_reuse_across_shapes),
      cmocka_unit_test(test_backward_large),
      cmocka_unit_test(test_backward_special_rows),
      cmocka_unit_test(test_checkpointed_step_graph),
      cmocka_unit_test(test_backward_rejects_without_writing),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
