// Grouped SwiGLU argument validation and routing through the real entry points, with a handle that
// has a table but no device (docs/spec/swiglu-grouped.md, "Validation"): each wrong argument
// gets its status and a message naming it; buffer sizes of both formats; queries route every
// grouped form of every table to its grouped program, with a grid sized from T, E and K alone;
// ungrouped programs are refused by name for a grouped call and grouped ones for an ungrouped
// call; the spec's worked examples, computed from the layouts' formulas.
#include <string.h>

#include <string>

#include "cake.h"
#include "cmocka_cxx.h"
#include "fake_handle.h"
#include "mxfp8_encode.h"
#include "swiglu_grouped_ref.h"

namespace {

cake_swiglu_mxfp8_grouped_desc mx_desc(int64_t T, int64_t k, int32_t E,
                                       cake_mxfp8_orientation_t o) {
  cake_swiglu_mxfp8_grouped_desc d;
  cake_swiglu_mxfp8_grouped_desc_init(&d);
  d.tokens = T;
  d.k = k;
  d.experts = E;
  d.orientation = o;
  return d;
}

cake_swiglu_fp8_grouped_desc f8_desc(int64_t T, int64_t k, int32_t E,
                                     cake_mxfp8_orientation_t o) {
  cake_swiglu_fp8_grouped_desc d;
  cake_swiglu_fp8_grouped_desc_init(&d);
  d.tokens = T;
  d.k = k;
  d.experts = E;
  d.orientation = o;
  return d;
}

bool message_has(const char *s) { return strstr(cake_last_error_message(), s) != nullptr; }

void test_defaults(void **) {
  cake_swiglu_mxfp8_grouped_desc m;
  assert_int_equal(cake_swiglu_mxfp8_grouped_desc_init(&m), CAKE_STATUS_SUCCESS);
  assert_int_equal(m.struct_size, sizeof m);
  assert_int_equal(m.orientation, CAKE_MXFP8_ROWWISE);
  assert_int_equal(m.tokens, 0);
  assert_null(m.program);
  cake_swiglu_fp8_grouped_desc f;
  assert_int_equal(cake_swiglu_fp8_grouped_desc_init(&f), CAKE_STATUS_SUCCESS);
  assert_int_equal(f.scale_rule, CAKE_FP8_SCALE_EXACT);
  assert_int_equal(cake_swiglu_mxfp8_grouped_desc_init(NULL), CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_grouped_sizes_init(NULL), CAKE_STATUS_INVALID_ARGUMENT);
  // A descriptor with no tokens (the defaults) is refused: T is a bound the caller states.
  cake_swiglu_grouped_sizes s;
  cake_swiglu_grouped_sizes_init(&s);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("desc->tokens = 0"));
}

void test_sizes(void **) {
  cake_swiglu_grouped_sizes s;
  cake_swiglu_grouped_sizes_init(&s);
  // MXFP8, the spec's example: T = 256, E = 3, K = 64 forward: P = 512.
  cake_swiglu_mxfp8_grouped_desc m = mx_desc(256, 64, 3, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.out_cols, 64);
  assert_int_equal(s.scale_rows, 512);
  assert_int_equal(s.q_bytes, 256 * 64);
  assert_int_equal(s.row_s_bytes, 512 * 4);      // C' = 4
  assert_int_equal(s.col_s_bytes, 128 * 512 / 32);  // R' = 128
  // Backward, K = 160: O = 320, C' = 12, R' = 384.
  m.k = 160;
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 1, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.out_cols, 320);
  assert_int_equal(s.row_s_bytes, 512 * 12);
  assert_int_equal(s.col_s_bytes, 384 * 512 / 32);
  // P counts only experts that can hold rows: T = 1 with 256 experts needs one tile.
  m = mx_desc(1, 32, 256, CAKE_MXFP8_BOTH);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.scale_rows, 128);
  assert_int_equal(s.scale_rows, cake_ref::grouped_scale_rows(1, 256));
  m = mx_desc(16384, 2048, 256, CAKE_MXFP8_BOTH);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.scale_rows, (16384 + 127 * 256) / 128 * 128);
  // FP8 blockwise, the spec's example: T = 330, E = 2, K = 256 forward: P = 512.
  cake_swiglu_fp8_grouped_desc f = f8_desc(330, 256, 2, CAKE_MXFP8_COLWISE);
  assert_int_equal(cake_swiglu_fp8_grouped_buffer_sizes(&f, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.scale_rows, 512);
  assert_int_equal(s.q_bytes, 330 * 256);
  assert_int_equal(s.row_s_bytes, 4 * 512 * 2);
  assert_int_equal(s.col_s_bytes, 4 * 256 * 4);
  assert_int_equal(cake_swiglu_fp8_grouped_buffer_sizes(&f, 1, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.row_s_bytes, 4 * 512 * 4);
  assert_int_equal(s.col_s_bytes, 4 * 512 * 4);
  // Shape rules.
  f.k = 192;
  assert_int_equal(cake_swiglu_fp8_grouped_buffer_sizes(&f, 0, &s), CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_true(message_has("desc->k = 192: must be a multiple of 128"));
  m = mx_desc(256, 48, 3, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_true(message_has("multiple of 32"));
  m = mx_desc(256, 64, 0, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  m.experts = CAKE_SWIGLU_GROUPED_MAX_EXPERTS + 1;
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_true(message_has("CAKE_SWIGLU_GROUPED_MAX_EXPERTS"));
  m.experts = CAKE_SWIGLU_GROUPED_MAX_EXPERTS;
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s), CAKE_STATUS_SUCCESS);
  m.tokens = (INT64_C(1) << 31) - (INT64_C(1) << 18) + 1;
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_true(message_has("desc->tokens"));
  m.tokens = -1;
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  m = mx_desc(256, INT64_C(1) << 31, 3, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  m = mx_desc(256, 64, 3, (cake_mxfp8_orientation_t)4);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("orientation"));
  m = mx_desc(256, 64, 3, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 2, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(&m, 0, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_mxfp8_grouped_buffer_sizes(NULL, 0, &s),
                   CAKE_STATUS_INVALID_ARGUMENT);
  f = f8_desc(256, 256, 3, CAKE_MXFP8_ROWWISE);
  f.scale_rule = (cake_fp8_scale_rule_t)7;
  assert_int_equal(cake_swiglu_fp8_grouped_buffer_sizes(&f, 0, &s), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("scale_rule"));
}

// The spec's worked examples, from the layouts' formulas and the model's offsets.
void test_spec_examples(void **) {
  // MXFP8: offsets {33, 33, 200}, T = 256, K = 64 forward.
  const cake_ref::GroupRows g = cake_ref::grouped_rows({33, 33, 200}, 256);
  assert_int_equal(g.rows[0], 33);
  assert_int_equal(g.rows[1], 0);
  assert_int_equal(g.rows[2], 167);
  assert_int_equal(g.pad[1], 128);
  assert_int_equal(g.pad[2], 128);
  assert_int_equal(g.pad_total, 384);
  assert_int_equal(g.status, 0);
  // Token 100: expert 2, row 67, block 2; its colwise scale at R' * p[2] / 32 + offset(5, 2).
  assert_int_equal(128 * g.pad[2] / 32 + cake::mx::swizzle_offset(5, 2, 8), 594);
  // FP8 blockwise: offsets {200, 330}, T = 330, K = 256 forward.
  const cake_ref::GroupRows f = cake_ref::grouped_rows({200, 330}, 330);
  assert_int_equal(f.pad[1], 256);
  assert_int_equal(f.pad[1] * 2 + 1 * f.rows[1] + 50, 692);       // row_s element
  assert_int_equal((f.pad[1] / 128 + 0) * 256 + 7, 519);          // col_s element
  assert_int_equal(f.start[1] * 256 + 7 * f.rows[1] + 50, 52160);  // col_q byte
}

void test_arguments(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  assert_non_null(h);
  alignas(16) static unsigned char buf[64];
  void *p = buf;
  const int32_t *offs = reinterpret_cast<const int32_t *>(buf);
  int32_t *st = reinterpret_cast<int32_t *>(buf);
  cake_swiglu_mxfp8_grouped_desc d = mx_desc(256, 128, 8, CAKE_MXFP8_BOTH);
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(NULL, &d, p, offs, p, p, p, p, st, NULL),
                   CAKE_STATUS_INVALID_HANDLE);
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, NULL, p, offs, p, p, p, p, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, NULL, offs, p, p, p, p, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("in"));
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, p, NULL, p, p, p, p, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("offsets"));
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, p, offs, p, p, p, NULL, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("col_s"));
  assert_int_equal(cake_swiglu_mxfp8_grouped_backward(h, &d, p, NULL, offs, p, p, p, p, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("grad"));
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, buf + 4, offs, p, p, p, p, st, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("in = "));
  // offsets and status: 4-byte words, so 4-byte alignment is enough and 2 is not.
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(
                       h, &d, p, reinterpret_cast<const int32_t *>(buf + 2), p, p, p, p, st, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("offsets"));
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, p, offs, p, p, p, p,
                                                     reinterpret_cast<int32_t *>(buf + 6), NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("status"));
  // The pointers of a disabled orientation are not looked at.
  d.orientation = CAKE_MXFP8_ROWWISE;
  cake_program_info info;
  cake_program_info_init(&info);
  assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &d, 0, &info), CAKE_STATUS_SUCCESS);
  d.struct_size = 8;
  assert_int_equal(cake_swiglu_mxfp8_grouped_forward(h, &d, p, offs, p, p, NULL, NULL, st, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  // FP8 blockwise: the same checks (one of each kind) and its scale rule.
  cake_swiglu_fp8_grouped_desc f = f8_desc(256, 256, 8, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_fp8_grouped_forward(h, &f, p, NULL, p, p, NULL, NULL, NULL, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("offsets"));
  assert_int_equal(cake_swiglu_fp8_grouped_backward(h, &f, p, p, offs, p, buf + 8, NULL, NULL,
                                                    NULL, NULL),
                   CAKE_STATUS_MISALIGNED);
  assert_true(message_has("row_s"));
  f.k = 64;
  assert_int_equal(cake_swiglu_fp8_grouped_forward(h, &f, p, offs, p, p, NULL, NULL, NULL, NULL),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  f.k = 256;
  f.scale_rule = (cake_fp8_scale_rule_t)-1;
  assert_int_equal(cake_swiglu_fp8_grouped_query(h, &f, 0, &info), CAKE_STATUS_INVALID_ARGUMENT);
  cake_test::free_fake_handle(h);
}

const char *tag_of(cake_arch_t a) {
  return a == CAKE_ARCH_SM90 ? "sm90" : a == CAKE_ARCH_SM100 ? "sm100" : a == CAKE_ARCH_SM103 ? "sm103" : "sm107";
}

void test_queries_route_every_form(void **) {
  const cake_arch_t arches[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};
  const cake_mxfp8_orientation_t os[] = {CAKE_MXFP8_ROWWISE, CAKE_MXFP8_COLWISE, CAKE_MXFP8_BOTH};
  const char *names[] = {"row", "col", "both"};
  for (cake_arch_t a : arches) {
    cake_handle_t h = cake_test::make_fake_handle(a, 132);
    assert_non_null(h);
    const std::string tag = tag_of(a);
    for (int bwd = 0; bwd < 2; ++bwd) {
      for (int o = 0; o < 3; ++o) {
        for (int64_t T : {1, 777, 16384, 65536}) {
          for (int32_t E : {1, 8, 256, 1024}) {
            cake_program_info info;
            cake_program_info_init(&info);
            cake_swiglu_mxfp8_grouped_desc m = mx_desc(T, 2048, E, os[o]);
            assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, bwd, &info),
                             CAKE_STATUS_SUCCESS);
            const std::string want_mx =
                tag + ".swg_" + (bwd ? "bwd_" : "fwd_") + names[o];
            assert_string_equal(info.name, want_mx.c_str());
            assert_int_equal(info.metric, T * 2048);
            // One wave at most, one CTA a tile of the bound at least for small problems.
            assert_true(info.grid >= 1 && info.grid <= 132 * info.ctas_per_sm);
            cake_swiglu_fp8_grouped_desc f = f8_desc(T, 2048, E, os[o]);
            assert_int_equal(cake_swiglu_fp8_grouped_query(h, &f, bwd, &info),
                             CAKE_STATUS_SUCCESS);
            const std::string want_f8 =
                tag + ".sw8g_" + (bwd ? "bwd_" : "fwd_") + names[o];
            assert_string_equal(info.name, want_f8.c_str());
          }
        }
      }
    }
    // Forcing: a grouped program of the form is taken; an ungrouped one, or a grouped one of
    // another form or family, is refused, and a grouped program refuses an ungrouped call.
    cake_program_info info;
    cake_program_info_init(&info);
    cake_swiglu_mxfp8_grouped_desc m = mx_desc(4096, 1024, 16, CAKE_MXFP8_COLWISE);
    const std::string g_col = tag + ".swg_fwd_col", g_row = tag + ".swg_fwd_row";
    const std::string u_col = tag + ".sw_fwd_col_t32s8", f8_col = tag + ".sw8g_fwd_col";
    m.program = g_col.c_str();
    assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, 0, &info), CAKE_STATUS_SUCCESS);
    assert_int_equal(info.forced, 1);
    assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, 1, &info),
                     CAKE_STATUS_PROGRAM_NOT_FOUND);
    m.program = g_row.c_str();
    assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, 0, &info),
                     CAKE_STATUS_PROGRAM_NOT_FOUND);
    m.program = f8_col.c_str();
    assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, 0, &info),
                     CAKE_STATUS_PROGRAM_NOT_FOUND);
    if (a == CAKE_ARCH_SM90) {
      m.program = u_col.c_str();
      assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &m, 0, &info),
                       CAKE_STATUS_PROGRAM_NOT_FOUND);
    }
    cake_swiglu_mxfp8_desc u;
    cake_swiglu_mxfp8_desc_init(&u);
    u.m = u.k = 256;
    u.orientation = CAKE_MXFP8_COLWISE;
    u.program = g_col.c_str();
    assert_int_equal(cake_swiglu_mxfp8_query(h, &u, 0, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    cake_swiglu_fp8_desc uf;
    cake_swiglu_fp8_desc_init(&uf);
    uf.m = 200;
    uf.k = 256;
    uf.orientation = CAKE_MXFP8_COLWISE;
    uf.program = f8_col.c_str();
    assert_int_equal(cake_swiglu_fp8_query(h, &uf, 0, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    cake_test::free_fake_handle(h);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_spec_examples),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_queries_route_every_form),
  };
  return cmocka_run_group_tests_name("swiglu_grouped_validation", tests, NULL, NULL);
}
