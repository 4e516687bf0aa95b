// Normgate forward with quantized y: argument validation and routing through the real entry
// points, with a handle that has a table but no device (docs/spec/normgate.md, "Quantized y"):
// every rule of the validation table gets its status and a message naming the argument; buffer
// sizes and strides for both formats and several heads; queries route every table's quantized
// calls to a quantizing program of their format and width, plain calls never to one; forcing a
// program of another format, or a plain one, is refused.
#include <stddef.h>
#include <string.h>

#include <string>
#include <vector>

#include "cake.h"
#include "cmocka_cxx.h"
#include "fake_handle.h"

namespace {

cake_normgate_desc desc_of(int64_t rows, int32_t d) {
  cake_normgate_desc g;
  cake_normgate_desc_init(&g);
  g.rows = rows;
  g.d = d;
  return g;
}

cake_normgate_quant_desc quant_of(cake_normgate_quant_format_t f, int64_t heads = 0) {
  cake_normgate_quant_desc q;
  cake_normgate_quant_desc_init(&q);
  q.format = f;
  q.heads = heads;
  return q;
}

bool message_has(const char *s) { return strstr(cake_last_error_message(), s) != nullptr; }

cake_status_t sizes_of(const cake_normgate_desc &g, const cake_normgate_quant_desc &q,
                       cake_normgate_quant_sizes *s) {
  cake_normgate_quant_sizes_init(s);
  return cake_normgate_quant_buffer_sizes(&g, &q, s);
}

void test_sizes(void **) {
  cake_normgate_quant_sizes s;
  // [T, H, 128] heads as [T, H*128]: T = 100, H = 32.
  cake_normgate_desc g = desc_of(3200, 128);
  assert_int_equal(sizes_of(g, quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, 32), &s),
                   CAKE_STATUS_SUCCESS);
  assert_int_equal(s.q_rows, 100);
  assert_int_equal(s.q_cols, 4096);
  assert_int_equal(s.q_bytes, 3200 * 128);
  assert_int_equal(s.s_cols, 32);
  assert_int_equal(s.s_stride, 100);
  assert_int_equal(s.s_bytes, 4 * 100 * 32);
  // One head: [rows, d / 128], stride rows (no padding for any rows).
  g = desc_of(77, 256);
  assert_int_equal(sizes_of(g, quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE), &s),
                   CAKE_STATUS_SUCCESS);
  assert_int_equal(s.q_rows, 77);
  assert_int_equal(s.s_cols, 2);
  assert_int_equal(s.s_stride, 77);
  assert_int_equal(s.s_bytes, 4 * 77 * 2);
  // MXFP8: the swizzled matrix padded to 128 x 4 tiles.
  g = desc_of(77, 64);
  assert_int_equal(sizes_of(g, quant_of(CAKE_NORMGATE_QUANT_MXFP8), &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.s_cols, 2);
  assert_int_equal(s.s_stride, 0);
  assert_int_equal(s.s_bytes, 128 * 4);
  g = desc_of(300, 128);
  assert_int_equal(sizes_of(g, quant_of(CAKE_NORMGATE_QUANT_MXFP8, 3), &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.q_rows, 100);
  assert_int_equal(s.s_cols, 12);
  assert_int_equal(s.s_bytes, 128 * 12);
  g = desc_of(10, 5120);
  assert_int_equal(sizes_of(g, quant_of(CAKE_NORMGATE_QUANT_MXFP8), &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.s_cols, 160);
  assert_int_equal(s.s_bytes, 128 * 160);
  // A sizes struct from an older caller (struct_size covering q_bytes only) gets that much.
  cake_normgate_quant_sizes old;
  memset(&old, 0xab, sizeof old);
  old.struct_size = offsetof(cake_normgate_quant_sizes, s_bytes);
  const cake_normgate_quant_desc mx = quant_of(CAKE_NORMGATE_QUANT_MXFP8);
  assert_int_equal(cake_normgate_quant_buffer_sizes(&g, &mx, &old), CAKE_STATUS_SUCCESS);
  assert_int_equal(old.q_bytes, 10 * 5120);
  unsigned char tail[sizeof old - offsetof(cake_normgate_quant_sizes, s_bytes)];
  memset(tail, 0xab, sizeof tail);
  assert_memory_equal(reinterpret_cast<unsigned char *>(&old) + offsetof(cake_normgate_quant_sizes, s_bytes),
                      tail, sizeof tail);
}

struct Rule {
  cake_normgate_desc g;
  cake_normgate_quant_desc q;
  cake_status_t status;
  const char *message;
};

void test_rules(void **) {
  cake_normgate_quant_sizes s;
  const cake_normgate_quant_desc fp8 = quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE);
  const cake_normgate_quant_desc mx = quant_of(CAKE_NORMGATE_QUANT_MXFP8);
  std::vector<Rule> rules;
  auto add = [&](cake_normgate_desc g, cake_normgate_quant_desc q, cake_status_t st,
                 const char *m) { rules.push_back({g, q, st, m}); };
  cake_normgate_quant_desc q = fp8;
  q.format = (cake_normgate_quant_format_t)0;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "quant->format = 0");
  q.format = (cake_normgate_quant_format_t)3;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "quant->format = 3");
  q = fp8;
  q.scale_rule = (cake_fp8_scale_rule_t)2;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "quant->scale_rule = 2");
  q = mx;
  q.scale_rule = (cake_fp8_scale_rule_t)2;  // not read for MXFP8
  add(desc_of(64, 128), q, CAKE_STATUS_SUCCESS, "");
  q = fp8;
  q.heads = -1;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "quant->heads = -1");
  q.heads = 3;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "does not divide desc->rows = 64");
  add(desc_of(64, 64), fp8, CAKE_STATUS_UNSUPPORTED_SHAPE, "multiple of 128");
  add(desc_of(64, 192), fp8, CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->d = 192");
  add(desc_of(64, 48), mx, CAKE_STATUS_UNSUPPORTED_SHAPE, "multiple of 32");
  add(desc_of(64, 96), quant_of(CAKE_NORMGATE_QUANT_MXFP8, 2), CAKE_STATUS_UNSUPPORTED_SHAPE,
      "several heads");
  add(desc_of(64, 96), quant_of(CAKE_NORMGATE_QUANT_MXFP8, 1), CAKE_STATUS_SUCCESS, "");
  add(desc_of(INT64_C(1) << 32, 128), quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, 2),
      CAKE_STATUS_UNSUPPORTED_SHAPE, "below 2^31");
  add(desc_of(INT64_C(1) << 32, 128), fp8, CAKE_STATUS_SUCCESS, "");
  cake_normgate_desc g = desc_of(64, 128);
  g.gate = CAKE_NORMGATE_GATE_SIGMOID;
  add(g, fp8, CAKE_STATUS_INVALID_ARGUMENT, "default form only");
  g = desc_of(64, 128);
  g.group_size = 64;
  add(g, mx, CAKE_STATUS_INVALID_ARGUMENT, "group_size 64");
  g = desc_of(64, 128);
  g.x_dtype = CAKE_DTYPE_F16;
  add(g, fp8, CAKE_STATUS_INVALID_ARGUMENT, "default form only");
  g = desc_of(64, 128);
  g.group_size = 128;  // d: the whole row, the default form
  add(g, fp8, CAKE_STATUS_SUCCESS, "");
  // The descriptor's own rules come first.
  add(desc_of(0, 128), fp8, CAKE_STATUS_INVALID_ARGUMENT, "desc->rows");
  add(desc_of(64, 12), mx, CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->d = 12");
  q = fp8;
  q.struct_size = 8;
  add(desc_of(64, 128), q, CAKE_STATUS_INVALID_ARGUMENT, "quant->struct_size = 8");

  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  assert_non_null(h);
  for (const Rule &r : rules) {
    const cake_status_t got = sizes_of(r.g, r.q, &s);
    if (got != r.status || !message_has(r.message)) {
      print_error("rows %lld d %d format %d heads %lld: status %d (want %d), message \"%s\" (want "
                  "\"%s\")\n",
                  (long long)r.g.rows, r.g.d, (int)r.q.format, (long long)r.q.heads, (int)got,
                  (int)r.status, cake_last_error_message(), r.message);
      fail();
    }
    cake_program_info info;
    cake_program_info_init(&info);
    assert_int_equal(cake_normgate_forward_quantized_query(h, &r.g, &r.q, &info), r.status);
  }
  // A newer caller's descriptor: accepted with a zero tail, refused with a set byte.
  struct {
    cake_normgate_quant_desc q;
    int64_t extra;
  } newer;
  newer.q = fp8;
  newer.q.struct_size = sizeof newer;
  newer.extra = 0;
  assert_int_equal(cake_normgate_quant_buffer_sizes(&rules[0].g, &newer.q, &s),
                   CAKE_STATUS_SUCCESS);
  newer.extra = 1;
  assert_int_equal(cake_normgate_quant_buffer_sizes(&rules[0].g, &newer.q, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("newer"));
  cake_normgate_desc g64 = desc_of(64, 128);
  assert_int_equal(cake_normgate_quant_buffer_sizes(&g64, NULL, &s), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("quant"));
  assert_int_equal(cake_normgate_quant_buffer_sizes(&g64, &fp8, NULL), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("sizes"));
  assert_int_equal(cake_normgate_quant_buffer_sizes(NULL, &fp8, &s), CAKE_STATUS_INVALID_ARGUMENT);
  cake_test::free_fake_handle(h);
}

void test_pointers(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  assert_non_null(h);
  alignas(16) static unsigned char buf[64];
  void *p = buf;
  const cake_normgate_desc g = desc_of(256, 128);
  const cake_normgate_quant_desc q = quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE);
  assert_int_equal(cake_normgate_forward_quantized(NULL, &g, &q, p, p, p, p, NULL, p, p, NULL),
                   CAKE_STATUS_INVALID_HANDLE);
  assert_int_equal(cake_normgate_forward_quantized(h, NULL, &q, p, p, p, p, NULL, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_normgate_forward_quantized(h, &g, NULL, p, p, p, p, NULL, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("quant"));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, p, p, p, NULL, NULL, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("q: "));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, p, p, p, NULL, p, NULL, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("q_scale"));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, NULL, p, p, p, NULL, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("x"));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, NULL, p, p, NULL, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("z"));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, p, p, p, NULL, buf + 4, p, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("q = "));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, p, p, p, NULL, p, buf + 8, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("q_scale"));
  assert_int_equal(cake_normgate_forward_quantized(h, &g, &q, p, p, p, buf + 2, NULL, p, p, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("y"));
  cake_test::free_fake_handle(h);
}

std::string routed(cake_handle_t h, int64_t rows, int32_t d, const cake_normgate_quant_desc *q,
                   const char *forced = nullptr) {
  cake_normgate_desc g = desc_of(rows, d);
  g.program = forced;
  cake_program_info info;
  cake_program_info_init(&info);
  const cake_status_t st = q != nullptr ? cake_normgate_forward_quantized_query(h, &g, q, &info)
                                        : cake_normgate_forward_query(h, &g, &info);
  return st == CAKE_STATUS_SUCCESS ? std::string(info.name) : std::string("!") + std::to_string(st);
}

bool ends_with(const std::string &s, const std::string &tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void test_routes(void **) {
  const cake_normgate_quant_desc fp8 = quant_of(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE);
  const cake_normgate_quant_desc mx = quant_of(CAKE_NORMGATE_QUANT_MXFP8);
  const cake_arch_t arches[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};
  for (cake_arch_t arch : arches) {
    cake_handle_t h = cake_test::make_fake_handle(arch, 132);
    assert_non_null(h);
    for (int32_t d : {32, 64, 96, 128, 256, 384, 2048, 5120, 8192}) {
      for (int64_t rows : {int64_t(1000), int64_t(132 * 2000)}) {
        const std::string plain = routed(h, rows, d, nullptr);
        assert_true(plain[0] != '!' && !ends_with(plain, "_fp8b") && !ends_with(plain, "_mx"));
        const std::string m = routed(h, rows, d, &mx);
        assert_true(ends_with(m, "_mx"));
        const std::string f = routed(h, rows, d, &fp8);
        if (d % 128 == 0) {
          assert_true(ends_with(f, "_fp8b"));
          // The quantizing program of the plain forward's schedule where it has one.
          if (d == 128 || d == 256) {
            assert_true(f.find(rows == 1000 ? "_short_" : "_long_") != std::string::npos);
          }
          // A plain program, or one of the other format, forced: refused.
          assert_string_equal(routed(h, rows, d, &fp8, m.c_str()).c_str(), "!9");
          assert_string_equal(routed(h, rows, d, &fp8, plain.c_str()).c_str(), "!9");
          assert_string_equal(routed(h, rows, d, nullptr, f.c_str()).c_str(), "!9");
          assert_string_equal(routed(h, rows, d, &fp8, f.c_str()).c_str(), f.c_str());
        } else {
          assert_string_equal(f.c_str(), "!6");
        }
        assert_string_equal(routed(h, rows, d, &mx, m.c_str()).c_str(), m.c_str());
        assert_string_equal(routed(h, rows, d, nullptr, m.c_str()).c_str(), "!9");
      }
    }
    cake_test::free_fake_handle(h);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_pointers),
      cmocka_unit_test(test_routes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
