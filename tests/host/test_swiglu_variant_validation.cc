// The SwiGLU variants' argument rules and routing through the real entry points, with a handle
// that has a table but no device (docs/spec/swiglu-mxfp8.md, "Variants"): every descriptor and
// pointer rule of the variant, for both families, ungrouped and grouped; a descriptor of the
// older size is the plain SwiGLU; variant calls route to the variant programs of every table at
// every size, plain calls never do; a tuned program forced for a variant call is refused, a
// variant program forced for a plain call is taken.
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <string>

#include "cmocka_cxx.h"
#include "fake_handle.h"
#include "cake.h"

namespace {

bool message_has(const char *s) { return strstr(cake_last_error_message(), s) != nullptr; }

const char *tag_of(cake_arch_t a) {
  return a == CAKE_ARCH_SM90 ? "sm90" : a == CAKE_ARCH_SM100 ? "sm100"
                                      : a == CAKE_ARCH_SM103 ? "sm103"
                                                             : "sm107";
}

// The variant rules on any descriptor, through its buffer_sizes (descriptor rules only) and its
// forward/backward (pointer rules). `sizes(d, bwd)`, `run(d, bwd)` call the family's functions.
template <class Desc, class Sizes, class Run>
void check_rules(Desc d, Sizes sizes, Run run) {
  assert_int_equal(sizes(d, 0), CAKE_STATUS_SUCCESS);
  Desc b = d;
  b.variant.activation = (cake_swiglu_activation_t)2;
  assert_int_equal(sizes(b, 0), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("variant.activation = 2"));
  b = d;
  b.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
  assert_int_equal(sizes(b, 1), CAKE_STATUS_SUCCESS);
  for (float lim : {0.0f, -1.0f, NAN}) {
    b.variant.limit = lim;
    assert_int_equal(sizes(b, 0), CAKE_STATUS_INVALID_ARGUMENT);
    assert_true(message_has("variant.limit"));
  }
  b.variant.limit = INFINITY;  // no clamp at all: allowed
  assert_int_equal(sizes(b, 0), CAKE_STATUS_SUCCESS);
  b.variant.limit = 7.0f;
  for (float al : {INFINITY, -INFINITY, NAN}) {
    b.variant.alpha = al;
    assert_int_equal(sizes(b, 0), CAKE_STATUS_INVALID_ARGUMENT);
    assert_true(message_has("variant.alpha"));
  }
  // alpha and limit are not read without the clamped activation.
  b = d;
  b.variant.alpha = NAN;
  b.variant.limit = -1.0f;
  assert_int_equal(sizes(b, 0), CAKE_STATUS_SUCCESS);
  b = d;
  b.variant.weighted = 2;
  assert_int_equal(sizes(b, 0), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("variant.weighted = 2"));

  // Pointers: p NULL (weighted), dp NULL (weighted backward), alignment; the forward does not
  // read dp, an unweighted call neither p nor dp.
  alignas(16) static float w[64];
  b = d;
  b.variant.weighted = 1;
  assert_int_equal(run(b, 0), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("desc->variant.p"));
  b.variant.p = w;
  assert_int_equal(run(b, 1), CAKE_STATUS_INVALID_ARGUMENT);
  assert_true(message_has("desc->variant.dp"));
  b.variant.dp = reinterpret_cast<float *>(reinterpret_cast<char *>(w) + 2);
  assert_int_equal(run(b, 1), CAKE_STATUS_MISALIGNED);
  assert_true(message_has("desc->variant.dp"));
  b.variant.dp = nullptr;
  b.variant.p = reinterpret_cast<const float *>(reinterpret_cast<char *>(w) + 1);
  assert_int_equal(run(b, 0), CAKE_STATUS_MISALIGNED);
  assert_true(message_has("desc->variant.p"));
}

void test_rules(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  assert_non_null(h);
  alignas(16) static unsigned char buf[64];
  void *q = buf;
  int32_t *off = reinterpret_cast<int32_t *>(buf);
  {
    cake_swiglu_mxfp8_desc d;
    cake_swiglu_mxfp8_desc_init(&d);
    d.m = 128;
    d.k = 256;
    check_rules(
        d,
        [](cake_swiglu_mxfp8_desc x, int bwd) {
          cake_swiglu_mxfp8_sizes s;
          cake_swiglu_mxfp8_sizes_init(&s);
          return cake_swiglu_mxfp8_buffer_sizes(&x, bwd, &s);
        },
        [&](cake_swiglu_mxfp8_desc x, int bwd) {
          return bwd ? cake_swiglu_mxfp8_backward(h, &x, q, q, q, q, q, q, NULL)
                     : cake_swiglu_mxfp8_forward(h, &x, q, q, q, q, q, NULL);
        });
  }
  {
    cake_swiglu_fp8_desc d;
    cake_swiglu_fp8_desc_init(&d);
    d.m = 200;
    d.k = 256;
    check_rules(
        d,
        [](cake_swiglu_fp8_desc x, int bwd) {
          cake_swiglu_fp8_sizes s;
          cake_swiglu_fp8_sizes_init(&s);
          return cake_swiglu_fp8_buffer_sizes(&x, bwd, &s);
        },
        [&](cake_swiglu_fp8_desc x, int bwd) {
          return bwd ? cake_swiglu_fp8_backward(h, &x, q, q, q, q, q, q, NULL)
                     : cake_swiglu_fp8_forward(h, &x, q, q, q, q, q, NULL);
        });
  }
  {
    cake_swiglu_mxfp8_grouped_desc d;
    cake_swiglu_mxfp8_grouped_desc_init(&d);
    d.tokens = 300;
    d.k = 64;
    d.experts = 4;
    check_rules(
        d,
        [](cake_swiglu_mxfp8_grouped_desc x, int bwd) {
          cake_swiglu_grouped_sizes s;
          cake_swiglu_grouped_sizes_init(&s);
          return cake_swiglu_mxfp8_grouped_buffer_sizes(&x, bwd, &s);
        },
        [&](cake_swiglu_mxfp8_grouped_desc x, int bwd) {
          return bwd ? cake_swiglu_mxfp8_grouped_backward(h, &x, q, q, off, q, q, q, q, NULL, NULL)
                     : cake_swiglu_mxfp8_grouped_forward(h, &x, q, off, q, q, q, q, NULL, NULL);
        });
  }
  {
    cake_swiglu_fp8_grouped_desc d;
    cake_swiglu_fp8_grouped_desc_init(&d);
    d.tokens = 300;
    d.k = 128;
    d.experts = 4;
    check_rules(
        d,
        [](cake_swiglu_fp8_grouped_desc x, int bwd) {
          cake_swiglu_grouped_sizes s;
          cake_swiglu_grouped_sizes_init(&s);
          return cake_swiglu_fp8_grouped_buffer_sizes(&x, bwd, &s);
        },
        [&](cake_swiglu_fp8_grouped_desc x, int bwd) {
          return bwd ? cake_swiglu_fp8_grouped_backward(h, &x, q, q, off, q, q, q, q, NULL, NULL)
                     : cake_swiglu_fp8_grouped_forward(h, &x, q, off, q, q, q, q, NULL, NULL);
        });
  }
  cake_test::free_fake_handle(h);
}

// A descriptor of the size before the variant existed, with garbage where `variant` would be,
// is the plain SwiGLU: it routes to the tuned programs.
void test_old_struct_size(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  struct {
    cake_swiglu_mxfp8_desc d;
    unsigned char pad[8];
  } s;
  memset(&s, 0xEE, sizeof s);
  cake_swiglu_mxfp8_desc_init(&s.d);
  s.d.m = 256;
  s.d.k = 512;
  memset(&s.d.variant, 0xEE, sizeof s.d.variant);  // not read: beyond the old size
  s.d.struct_size = offsetof(cake_swiglu_mxfp8_desc, variant);
  cake_program_info info;
  cake_program_info_init(&info);
  assert_int_equal(cake_swiglu_mxfp8_query(h, &s.d, 0, &info), CAKE_STATUS_SUCCESS);
  assert_null(strstr(info.name, ".swv_"));
  s.d.struct_size = offsetof(cake_swiglu_mxfp8_desc, variant) - 8;  // below the first version
  assert_int_equal(cake_swiglu_mxfp8_query(h, &s.d, 0, &info), CAKE_STATUS_INVALID_ARGUMENT);
  cake_swiglu_fp8_grouped_desc g;
  cake_swiglu_fp8_grouped_desc_init(&g);
  g.tokens = 100;
  g.k = 128;
  g.experts = 2;
  memset(&g.variant, 0xEE, sizeof g.variant);
  g.struct_size = offsetof(cake_swiglu_fp8_grouped_desc, variant);
  assert_int_equal(cake_swiglu_fp8_grouped_query(h, &g, 1, &info), CAKE_STATUS_SUCCESS);
  assert_null(strstr(info.name, ".sw8vg_"));
  cake_test::free_fake_handle(h);
}

void test_routes(void **) {
  const cake_arch_t arches[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};
  const cake_mxfp8_orientation_t os[] = {CAKE_MXFP8_ROWWISE, CAKE_MXFP8_COLWISE, CAKE_MXFP8_BOTH};
  const char *oname[] = {"row", "col", "both"};
  for (cake_arch_t a : arches) {
    cake_handle_t h = cake_test::make_fake_handle(a, 132);
    assert_non_null(h);
    const std::string tag = tag_of(a);
    cake_program_info info;
    cake_program_info_init(&info);
    for (int bwd = 0; bwd < 2; ++bwd) {
      for (int oi = 0; oi < 3; ++oi) {
        const std::string form = std::string(bwd ? "bwd_" : "fwd_") + oname[oi];
        for (int var = 0; var < 4; ++var) {  // plain, weighted, clamped, both
          const bool weighted = var & 1, clamped = var & 2;
          for (int64_t m : {128, 4096, 65536}) {
            cake_swiglu_mxfp8_desc d;
            cake_swiglu_mxfp8_desc_init(&d);
            d.m = m;
            d.k = 4096;
            d.orientation = os[oi];
            d.variant.weighted = weighted;
            if (clamped) d.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
            assert_int_equal(cake_swiglu_mxfp8_query(h, &d, bwd, &info), CAKE_STATUS_SUCCESS);
            const bool is_v = strcmp(info.name, (tag + ".swv_" + form).c_str()) == 0;
            assert_true(is_v == (var != 0));
            // A variant program takes whole row tiles: one CTA a row tile at most.
            if (is_v) assert_true(info.grid <= (m + 7) / 8);
            cake_swiglu_fp8_desc f;
            cake_swiglu_fp8_desc_init(&f);
            f.m = m + (var == 3 ? 5 : 0);  // and M not a multiple of 128
            f.k = 4096;
            f.orientation = os[oi];
            f.variant.weighted = weighted;
            if (clamped) f.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
            assert_int_equal(cake_swiglu_fp8_query(h, &f, bwd, &info), CAKE_STATUS_SUCCESS);
            assert_true((strcmp(info.name, (tag + ".sw8v_" + form).c_str()) == 0) == (var != 0));
          }
          cake_swiglu_mxfp8_grouped_desc g;
          cake_swiglu_mxfp8_grouped_desc_init(&g);
          g.tokens = 5000;
          g.k = 2048;
          g.experts = 16;
          g.orientation = os[oi];
          g.variant.weighted = weighted;
          if (clamped) g.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
          assert_int_equal(cake_swiglu_mxfp8_grouped_query(h, &g, bwd, &info),
                           CAKE_STATUS_SUCCESS);
          assert_true((strcmp(info.name, (tag + ".swvg_" + form).c_str()) == 0) == (var != 0));
          cake_swiglu_fp8_grouped_desc gf;
          cake_swiglu_fp8_grouped_desc_init(&gf);
          gf.tokens = 5000;
          gf.k = 2048;
          gf.experts = 16;
          gf.orientation = os[oi];
          gf.variant.weighted = weighted;
          if (clamped) gf.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
          assert_int_equal(cake_swiglu_fp8_grouped_query(h, &gf, bwd, &info),
                           CAKE_STATUS_SUCCESS);
          assert_true((strcmp(info.name, (tag + ".sw8vg_" + form).c_str()) == 0) == (var != 0));
        }
      }
    }
    // Forced: a tuned program refuses a variant call; a variant program takes a plain one.
    cake_swiglu_fp8_desc f;
    cake_swiglu_fp8_desc_init(&f);
    f.m = 256;
    f.k = 256;
    const std::string tuned = tag + ".sw8_fwd_row_tail", var = tag + ".sw8v_fwd_row";
    f.program = tuned.c_str();
    f.variant.weighted = 1;
    assert_int_equal(cake_swiglu_fp8_query(h, &f, 0, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
    assert_true(message_has("a variant program"));
    f.program = var.c_str();
    assert_int_equal(cake_swiglu_fp8_query(h, &f, 0, &info), CAKE_STATUS_SUCCESS);
    f.variant.weighted = 0;
    assert_int_equal(cake_swiglu_fp8_query(h, &f, 0, &info), CAKE_STATUS_SUCCESS);
    assert_string_equal(info.name, var.c_str());
    cake_swiglu_mxfp8_desc d;
    cake_swiglu_mxfp8_desc_init(&d);
    d.m = 256;
    d.k = 256;
    const std::string mtuned = tag + ".sw_fwd_row";
    d.program = mtuned.c_str();
    d.variant.activation = CAKE_SWIGLU_ACT_CLAMPED;
    const cake_status_t st = cake_swiglu_mxfp8_query(h, &d, 0, &info);
    // sw_fwd_row may not exist in every table; where it does, it refuses the variant call.
    assert_true(st == CAKE_STATUS_PROGRAM_NOT_FOUND);
    cake_test::free_fake_handle(h);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_old_struct_size),
      cmocka_unit_test(test_routes),
  };
  return cmocka_run_group_tests_name("swiglu_variant_validation", tests, NULL, NULL);
}
