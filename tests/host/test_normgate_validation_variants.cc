// The validation and routing rules of the normgate variants (gate, placement, group size,
// dtypes), host-only through the real entry points on a device-less handle: the exact status
// and a message naming the argument for every wrong value; for every right one, the query
// succeeds and names a program that serves it (a variant program unless the call is the default
// form, which keeps its tuned and general routes). No call here reaches a launch.
#include <cstring>
#include <string>

#include "cmocka_cxx.h"
#include "fake_handle.h"
#include "families/normgate_launch.h"

namespace {

alignas(16) unsigned char g_buf[8192];
alignas(16) unsigned char g_ws[1 << 20];

cake_normgate_desc base_desc(int32_t d) {
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = 64;
  desc.d = d;
  return desc;
}

void expect_fwd(cake_arch_t arch, const cake_normgate_desc &desc, const void *z, cake_status_t want,
                const char *needle) {
  cake_handle_t h = cake_test::make_fake_handle(arch, 132);
  const cake_status_t got =
      cake_normgate_forward(h, &desc, g_buf, z, g_buf + 2048, g_buf + 4096, nullptr, nullptr);
  if (got != want || std::strstr(cake_last_error_message(), needle) == nullptr) {
    print_error("forward: want %s with \"%s\", got %s: \"%s\"\n", cake_status_string(want), needle,
                cake_status_string(got), cake_last_error_message());
    fail();
  }
  cake_test::free_fake_handle(h);
}

void expect_bwd(const cake_normgate_desc &desc, const void *z, void *dz, cake_status_t want,
                const char *needle) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  const cake_status_t got = cake_normgate_backward(h, &desc, g_buf, g_buf, z, g_buf, g_buf + 2048,
                                                   dz, g_buf + 6144, g_ws, sizeof g_ws, nullptr);
  if (got != want || std::strstr(cake_last_error_message(), needle) == nullptr) {
    print_error("backward: want %s with \"%s\", got %s: \"%s\"\n", cake_status_string(want),
                needle, cake_status_string(got), cake_last_error_message());
    fail();
  }
  cake_test::free_fake_handle(h);
}

// Both directions refuse `desc` with `want` and a message holding `needle`.
void expect_both(const cake_normgate_desc &desc, cake_status_t want, const char *needle) {
  expect_fwd(CAKE_ARCH_SM90, desc, g_buf, want, needle);
  expect_bwd(desc, g_buf, g_buf + 4096, want, needle);
}

// The program the query picks for desc (forward or backward), or "" with a printed error.
std::string routed(cake_arch_t arch, const cake_normgate_desc &desc, bool backward) {
  cake_handle_t h = cake_test::make_fake_handle(arch, 132);
  cake_program_info info;
  cake_program_info_init(&info);
  const cake_status_t s = backward ? cake_normgate_backward_query(h, &desc, &info)
                                   : cake_normgate_forward_query(h, &desc, &info);
  cake_test::free_fake_handle(h);
  if (s != CAKE_STATUS_SUCCESS) {
    print_error("query: %s: %s\n", cake_status_string(s), cake_last_error_message());
    return "";
  }
  return info.name;
}

bool is_variant_program(const std::string &name) {
  return name.find("_variant") != std::string::npos;
}

}  // namespace

static void test_enum_rules(void **) {
  for (int gate : {3, -1, 100}) {
    cake_normgate_desc d = base_desc(128);
    d.gate = static_cast<cake_normgate_gate_t>(gate);
    expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->gate");
  }
  for (int placement : {2, -1}) {
    cake_normgate_desc d = base_desc(128);
    d.placement = static_cast<cake_normgate_placement_t>(placement);
    expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->placement");
  }
  for (int dt : {0, 4, -2}) {
    {
      cake_normgate_desc d = base_desc(128);
      d.x_dtype = static_cast<cake_dtype_t>(dt);
      expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->x_dtype");
    }
    {
      cake_normgate_desc d = base_desc(128);
      d.z_dtype = static_cast<cake_dtype_t>(dt);
      expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->z_dtype");
    }
    {
      cake_normgate_desc d = base_desc(128);
      d.w_dtype = static_cast<cake_dtype_t>(dt);
      expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->w_dtype");
    }
    {
      cake_normgate_desc d = base_desc(128);
      d.dw_dtype = static_cast<cake_dtype_t>(dt);
      expect_bwd(d, g_buf, g_buf + 4096, CAKE_STATUS_INVALID_ARGUMENT, "desc->dw_dtype");
    }
  }
}

static void test_group_rules(void **) {
  {
    cake_normgate_desc d = base_desc(128);
    d.group_size = -8;
    expect_both(d, CAKE_STATUS_INVALID_ARGUMENT, "desc->group_size = -8");
  }
  // Not a multiple of 8, not dividing d, larger than d.
  for (int g : {4, 12, 24, 48, 96, 136, 256}) {
    cake_normgate_desc d = base_desc(128);
    d.group_size = g;
    expect_both(d, CAKE_STATUS_UNSUPPORTED_SHAPE, "desc->group_size");
  }
  {
    cake_normgate_desc d = base_desc(5120);
    d.group_size = 3072;  // a multiple of 8 that does not divide 5120
    expect_both(d, CAKE_STATUS_UNSUPPORTED_SHAPE, "divides d = 5120");
  }
}

static void test_z_rules(void **) {
  // A gate needs z (and the backward dz).
  for (int gate : {CAKE_NORMGATE_GATE_SILU, CAKE_NORMGATE_GATE_SIGMOID}) {
    for (int placement : {CAKE_NORMGATE_GATE_AFTER_NORM, CAKE_NORMGATE_GATE_BEFORE_NORM}) {
      cake_normgate_desc d = base_desc(128);
      d.gate = static_cast<cake_normgate_gate_t>(gate);
      d.placement = static_cast<cake_normgate_placement_t>(placement);
      expect_fwd(CAKE_ARCH_SM90, d, nullptr, CAKE_STATUS_INVALID_ARGUMENT, "z: must not be NULL");
      expect_bwd(d, nullptr, g_buf + 4096, CAKE_STATUS_INVALID_ARGUMENT, "z: must not be NULL");
      expect_bwd(d, g_buf, nullptr, CAKE_STATUS_INVALID_ARGUMENT, "dz: must not be NULL");
      // z's stride is checked with a gate.
      d.z_stride = 100;
      expect_fwd(CAKE_ARCH_SM90, d, g_buf, CAKE_STATUS_INVALID_ARGUMENT, "desc->z_stride = 100");
    }
  }
  // Without a gate z and dz are not used: NULL, misaligned, any stride; the call gets past
  // every check (it fails only at the device check of this device-less handle... which the
  // query form never reaches).
  {
    cake_normgate_desc d = base_desc(128);
    d.gate = CAKE_NORMGATE_GATE_NONE;
    d.z_stride = 3;
    d.dz_stride = 5;
    assert_true(is_variant_program(routed(CAKE_ARCH_SM90, d, false)));
    assert_true(is_variant_program(routed(CAKE_ARCH_SM90, d, true)));
    // The other pointers are still checked (x NULL is refused before z would be).
    cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
    const cake_status_t s =
        cake_normgate_forward(h, &d, nullptr, nullptr, g_buf, g_buf + 4096, nullptr, nullptr);
    assert_int_equal(s, CAKE_STATUS_INVALID_ARGUMENT);
    assert_non_null(std::strstr(cake_last_error_message(), "x: must not be NULL"));
    cake_test::free_fake_handle(h);
  }
}

static void test_stride_extent_per_dtype(void **) {
  // The 64-bit byte-count check counts the dtype's bytes: FP32 rows overflow first.
  cake_normgate_desc d = base_desc(1024);
  d.rows = (int64_t(1) << 62) / 1024 / 2 - 1;  // fits with 2-byte elements
  d.x_dtype = CAKE_DTYPE_BF16;
  assert_true(routed(CAKE_ARCH_SM90, d, false) != "");
  d.x_dtype = CAKE_DTYPE_F32;
  d.rows = (int64_t(1) << 62) / 1024;  // 2^62 elements of 4 bytes: past 2^63 bytes
  expect_fwd(CAKE_ARCH_SM90, d, g_buf, CAKE_STATUS_INVALID_ARGUMENT, "overflows");
}

// Every valid variant routes, in every table, to a variant program that serves it; the default
// form keeps its own programs (tuned at 128, general at 512), with either dw dtype of old.
static void test_routing(void **) {
  const cake_arch_t archs[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};
  for (cake_arch_t arch : archs) {
    for (bool bwd : {false, true}) {
      for (int32_t dd : {8, 24, 128, 512, 2048, 2056, 5120, 8192}) {
        cake_normgate_desc d = base_desc(dd);
        d.package = CAKE_NORMGATE_DETERMINISTIC;
        const std::string def = routed(arch, d, bwd);
        assert_true(def != "" && !is_variant_program(def));
        d.group_size = dd;  // G = d is the default form too
        assert_true(routed(arch, d, bwd) == def);
        if (dd > 8) {  // G = 8 < d: a variant
          d.group_size = 8;
          const std::string v = routed(arch, d, bwd);
          assert_true(is_variant_program(v));
          if (bwd) {
            // 16-bit x and z: a tile program where its tile holds one row a row group (256
            // threads from 264 columns to 4096, 512 threads to 8192); below 264 the 256-thread
            // ring program.
            const bool tile = dd >= 264;
            const char *want = tile ? (dd <= 4096 ? "_tile256" : "_tile512") : "_ring";
            assert_true(v.find(want) != std::string::npos);
            assert_true(v.find("_wide") == std::string::npos && v.find("_pf0") == std::string::npos);
            d.package = CAKE_NORMGATE_NONDETERMINISTIC;
            const std::string n = routed(arch, d, bwd);
            assert_true(n.find("_nd_") != std::string::npos && n.find(want) != std::string::npos);
            d.package = CAKE_NORMGATE_DETERMINISTIC;
            // FP32 x or z: no ring (it copies 16-bit vectors); the wide program past 2048.
            for (cake_dtype_t *t : {&d.x_dtype, &d.z_dtype}) {
              *t = CAKE_DTYPE_F32;
              const std::string f = routed(arch, d, bwd);
              assert_true(is_variant_program(f) && f.find("_ring") == std::string::npos);
              assert_true((f.find("_wide") != std::string::npos) == (dd > 2048));
              *t = CAKE_DTYPE_BF16;
            }
          } else {  // 16-bit x and z: the tile program of the width's band
            const char *band = dd <= 2048 ? "_tile128" : dd <= 4096 ? "_tile256"
                             : dd <= 5120 ? "_tile320" : "_tile512";
            assert_true(v.find(band) != std::string::npos);
            d.x_dtype = CAKE_DTYPE_F32;  // FP32 x: the one-leaf programs
            const std::string f = routed(arch, d, bwd);
            assert_true(is_variant_program(f) && f.find("_tile") == std::string::npos);
            assert_true((f.find("_wide") != std::string::npos) == (dd > 2048));
            d.x_dtype = CAKE_DTYPE_BF16;
          }
        }
        d.group_size = 0;
        d.gate = CAKE_NORMGATE_GATE_SIGMOID;
        assert_true(is_variant_program(routed(arch, d, bwd)));
        d.gate = CAKE_NORMGATE_GATE_SILU;
        d.placement = CAKE_NORMGATE_GATE_BEFORE_NORM;
        assert_true(is_variant_program(routed(arch, d, bwd)));
        d.placement = CAKE_NORMGATE_GATE_AFTER_NORM;
        d.z_dtype = CAKE_DTYPE_F16;
        assert_true(is_variant_program(routed(arch, d, bwd)));
        d.z_dtype = CAKE_DTYPE_BF16;
        d.w_dtype = CAKE_DTYPE_F32;
        assert_true(is_variant_program(routed(arch, d, bwd)));
        d.w_dtype = CAKE_DTYPE_BF16;
        d.x_dtype = CAKE_DTYPE_F32;
        assert_true(is_variant_program(routed(arch, d, bwd)));
        d.x_dtype = CAKE_DTYPE_BF16;
        // dw dtypes: BF16 and FP32 keep the default programs; F16 dw is a variant (backward).
        d.dw_dtype = CAKE_DTYPE_F32;
        assert_true(routed(arch, d, bwd) == def);
        d.dw_dtype = CAKE_DTYPE_F16;
        assert_true(is_variant_program(routed(arch, d, bwd)) == bwd);
      }
    }
  }
}

// Forcing: a tuned or general program refuses a variant call, a variant program the default
// form.
static void test_forcing(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_program_info info;
  cake_program_info_init(&info);
  cake_normgate_desc d = base_desc(128);
  d.gate = CAKE_NORMGATE_GATE_SIGMOID;
  d.program = "sm90.ng_fwd_d128_long";
  assert_int_equal(cake_normgate_forward_query(h, &d, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  d.program = "sm90.ng_fwd_general";
  assert_int_equal(cake_normgate_forward_query(h, &d, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  d.program = "sm90.ng_fwd_variant_wide";
  assert_int_equal(cake_normgate_forward_query(h, &d, &info), CAKE_STATUS_SUCCESS);
  d.gate = CAKE_NORMGATE_GATE_SILU;
  assert_int_equal(cake_normgate_forward_query(h, &d, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  d.program = "sm90.ng_bwd_det_variant";
  d.gate = CAKE_NORMGATE_GATE_NONE;
  assert_int_equal(cake_normgate_backward_query(h, &d, &info), CAKE_STATUS_SUCCESS);
  d.program = "sm90.ng_bwd_det_variant_ring";  // a ring program: 16-bit x and z only
  assert_int_equal(cake_normgate_backward_query(h, &d, &info), CAKE_STATUS_SUCCESS);
  d.x_dtype = CAKE_DTYPE_F32;
  assert_int_equal(cake_normgate_backward_query(h, &d, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  d.x_dtype = CAKE_DTYPE_BF16;
  d.program = "sm90.ng_bwd_det_variant";
  d.package = CAKE_NORMGATE_NONDETERMINISTIC;  // the det program does not serve the nondet op
  assert_int_equal(cake_normgate_backward_query(h, &d, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  cake_test::free_fake_handle(h);
}

// The variant workspace has the general programs' layout: sizes grow with rows (det) and are
// a fixed accumulator (non-det); 0 with DW_SKIP.
static void test_workspace(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_normgate_desc d = base_desc(5120);
  d.group_size = 1024;
  d.placement = CAKE_NORMGATE_GATE_BEFORE_NORM;
  size_t prev = 0;
  for (int64_t rows : {int64_t(1), int64_t(17), int64_t(4096), int64_t(1) << 24}) {
    d.rows = rows;
    size_t det = 0, nd = 0;
    d.package = CAKE_NORMGATE_DETERMINISTIC;
    assert_int_equal(cake_normgate_workspace_size(h, &d, &det), CAKE_STATUS_SUCCESS);
    d.package = CAKE_NORMGATE_NONDETERMINISTIC;
    assert_int_equal(cake_normgate_workspace_size(h, &d, &nd), CAKE_STATUS_SUCCESS);
    assert_true(det >= prev && det >= size_t(5120) * 8);
    assert_true(nd >= size_t(5120) * 8 && nd <= size_t(5120) * 8 + 4096);
    prev = det;
  }
  d.flags = CAKE_NORMGATE_DW_SKIP;
  size_t none = 1;
  assert_int_equal(cake_normgate_workspace_size(h, &d, &none), CAKE_STATUS_SUCCESS);
  assert_int_equal(none, 0);
  cake_test::free_fake_handle(h);
}

// The kernel parameters carry the variant (the variant programs read them).
static void test_params(void **) {
  cake_normgate_desc d = base_desc(1024);
  d.gate = CAKE_NORMGATE_GATE_SIGMOID;
  d.placement = CAKE_NORMGATE_GATE_BEFORE_NORM;
  d.group_size = 0;
  d.x_dtype = CAKE_DTYPE_F32;
  d.z_dtype = CAKE_DTYPE_F16;
  d.w_dtype = CAKE_DTYPE_BF16;
  d.dw_dtype = CAKE_DTYPE_F16;
  d.x_stride = d.z_stride = d.y_stride = d.dy_stride = d.dx_stride = d.dz_stride = 1024;
  cake::NormgateLaunch launch = {};
  cake_normgate_params p;
  cake::normgate_fill_forward_params(d, launch, {g_buf, g_buf, g_buf, g_buf, nullptr}, &p);
  assert_int_equal(p.gate, CAKE_NORMGATE_GATE_SIGMOID);
  assert_int_equal(p.placement, CAKE_NORMGATE_GATE_BEFORE_NORM);
  assert_int_equal(p.group, 1024);  // 0 resolves to the whole row
  assert_int_equal(p.x_dtype, CAKE_DTYPE_F32);
  assert_int_equal(p.z_dtype, CAKE_DTYPE_F16);
  assert_int_equal(p.w_dtype, CAKE_DTYPE_BF16);
  d.group_size = 64;
  cake_program_desc prog = {};
  prog.family = CAKE_FAMILY_NORMGATE;
  prog.op = CAKE_NG_OP_BWD_DET;
  cake::normgate_fill_backward_params(prog, d, launch, {g_buf, g_buf, g_buf, g_buf, g_buf, g_buf, g_buf, g_ws}, &p);
  assert_int_equal(p.group, 64);
  assert_int_equal(p.dw_dtype, CAKE_DTYPE_F16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enum_rules),
      cmocka_unit_test(test_group_rules),
      cmocka_unit_test(test_z_rules),
      cmocka_unit_test(test_stride_extent_per_dtype),
      cmocka_unit_test(test_routing),
      cmocka_unit_test(test_forcing),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_params),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
