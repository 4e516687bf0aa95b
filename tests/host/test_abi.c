/* The C ABI from C99: header self-sufficiency, the stable structs' layout, status strings,
 * version, init functions, struct_size handling, the program tables of the experimental
 * section, and the no-driver path (CAKE_LIBCUDA points at nothing). */
#define _GNU_SOURCE /* dlvsym */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cake.h"
/* The experimental section (the program tables) opens on a later inclusion with
 * CAKE_EXPERIMENTAL_API defined, after one without. */
#ifndef CAKE_EXPERIMENTAL_API
#define CAKE_EXPERIMENTAL_API
#endif
#include "cake.h"
#ifndef CAKE_H_EXPERIMENTAL_
#error "a second inclusion with CAKE_EXPERIMENTAL_API did not declare the experimental section"
#endif

static void test_version(void **state) {
  (void)state;
  assert_int_equal(cake_version(), CAKE_VERSION);
  assert_true(CAKE_VERSION >= 100);
}

/* The stable section's structs keep every field where it was, and their sizes (LP64: what
 * the library is built for). A change here is an ABI break, not a test to update. */
static void test_stable_struct_layouts(void **state) {
  (void)state;
#define SIZE(s, n) {#s, sizeof(s), n}
#define FIELD(s, f, n) {#s "." #f, offsetof(s, f), n}
  static const struct {
    const char *what;
    size_t got, want;
  } layout[] = {
    SIZE(cake_handle_options, 16),
    FIELD(cake_handle_options, struct_size, 0),
    FIELD(cake_handle_options, table, 8),
    FIELD(cake_handle_options, sm_count, 12),
    SIZE(cake_device_info, 176),
    FIELD(cake_device_info, struct_size, 0),
    FIELD(cake_device_info, device_ordinal, 8),
    FIELD(cake_device_info, cc_major, 12),
    FIELD(cake_device_info, cc_minor, 16),
    FIELD(cake_device_info, sm_count, 20),
    FIELD(cake_device_info, routing_sm_count, 24),
    FIELD(cake_device_info, table, 28),
    FIELD(cake_device_info, jit, 32),
    FIELD(cake_device_info, cross_check, 36),
    FIELD(cake_device_info, program_count, 40),
    FIELD(cake_device_info, image, 44),
    FIELD(cake_device_info, device_name, 76),
    SIZE(cake_program_info, 200),
    FIELD(cake_program_info, struct_size, 0),
    FIELD(cake_program_info, name, 8),
    FIELD(cake_program_info, kernel, 72),
    FIELD(cake_program_info, forced, 152),
    FIELD(cake_program_info, threads, 156),
    FIELD(cake_program_info, ctas_per_sm, 160),
    FIELD(cake_program_info, grid, 168),
    FIELD(cake_program_info, metric, 176),
    FIELD(cake_program_info, metric_lo, 184),
    FIELD(cake_program_info, metric_hi, 192),
    SIZE(cake_normgate_desc, 120),
    FIELD(cake_normgate_desc, struct_size, 0),
    FIELD(cake_normgate_desc, rows, 8),
    FIELD(cake_normgate_desc, d, 16),
    FIELD(cake_normgate_desc, eps, 20),
    FIELD(cake_normgate_desc, x_stride, 24),
    FIELD(cake_normgate_desc, z_stride, 32),
    FIELD(cake_normgate_desc, y_stride, 40),
    FIELD(cake_normgate_desc, dy_stride, 48),
    FIELD(cake_normgate_desc, dx_stride, 56),
    FIELD(cake_normgate_desc, dz_stride, 64),
    FIELD(cake_normgate_desc, package, 72),
    FIELD(cake_normgate_desc, dw_dtype, 76),
    FIELD(cake_normgate_desc, flags, 80),
    FIELD(cake_normgate_desc, program, 88),
    FIELD(cake_normgate_desc, gate, 96),
    FIELD(cake_normgate_desc, placement, 100),
    FIELD(cake_normgate_desc, group_size, 104),
    FIELD(cake_normgate_desc, x_dtype, 108),
    FIELD(cake_normgate_desc, z_dtype, 112),
    FIELD(cake_normgate_desc, w_dtype, 116),
    SIZE(cake_swiglu_mxfp8_desc, 72),
    FIELD(cake_swiglu_mxfp8_desc, struct_size, 0),
    FIELD(cake_swiglu_mxfp8_desc, m, 8),
    FIELD(cake_swiglu_mxfp8_desc, k, 16),
    FIELD(cake_swiglu_mxfp8_desc, orientation, 24),
    FIELD(cake_swiglu_mxfp8_desc, program, 32),
    FIELD(cake_swiglu_mxfp8_desc, variant, 40),
    SIZE(cake_swiglu_variant_desc, 32),
    FIELD(cake_swiglu_variant_desc, activation, 0),
    FIELD(cake_swiglu_variant_desc, alpha, 4),
    FIELD(cake_swiglu_variant_desc, limit, 8),
    FIELD(cake_swiglu_variant_desc, weighted, 12),
    FIELD(cake_swiglu_variant_desc, p, 16),
    FIELD(cake_swiglu_variant_desc, dp, 24),
    SIZE(cake_swiglu_mxfp8_sizes, 40),
    FIELD(cake_swiglu_mxfp8_sizes, struct_size, 0),
    FIELD(cake_swiglu_mxfp8_sizes, out_cols, 8),
    FIELD(cake_swiglu_mxfp8_sizes, q_bytes, 16),
    FIELD(cake_swiglu_mxfp8_sizes, row_s_bytes, 24),
    FIELD(cake_swiglu_mxfp8_sizes, col_s_bytes, 32),
    SIZE(cake_swiglu_fp8_desc, 72),
    FIELD(cake_swiglu_fp8_desc, struct_size, 0),
    FIELD(cake_swiglu_fp8_desc, m, 8),
    FIELD(cake_swiglu_fp8_desc, k, 16),
    FIELD(cake_swiglu_fp8_desc, orientation, 24),
    FIELD(cake_swiglu_fp8_desc, scale_rule, 28),
    FIELD(cake_swiglu_fp8_desc, program, 32),
    FIELD(cake_swiglu_fp8_desc, variant, 40),
    SIZE(cake_swiglu_fp8_sizes, 56),
    FIELD(cake_swiglu_fp8_sizes, struct_size, 0),
    FIELD(cake_swiglu_fp8_sizes, out_cols, 8),
    FIELD(cake_swiglu_fp8_sizes, q_bytes, 16),
    FIELD(cake_swiglu_fp8_sizes, row_s_bytes, 24),
    FIELD(cake_swiglu_fp8_sizes, col_s_bytes, 32),
    FIELD(cake_swiglu_fp8_sizes, row_s_stride, 40),
    FIELD(cake_swiglu_fp8_sizes, col_s_stride, 48),
    SIZE(cake_swiglu_mxfp8_grouped_desc, 72),
    FIELD(cake_swiglu_mxfp8_grouped_desc, struct_size, 0),
    FIELD(cake_swiglu_mxfp8_grouped_desc, tokens, 8),
    FIELD(cake_swiglu_mxfp8_grouped_desc, k, 16),
    FIELD(cake_swiglu_mxfp8_grouped_desc, experts, 24),
    FIELD(cake_swiglu_mxfp8_grouped_desc, orientation, 28),
    FIELD(cake_swiglu_mxfp8_grouped_desc, program, 32),
    FIELD(cake_swiglu_mxfp8_grouped_desc, variant, 40),
    SIZE(cake_swiglu_fp8_grouped_desc, 80),
    FIELD(cake_swiglu_fp8_grouped_desc, struct_size, 0),
    FIELD(cake_swiglu_fp8_grouped_desc, tokens, 8),
    FIELD(cake_swiglu_fp8_grouped_desc, k, 16),
    FIELD(cake_swiglu_fp8_grouped_desc, experts, 24),
    FIELD(cake_swiglu_fp8_grouped_desc, orientation, 28),
    FIELD(cake_swiglu_fp8_grouped_desc, scale_rule, 32),
    FIELD(cake_swiglu_fp8_grouped_desc, program, 40),
    FIELD(cake_swiglu_fp8_grouped_desc, variant, 48),
    SIZE(cake_swiglu_grouped_sizes, 48),
    FIELD(cake_swiglu_grouped_sizes, struct_size, 0),
    FIELD(cake_swiglu_grouped_sizes, out_cols, 8),
    FIELD(cake_swiglu_grouped_sizes, scale_rows, 16),
    FIELD(cake_swiglu_grouped_sizes, q_bytes, 24),
    FIELD(cake_swiglu_grouped_sizes, row_s_bytes, 32),
    FIELD(cake_swiglu_grouped_sizes, col_s_bytes, 40),
    SIZE(cake_normgate_quant_desc, 24),
    FIELD(cake_normgate_quant_desc, struct_size, 0),
    FIELD(cake_normgate_quant_desc, format, 8),
    FIELD(cake_normgate_quant_desc, scale_rule, 12),
    FIELD(cake_normgate_quant_desc, heads, 16),
    SIZE(cake_normgate_quant_sizes, 56),
    FIELD(cake_normgate_quant_sizes, struct_size, 0),
    FIELD(cake_normgate_quant_sizes, q_rows, 8),
    FIELD(cake_normgate_quant_sizes, q_cols, 16),
    FIELD(cake_normgate_quant_sizes, q_bytes, 24),
    FIELD(cake_normgate_quant_sizes, s_bytes, 32),
    FIELD(cake_normgate_quant_sizes, s_cols, 40),
    FIELD(cake_normgate_quant_sizes, s_stride, 48),
  };
#undef SIZE
#undef FIELD
  assert_int_equal(sizeof(void *), 8);
  assert_int_equal(sizeof(size_t), 8);
  for (size_t i = 0; i < sizeof layout / sizeof layout[0]; ++i) {
    if (layout[i].got != layout[i].want) {
      fail_msg("%s: %zu, was %zu", layout[i].what, layout[i].got, layout[i].want);
    }
  }
}

static void test_status_strings(void **state) {
  (void)state;
  assert_string_equal(cake_status_string(CAKE_STATUS_SUCCESS), "CAKE_STATUS_SUCCESS");
  assert_string_equal(cake_status_string(CAKE_STATUS_INVALID_ARGUMENT),
                      "CAKE_STATUS_INVALID_ARGUMENT");
  assert_string_equal(cake_status_string(CAKE_STATUS_DRIVER_UNAVAILABLE),
                      "CAKE_STATUS_DRIVER_UNAVAILABLE");
  assert_string_equal(cake_status_string(CAKE_STATUS_NO_DEVICE), "CAKE_STATUS_NO_DEVICE");
  /* Every code from 0 to the last has its own name; an unknown one a fixed string. */
  for (int s = 0; s <= CAKE_STATUS_NO_DEVICE; ++s) {
    const char *name = cake_status_string((cake_status_t)s);
    assert_non_null(name);
    assert_true(strncmp(name, "CAKE_STATUS_", 12) == 0);
    assert_string_not_equal(name, "CAKE_STATUS_UNKNOWN");
    for (int t = 0; t < s; ++t) assert_string_not_equal(name, cake_status_string((cake_status_t)t));
  }
  assert_string_equal(cake_status_string((cake_status_t)9999), "CAKE_STATUS_UNKNOWN");
}

static void test_enum_values_are_stable(void **state) {
  (void)state;
  assert_int_equal(CAKE_STATUS_SUCCESS, 0);
  assert_int_equal(CAKE_STATUS_INVALID_ARGUMENT, 1);
  assert_int_equal(CAKE_STATUS_ARCH_UNSUPPORTED, 2);
  assert_int_equal(CAKE_STATUS_DRIVER_UNAVAILABLE, 3);
  assert_int_equal(CAKE_STATUS_CUDA_ERROR, 4);
  assert_int_equal(CAKE_STATUS_INSUFFICIENT_WORKSPACE, 5);
  assert_int_equal(CAKE_ARCH_SM90, 90);
  assert_int_equal(CAKE_ARCH_SM107, 107);
  assert_int_equal(CAKE_DTYPE_BF16, 1);
  assert_int_equal(CAKE_NORMGATE_DETERMINISTIC, 0);
  assert_int_equal(CAKE_FAMILY_SWIGLU_MXFP8, 2);
  assert_int_equal(CAKE_FAMILY_SWIGLU_FP8, 3);
  assert_int_equal(CAKE_FP8_SCALE_EXACT, 0);
  assert_int_equal(CAKE_FP8_SCALE_POW2, 1);
  assert_int_equal(CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, 1);
  assert_int_equal(CAKE_NORMGATE_QUANT_MXFP8, 2);
}

static void test_init_functions(void **state) {
  (void)state;
  cake_normgate_desc d;
  memset(&d, 0xab, sizeof d);
  assert_int_equal(cake_normgate_desc_init(&d), CAKE_STATUS_SUCCESS);
  assert_int_equal(d.struct_size, sizeof d);
  assert_true(d.eps == 1e-6f);
  assert_int_equal(d.x_stride, 0);
  assert_null(d.program);
  assert_int_equal(d.dw_dtype, CAKE_DTYPE_BF16);
  assert_int_equal(cake_normgate_desc_init(NULL), CAKE_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(cake_last_error_message(), "desc"));

  cake_handle_options o;
  assert_int_equal(cake_handle_options_init(&o), CAKE_STATUS_SUCCESS);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.table, CAKE_ARCH_NONE);
  cake_device_info i;
  assert_int_equal(cake_device_info_init(&i), CAKE_STATUS_SUCCESS);
  assert_int_equal(i.struct_size, sizeof i);
  cake_program_info p;
  assert_int_equal(cake_program_info_init(&p), CAKE_STATUS_SUCCESS);
  assert_int_equal(p.struct_size, sizeof p);
  cake_swiglu_fp8_desc f;
  memset(&f, 0xab, sizeof f);
  assert_int_equal(cake_swiglu_fp8_desc_init(&f), CAKE_STATUS_SUCCESS);
  assert_int_equal(f.struct_size, sizeof f);
  assert_int_equal(f.orientation, CAKE_MXFP8_ROWWISE);
  assert_int_equal(f.scale_rule, CAKE_FP8_SCALE_EXACT);
  assert_int_equal(f.m, 0);
  assert_null(f.program);
  /* The variant defaults: the plain SwiGLU, gpt-oss's alpha and limit. */
  assert_int_equal(f.variant.activation, CAKE_SWIGLU_ACT_SILU);
  assert_true(f.variant.alpha == 1.702f && f.variant.limit == 7.0f);
  assert_int_equal(f.variant.weighted, 0);
  assert_null(f.variant.p);
  assert_null(f.variant.dp);
  cake_swiglu_fp8_sizes fs;
  assert_int_equal(cake_swiglu_fp8_sizes_init(&fs), CAKE_STATUS_SUCCESS);
  assert_int_equal(fs.struct_size, sizeof fs);
  cake_swiglu_mxfp8_grouped_desc gm;
  memset(&gm, 0xab, sizeof gm);
  assert_int_equal(cake_swiglu_mxfp8_grouped_desc_init(&gm), CAKE_STATUS_SUCCESS);
  assert_int_equal(gm.struct_size, sizeof gm);
  assert_int_equal(gm.orientation, CAKE_MXFP8_ROWWISE);
  assert_int_equal(gm.experts, 0);
  assert_null(gm.program);
  assert_int_equal(gm.variant.activation, CAKE_SWIGLU_ACT_SILU);
  assert_int_equal(gm.variant.weighted, 0);
  assert_null(gm.variant.p);
  cake_swiglu_fp8_grouped_desc gf;
  memset(&gf, 0xab, sizeof gf);
  assert_int_equal(cake_swiglu_fp8_grouped_desc_init(&gf), CAKE_STATUS_SUCCESS);
  assert_int_equal(gf.struct_size, sizeof gf);
  assert_int_equal(gf.scale_rule, CAKE_FP8_SCALE_EXACT);
  assert_int_equal(gf.tokens, 0);
  cake_swiglu_grouped_sizes gs;
  assert_int_equal(cake_swiglu_grouped_sizes_init(&gs), CAKE_STATUS_SUCCESS);
  assert_int_equal(gs.struct_size, sizeof gs);
  cake_normgate_quant_desc nq;
  memset(&nq, 0xab, sizeof nq);
  assert_int_equal(cake_normgate_quant_desc_init(&nq), CAKE_STATUS_SUCCESS);
  assert_int_equal(nq.struct_size, sizeof nq);
  assert_int_equal(nq.format, CAKE_NORMGATE_QUANT_FP8_BLOCKWISE);
  assert_int_equal(nq.scale_rule, CAKE_FP8_SCALE_EXACT);
  assert_int_equal(nq.heads, 0);
  cake_normgate_quant_sizes nqs;
  assert_int_equal(cake_normgate_quant_sizes_init(&nqs), CAKE_STATUS_SUCCESS);
  assert_int_equal(nqs.struct_size, sizeof nqs);
  /* A success clears the message. */
  assert_string_equal(cake_last_error_message(), "");
}

/* A binary linked against the first descriptor layout (96 bytes) binds the CAKE_0 version of
 * cake_normgate_desc_init: it must write those bytes and no more, and the fields added later
 * keep their defaults when such a descriptor is read. */
static void test_normgate_desc_init_of_old_binaries(void **state) {
  (void)state;
  typedef cake_status_t (*init_fn)(cake_normgate_desc *);
  init_fn v0 = (init_fn)dlvsym(RTLD_DEFAULT, "cake_normgate_desc_init", "CAKE_0");
  init_fn v03 = (init_fn)dlvsym(RTLD_DEFAULT, "cake_normgate_desc_init", "CAKE_0.3");
  assert_non_null(v0);
  assert_non_null(v03);
  assert_ptr_equal((void *)v03, (void *)&cake_normgate_desc_init);
  const size_t v1 = offsetof(cake_normgate_desc, gate);
  assert_int_equal(v1, 96);
  unsigned char buf[sizeof(cake_normgate_desc)];
  memset(buf, 0xab, sizeof buf);
  assert_int_equal(v0((cake_normgate_desc *)buf), CAKE_STATUS_SUCCESS);
  cake_normgate_desc d;
  memcpy(&d, buf, sizeof d);
  assert_int_equal(d.struct_size, v1);
  assert_true(d.eps == 1e-6f);
  for (size_t i = v1; i < sizeof buf; ++i) assert_int_equal(buf[i], 0xab);
  assert_int_equal(v0(NULL), CAKE_STATUS_INVALID_ARGUMENT);
}

/* The same for the four SwiGLU descriptors, whose first layout ends before `variant`: the CAKE_0
 * version writes those bytes, the CAKE_0.4 one (the default) the whole struct. A descriptor of the
 * first layout reads as the plain SwiGLU. */
#define CHECK_SWIGLU_DESC_INIT_V0(Desc, name)                                                  \
  do {                                                                                         \
    typedef cake_status_t (*init_fn)(Desc *);                                                  \
    init_fn v0 = (init_fn)dlvsym(RTLD_DEFAULT, #name, "CAKE_0");                               \
    init_fn v04 = (init_fn)dlvsym(RTLD_DEFAULT, #name, "CAKE_0.4");                            \
    assert_non_null(v0);                                                                       \
    assert_non_null(v04);                                                                      \
    assert_ptr_equal((void *)v04, (void *)&name);                                              \
    assert_ptr_not_equal((void *)v0, (void *)v04);                                             \
    const size_t first = offsetof(Desc, variant);                                              \
    unsigned char buf[sizeof(Desc)];                                                           \
    memset(buf, 0xab, sizeof buf);                                                             \
    assert_int_equal(v0((Desc *)buf), CAKE_STATUS_SUCCESS);                                    \
    Desc d;                                                                                    \
    memcpy(&d, buf, sizeof d);                                                                 \
    assert_int_equal(d.struct_size, first);                                                    \
    assert_int_equal(d.orientation, CAKE_MXFP8_ROWWISE);                                       \
    for (size_t i = first; i < sizeof buf; ++i) assert_int_equal(buf[i], 0xab);                \
    memset(buf, 0xab, sizeof buf);                                                             \
    assert_int_equal(v04((Desc *)buf), CAKE_STATUS_SUCCESS);                                   \
    memcpy(&d, buf, sizeof d);                                                                 \
    assert_int_equal(d.struct_size, sizeof(Desc));                                             \
    assert_int_equal(d.variant.activation, CAKE_SWIGLU_ACT_SILU);                              \
    assert_int_equal(v0(NULL), CAKE_STATUS_INVALID_ARGUMENT);                                  \
  } while (0)

static void test_swiglu_desc_init_of_old_binaries(void **state) {
  (void)state;
  CHECK_SWIGLU_DESC_INIT_V0(cake_swiglu_mxfp8_desc, cake_swiglu_mxfp8_desc_init);
  CHECK_SWIGLU_DESC_INIT_V0(cake_swiglu_fp8_desc, cake_swiglu_fp8_desc_init);
  CHECK_SWIGLU_DESC_INIT_V0(cake_swiglu_mxfp8_grouped_desc, cake_swiglu_mxfp8_grouped_desc_init);
  CHECK_SWIGLU_DESC_INIT_V0(cake_swiglu_fp8_grouped_desc, cake_swiglu_fp8_grouped_desc_init);
}

static void test_null_handle_calls(void **state) {
  (void)state;
  assert_int_equal(cake_create(NULL, 0), CAKE_STATUS_INVALID_ARGUMENT);
  assert_non_null(strstr(cake_last_error_message(), "handle"));
  assert_int_equal(cake_destroy(NULL), CAKE_STATUS_SUCCESS);
  cake_device_info info;
  cake_device_info_init(&info);
  assert_int_equal(cake_device_query(NULL, &info), CAKE_STATUS_INVALID_HANDLE);
  assert_int_equal(cake_program_count(NULL), -1);
  assert_null(cake_program_name(NULL, 0));
  cake_normgate_desc d;
  cake_normgate_desc_init(&d);
  assert_int_equal(cake_normgate_forward(NULL, &d, NULL, NULL, NULL, NULL, NULL, NULL),
                   CAKE_STATUS_INVALID_HANDLE);
}

/* Knobs past the eighth reach cake_table_program.knobs_ext (0.2): a SwiGLU program with the
 * col_lanes knob has it in knobs_ext[0], slot_cols in knobs_ext[1], row_from_tile in
 * knobs_ext[2], a normgate program zeros; a struct of 0.1's size is filled up to its end and no further. */
static void test_table_program_knobs_ext(void **state) {
  (void)state;
  int32_t np = 0, nr = 0;
  assert_int_equal(cake_table_counts(CAKE_ARCH_SM90, &np, &nr), CAKE_STATUS_SUCCESS);
  int found = 0, found_slot = 0;
  for (int32_t i = 0; i < np; ++i) {
    cake_table_program p;
    assert_int_equal(cake_table_program_init(&p), CAKE_STATUS_SUCCESS);
    memset(p.knobs_ext, 0x5A, sizeof p.knobs_ext);
    assert_int_equal(cake_table_program_get(CAKE_ARCH_SM90, i, &p), CAKE_STATUS_SUCCESS);
    if (p.family == CAKE_FAMILY_NORMGATE) {
      for (int k = 0; k < 8; ++k) assert_int_equal(p.knobs_ext[k], 0);
    }
    if (strcmp(p.name, "sm90.sw_bwd_row_t32s8") == 0) {
      found_slot |= 1;
      assert_int_equal(p.threads, 128);
      assert_int_equal(p.knobs_ext[0], 0); /* col_lanes: default */
      assert_int_equal(p.knobs_ext[1], 8); /* slot_cols */
      for (int k = 2; k < 8; ++k) assert_int_equal(p.knobs_ext[k], 0);
    }
    if (strcmp(p.name, "sm90.sw_bwd_both_t32s8r") == 0) {
      found_slot |= 2;
      assert_int_equal(p.knobs_ext[1], 8); /* slot_cols */
      assert_int_equal(p.knobs_ext[2], 1); /* row_from_tile */
      for (int k = 3; k < 8; ++k) assert_int_equal(p.knobs_ext[k], 0);
    }
    if (strcmp(p.name, "sm90.sw_fwd_both_st2_128x128w_p2") == 0) {
      found = 1;
      assert_int_equal(p.knobs[7], -2); /* group_rows: tile pairs */
      assert_int_equal(p.knobs_ext[0], 8); /* col_lanes */
      for (int k = 1; k < 8; ++k) assert_int_equal(p.knobs_ext[k], 0);
      cake_table_program old;
      memset(&old, 0x5A, sizeof old);
      old.struct_size = offsetof(cake_table_program, knobs_ext);
      assert_int_equal(cake_table_program_get(CAKE_ARCH_SM90, i, &old), CAKE_STATUS_SUCCESS);
      assert_int_equal(old.knobs[7], -2);
      assert_int_equal(old.knobs_ext[0], 0x5A5A5A5A);
    }
  }
  assert_true(found);
  assert_int_equal(found_slot, 3);
}

/* Wave routes reach cake_table_route (0.2): sm90 has one per package for d = 64 and d = 128
 * and a deterministic one for d = 256 (128-, 64- and 32-row units, band [200, 500) hundredths
 * of a wave, last wave 15-50% full), each
 * before the plain routes of its op and width; every plain route reads zeros there; a struct of
 * the size before the fields is filled up to program and no further. */
static void test_table_route_waves(void **state) {
  (void)state;
  int32_t np = 0, nr = 0;
  assert_int_equal(cake_table_counts(CAKE_ARCH_SM90, &np, &nr), CAKE_STATUS_SUCCESS);
  int waves = 0, plain_seen[2][3] = {{0, 0, 0}, {0, 0, 0}};
  for (int32_t i = 0; i < nr; ++i) {
    cake_table_route r;
    assert_int_equal(cake_table_route_init(&r), CAKE_STATUS_SUCCESS);
    memset(&r.wave_rows, 0x5A, sizeof r.wave_rows);
    assert_int_equal(cake_table_route_get(CAKE_ARCH_SM90, i, &r), CAKE_STATUS_SUCCESS);
    const int bwd = r.family == CAKE_FAMILY_NORMGATE &&
                    (r.op == CAKE_OP_NORMGATE_BACKWARD_DET || r.op == CAKE_OP_NORMGATE_BACKWARD_NONDET);
    const int w = r.d == 64 ? 0 : r.d == 128 ? 1 : r.d == 256 ? 2 : -1;
    if (r.wave_rows == 0) {
      assert_int_equal(r.waves_lo | r.waves_hi | r.frac_lo | r.frac_hi, 0);
      if (bwd && w >= 0) plain_seen[r.op == CAKE_OP_NORMGATE_BACKWARD_DET][w] = 1;
      continue;
    }
    ++waves;
    assert_true(bwd && w >= 0);
    assert_int_equal(plain_seen[r.op == CAKE_OP_NORMGATE_BACKWARD_DET][w], 0); /* listed first */
    assert_int_equal(r.wave_rows, 8192 / r.d);
    assert_int_equal(r.waves_lo, 200);
    assert_int_equal(r.waves_hi, 500);
    assert_int_equal(r.frac_lo, 15);
    assert_int_equal(r.frac_hi, 50);
    assert_non_null(strstr(r.program, "t512p4"));
    cake_table_route old;
    memset(&old, 0x5A, sizeof old);
    old.struct_size = offsetof(cake_table_route, wave_rows);
    assert_int_equal(cake_table_route_get(CAKE_ARCH_SM90, i, &old), CAKE_STATUS_SUCCESS);
    assert_string_equal(old.program, r.program);
    assert_int_equal(old.wave_rows, 0x5A5A5A5A);
  }
  assert_int_equal(waves, 5);
}

/* Runs in a child-free way: the driver is loaded once per process, so this test binary sets
 * CAKE_LIBCUDA before any create (main below). */
static void test_no_driver(void **state) {
  (void)state;
  cake_handle_t h = (cake_handle_t)0x1;
  const cake_status_t s = cake_create(&h, 0);
  assert_int_equal(s, CAKE_STATUS_DRIVER_UNAVAILABLE);
  assert_null(h);
  assert_non_null(strstr(cake_last_error_message(), "cannot load the CUDA driver"));
  /* The same answer, with its message, on a second call. */
  assert_int_equal(cake_create(&h, 0), CAKE_STATUS_DRIVER_UNAVAILABLE);
  assert_non_null(strstr(cake_last_error_message(), "libcuda-that-is-not-there"));
}

int main(void) {
  setenv("CAKE_LIBCUDA", "/nonexistent/libcuda-that-is-not-there.so.1", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),         cmocka_unit_test(test_stable_struct_layouts),
      cmocka_unit_test(test_status_strings),
      cmocka_unit_test(test_enum_values_are_stable), cmocka_unit_test(test_init_functions),
      cmocka_unit_test(test_normgate_desc_init_of_old_binaries),
      cmocka_unit_test(test_swiglu_desc_init_of_old_binaries),
      cmocka_unit_test(test_null_handle_calls), cmocka_unit_test(test_table_program_knobs_ext),
      cmocka_unit_test(test_table_route_waves), cmocka_unit_test(test_no_driver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
