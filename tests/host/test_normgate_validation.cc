// Every normgate validation rule, host-only through the real entry points on a device-less
// handle: the exact status and a message naming the argument. No call here reaches a launch
// (a launch on this handle would crash, so a wrong acceptance fails loudly too).
#include <cmath>
#include <cstring>
#include <limits>

#include "cmocka_cxx.h"
#include "fake_handle.h"

namespace {

alignas(16) unsigned char g_buf[4096];

struct Fixture {
  cake_handle_t h;
  cake_normgate_desc desc;
  const void *x, *z, *w;
  void *y;
};

Fixture fresh() {
  Fixture f;
  f.h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_normgate_desc_init(&f.desc);
  f.desc.rows = 4;
  f.desc.d = 128;
  f.x = g_buf;
  f.z = g_buf + 1024;
  f.w = g_buf + 2048;
  f.y = g_buf + 3072;
  return f;
}

void expect(Fixture &f, cake_status_t want, const char *needle) {
  const cake_status_t got = cake_normgate_forward(f.h, &f.desc, f.x, f.z, f.w, f.y, nullptr, nullptr);
  if (got != want || std::strstr(cake_last_error_message(), needle) == nullptr) {
    print_error("want %s with \"%s\", got %s: \"%s\"\n", cake_status_string(want), needle,
                cake_status_string(got), cake_last_error_message());
    fail();
  }
  cake_test::free_fake_handle(f.h);
}

}  // namespace

static void test_desc_rules(void **) {
  {
    Fixture f = fresh();
    const cake_status_t s = cake_normgate_forward(f.h, nullptr, f.x, f.z, f.w, f.y, nullptr, nullptr);
    assert_int_equal(s, CAKE_STATUS_INVALID_ARGUMENT);
    assert_non_null(std::strstr(cake_last_error_message(), "desc"));
    cake_test::free_fake_handle(f.h);
  }
  { Fixture f = fresh(); f.desc.rows = 0; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->rows = 0"); }
  { Fixture f = fresh(); f.desc.rows = -5; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->rows = -5"); }
  for (int d : {0, 4, 7, 12, 8200, -8}) {
    Fixture f = fresh();
    f.desc.d = d;
    expect(f, CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->d");
  }
  for (float eps : {-1e-6f, std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity()}) {
    Fixture f = fresh();
    f.desc.eps = eps;
    expect(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->eps");
  }
  { Fixture f = fresh(); f.desc.x_stride = 120; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->x_stride = 120"); }
  { Fixture f = fresh(); f.desc.z_stride = 132; expect(f, CAKE_STATUS_MISALIGNED, "desc->z_stride = 132"); }
  { Fixture f = fresh(); f.desc.y_stride = 129; expect(f, CAKE_STATUS_MISALIGNED, "desc->y_stride"); }
  {
    Fixture f = fresh();
    f.desc.rows = int64_t(1) << 60;
    f.desc.x_stride = 1024;
    expect(f, CAKE_STATUS_INVALID_ARGUMENT, "overflows");
  }
  { Fixture f = fresh(); f.desc.program = "sm90.missing"; expect(f, CAKE_STATUS_PROGRAM_NOT_FOUND, "sm90.missing"); }
}

static void test_struct_size_rules(void **) {
  { Fixture f = fresh(); f.desc.struct_size = 8; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "struct_size = 8"); }
  {
    // From a newer header: accepted only when the unknown tail is zero.
    struct Newer {
      cake_normgate_desc base;
      uint64_t extra;
    } newer;
    std::memset(&newer, 0, sizeof newer);
    Fixture f = fresh();
    newer.base = f.desc;
    newer.base.struct_size = sizeof newer;
    newer.extra = 7;
    const cake_status_t s =
        cake_normgate_forward(f.h, &newer.base, f.x, f.z, f.w, f.y, nullptr, nullptr);
    assert_int_equal(s, CAKE_STATUS_INVALID_ARGUMENT);
    assert_non_null(std::strstr(cake_last_error_message(), "newer Cake"));
    newer.extra = 0;
    cake_program_info info;
    cake_program_info_init(&info);
    assert_int_equal(cake_normgate_forward_query(f.h, &newer.base, &info), CAKE_STATUS_SUCCESS);
    cake_test::free_fake_handle(f.h);
  }
}

static void test_pointer_rules(void **) {
  { Fixture f = fresh(); f.x = nullptr; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "x: must not be NULL"); }
  { Fixture f = fresh(); f.z = nullptr; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "z: must not be NULL"); }
  { Fixture f = fresh(); f.w = nullptr; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "w: must not be NULL"); }
  { Fixture f = fresh(); f.y = nullptr; expect(f, CAKE_STATUS_INVALID_ARGUMENT, "y: must not be NULL"); }
  for (int off : {1, 2, 4, 8}) {
    { Fixture f = fresh(); f.x = g_buf + off; expect(f, CAKE_STATUS_MISALIGNED, "x = "); }
    { Fixture f = fresh(); f.z = g_buf + 1024 + off; expect(f, CAKE_STATUS_MISALIGNED, "z = "); }
    { Fixture f = fresh(); f.w = g_buf + 2048 + off; expect(f, CAKE_STATUS_MISALIGNED, "w = "); }
    { Fixture f = fresh(); f.y = g_buf + 3072 + off; expect(f, CAKE_STATUS_MISALIGNED, "y = "); }
  }
  {
    Fixture f = fresh();
    float *rstd = reinterpret_cast<float *>(g_buf + 2);
    const cake_status_t s = cake_normgate_forward(f.h, &f.desc, f.x, f.z, f.w, f.y, rstd, nullptr);
    assert_int_equal(s, CAKE_STATUS_MISALIGNED);
    assert_non_null(std::strstr(cake_last_error_message(), "rstd"));
    cake_test::free_fake_handle(f.h);
  }
}

namespace {

struct BwdFixture {
  cake_handle_t h;
  cake_normgate_desc desc;
  const void *dy, *x, *z, *w;
  void *dx, *dz, *dw, *ws;
  size_t ws_bytes;
};

alignas(16) unsigned char g_ws[1 << 16];

BwdFixture fresh_bwd() {
  BwdFixture f;
  f.h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_normgate_desc_init(&f.desc);
  f.desc.rows = 4;
  f.desc.d = 128;
  f.dy = f.x = f.z = f.w = g_buf;
  f.dx = g_buf + 1024;
  f.dz = g_buf + 2048;
  f.dw = g_buf + 3072;
  f.ws = g_ws;
  f.ws_bytes = sizeof g_ws;
  return f;
}

void expect_bwd(BwdFixture &f, cake_status_t want, const char *needle) {
  const cake_status_t got = cake_normgate_backward(f.h, &f.desc, f.dy, f.x, f.z, f.w, f.dx, f.dz,
                                                   f.dw, f.ws, f.ws_bytes, nullptr);
  if (got != want || std::strstr(cake_last_error_message(), needle) == nullptr) {
    print_error("want %s with \"%s\", got %s: \"%s\"\n", cake_status_string(want), needle,
                cake_status_string(got), cake_last_error_message());
    fail();
  }
  cake_test::free_fake_handle(f.h);
}

}  // namespace

static void test_backward_rules(void **) {
  { BwdFixture f = fresh_bwd(); f.desc.package = (cake_normgate_package_t)2; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->package = 2"); }
  { BwdFixture f = fresh_bwd(); f.desc.package = (cake_normgate_package_t)-1; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->package"); }
  { BwdFixture f = fresh_bwd(); f.desc.dw_dtype = (cake_dtype_t)0; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->dw_dtype = 0"); }
  { BwdFixture f = fresh_bwd(); f.desc.dw_dtype = (cake_dtype_t)4; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->dw_dtype = 4"); }
  { BwdFixture f = fresh_bwd(); f.desc.flags = 8; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "unknown bits"); }
  { BwdFixture f = fresh_bwd(); f.desc.flags = 3; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "together"); }
  { BwdFixture f = fresh_bwd(); f.desc.dy_stride = 64; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->dy_stride = 64"); }
  { BwdFixture f = fresh_bwd(); f.desc.dx_stride = 130; expect_bwd(f, CAKE_STATUS_MISALIGNED, "desc->dx_stride = 130"); }
  { BwdFixture f = fresh_bwd(); f.desc.dz_stride = 100; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "desc->dz_stride = 100"); }
  { BwdFixture f = fresh_bwd(); f.desc.d = 12; expect_bwd(f, CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->d = 12"); }
  { BwdFixture f = fresh_bwd(); f.dy = nullptr; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "dy: must not be NULL"); }
  { BwdFixture f = fresh_bwd(); f.dx = nullptr; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "dx: must not be NULL"); }
  { BwdFixture f = fresh_bwd(); f.dz = nullptr; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "dz: must not be NULL"); }
  { BwdFixture f = fresh_bwd(); f.dw = nullptr; expect_bwd(f, CAKE_STATUS_INVALID_ARGUMENT, "dw: must not be NULL"); }
  for (int off : {1, 2, 4, 8}) {
    { BwdFixture f = fresh_bwd(); f.dy = g_buf + off; expect_bwd(f, CAKE_STATUS_MISALIGNED, "dy = "); }
    { BwdFixture f = fresh_bwd(); f.dz = g_buf + 2048 + off; expect_bwd(f, CAKE_STATUS_MISALIGNED, "dz = "); }
    { BwdFixture f = fresh_bwd(); f.dw = g_buf + 3072 + off; expect_bwd(f, CAKE_STATUS_MISALIGNED, "dw = "); }
    { BwdFixture f = fresh_bwd(); f.ws = g_ws + off; expect_bwd(f, CAKE_STATUS_MISALIGNED, "workspace = "); }
  }
  { BwdFixture f = fresh_bwd(); f.ws = nullptr; expect_bwd(f, CAKE_STATUS_INSUFFICIENT_WORKSPACE, "workspace is NULL"); }
  {
    BwdFixture f = fresh_bwd();
    size_t need = 0;
    assert_int_equal(cake_normgate_workspace_size(f.h, &f.desc, &need), CAKE_STATUS_SUCCESS);
    assert_true(need > 0);
    f.ws_bytes = need - 1;
    expect_bwd(f, CAKE_STATUS_INSUFFICIENT_WORKSPACE, "needs");
  }
  {
    // Skipping dw needs no dw and no workspace; the size query says 0.
    BwdFixture f = fresh_bwd();
    f.desc.flags = CAKE_NORMGATE_DW_SKIP;
    size_t need = 1;
    assert_int_equal(cake_normgate_workspace_size(f.h, &f.desc, &need), CAKE_STATUS_SUCCESS);
    assert_int_equal(need, 0);
    cake_test::free_fake_handle(f.h);
  }
}

static void test_workspace_sizes(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.d = 128;
  size_t prev = 0;
  for (int64_t rows : {int64_t(1), int64_t(16), int64_t(1000), int64_t(800000), int64_t(1) << 33}) {
    desc.rows = rows;
    size_t det = 0, nd = 0;
    desc.package = CAKE_NORMGATE_DETERMINISTIC;
    assert_int_equal(cake_normgate_workspace_size(h, &desc, &det), CAKE_STATUS_SUCCESS);
    desc.package = CAKE_NORMGATE_NONDETERMINISTIC;
    assert_int_equal(cake_normgate_workspace_size(h, &desc, &nd), CAKE_STATUS_SUCCESS);
    assert_true(det >= prev);  // grows with rows
    assert_true(det >= 128 * 8);
    assert_true(nd > 0 && nd <= 4096);  // a fixed accumulator, whatever the rows
    prev = det;
  }
  cake_test::free_fake_handle(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_desc_rules),
      cmocka_unit_test(test_struct_size_rules),
      cmocka_unit_test(test_pointer_rules),
      cmocka_unit_test(test_backward_rules),
      cmocka_unit_test(test_workspace_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
