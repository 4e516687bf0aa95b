// SwiGLU + MXFP8 on the GPU: the device sigmoid table (all 65,536 BF16 gates) in every sigmoid
// and band form against the exact sequence; all six forms, every program of every table forced,
// byte-exact (data and scales) against the host model driven by the measured table; both ==
// rowwise + colwise; the float64 oracle; special blocks and block-scaled inputs; a case above
// 2^31 elements; graph capture; validation writes nothing. Skips without a GPU.
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "normgate_ref.h"
#include "swiglu_gpu_common.h"
#include "swiglu_mxfp8_gpu_checks.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_sigmoid_table.cuh"

using cake_test::DeviceBuffer;

namespace {

using cake_swiglu_gpu::g_cross;
using cake_swiglu_gpu::g_handle;
using cake_swiglu_gpu::g_table;
using cake_swiglu_gpu::setup;
using cake_swiglu_gpu::teardown;

uint16_t bf16(float f) { return cake_test::float_to_bf16_rne(f); }

// Unit normals, or normals times 2^k per 32-column block with k uniform in [-kmax, kmax].
std::vector<uint16_t> random_input(int64_t rows, int64_t cols, int kmax) {
  return cake_swiglu_gpu::random_input(rows, cols, kmax, 32, false);
}

using Device = cake_swiglu_gpu::Device<uint8_t, cake_swiglu_mxfp8_sizes>;
using Host = cake_swiglu_gpu::Host<uint8_t>;

cake_swiglu_mxfp8_desc make_desc(int64_t M, int64_t K, int form, const char *program) {
  cake_swiglu_mxfp8_desc d;
  cake_swiglu_mxfp8_desc_init(&d);
  d.m = M;
  d.k = K;
  d.orientation = static_cast<cake_mxfp8_orientation_t>(form % 3 + 1);
  d.program = program;
  return d;
}

cake_swiglu_mxfp8_sizes sizes_of(int64_t M, int64_t K, bool backward) {
  cake_swiglu_mxfp8_desc d = make_desc(M, K, 0, nullptr);
  cake_swiglu_mxfp8_sizes s;
  cake_swiglu_mxfp8_sizes_init(&s);
  CAKE_OK(cake_swiglu_mxfp8_buffer_sizes(&d, backward ? 1 : 0, &s));
  return s;
}

// One call on `h` (program forced when non-null); outputs copied back, poisoned before.
Host run(cake_handle_t h, Device &dev, int64_t M, int64_t K, int form, const char *program,
         cudaStream_t stream = nullptr) {
  return cake_swiglu_gpu::run(h, dev, make_desc(M, K, form, program), form,
                              &cake_swiglu_mxfp8_forward, &cake_swiglu_mxfp8_backward, stream);
}

const uint8_t *ptr(const std::vector<uint8_t> &v) { return v.empty() ? nullptr : v.data(); }

void expect_model(int form, int64_t M, int64_t K, const cake_ref::Mxfp8Out &want, const Host &got,
                  const std::string &label) {
  const cake_gpu_checks::CompareReport r = cake_gpu_checks::compare_outputs(
      form, M, K, want, ptr(got.row_q), ptr(got.row_s), ptr(got.col_q), ptr(got.col_s));
  if (!r.ok) {
    print_error("%s form %d M=%lld K=%lld: %s\n", label.c_str(), form, (long long)M, (long long)K,
                r.summary().c_str());
    fail();
  }
}

// Every program of `h` serving `form`, forced: byte-exact against the model.
int every_program(cake_handle_t h, Device &dev, int64_t M, int64_t K, int form,
                  const cake_ref::Mxfp8Out &want) {
  int n = 0;
  for (int i = 0; i < cake_program_count(h); ++i) {
    const char *name = cake_program_name(h, i);
    const cake_swiglu_mxfp8_desc d = make_desc(M, K, form, name);
    cake_program_info info;
    cake_program_info_init(&info);
    if (cake_swiglu_mxfp8_query(h, &d, form >= 3, &info) != CAKE_STATUS_SUCCESS) continue;
    expect_model(form, M, K, want, run(h, dev, M, K, form, name), name);
    ++n;
  }
  return n;
}

// All six forms on one input: model, routed, every program of every table, both == row + col.
int check_all_forms(int64_t M, int64_t K, const std::vector<uint16_t> &in,
                    const std::vector<uint16_t> &grad, bool cross) {
  Device dev(M, K, sizes_of(M, K, true));
  dev.in.upload(in);
  dev.grad.upload(grad);
  int programs = 0;
  for (int dir = 0; dir < 2; ++dir) {
    Host parts[3];
    for (int o = 0; o < 3; ++o) {
      const int form = dir * 3 + o;
      cake_ref::Mxfp8Out want;
      cake_ref::swiglu_mxfp8_model(form, in.data(), dir ? grad.data() : nullptr, M, K,
                                   g_table.data(), &want);
      parts[o] = run(g_handle, dev, M, K, form, nullptr);
      expect_model(form, M, K, want, parts[o], "routed");
      programs += every_program(g_handle, dev, M, K, form, want);
      if (cross) {
        for (cake_handle_t h : g_cross) programs += every_program(h, dev, M, K, form, want);
      }
    }
    const cake_gpu_checks::CompareReport both = cake_gpu_checks::compare_both_with_parts(
        dir == 1, M, K, ptr(parts[2].row_q), ptr(parts[2].row_s), ptr(parts[2].col_q),
        ptr(parts[2].col_s), ptr(parts[0].row_q), ptr(parts[0].row_s), ptr(parts[1].col_q),
        ptr(parts[1].col_s));
    if (!both.ok) {
      print_error("both != rowwise + colwise: %s\n", both.summary().c_str());
      fail();
    }
  }
  return programs;
}

__global__ void fill_bf16_hash(uint16_t *out, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t h = (uint64_t(i) + seed) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    // A BF16 with exponent in [2^-8, 2^8) and random sign/mantissa: never zero, never special.
    const uint32_t e = 119u + uint32_t(h % 16u);
    out[i] = uint16_t(((h >> 8) & 0x8000u) | (e << 7) | ((h >> 20) & 0x7fu));
  }
}

}  // namespace

// Must run first: the model of every later test uses the measured table.
static void test_sigmoid_tables(void **) {
  SKIP_WITHOUT_GPU();
  const cake_ref::SigmoidTableReport rep = cake_swiglu_gpu::measure_sigmoid_table();
  print_message("sigmoid table: max %.2f ulp vs 1/(1+2^fl(g*c)), max %.2f ulp vs float64; spec bound "
                "(2+|g|/2 ulp) %s (%lld values over it, worst ratio %.2f at gate 0x%04x)\n",
                rep.max_ulp_seq, rep.max_ulp, rep.spec_ok ? "met" : "NOT met",
                (long long)rep.spec_violations, rep.spec_worst_ratio, rep.spec_worst_gate);
  cake_swiglu_gpu::require_sigmoid_table(rep);
  struct {
    void (*kernel)(uint32_t *);
    const char *name;
  } forms[] = {{cake_sigmoid_table_f1_b0, "fast/inline"}, {cake_sigmoid_table_f1_b1, "fast/call"},
               {cake_sigmoid_table_f1_b2, "fast/loop"},   {cake_sigmoid_table_f2_b0, "packed/inline"},
               {cake_sigmoid_table_f2_b1, "packed/call"}, {cake_sigmoid_table_f2_b2, "packed/loop"},
               {cake_sigmoid_table_f1_b3, "fast/group"},  {cake_sigmoid_table_f2_b3, "packed/group"}};
  for (const auto &f : forms) {
    const std::vector<uint32_t> got = cake_swiglu_gpu::device_table(f.kernel);
    const cake_gpu_checks::CompareReport r =
        cake_gpu_checks::compare_sigmoid_tables(g_table.data(), got.data(), f.name);
    if (!r.ok) {
      print_error("%s\n", r.summary().c_str());
      fail();
    }
  }
  for (int scale_exp : {0, -100, 100}) {
    DeviceBuffer<uint8_t> t(65536);
    cake_e4m3_cvt_table<<<256, 128>>>(t.ptr, scale_exp);  // one thread per BF16 pair
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    const std::vector<uint8_t> hw = t.download();
    const cake_gpu_checks::CompareReport r = cake_gpu_checks::check_e4m3_cvt_table(hw.data(), scale_exp);
    if (!r.ok) {
      print_error("e4m3 cvt (scale 2^%d): %s\n", scale_exp, r.summary().c_str());
      fail();
    }
  }
}

static void test_shapes_every_program(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  const int64_t sizes[] = {128, 256, 384, 1024, 4096};
  int programs = 0, shapes = 0;
  for (int64_t M : sizes) {
    for (int64_t K : sizes) {
      const std::vector<uint16_t> in = random_input(M, 2 * K, (M + K) % 3 == 0 ? 100 : 0);
      const std::vector<uint16_t> grad = random_input(M, K, 0);
      programs += check_all_forms(M, K, in, grad, true);
      ++shapes;
    }
  }
  print_message("%d shapes x 6 forms: %d forced program runs byte-exact against the model\n",
                shapes, programs);
}

// M and K multiples of 32 but not of 128: partial tiles and the swizzled layout's padding rows
// and columns (written 0x00, compared as part of the model's padded scale matrices), every
// program of every table.
static void test_tail_shapes(void **) {
  SKIP_WITHOUT_GPU();
  assert_int_equal(g_table.size(), 65536);
  const int64_t sizes[][2] = {{32, 32}, {96, 160}, {160, 96}, {544, 96}, {32, 2080}, {1056, 224}};
  int programs = 0, shapes = 0;
  for (const auto &s : sizes) {
    const int64_t M = s[0], K = s[1];
    const std::vector<uint16_t> in = random_input(M, 2 * K, shapes % 2 ? 100 : 0);
    const std::vector<uint16_t> grad = random_input(M, K, 0);
    programs += check_all_forms(M, K, in, grad, true);
    ++shapes;
  }
  print_message("%d tail shapes x 6 forms: %d forced program runs byte-exact\n", shapes,
                programs);
}

static void test_large_shape(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 16384, K = 7168;
  const std::vector<uint16_t> in = random_input(M, 2 * K, 0);
  const std::vector<uint16_t> grad = random_input(M, K, 0);
  const int n = check_all_forms(M, K, in, grad, false);
  print_message("16384x7168: %d program runs byte-exact\n", n);
}

static void test_block_scaled_and_special(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 256, K = 512;
  std::vector<uint16_t> in = random_input(M, 2 * K, 100);
  std::vector<uint16_t> grad = random_input(M, K, 20);
  auto G = [&](int64_t m, int64_t k) -> uint16_t & { return in[size_t(m) * 2 * K + k]; };
  auto U = [&](int64_t m, int64_t k) -> uint16_t & { return in[size_t(m) * 2 * K + K + k]; };
  for (int64_t k = 0; k < 32; ++k) {
    G(0, k) = 0;                              // an all-zero block
    U(0, k) = 0;
    G(1, 32 + k) = uint16_t(0x0001 + k);      // BF16 subnormal gates
    U(1, 32 + k) = uint16_t(0x0040 + k);      // and subnormal up values
    G(2, 64 + k) = 0x0080;                    // tiny amax: products far below 1.75*2^-118
    U(2, 64 + k) = 0x0100;
    G(3, 96 + k) = (k & 1) ? 0x7f7f : 0xff7f; // |g| = BF16 max (sigmoid saturates, no NaN)
    G(4, 128 + k) = bf16(-90.0f - k);         // gates on the band path (d >= 2^126)
    G(5, 160 + k) = bf16(-200.0f * (k + 1));
  }
  G(6, 7) = 0x7fc0;   // NaN gate: its block is 0xFF / 0x7F
  U(7, 40) = 0x7f80;  // +Inf up
  U(8, 300) = 0xff80; // -Inf up
  G(9, 500) = 0x7f80; // +Inf gate
  for (int64_t m = 32; m < 64; ++m) U(m, 200) = 0x7f7f;  // a column with huge values (colwise)
  const int n = check_all_forms(M, K, in, grad, true);
  print_message("special blocks: %d program runs byte-exact\n", n);
}

static void test_float64_oracle(void **) {
  SKIP_WITHOUT_GPU();
  long long steps = 0, worst = 0;
  for (int64_t M : {int64_t(256), int64_t(1024)}) {
    for (int64_t K : {int64_t(384), int64_t(2048)}) {
      const std::vector<uint16_t> in = random_input(M, 2 * K, 0);
      const std::vector<uint16_t> grad = random_input(M, K, 0);
      Device dev(M, K, sizes_of(M, K, true));
      dev.in.upload(in);
      dev.grad.upload(grad);
      for (int form = 0; form < 6; ++form) {
        const Host got = run(g_handle, dev, M, K, form, nullptr);
        const cake_ref::OracleReport r = cake_ref::oracle_check(
            form, in.data(), form >= 3 ? grad.data() : nullptr, M, K, g_table.data(),
            ptr(got.row_q), ptr(got.row_s), ptr(got.col_q), ptr(got.col_s));
        if (!r.ok) {
          print_error("oracle form %d M=%lld K=%lld: %lld differing of %lld (allowed %lld; %lld "
                      "scale steps), %lld violations: %s\n",
                      form, (long long)M, (long long)K, (long long)r.differing, (long long)r.bytes,
                      (long long)r.allowed, (long long)r.scale_steps, (long long)r.violations,
                      r.detail.c_str());
          fail();
        }
        steps += r.scale_steps;
        worst = r.differing > worst ? r.differing : worst;
      }
    }
  }
  print_message("float64 oracle: 24 runs, backward %lld scale steps, at most %lld differing bytes\n",
                steps, worst);
}

// More than 2^31 input elements: rowwise forms, checked on 128-row slices at the start, across
// the 2^31 element boundary and at the end, against the model of each slice.
static void test_above_2_31_elements(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 32768, K = 32896;  // M * 2K = 2,155,872,256 > 2^31
  size_t free_bytes = 0, total = 0;
  CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  // in (M x 2K BF16) + grad (M x K BF16) + row_q (M x 2K bytes) + 1 GiB of slack
  const size_t need = size_t(M) * K * 2 * 2 + size_t(M) * K * 2 + size_t(M) * 2 * K + (size_t(1) << 30);
  if (free_bytes < need) {
    print_message("SKIP: needs %zu bytes of device memory, %zu free\n", need, free_bytes);
    skip();
  }
  DeviceBuffer<uint16_t> in(size_t(M) * 2 * K, 0), grad(size_t(M) * K, 0);
  const cake_swiglu_mxfp8_sizes s = sizes_of(M, K, true);
  DeviceBuffer<uint8_t> row_q(s.q_bytes), row_s(s.row_s_bytes);
  const uint64_t seed = cake_test::rng()();
  fill_bf16_hash<<<4096, 256>>>(in.ptr, int64_t(M) * 2 * K, seed);
  fill_bf16_hash<<<4096, 256>>>(grad.ptr, int64_t(M) * K, seed ^ 0x5555);
  CUDA_OK(cudaGetLastError());
  const int64_t boundary_row = (int64_t(1) << 31) / (2 * K) / 128 * 128;  // = M - 128 here
  assert_true(boundary_row + 128 <= M);
  for (int form : {CAKE_OP_SWIGLU_FORWARD_ROWWISE, CAKE_OP_SWIGLU_BACKWARD_ROWWISE}) {
    const bool bwd = form >= 3;
    const int64_t O = bwd ? 2 * K : K;
    const int64_t scale_block = (O / 32 / 4) * 512;  // scale bytes of 128 rows
    row_q.poison(0xa5);
    row_s.poison(0xa5);
    const cake_swiglu_mxfp8_desc d = make_desc(M, K, form, nullptr);
    if (bwd) {
      CAKE_OK(cake_swiglu_mxfp8_backward(g_handle, &d, in.ptr, grad.ptr, row_q.ptr, row_s.ptr, nullptr, nullptr, nullptr));
    } else {
      CAKE_OK(cake_swiglu_mxfp8_forward(g_handle, &d, in.ptr, row_q.ptr, row_s.ptr, nullptr, nullptr, nullptr));
    }
    CUDA_OK(cudaDeviceSynchronize());
    // Slices: the first, the one before the 2^31st element's, the one holding it (the last).
    for (int64_t r0 : {int64_t(0), boundary_row - 128, boundary_row}) {
      std::vector<uint16_t> hin(size_t(128) * 2 * K), hgrad(size_t(128) * K);
      CUDA_OK(cudaMemcpy(hin.data(), in.ptr + r0 * 2 * K, hin.size() * 2, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(hgrad.data(), grad.ptr + r0 * K, hgrad.size() * 2, cudaMemcpyDeviceToHost));
      cake_ref::Mxfp8Out want;
      cake_ref::swiglu_mxfp8_model(form, hin.data(), bwd ? hgrad.data() : nullptr, 128, K,
                                   g_table.data(), &want);
      std::vector<uint8_t> q(size_t(128) * O), sc(scale_block);
      CUDA_OK(cudaMemcpy(q.data(), row_q.ptr + r0 * O, q.size(), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(sc.data(), row_s.ptr + (r0 / 128) * scale_block, sc.size(), cudaMemcpyDeviceToHost));
      if (q != want.row_q || sc != want.row_s) {
        print_error("form %d rows [%lld, %lld): data %s, scales %s\n", form, (long long)r0,
                    (long long)r0 + 128, q == want.row_q ? "ok" : "DIFFER", sc == want.row_s ? "ok" : "DIFFER");
        fail();
      }
    }
  }
}

static void test_graph_and_validation(void **) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 1024, K = 2048;
  Device dev(M, K, sizes_of(M, K, true));
  std::vector<uint16_t> in = random_input(M, 2 * K, 0), grad = random_input(M, K, 0);
  dev.in.upload(in);
  dev.grad.upload(grad);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const cake_swiglu_mxfp8_desc d = make_desc(M, K, CAKE_OP_SWIGLU_BACKWARD_BOTH, nullptr);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CAKE_OK(cake_swiglu_mxfp8_backward(g_handle, &d, dev.in.ptr, dev.grad.ptr, dev.row_q.ptr, dev.row_s.ptr,
                                     dev.col_q.ptr, dev.col_s.ptr, stream));
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    in = random_input(M, 2 * K, replay * 30);
    dev.in.upload(in);
    dev.poison();
    // The uploads and poisoning run on the legacy stream, which the non-blocking replay stream
    // does not wait for.
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const std::vector<uint8_t> rq = dev.row_q.download(), cs = dev.col_s.download();
    const Host eager = run(g_handle, dev, M, K, CAKE_OP_SWIGLU_BACKWARD_BOTH, nullptr);
    assert_true(rq == eager.row_q);
    assert_true(cs == eager.col_s);
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));

  // Rejected calls write nothing.
  dev.poison();
  cake_swiglu_mxfp8_desc bad = d;
  bad.m = 100;
  assert_int_equal(cake_swiglu_mxfp8_backward(g_handle, &bad, dev.in.ptr, dev.grad.ptr, dev.row_q.ptr,
                                              dev.row_s.ptr, dev.col_q.ptr, dev.col_s.ptr, nullptr),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_int_equal(cake_swiglu_mxfp8_backward(g_handle, &d, dev.in.ptr, dev.grad.ptr, dev.row_q.ptr + 8,
                                              dev.row_s.ptr, dev.col_q.ptr, dev.col_s.ptr, nullptr),
                   CAKE_STATUS_MISALIGNED);
  assert_int_equal(cake_swiglu_mxfp8_backward(g_handle, &d, dev.in.ptr, nullptr, dev.row_q.ptr,
                                              dev.row_s.ptr, dev.col_q.ptr, dev.col_s.ptr, nullptr),
                   CAKE_STATUS_INVALID_ARGUMENT);
  CUDA_OK(cudaDeviceSynchronize());
  for (uint8_t b : dev.row_q.download()) assert_int_equal(b, 0xa5);
  for (uint8_t b : dev.col_s.download()) assert_int_equal(b, 0xa5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigmoid_tables),       cmocka_unit_test(test_shapes_every_program),
      cmocka_unit_test(test_tail_shapes),
      cmocka_unit_test(test_block_scaled_and_special), cmocka_unit_test(test_float64_oracle),
      cmocka_unit_test(test_large_shape),          cmocka_unit_test(test_above_2_31_elements),
      cmocka_unit_test(test_graph_and_validation),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
