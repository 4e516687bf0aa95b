// The SwiGLU + MXFP8 kernel body run on the CPU (tests/host/cuda_host_emulation.h) against the
// host model, byte for byte: every form, programs covering every knob (tile shapes with partial
// tiles, 1 and 2 rows per thread, several passes, grid striding, all sigmoid x band forms), shapes
// with scale padding, block-scaled inputs with exponents over [-100, 100] (many gates take the
// band path) and NaN/Inf. The emulator replaces ex2.approx by a correctly rounded 2^t, so the
// model runs with cake_ref::host_sigmoid_table(). Host only; the GPU test repeats this on the
// device with the device's measured table.
#include "cuda_host_emulation.h"

#define CAKE_KERNEL_NAME(sym) emu_##sym
#include "swiglu_mxfp8_kernel.cuh"

CAKE_EMULATION_GLOBALS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <random>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include "families/swiglu_mxfp8_launch.h"
#include "swiglu_emu_common.h"
#include "swiglu_mxfp8_gpu_checks.h"
#include "swiglu_mxfp8_ref.h"

// sym, form, threads, min_ctas, tile_rows, tile_cols, rows_per_thread, load_hint, sigmoid, band,
// pipeline, group_rows[, col_lanes[, slot_cols[, row_from_tile]]]
#define EMU_PROGRAMS(X)                                         \
  X(fr_a, CAKE_SW_FWD_ROW, 128, 4, 1, 2048, 1, 0, 2, 0, 0, 0)   \
  X(fr_b, CAKE_SW_FWD_ROW, 128, 4, 2, 2048, 2, 1, 1, 0, 0, 0)   \
  X(fr_c, CAKE_SW_FWD_ROW, 64, 8, 4, 512, 1, 2, 2, 2, 0, 0)     \
  X(fr_d, CAKE_SW_FWD_ROW, 32, 8, 2, 256, 1, 0, 1, 1, 0, 0)     \
  X(fc_a, CAKE_SW_FWD_COL, 128, 4, 32, 64, 1, 0, 1, 0, 0, 0)    \
  X(fc_b, CAKE_SW_FWD_COL, 128, 4, 64, 64, 2, 1, 2, 1, 0, 0)    \
  X(fc_c, CAKE_SW_FWD_COL, 64, 12, 32, 32, 1, 0, 2, 0, 0, 0)    \
  X(fc_d, CAKE_SW_FWD_COL, 32, 8, 32, 128, 1, 2, 1, 2, 0, 0)    \
  X(fb_a, CAKE_SW_FWD_BOTH, 128, 4, 32, 128, 1, 1, 1, 2, 0, 0)  \
  X(fb_b, CAKE_SW_FWD_BOTH, 64, 12, 32, 32, 1, 0, 2, 0, 0, 0)   \
  X(fb_c, CAKE_SW_FWD_BOTH, 64, 4, 64, 64, 2, 0, 2, 0, 0, 0)    \
  X(br_a, CAKE_SW_BWD_ROW, 128, 4, 1, 2048, 1, 0, 2, 0, 0, 0)   \
  X(br_b, CAKE_SW_BWD_ROW, 128, 4, 2, 2048, 2, 1, 1, 1, 0, 0)   \
  X(br_c, CAKE_SW_BWD_ROW, 64, 12, 32, 32, 1, 0, 2, 2, 0, 0)    \
  X(bc_a, CAKE_SW_BWD_COL, 128, 4, 32, 64, 1, 0, 1, 0, 0, 0)    \
  X(bc_b, CAKE_SW_BWD_COL, 64, 12, 32, 32, 1, 2, 2, 1, 0, 0)    \
  X(bc_c, CAKE_SW_BWD_COL, 64, 4, 64, 32, 2, 0, 2, 0, 0, 0)     \
  X(bb_a, CAKE_SW_BWD_BOTH, 128, 4, 32, 128, 1, 1, 1, 2, 0, 0)  \
  X(bb_b, CAKE_SW_BWD_BOTH, 64, 12, 32, 32, 1, 0, 1, 0, 0, 0)   \
  X(bb_c, CAKE_SW_BWD_BOTH, 128, 2, 64, 64, 2, 0, 2, 1, 0, 0)   \
  X(fr_p, CAKE_SW_FWD_ROW, 128, 4, 2, 2048, 2, 1, 1, 3, 1, 0)   \
  X(fr_q, CAKE_SW_FWD_ROW, 64, 8, 4, 512, 1, 0, 2, 3, 1, 0)     \
  X(fc_p, CAKE_SW_FWD_COL, 128, 4, 64, 64, 2, 1, 1, 3, 1, 0)    \
  X(fc_q, CAKE_SW_FWD_COL, 32, 8, 32, 128, 1, 2, 1, 3, 1, 0)    \
  X(fc_g, CAKE_SW_FWD_COL, 128, 4, 64, 64, 2, 1, 1, 3, 0, 0)    \
  X(fb_p, CAKE_SW_FWD_BOTH, 128, 4, 32, 128, 1, 1, 1, 3, 1, 0)  \
  X(fb_q, CAKE_SW_FWD_BOTH, 64, 4, 64, 64, 2, 0, 2, 2, 1, 0)    \
  X(br_p, CAKE_SW_BWD_ROW, 128, 4, 2, 2048, 2, 1, 1, 3, 1, 0)   \
  X(br_q, CAKE_SW_BWD_ROW, 64, 12, 32, 32, 1, 0, 1, 1, 1, 0)    \
  X(bc_p, CAKE_SW_BWD_COL, 128, 4, 64, 64, 2, 1, 1, 3, 1, 0)    \
  X(bc_q, CAKE_SW_BWD_COL, 64, 4, 64, 32, 2, 0, 2, 3, 1, 0)     \
  X(bb_p, CAKE_SW_BWD_BOTH, 128, 4, 64, 64, 2, 1, 1, 3, 1, 0)   \
  X(bb_q, CAKE_SW_BWD_BOTH, 128, 2, 64, 64, 2, 0, 2, 1, 1, 0)   \
  X(fc_r, CAKE_SW_FWD_COL, 32, 8, 32, 32, 1, 1, 1, 1, 0, 3)     \
  X(fc_s, CAKE_SW_FWD_COL, 128, 4, 64, 64, 2, 1, 1, 3, 1, 2)    \
  X(fb_r, CAKE_SW_FWD_BOTH, 64, 4, 32, 64, 1, 1, 1, 2, 0, 3)    \
  X(br_r, CAKE_SW_BWD_ROW, 64, 4, 4, 256, 1, 1, 1, 1, 0, 5)     \
  X(bc_r, CAKE_SW_BWD_COL, 64, 4, 32, 32, 1, 1, 1, 1, 1, 3)     \
  X(bb_r, CAKE_SW_BWD_BOTH, 64, 4, 32, 32, 1, 1, 1, 2, 0, 2)   \
  X(fr_s, CAKE_SW_FWD_ROW, 128, 4, 2, 1024, 1, 0, 1, 0, 2, 0)   \
  X(fr_t, CAKE_SW_FWD_ROW, 128, 4, 16, 256, 2, 0, 1, 3, 3, 0)   \
  X(fc_t, CAKE_SW_FWD_COL, 128, 2, 64, 64, 2, 0, 1, 3, 2, 32)   \
  X(fc_u, CAKE_SW_FWD_COL, 32, 4, 32, 32, 1, 0, 2, 2, 4, 3)     \
  X(fb_t, CAKE_SW_FWD_BOTH, 256, 2, 64, 128, 2, 0, 1, 3, 3, 0)  \
  X(br_t, CAKE_SW_BWD_ROW, 128, 3, 16, 256, 2, 0, 1, 1, 3, 0)   \
  X(br_u, CAKE_SW_BWD_ROW, 64, 4, 2, 512, 1, 0, 2, 0, 2, 0)     \
  X(bc_t, CAKE_SW_BWD_COL, 128, 2, 64, 64, 2, 0, 1, 1, 3, 8)    \
  X(fc_p2, CAKE_SW_FWD_COL, 64, 4, 32, 32, 1, 0, 1, 3, 2, -2)   \
  X(fb_p2, CAKE_SW_FWD_BOTH, 128, 2, 64, 64, 2, 0, 1, 3, 3, -2) \
  X(bc_p2, CAKE_SW_BWD_COL, 128, 2, 64, 64, 2, 0, 1, 1, 2, -2)  \
  X(bb_p2, CAKE_SW_BWD_BOTH, 64, 4, 32, 32, 1, 0, 1, 2, 2, -2)  \
  X(bb_t, CAKE_SW_BWD_BOTH, 128, 2, 64, 64, 2, 0, 1, 2, 2, 8)   \
  X(bb_u, CAKE_SW_BWD_BOTH, 64, 2, 32, 64, 1, 0, 2, 0, 5, 0)    \
  X(fc_v, CAKE_SW_FWD_COL, 512, 1, 256, 64, 2, 0, 1, 3, 3, 0)   \
  X(fb_v, CAKE_SW_FWD_BOTH, 512, 1, 128, 128, 2, 0, 1, 3, 2, 0) \
  X(bb_v, CAKE_SW_BWD_BOTH, 512, 1, 128, 64, 1, 0, 1, 2, 2, 0)  \
  X(bc_v, CAKE_SW_BWD_COL, 128, 1, 64, 32, 1, 0, 1, 1, 3, 2)    \
  X(fc_w, CAKE_SW_FWD_COL, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0)    \
  X(fb_w, CAKE_SW_FWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0)   \
  X(bc_w, CAKE_SW_BWD_COL, 512, 1, 128, 64, 1, 0, 1, 1, 3, -2)  \
  X(fc_x, CAKE_SW_FWD_COL, 256, 2, 128, 64, 2, 0, 1, 3, 2, -2)   \
  X(bc_l4, CAKE_SW_BWD_COL, 512, 1, 128, 64, 1, 0, 1, 1, 3, -2, 4) \
  X(bc_l8, CAKE_SW_BWD_COL, 512, 1, 128, 64, 1, 0, 1, 1, 3, -2, 8) \
  X(bb_l4, CAKE_SW_BWD_BOTH, 512, 1, 128, 64, 1, 0, 1, 2, 2, -2, 4) \
  X(fb_l8, CAKE_SW_FWD_BOTH, 512, 1, 128, 128, 2, 0, 1, 3, 2, -2, 8) \
  X(fc_l4, CAKE_SW_FWD_COL, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 4)  \
  X(fc_l4g, CAKE_SW_FWD_COL, 128, 5, 64, 64, 2, 1, 1, 3, 1, 32, 4) \
  X(bb_l16, CAKE_SW_BWD_BOTH, 512, 1, 256, 32, 1, 0, 1, 2, 0, 0, 16) \
  X(fc_l32, CAKE_SW_FWD_COL, 256, 1, 512, 32, 2, 0, 1, 3, 0, 0, 32) \
  X(fr_g32, CAKE_SW_FWD_ROW, 64, 12, 32, 32, 1, 0, 1, 3, 0, 0)  \
  X(fb_g32, CAKE_SW_FWD_BOTH, 64, 12, 32, 32, 1, 0, 1, 3, 0, 0) \
  X(br_g32, CAKE_SW_BWD_ROW, 64, 12, 32, 32, 1, 0, 1, 3, 0, 0)  \
  X(bc_g32, CAKE_SW_BWD_COL, 64, 12, 32, 32, 1, 0, 1, 3, 0, 0)  \
  X(fr_s8, CAKE_SW_FWD_ROW, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8) \
  X(fr_s8b, CAKE_SW_FWD_ROW, 64, 4, 32, 64, 2, 0, 1, 2, 1, 0, 0, 8) \
  X(fc_s8, CAKE_SW_FWD_COL, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8) \
  X(fc_s8b, CAKE_SW_FWD_COL, 64, 8, 64, 64, 2, 0, 2, 0, 1, 0, 0, 8) \
  X(fb_s8, CAKE_SW_FWD_BOTH, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8) \
  X(fb_s8b, CAKE_SW_FWD_BOTH, 64, 4, 64, 32, 2, 1, 2, 2, 0, 3, 0, 8) \
  X(br_s8, CAKE_SW_BWD_ROW, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8) \
  X(bc_s8, CAKE_SW_BWD_COL, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8) \
  X(bb_s8, CAKE_SW_BWD_BOTH, 128, 5, 32, 32, 1, 0, 1, 2, 0, 0, 0, 8) \
  X(bb_s8b, CAKE_SW_BWD_BOTH, 128, 4, 64, 64, 2, 0, 1, 1, 1, 0, 0, 8) \
  X(fb_rt, CAKE_SW_FWD_BOTH, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8, 1) \
  X(bb_rt, CAKE_SW_BWD_BOTH, 128, 5, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8, 1) \
  X(fb_rt2, CAKE_SW_FWD_BOTH, 64, 4, 64, 64, 2, 1, 2, 2, 1, 3, 0, 0, 1) \
  X(bb_rt2, CAKE_SW_BWD_BOTH, 64, 4, 32, 64, 1, 0, 2, 0, 0, 0, 2, 0, 1)

#define EMU_INSTANTIATE(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, ...) \
  CAKE_SWIGLU_PROGRAM(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, __VA_ARGS__)
EMU_PROGRAMS(EMU_INSTANTIATE)

namespace {

namespace mx = cake::mx;

struct EmuProgram {
  const char *name;
  void (*fn)(cake_swiglu_mxfp8_params);
  cake_program_desc desc;
};

#define EMU_ENTRY(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, ...)            \
  {#sym, emu_##sym,                                                                        \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_MXFP8, form, threads, ctas,                            \
    {tr, tc, rpt, hint, sig, band, __VA_ARGS__}}},
const EmuProgram kPrograms[] = {EMU_PROGRAMS(EMU_ENTRY)};

using cake_swiglu_emu::Inputs;
using cake_swiglu_emu::table;

// Block-scaled normals (exponent per 32 values over [-kspan, kspan]) with a few specials.
Inputs make_inputs(int64_t M, int64_t K, int kspan, bool specials, uint32_t seed) {
  Inputs x;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ke(-kspan, kspan);
  x.in.resize((size_t)(M * 2 * K));
  x.grad.resize((size_t)(M * K));
  for (size_t i = 0; i < x.in.size(); i += 32) {
    const int k = ke(rng);
    for (size_t j = 0; j < 32; ++j) x.in[i + j] = mx::bf16_rn(ldexpf(nd(rng), k));
  }
  for (size_t i = 0; i < x.grad.size(); i += 32) {
    const int k = ke(rng);
    for (size_t j = 0; j < 32; ++j) x.grad[i + j] = mx::bf16_rn(ldexpf(nd(rng), k));
  }
  if (specials) {
    cake_swiglu_emu::add_nonfinite(&x, K);
    for (int j = 0; j < 32; ++j) x.in[(size_t)(5 * 2 * K + 32 + j)] = 0;  // zero gates
  }
  return x;
}

// Runs one program on one shape and compares with the model.
void run_case(const EmuProgram &prog, int64_t M, int64_t K, int sm_count, int kspan, bool specials) {
  const int form = prog.desc.op;
  const Inputs x = make_inputs(M, K, kspan, specials, (uint32_t)(M * 131 + K * 7 + form));
  cake::SwigluMxfp8Sizes sz;
  assert_true(cake::swiglu_mxfp8_sizes(form, M, K, &sz));
  std::vector<uint8_t> rq((size_t)sz.row_q_bytes, 0xAB), rs((size_t)sz.row_s_bytes, 0xAB);
  std::vector<uint8_t> cq((size_t)sz.col_q_bytes, 0xAB), cs((size_t)sz.col_s_bytes, 0xAB);
  cake_swiglu_mxfp8_params p;
  assert_true(cake::swiglu_mxfp8_program_ok(prog.desc));
  assert_true(cake::swiglu_mxfp8_fill_params(prog.desc, M, K, x.in.data(), x.grad.data(),
                                             rq.data(), rs.data(), cq.data(), cs.data(), &p));
  const cake::LaunchShape ls = cake::swiglu_mxfp8_launch_shape(prog.desc, M, K, sm_count);
  cake_emu::launch([&] { prog.fn(p); }, ls.grid[0], ls.block);

  cake_ref::Mxfp8Out want;
  cake_ref::swiglu_mxfp8_model(form, x.in.data(), x.grad.data(), M, K, table().data(), &want);
  const cake_gpu_checks::CompareReport r = cake_gpu_checks::compare_outputs(
      form, M, K, want, rq.data(), rs.data(), cq.data(), cs.data());
  if (!r.ok) {
    fprintf(stderr, "%s M=%lld K=%lld grid=%u: %s", prog.name, (long long)M, (long long)K,
            ls.grid[0], r.summary().c_str());
  }
  assert_true(r.ok);
  const cake_gpu_checks::CompareReport pad =
      cake_gpu_checks::check_scale_padding(form, M, K, rs.data(), cs.data());
  assert_true(pad.ok);
}

void test_all_programs(void **) {
  // (M, K): aligned; partial tiles along K and M; scale padding in both layouts; 128-row tiles
  // and pairs of them with staged scales (256 x 192) next to partial ones (544 x 96).
  const int64_t shapes[][2] = {{128, 128}, {96, 160}, {160, 96}, {64, 2080}, {544, 96}, {256, 192}};
  int cases = 0;
  for (const EmuProgram &prog : kPrograms) {
    for (const auto &sh : shapes) {
      for (int sm : {1, 3}) {  // 1: one CTA strides over every tile; 3: a few CTAs
        run_case(prog, sh[0], sh[1], sm, 100, true);
        ++cases;
      }
    }
  }
  print_message("%d emulated cases, %zu programs\n", cases, sizeof(kPrograms) / sizeof(kPrograms[0]));
}

// The range rows (tests/reference/swiglu_range_ref.h: gates at and near the ends of BF16's range
// and where dact * grad overflows FP32, against ups and grads at BF16 max, -max, the smallest
// normal and 0) through every program, both layouts: the model's bytes (its wide dgate
// included), no NaN byte outside a block holding an Inf.
void test_range_rows(void **) {
  const int64_t M = 128, K = 256;
  int cases = 0;
  for (int layout = 0; layout < 2; ++layout) {
    const cake_swiglu_emu::RangeRows rows = cake_swiglu_emu::range_rows(layout, M, K);
    const Inputs &x = rows.x;
    for (const EmuProgram &prog : kPrograms) {
      const int form = prog.desc.op;
      cake::SwigluMxfp8Sizes sz;
      assert_true(cake::swiglu_mxfp8_sizes(form, M, K, &sz));
      std::vector<uint8_t> rq((size_t)sz.row_q_bytes, 0xAB), rs((size_t)sz.row_s_bytes, 0xAB);
      std::vector<uint8_t> cq((size_t)sz.col_q_bytes, 0xAB), cs((size_t)sz.col_s_bytes, 0xAB);
      cake_swiglu_mxfp8_params p;
      assert_true(cake::swiglu_mxfp8_fill_params(prog.desc, M, K, x.in.data(), x.grad.data(),
                                                 rq.data(), rs.data(), cq.data(), cs.data(), &p));
      const cake::LaunchShape ls = cake::swiglu_mxfp8_launch_shape(prog.desc, M, K, 2);
      cake_emu::launch([&] { prog.fn(p); }, ls.grid[0], ls.block);
      cake_ref::Mxfp8Out want;
      cake_ref::swiglu_mxfp8_model(form, x.in.data(), x.grad.data(), M, K, table().data(), &want);
      const cake_gpu_checks::CompareReport r = cake_gpu_checks::compare_outputs(
          form, M, K, want, rq.data(), rs.data(), cq.data(), cs.data());
      if (!r.ok) fprintf(stderr, "%s layout %d: %s", prog.name, layout, r.summary().c_str());
      assert_true(r.ok);
      const cake_ref::RangeReport rr = cake_ref::check_range_mxfp8(
          form, M, K, rows.y[form >= 3], rq.data(), rs.data(), cq.data(), cs.data());
      if (!rr.ok) fprintf(stderr, "%s layout %d: %s", prog.name, layout, rr.detail.c_str());
      assert_true(rr.ok);
      ++cases;
    }
  }
  print_message("%d range-row cases\n", cases);
}

void test_both_equals_parts(void **) {
  // Device-style: run the rowwise, colwise and both programs, compare both with the parts.
  for (int bwd = 0; bwd < 2; ++bwd) {
    const int64_t M = 96, K = 160;
    const Inputs x = make_inputs(M, K, 30, true, 77 + bwd);
    std::vector<uint8_t> out[3][4];
    const char *names[3] = {bwd ? "br_b" : "fr_b", bwd ? "bc_a" : "fc_a", bwd ? "bb_a" : "fb_a"};
    for (int o = 0; o < 3; ++o) {
      const EmuProgram *prog = nullptr;
      for (const EmuProgram &pp : kPrograms) {
        if (std::string(pp.name) == names[o]) prog = &pp;
      }
      assert_non_null(prog);
      cake::SwigluMxfp8Sizes sz;
      assert_true(cake::swiglu_mxfp8_sizes(prog->desc.op, M, K, &sz));
      out[o][0].assign((size_t)sz.row_q_bytes, 0xCD);
      out[o][1].assign((size_t)sz.row_s_bytes, 0xCD);
      out[o][2].assign((size_t)sz.col_q_bytes, 0xCD);
      out[o][3].assign((size_t)sz.col_s_bytes, 0xCD);
      cake_swiglu_mxfp8_params p;
      assert_true(cake::swiglu_mxfp8_fill_params(prog->desc, M, K, x.in.data(), x.grad.data(),
                                                 out[o][0].data(), out[o][1].data(),
                                                 out[o][2].data(), out[o][3].data(), &p));
      const cake::LaunchShape ls = cake::swiglu_mxfp8_launch_shape(prog->desc, M, K, 2);
      cake_emu::launch([&] { prog->fn(p); }, ls.grid[0], ls.block);
    }
    const cake_gpu_checks::CompareReport r = cake_gpu_checks::compare_both_with_parts(
        bwd, M, K, out[2][0].data(), out[2][1].data(), out[2][2].data(), out[2][3].data(),
        out[0][0].data(), out[0][1].data(), out[1][2].data(), out[1][3].data());
    if (!r.ok) fprintf(stderr, "%s", r.summary().c_str());
    assert_true(r.ok);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_programs),
      cmocka_unit_test(test_both_equals_parts),
      cmocka_unit_test(test_range_rows),
  };
  return cmocka_run_group_tests_name("swiglu_mxfp8_emulated", tests, NULL, NULL);
}
