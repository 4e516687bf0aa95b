// Normgate forward with quantized y on the GPU (docs/spec/normgate.md, "Quantized y"): every
// quantizing program of every table (the Blackwell and Rubin ones through their cross-check
// images), forced, for both formats, both FP8 scale rules and several heads, writes
//   - y and rstd equal to the plain forward's, bit for bit (when asked for), and
//   - E4M3 bytes and scales equal, over the whole buffers, to the host model of that y
//     (tests/reference/normgate_quant_ref.h);
// y NULL leaves y's buffer untouched; the routed call gives the same bytes. Inputs span many
// binades per 128-column block, with all-zero rows and blocks, NaN and Inf rows. Then the time
// of the quantized forward against the plain one, reported. Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "normgate_quant_ref.h"

using cake_test::DeviceBuffer;

namespace {

cake_handle_t g_handle = nullptr;
std::vector<cake_handle_t> g_cross;

uint16_t bf16(float f) { return cake_test::float_to_bf16_rne(f); }

struct Inputs {
  int64_t rows;
  int32_t d;
  std::vector<uint16_t> x, z, w;
};

// x, z normal; w normal times 2^k per 128 columns (k uniform in [-60, 60]) and one block of w
// zero; row 1 all zero, row 2 with a NaN in x, row 3 with +Inf in z.
Inputs make_inputs(int64_t rows, int32_t d) {
  Inputs in{rows, d, cake_test::random_bf16(size_t(rows * d), 1.0f),
            cake_test::random_bf16(size_t(rows * d), 2.0f), cake_test::random_bf16(size_t(d), 1.0f)};
  std::uniform_int_distribution<int> k(-60, 60);
  for (int32_t c0 = 0; c0 < d; c0 += 128) {
    const float s = std::ldexp(1.0f, k(cake_test::rng()));
    for (int32_t c = c0; c < std::min(d, c0 + 128); ++c) {
      in.w[size_t(c)] = bf16(s * cake_test::bf16_to_float(in.w[size_t(c)]));
    }
  }
  if (d >= 256) {
    for (int32_t c = 128; c < 256; ++c) in.w[size_t(c)] = 0;
  }
  for (int32_t c = 0; c < d; ++c) in.x[size_t(1 * d + c)] = 0;
  in.x[size_t(2 * d + d / 2)] = 0x7FC0;
  in.z[size_t(3 * d + 5)] = 0x7F80;
  return in;
}

struct Device {
  DeviceBuffer<uint16_t> x, z, w;
  explicit Device(const Inputs &in) : x(in.x.size(), 0), z(in.z.size(), 0), w(in.w.size(), 0) {
    x.upload(in.x);
    z.upload(in.z);
    w.upload(in.w);
  }
};

cake_normgate_desc desc_of(const Inputs &in, const char *program) {
  cake_normgate_desc d;
  cake_normgate_desc_init(&d);
  d.rows = in.rows;
  d.d = in.d;
  d.program = program;
  return d;
}

struct Plain {
  std::vector<uint16_t> y;
  std::vector<float> rstd;
};

Plain run_plain(cake_handle_t h, const Inputs &in, const Device &dev) {
  DeviceBuffer<uint16_t> y(in.x.size());
  DeviceBuffer<float> rstd(size_t(in.rows));
  const cake_normgate_desc d = desc_of(in, nullptr);
  CAKE_OK(cake_normgate_forward(h, &d, dev.x.ptr, dev.z.ptr, dev.w.ptr, y.ptr, rstd.ptr, nullptr));
  CUDA_OK(cudaDeviceSynchronize());
  return {y.download(), rstd.download()};
}

struct Quant {
  cake_normgate_quant_format_t format;
  cake_fp8_scale_rule_t rule;
  int64_t heads;
};

cake_normgate_quant_desc quant_desc(const Quant &q) {
  cake_normgate_quant_desc qd;
  cake_normgate_quant_desc_init(&qd);
  qd.format = q.format;
  qd.scale_rule = q.rule;
  qd.heads = q.heads;
  return qd;
}

// One quantized call (program forced when non-null) against the plain forward and the model.
void check_call(cake_handle_t h, const Inputs &in, const Device &dev, const Plain &plain,
                const Quant &q, const char *program, bool write_y, const char *label) {
  const cake_normgate_desc d = desc_of(in, program);
  const cake_normgate_quant_desc qd = quant_desc(q);
  cake_normgate_quant_sizes sizes;
  cake_normgate_quant_sizes_init(&sizes);
  CAKE_OK(cake_normgate_quant_buffer_sizes(&d, &qd, &sizes));
  DeviceBuffer<uint16_t> y(in.x.size(), 0xAB);
  DeviceBuffer<float> rstd(size_t(in.rows), 0xAB);
  DeviceBuffer<uint8_t> qb(sizes.q_bytes, 0xAB), sb(sizes.s_bytes, 0xAB);
  CAKE_OK(cake_normgate_forward_quantized(h, &d, &qd, dev.x.ptr, dev.z.ptr, dev.w.ptr,
                                          write_y ? y.ptr : nullptr, write_y ? rstd.ptr : nullptr,
                                          qb.ptr, sb.ptr, nullptr));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  const std::vector<uint16_t> gy = y.download();
  const std::vector<float> gr = rstd.download();
  if (write_y) {
    if (gy != plain.y || std::memcmp(gr.data(), plain.rstd.data(), gr.size() * 4) != 0) {
      print_error("%s %s: y or rstd differs from the plain forward's\n", label, program);
      fail();
    }
  } else {
    for (uint16_t v : gy) assert_int_equal(v, 0xABAB);
  }
  cake_ref::NormgateQuantOut want;
  cake_ref::normgate_quant_model(plain.y.data(), in.rows, in.d, in.d, q.heads, q.format, q.rule,
                                 &want);
  assert_int_equal(want.q.size(), sizes.q_bytes);
  assert_int_equal(want.scale.size(), sizes.s_bytes);
  const std::string diff = cake_ref::normgate_quant_compare(
      want, qb.download().data(), sb.download().data(), q.format, in.rows, in.d, q.heads);
  if (!diff.empty()) {
    print_error("%s %s rows %lld d %d format %d rule %d heads %lld: %s\n", label,
                program ? program : "(routed)", (long long)in.rows, in.d, (int)q.format,
                (int)q.rule, (long long)q.heads, diff.c_str());
    fail();
  }
}

bool is_quant_program(const std::string &n) {
  return n.size() > 5 && (n.compare(n.size() - 5, 5, "_fp8b") == 0 || n.compare(n.size() - 3, 3, "_mx") == 0);
}

// Every quantizing program of h's table serving the call, forced; returns the names checked.
void check_table(cake_handle_t h, const char *label, std::set<std::string> *checked) {
  struct Shape {
    int64_t rows;
    int32_t d;
    int64_t heads;
  };
  const Shape shapes[] = {{999, 64, 1},   {3200, 128, 32}, {777, 128, 1},  {640, 256, 4},
                          {123, 96, 1},   {300, 384, 3},   {100, 2048, 2}, {60, 5120, 1},
                          {50, 8192, 1},  {130, 160, 1}};
  for (const Shape &s : shapes) {
    const Inputs in = make_inputs(s.rows, s.d);
    const Device dev(in);
    const Plain plain = run_plain(h, in, dev);
    std::vector<Quant> quants;
    if (s.d % 128 == 0) {
      quants.push_back({CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, CAKE_FP8_SCALE_EXACT, s.heads});
      quants.push_back({CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, CAKE_FP8_SCALE_POW2, 1});
      quants.push_back({CAKE_NORMGATE_QUANT_MXFP8, CAKE_FP8_SCALE_EXACT, s.heads});
    }
    if (s.d % 128 != 0 || s.heads > 1) {
      quants.push_back({CAKE_NORMGATE_QUANT_MXFP8, CAKE_FP8_SCALE_EXACT, 1});
    }
    for (const Quant &q : quants) {
      check_call(h, in, dev, plain, q, nullptr, false, label);  // routed, y not written
      const cake_normgate_quant_desc qd = quant_desc(q);
      for (int i = 0; i < cake_program_count(h); ++i) {
        const char *name = cake_program_name(h, i);
        const cake_normgate_desc d = desc_of(in, name);
        cake_program_info info;
        cake_program_info_init(&info);
        if (cake_normgate_forward_quantized_query(h, &d, &qd, &info) != CAKE_STATUS_SUCCESS) continue;
        check_call(h, in, dev, plain, q, name, true, label);
        checked->insert(name);
      }
    }
  }
}

void check_all_checked(cake_handle_t h, const std::set<std::string> &checked, const char *label) {
  int quant_programs = 0;
  for (int i = 0; i < cake_program_count(h); ++i) {
    const std::string name = cake_program_name(h, i);
    if (!is_quant_program(name)) continue;
    ++quant_programs;
    if (checked.count(name) == 0) {
      print_error("%s: quantizing program %s never checked\n", label, name.c_str());
      fail();
    }
  }
  assert_int_equal(quant_programs, 14);
}

}  // namespace

static int setup(void **) { return cake_test::open_handles(&g_handle, &g_cross); }

static int teardown(void **) {
  cake_test::close_handles(g_handle, &g_cross);
  return 0;
}

static void test_every_program_byte_exact(void **) {
  SKIP_WITHOUT_GPU();
  std::set<std::string> checked;
  check_table(g_handle, "device table", &checked);
  check_all_checked(g_handle, checked, "device table");
  for (cake_handle_t h : g_cross) {
    std::set<std::string> xc;
    check_table(h, "cross-check", &xc);
    check_all_checked(h, xc, "cross-check");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_program_byte_exact),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
