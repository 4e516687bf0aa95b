// Manifests, route tables and image selection, host-only: every architecture's table is
// consistent, routes cover every size exactly once, and calls route where the manifest says.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cmocka_cxx.h"
#include "fake_handle.h"
#include "families/family.h"
#include "families/normgate_launch.h"
#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_mxfp8_launch.h"
#include "modules/images.h"
#include "router/router.h"
#include "router/tables.h"

using namespace cake;

// The call form a normgate program serves (normgate_form of its variant and quant knobs).
static int32_t ng_form_of(const cake_program_desc &p) {
  return normgate_form(p.knobs[kNgVariant] != 0, p.knobs[kNgQuant]);
}

static void test_tables_are_consistent(void **) {
  int count = 0;
  const ArchTable *tables = arch_tables(&count);
  assert_int_equal(count, 4);
  for (int t = 0; t < count; ++t) {
    const ArchTable &tab = tables[t];
    std::set<std::string> names;
    const std::string prefix = std::string("cake_") + tab.tag + "_";
    for (int i = 0; i < tab.program_count; ++i) {
      const cake_program_desc &p = tab.programs[i];
      assert_true(names.insert(p.name).second);
      assert_int_equal(std::strncmp(p.kernel, prefix.c_str(), prefix.size()), 0);
      assert_int_equal(std::strncmp(p.name, tab.tag, std::strlen(tab.tag)), 0);
      assert_true(p.threads % 32 == 0 && p.threads <= 1024);
      assert_true(p.min_ctas_per_sm >= 1);
    }
    for (int r = 0; r < tab.route_count; ++r) {
      const cake_route_desc &route = tab.routes[r];
      assert_true(route.program >= 0 && route.program < tab.program_count);
      const cake_program_desc &p = tab.programs[route.program];
      assert_int_equal(p.family, route.family);
      assert_int_equal(p.op, route.op);
      assert_true(route.metric_lo < route.metric_hi);
      if (route.wave_rows != 0) {  // a wave route: normgate, a width of its own, a sane band
        assert_int_equal(route.family, CAKE_FAMILY_NORMGATE);
        assert_true(route.d != 0 && route.wave_rows > 0);
        assert_true(0 <= route.waves_lo && route.waves_lo < route.waves_hi);
        assert_true(0 <= route.frac_lo && route.frac_lo <= route.frac_hi && route.frac_hi <= 99);
      }
      if (route.family == CAKE_FAMILY_NORMGATE) {
        // A route for width d must point at a program that computes width d.
        if (route.d != 0) assert_true(normgate_program_serves(p, route.d, ng_form_of(p)));
        else assert_int_equal(p.knobs[kNgD], 0);
      }
    }
  }
}

// The default build ships what is routed: every program of every table is some route's. A
// CAKE_CANDIDATES build adds the manifests' candidate lines, which no route names.
static void test_every_program_is_routed(void **) {
  int count = 0;
  const ArchTable *tables = arch_tables(&count);
  for (int t = 0; t < count; ++t) {
    const ArchTable &tab = tables[t];
    std::vector<int> routes_of(tab.program_count, 0);
    for (int r = 0; r < tab.route_count; ++r) ++routes_of[tab.routes[r].program];
    int unrouted = 0;
    for (int i = 0; i < tab.program_count; ++i) {
      if (routes_of[i] == 0) {
        ++unrouted;
        if (!CAKE_CANDIDATES) print_error("%s: no route selects it\n", tab.programs[i].name);
      }
    }
    if (!CAKE_CANDIDATES) assert_int_equal(unrouted, 0);
  }
}

// Whether routes a and b belong to the same cover of the size range: the normgate general
// routes (d = 0) are alternatives by width, each program's its own cover; the SwiGLU + FP8
// tail programs' routes (M not a multiple of 128) a cover beside the aligned programs'; the
// SwiGLU variant programs' routes (both families) a cover of their own.
static bool same_cover(const ArchTable &tab, const cake_route_desc &a, const cake_route_desc &b) {
  if (a.family == CAKE_FAMILY_NORMGATE && a.d == 0) return a.program == b.program;
  if (swiglu_program_variant(tab.programs[a.program]) !=
      swiglu_program_variant(tab.programs[b.program])) {
    return false;
  }
  if (a.family == CAKE_FAMILY_SWIGLU_FP8) {
    return tab.programs[a.program].knobs[kF8Tail] == tab.programs[b.program].knobs[kF8Tail];
  }
  return true;
}

// For every (family, op, d) with routes: [0, INT64_MAX) is covered once, without gaps, by the
// plain routes (wave routes override them inside their band), in each cover (same_cover).
static void test_routes_cover_every_size(void **) {
  int count = 0;
  const ArchTable *tables = arch_tables(&count);
  for (int t = 0; t < count; ++t) {
    const ArchTable &tab = tables[t];
    for (int r = 0; r < tab.route_count; ++r) {
      const cake_route_desc &key = tab.routes[r];
      if (key.wave_rows != 0) continue;
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (int q = 0; q < tab.route_count; ++q) {
        const cake_route_desc &o = tab.routes[q];
        if (o.wave_rows != 0) continue;
        // Normgate: the routes of one form (plain, variant, each quantized format) apart.
        const bool same_form = key.family != CAKE_FAMILY_NORMGATE ||
                               ng_form_of(tab.programs[o.program]) == ng_form_of(tab.programs[key.program]);
        if (o.family == key.family && o.op == key.op && o.d == key.d && same_form &&
            same_cover(tab, key, o))
          spans.push_back({o.metric_lo, o.metric_hi});
      }
      std::sort(spans.begin(), spans.end());
      assert_int_equal(spans.front().first, 0);
      for (size_t i = 1; i < spans.size(); ++i) assert_int_equal(spans[i].first, spans[i - 1].second);
      assert_true(spans.back().second == INT64_MAX);
    }
  }
}

// Every width the spec allows (multiples of 8 up to 8192) has a normgate route for every op
// and rows-per-SM metric, to a program that serves it.
static void test_normgate_every_width_routes(void **) {
  int count = 0;
  const ArchTable *tables = arch_tables(&count);
  for (int t = 0; t < count; ++t) {
    const ArchTable &tab = tables[t];
    for (uint16_t op : {CAKE_NG_OP_FWD, CAKE_NG_OP_BWD_DET, CAKE_NG_OP_BWD_NONDET}) {
      for (int32_t d = 8; d <= 8192; d += 8) {
        for (int64_t metric : {int64_t(0), int64_t(1000), int64_t(1) << 40}) {
          const cake_route_desc *r =
              find_route(tab, CAKE_FAMILY_NORMGATE, op, d, metric, normgate_program_serves);
          assert_non_null(r);
          assert_true(normgate_program_serves(tab.programs[r->program], d));
        }
      }
    }
  }
}

// The program a call routes to on a fake handle (forward, or backward of a package), or the error.
static std::string routed(cake_arch_t arch, int sm_count, int64_t rows, int d, bool backward,
                          cake_normgate_package_t package) {
  cake_handle_t h = cake_test::make_fake_handle(arch, sm_count);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = rows;
  desc.d = d;
  desc.package = package;
  cake_program_info info;
  cake_program_info_init(&info);
  const cake_status_t st = backward ? cake_normgate_backward_query(h, &desc, &info)
                                    : cake_normgate_forward_query(h, &desc, &info);
  cake_test::free_fake_handle(h);
  if (st != CAKE_STATUS_SUCCESS) return std::string("error: ") + cake_last_error_message();
  return info.name;
}

static std::string routed_forward(cake_arch_t arch, int sm_count, int64_t rows, int d) {
  return routed(arch, sm_count, rows, d, false, CAKE_NORMGATE_DETERMINISTIC);
}

static std::string routed_backward(cake_arch_t arch, int sm_count, int64_t rows, int d,
                                   cake_normgate_package_t package) {
  return routed(arch, sm_count, rows, d, true, package);
}

static void test_normgate_forward_routes(void **) {
  // H200: 132 SMs. Rows per SM decide short / mid / long.
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 260 * 48, 128).c_str(), "sm90.ng_fwd_d128_short");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 3534 * 48, 128).c_str(), "sm90.ng_fwd_d128_long");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 132 * 799, 128).c_str(), "sm90.ng_fwd_d128_short");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 16384 * 48, 128).c_str(), "sm90.ng_fwd_d128_long");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 1000, 64).c_str(), "sm90.ng_fwd_d64_short");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 1000, 256).c_str(), "sm90.ng_fwd_d256_short");
  // Widths without a tuned program: the general program up to 2048 columns, then the narrowest
  // tile program that holds the row, at every size (two leaves a thread: 256 threads to 4096
  // columns, 320 to 5120, 512 to 8192).
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 1, 8).c_str(), "sm90.ng_fwd_general");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 5000, 96).c_str(), "sm90.ng_fwd_general");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 800000, 2048).c_str(), "sm90.ng_fwd_general");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 800000, 2056).c_str(), "sm90.ng_fwd_tile256");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 800000, 4096).c_str(), "sm90.ng_fwd_tile256");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 8192, 5120).c_str(), "sm90.ng_fwd_tile320");
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 800000, 8192).c_str(), "sm90.ng_fwd_tile512");
  assert_string_equal(routed_forward(CAKE_ARCH_SM100, 148, 1000, 8192).c_str(), "sm100.ng_fwd_tile512");
  // The reported thresholds: mid from 976 rows/SM on sm100/sm103, from 800 on sm107.
  assert_string_equal(routed_forward(CAKE_ARCH_SM100, 148, 148 * 975, 128).c_str(), "sm100.ng_fwd_d128_short");
  assert_string_equal(routed_forward(CAKE_ARCH_SM100, 148, 148 * 976, 128).c_str(), "sm100.ng_fwd_d128_mid");
  assert_string_equal(routed_forward(CAKE_ARCH_SM103, 152, 152 * 1740, 128).c_str(), "sm103.ng_fwd_d128_long");
  assert_string_equal(routed_forward(CAKE_ARCH_SM107, 212, 3534 * 48, 128).c_str(), "sm107.ng_fwd_d128_mid");
  assert_string_equal(routed_forward(CAKE_ARCH_SM107, 212, 212 * 799, 128).c_str(), "sm107.ng_fwd_d128_short");
  assert_string_equal(routed_forward(CAKE_ARCH_SM107, 212, 212 * 1739, 128).c_str(), "sm107.ng_fwd_d128_mid");
}

// sm90's backward wave routes (kernels/sm90/manifest.def): from 2 to 5 waves of 64-row (d128)
// or 128-row (d64) units on the SMs, the last wave 15-50% full, the four-stage 512-thread
// programs; elsewhere above 150 / 300 rows per SM the programs of the plain routes.
static void test_normgate_backward_wave_routes(void **) {
  const cake_normgate_package_t nd = CAKE_NORMGATE_NONDETERMINISTIC, det = CAKE_NORMGATE_DETERMINISTIC;
  // d128, 132 SMs: 422 units = 3.19 waves (fill 19) -> wave route; 501 units = 3.79 (79) -> plain.
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 422 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 501 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t1024");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 422 * 64, 128, det).c_str(), "sm90.ng_bwd_det_d128_ct_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 501 * 64, 128, det).c_str(), "sm90.ng_bwd_det_d128_ct");
  // The band's edges (each above 150 rows per SM): fill 15 (3.15 waves, 416 units) inside, 14
  // (415 units) outside; fill 50 (2.50 waves, 330 units) inside, 51 (332 units) outside; 5.15
  // waves (680 units) outside (>= 5).
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 416 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 415 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t1024");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 330 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 332 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t1024");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 680 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t1024");
  // A partial unit counts as a unit: 421 units and one row = 422 units.
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 421 * 64 + 1, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  // Below 150 rows per SM the plain route takes the same programs whatever the fill: 264 units
  // (2.00 waves, fill 0) are 128 rows per SM.
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 264 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  // d64: 128-row units. 844 x 64 rows = 422 units -> wave route; 1003 x 64 = 502 units (3.80) -> plain.
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 844 * 64, 64, nd).c_str(), "sm90.ng_bwd_nd_d64_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 1003 * 64, 64, nd).c_str(), "sm90.ng_bwd_nd_d64_t1024");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 844 * 64, 64, det).c_str(), "sm90.ng_bwd_det_d64_ct_t512p4");
  // The waves count the routing SMs: 422 units on 100 SMs = 4.22 waves (fill 22) -> wave route;
  // on 120 SMs 3.51 waves (fill 51) -> plain.
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 100, 422 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 120, 422 * 64, 128, nd).c_str(), "sm90.ng_bwd_nd_d128_t1024");
  // d256: 32-row units, the deterministic package only. 439 x 40 rows = 549 units (4.15 waves)
  // -> wave route; 414 x 40 = 518 units (3.92) -> the column tree; below 80 rows per SM the
  // four-stage program whatever the waves (111 x 40 rows: 33 rows per SM, 1.05 waves).
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 439 * 40, 256, det).c_str(), "sm90.ng_bwd_det_d256_ct_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 414 * 40, 256, det).c_str(), "sm90.ng_bwd_det_d256_ct");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 111 * 40, 256, det).c_str(), "sm90.ng_bwd_det_d256_ct_t512p4");
  assert_string_equal(routed_backward(CAKE_ARCH_SM90, 132, 439 * 40, 256, nd).c_str(), "sm90.ng_bwd_nd_d256_t1024");
  // The forward has no wave route.
  assert_string_equal(routed_forward(CAKE_ARCH_SM90, 132, 422 * 64, 128).c_str(), "sm90.ng_fwd_d128_short");
}

static void test_forced_program_query(void **) {
  cake_handle_t h = cake_test::make_fake_handle(CAKE_ARCH_SM90, 132);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = 4096;
  desc.d = 128;
  desc.program = "sm90.ng_fwd_general";
  cake_program_info info;
  cake_program_info_init(&info);
  assert_int_equal(cake_normgate_forward_query(h, &desc, &info), CAKE_STATUS_SUCCESS);
  assert_string_equal(info.name, "sm90.ng_fwd_general");
  assert_int_equal(info.forced, 1);
  assert_string_equal(info.kernel, "cake_sm90_ng_fwd_general");
  desc.d = 8192;  // a tree of 1024 leaves: not in a 256-thread CTA
  assert_int_equal(cake_normgate_forward_query(h, &desc, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  assert_non_null(std::strstr(cake_last_error_message(), "does not serve"));
  desc.d = 128;
  desc.program = "sm90.ng_fwd_d64_short";  // wrong width
  assert_int_equal(cake_normgate_forward_query(h, &desc, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  assert_non_null(std::strstr(cake_last_error_message(), "does not serve"));
  desc.program = "sm90.nope";
  assert_int_equal(cake_normgate_forward_query(h, &desc, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  desc.program = "sm100.ng_fwd_d128_short";  // another table's program
  assert_int_equal(cake_normgate_forward_query(h, &desc, &info), CAKE_STATUS_PROGRAM_NOT_FOUND);
  cake_test::free_fake_handle(h);
}

static void test_normgate_launch_shapes(void **) {
  const ArchTable *tab = arch_table(CAKE_ARCH_SM90);
  for (int i = 0; i < tab->program_count; ++i) {
    const cake_program_desc &p = tab->programs[i];
    if (p.family != CAKE_FAMILY_NORMGATE) continue;
    // Dynamic shared memory fits an H100/H200 CTA (227 KiB), beside the static arrays of the
    // general programs (under 24 KiB; the tuned ones have none).
    assert_true(normgate_smem_bytes(p) <= 227u * 1024u - (p.knobs[kNgD] == 0 ? 24u * 1024u : 0u));
    for (int64_t rows : {int64_t(1), int64_t(7), int64_t(1000), int64_t(800000), int64_t(3) << 31}) {
      for (int32_t d : {8, 64, 96, 128, 256, 264, 1000, 8192}) {
        if (!normgate_program_serves(p, d)) continue;
        const NormgateLaunch l = normgate_launch(p, rows, d, 132 * 4);
        assert_true(l.rows_per_block >= 1);
        assert_true(l.num_blocks * l.rows_per_block >= rows);
        assert_true((l.num_blocks - 1) * l.rows_per_block < rows);
        assert_true(l.grid >= 1 && int64_t(l.grid) <= l.num_blocks);
        if (p.knobs[kNgPersistent]) assert_true(l.grid <= 132 * 4);
      }
    }
  }
}

static void test_image_selection(void **) {
  const Image *im = nullptr;
  bool jit = false;
  assert_int_equal(select_image(8, 9, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_ARCH_UNSUPPORTED);
  assert_non_null(std::strstr(cake_last_error_message(), "older than 9.0"));
  assert_int_equal(select_image(9, 0, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_int_equal(im->table, CAKE_ARCH_SM90);
  assert_false(im->cross_check);
  assert_false(jit);
  assert_int_equal(select_image(10, 0, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_int_equal(im->table, CAKE_ARCH_SM100);
  assert_false(jit);
  assert_int_equal(select_image(10, 3, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_int_equal(im->table, CAKE_ARCH_SM103);
  assert_int_equal(select_image(10, 7, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_int_equal(im->table, CAKE_ARCH_SM107);
  assert_false(jit);
  // A device newer than every table: the newest table with PTX it can JIT.
  assert_int_equal(select_image(12, 0, CAKE_ARCH_NONE, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_true(jit);
  assert_true(im->ptx_cc != 0 && im->ptx_cc <= 120);
  // Cross-check images: other tables on sm_90 only.
  assert_int_equal(select_image(9, 0, CAKE_ARCH_SM103, &im, &jit), CAKE_STATUS_SUCCESS);
  assert_true(im->cross_check);
  assert_int_equal(im->table, CAKE_ARCH_SM103);
  assert_int_equal(select_image(10, 0, CAKE_ARCH_SM103, &im, &jit), CAKE_STATUS_ARCH_UNSUPPORTED);
  // Every embedded image has bytes.
  int n = 0;
  const Image *all = embedded_images(&n);
  assert_true(n >= 4);
  for (int i = 0; i < n; ++i) assert_true(all[i].size > 1024);
}

// The one resolution both families use: a forced name must be in the table and serve the call
// (family, op and, for normgate, the width), else the routes pick; each failure has its status
// and its family's wording.
static void test_resolve_program(void **) {
  const ArchTable &tab = *arch_table(CAKE_ARCH_SM90);
  const FamilyRouting &ng = family_ops(CAKE_FAMILY_NORMGATE)->routing;
  const FamilyRouting &sw = family_ops(CAKE_FAMILY_SWIGLU_MXFP8)->routing;
  ProgramChoice c = {-7, nullptr};
  // Routed: the route's program, the route given back.
  ProgramRequest req = {CAKE_FAMILY_NORMGATE, CAKE_NG_OP_FWD, 128, 5, 660, 132, nullptr, 0};
  assert_int_equal(resolve_program(tab, ng, req, &c), CAKE_STATUS_SUCCESS);
  assert_non_null(c.route);
  assert_ptr_equal(c.route, find_route(tab, CAKE_FAMILY_NORMGATE, CAKE_NG_OP_FWD, 128, 5,
                                       normgate_program_serves, 660, 132));
  assert_int_equal(c.program, c.route->program);
  // Forced: that program, no route.
  const int fwd = c.program;
  req.forced = tab.programs[fwd].name;
  assert_int_equal(resolve_program(tab, ng, req, &c), CAKE_STATUS_SUCCESS);
  assert_int_equal(c.program, fwd);
  assert_null(c.route);
  // Forced, of another op, another width, another family, or not in the table.
  req.op = CAKE_NG_OP_BWD_DET;
  assert_int_equal(resolve_program(tab, ng, req, &c), CAKE_STATUS_PROGRAM_NOT_FOUND);
  assert_non_null(std::strstr(cake_last_error_message(), "it does not serve this call (op 1, d 128)"));
  req.op = CAKE_NG_OP_FWD;
  req.d = tab.programs[fwd].knobs[kNgD] == 64 ? 256 : 64;
  assert_int_equal(resolve_program(tab, ng, req, &c), CAKE_STATUS_PROGRAM_NOT_FOUND);
  ProgramRequest swreq = {CAKE_FAMILY_SWIGLU_MXFP8, CAKE_SW_FWD_ROW, 0, 128 * 128, 0, 0,
                          tab.programs[fwd].name, 0};
  assert_int_equal(resolve_program(tab, sw, swreq, &c), CAKE_STATUS_PROGRAM_NOT_FOUND);
  assert_non_null(std::strstr(cake_last_error_message(), "it does not serve this call (form 0)"));
  swreq.forced = "sm90.not_a_program";
  assert_int_equal(resolve_program(tab, sw, swreq, &c), CAKE_STATUS_PROGRAM_NOT_FOUND);
  assert_string_equal(cake_last_error_message(),
                      "desc->program = \"sm90.not_a_program\": no such program in the sm90 table");
  // No route (an op no table has): each family words the call its own way.
  req = {CAKE_FAMILY_NORMGATE, 7, 128, 5, 660, 132, nullptr, 0};
  assert_int_equal(resolve_program(tab, ng, req, &c), CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_string_equal(cake_last_error_message(),
                      "no sm90 route for normgate op 7, d = 128, 5 rows per SM");
  swreq = {CAKE_FAMILY_SWIGLU_MXFP8, 12, 0, 16384, 0, 0, nullptr, 0};
  assert_int_equal(resolve_program(tab, sw, swreq, &c), CAKE_STATUS_UNSUPPORTED_SHAPE);
  assert_string_equal(cake_last_error_message(), "no sm90 route for swiglu_mxfp8 form 12, M*K = 16384");
}

// The family table: each family's entry gives its own shared-memory rule for every program of
// every table, and an unknown family none.
static void test_family_table(void **) {
  assert_null(family_ops(0));
  assert_null(family_ops(4));
  int count = 0;
  const ArchTable *tables = arch_tables(&count);
  for (int t = 0; t < count; ++t) {
    for (int i = 0; i < tables[t].program_count; ++i) {
      const cake_program_desc &p = tables[t].programs[i];
      const FamilyOps *ops = family_ops(p.family);
      assert_non_null(ops);
      assert_int_equal(ops->family, p.family);
      const uint32_t want = p.family == CAKE_FAMILY_NORMGATE     ? normgate_smem_bytes(p)
                            : p.family == CAKE_FAMILY_SWIGLU_FP8 ? swiglu_fp8_dynamic_smem_bytes(p)
                                                                 : swiglu_mxfp8_dynamic_smem_bytes(p);
      // Every SwiGLU + FP8 line of every manifest compiles and fits its CTAs a SM.
      if (p.family == CAKE_FAMILY_SWIGLU_FP8) assert_true(swiglu_fp8_program_ok(p));
      assert_int_equal(ops->dynamic_smem_bytes(p), want);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables_are_consistent),   cmocka_unit_test(test_every_program_is_routed),
      cmocka_unit_test(test_routes_cover_every_size),
      cmocka_unit_test(test_normgate_every_width_routes),
      cmocka_unit_test(test_normgate_forward_routes), cmocka_unit_test(test_normgate_backward_wave_routes),
      cmocka_unit_test(test_forced_program_query),
      cmocka_unit_test(test_normgate_launch_shapes),  cmocka_unit_test(test_image_selection),
      cmocka_unit_test(test_resolve_program),         cmocka_unit_test(test_family_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
