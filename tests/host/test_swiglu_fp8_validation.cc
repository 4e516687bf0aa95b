// SwiGLU + FP8 blockwise argument validation and routing through the real entry points, with a
// handle that has a table but no device (docs/spec/fp8-blockwise.md, "Validation"): each wrong
// argument gets its status and a message naming it; queries route every form of every table;
// forced programs of another form or family are refused; buffer sizes and strides.
#include <string.h>

#include <string>

#include "cmocka_cxx.h"
#include "fake_handle.h"
#include "cake.h"

namespace {

cake_swiglu_fp8_desc desc_of(int64_t m, int64_t k, cake_mxfp8_orientation_t o) {
  cake_swiglu_fp8_desc d;
  cake_swiglu_fp8_desc_init(&d);
  d.m = m;
  d.k = k;
  d.orientation = o;
  return d;
}

bool message_has(const char *s) { return strstr(cake_last_error_message(), s) != nullptr; }

void test_sizes(void **) {
  cake_swiglu_fp8_desc d = desc_of(256, 384, CAKE_MXFP8_ROWWISE);
  cake_swiglu_fp8_sizes s;
  cake_swiglu_fp8_sizes_init(&s);
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.out_cols, 384);
  assert_int_equal(s.q_bytes, 256 * 384);
  assert_int_equal(s.row_s_bytes, 4 * 256 * 3);
  assert_int_equal(s.col_s_bytes, 4 * 384 * 2);
  assert_int_equal(s.row_s_stride, 256);
  assert_int_equal(s.col_s_stride, 384);
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 1, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.out_cols, 768);
  assert_int_equal(s.row_s_bytes, 4 * 256 * 6);
  assert_int_equal(s.col_s_stride, 768);
  // Any M: the last colwise block of a column is partial, col_s holds ceil(M / 128) of them.
  d.m = 200;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.q_bytes, 200 * 384);
  assert_int_equal(s.row_s_bytes, 4 * 200 * 3);
  assert_int_equal(s.col_s_bytes, 4 * 384 * 2);
  assert_int_equal(s.row_s_stride, 200);
  d.m = 1;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 1, &s), CAKE_STATUS_SUCCESS);
  assert_int_equal(s.col_s_bytes, 4 * 768);
  d.m = 256;
  d.k = 320;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, &s), CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_true(message_has("desc->k = 320: must be a multiple of 128 (the 1x128 scale block)"));
  d.k = 384;
  d.scale_rule = (cake_fp8_scale_rule_t)2;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, &s), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("scale_rule"));
  d.scale_rule = CAKE_FP8_SCALE_POW2;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 2, &s), CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, NULL), CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(NULL, 0, &s), CAKE_STATUS_INVALID_ARGUMENT);
  d.m = INT64_C(1) << 40;
  d.k = INT64_C(1) << 40;
  assert_int_equal(cake_swiglu_fp8_buffer_sizes(&d, 0, &s), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("overflow"));
}

void test_arguments(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  assert_non_null(h);
  alignas(16) static unsigned char buf[64];
  void *p = buf;
  cake_swiglu_fp8_desc d = desc_of(128, 128, CAKE_MXFP8_BOTH);
  assert_int_equal(cake_swiglu_fp8_forward(NULL, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_HANDLE);
  assert_int_equal(cake_swiglu_fp8_forward(h, NULL, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, NULL, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("in"));
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, NULL, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("col_s"));
  assert_int_equal(cake_swiglu_fp8_backward(h, &d, p, NULL, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("grad"));
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, buf + 4, p, p, p, p, NULL),
                   CAKE_STATUS_MISALIGNED);
  d.orientation = (cake_mxfp8_orientation_t)0;
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("orientation"));
  d = desc_of(0, 128, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  d = desc_of(128, 64, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_UNSUPPORTED_SHAPE);
  d = desc_of(-3, 128, CAKE_MXFP8_ROWWISE);
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  // A struct_size below the first version.
  d = desc_of(128, 128, CAKE_MXFP8_ROWWISE);
  d.struct_size = 8;
  assert_int_equal(cake_swiglu_fp8_forward(h, &d, p, p, p, p, p, NULL),
                   CAKE_STATUS_INVALID_ARGUMENT);
  cake_test::free_fake_handle(h);
}

void test_queries_route_every_form(void **) {
  const cake_arch_t arches[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};
  const cake_mxfp8_orientation_t os[] = {CAKE_MXFP8_ROWWISE, CAKE_MXFP8_COLWISE, CAKE_MXFP8_BOTH};
  for (cake_arch_t a : arches) {
    cake_handle_t h = cake_test::make_fake_handle(a, 132);
    assert_non_null(h);
    for (int bwd = 0; bwd < 2; ++bwd) {
      for (cake_mxfp8_orientation_t o : os) {
        for (int64_t m : {128, 4096, 16384}) {
          cake_swiglu_fp8_desc d = desc_of(m, 7168, o);
          cake_program_info info;
          cake_program_info_init(&info);
          assert_int_equal(cake_swiglu_fp8_query(h, &d, bwd, &info), CAKE_STATUS_SUCCESS);
          const std::string want = std::string(".sw8_") + (bwd ? "bwd_" : "fwd_") +
                                   (o == CAKE_MXFP8_ROWWISE ? "row" : o == CAKE_MXFP8_COLWISE ? "col" : "both");
          assert_non_null(strstr(info.name, want.c_str()));
        }
      }
    }
    // M not a multiple of 128 goes to the form's tail program at every size; an aligned M
    // never does.
    for (int bwd = 0; bwd < 2; ++bwd) {
      for (cake_mxfp8_orientation_t o : os) {
        for (int64_t m : {1, 200, 16383, 65537}) {
          cake_swiglu_fp8_desc d = desc_of(m, 7168, o);
          cake_program_info info;
          cake_program_info_init(&info);
          assert_int_equal(cake_swiglu_fp8_query(h, &d, bwd, &info), CAKE_STATUS_SUCCESS);
          const std::string want = std::string(".sw8_") + (bwd ? "bwd_" : "fwd_") +
                                   (o == CAKE_MXFP8_ROWWISE   ? "row"
                                    : o == CAKE_MXFP8_COLWISE ? "col"
                                                              : "both") +
                                   "_tail";
          assert_non_null(strstr(info.name, want.c_str()));
        }
        for (int64_t m : {128, 4096, 16384}) {
          cake_swiglu_fp8_desc d = desc_of(m, 7168, o);
          cake_program_info info;
          cake_program_info_init(&info);
          assert_int_equal(cake_swiglu_fp8_query(h, &d, bwd, &info), CAKE_STATUS_SUCCESS);
          assert_null(strstr(info.name, "_tail"));
        }
      }
    }
    // Forcing a program of another form, or of the MXFP8 family, is refused.
    cake_swiglu_fp8_desc d = desc_of(256, 256, CAKE_MXFP8_ROWWISE);
    cake_program_info info;
    cake_program_info_init(&info);
    const std::string tag = a == CAKE_ARCH_SM90 ? "sm90" : a == CAKE_ARCH_SM100 ? "sm100"
                            : a == CAKE_ARCH_SM103                              ? "sm103"
                                                                                : "sm107";
    const std::string col = tag + ".sw8_fwd_col", row = tag + ".sw8_fwd_row_t4";
    d.program = col.c_str();
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 0, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    d.program = row.c_str();
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 0, &info), CAKE_STATUS_SUCCESS);
    assert_string_equal(info.name, row.c_str());
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 1, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    // A program without the tail knob refuses M = 200 by name; the tail program takes it, and
    // an aligned M too when forced.
    d.m = 200;
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 0, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    assert_true(message_has("a tail program"));
    const std::string tail = tag + ".sw8_fwd_row_tail";
    d.program = tail.c_str();
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 0, &info), CAKE_STATUS_SUCCESS);
    d.m = 256;
    assert_int_equal(cake_swiglu_fp8_query(h, &d, 0, &info), CAKE_STATUS_SUCCESS);
    assert_string_equal(info.name, tail.c_str());
    const std::string mx = tag + ".sw_fwd_row";
    cake_swiglu_fp8_desc_init(&d);
    d.m = d.k = 256;
    d.program = mx.c_str();
    const cake_status_t st = cake_swiglu_fp8_query(h, &d, 0, &info);
    assert_int_equal(st, CAKE_STATUS_PROGRAM_NOT_FOUND);
    cake_test::free_fake_handle(h);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_queries_route_every_form),
  };
  return cmocka_run_group_tests_name("swiglu_fp8_validation", tests, NULL, NULL);
}
