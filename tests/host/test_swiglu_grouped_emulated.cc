// The grouped SwiGLU kernel bodies (both families) run on the CPU (tests/host/cuda_host_emulation.h)
// against the grouped host model (tests/reference/swiglu_grouped_ref.h), byte for byte over
// whole poisoned buffers (the bytes the spec leaves unwritten must keep the poison): every
// grouped form, the tables' grouped programs and programs covering the other knobs a grouped
// form takes (register and staged schedules, tile rows 2..128, tile pairs, aligned col_q runs,
// 8-column slots, rows from the tile, several stages and phase-2 lanes; FP8 blockwise tile rows 4..128, load
// batches, the pipelined schedule), both scale rules, expert sizes 0, 1, 31, 33, 127, 129 and random ones,
// token counts that leave col_q unaligned, one CTA striding over every tile and several CTAs;
// offsets that decrease or pass T against the effective offsets, and the status word.
#include "cuda_host_emulation.h"

#define CAKE_KERNEL_NAME(sym) emu_##sym
#include "swiglu_fp8_kernel.cuh"
#include "swiglu_mxfp8_kernel.cuh"

CAKE_EMULATION_GLOBALS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_grouped_launch.h"
#include "families/swiglu_mxfp8_launch.h"
#include "swiglu_emu_common.h"
#include "swiglu_grouped_ref.h"
#include "swiglu_mxfp8_ref.h"

// MXFP8: sym, form, threads, min_ctas, tile_rows, tile_cols, rows_per_thread, load_hint, sigmoid,
// band, pipeline, group_rows[, col_lanes[, slot_cols[, row_from_tile[, variant[, col_runs]]]]].
// The first six are the tables' grouped programs (kernels/common/swiglu_grouped.def); the _p and
// _pw ones its tile-pair candidates, the _ru ones its aligned-run candidates.
#define EMU_MX_PROGRAMS(X)                                                  \
  X(mg_fr, CAKE_SWG_FWD_ROW, 128, 8, 8, 256, 1, 0, 1, 3, 2, 0)             \
  X(mg_fc, CAKE_SWG_FWD_COL, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 4)          \
  X(mg_fb, CAKE_SWG_FWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 4)         \
  X(mg_br, CAKE_SWG_BWD_ROW, 128, 6, 8, 256, 1, 0, 1, 3, 2, 0)             \
  X(mg_bc, CAKE_SWG_BWD_COL, 256, 3, 64, 64, 1, 0, 1, 1, 2, 0, 4)          \
  X(mg_bb, CAKE_SWG_BWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 2, 2, 0, 4)         \
  X(mg_fr_r, CAKE_SWG_FWD_ROW, 32, 4, 2, 512, 2, 1, 2, 0, 0, 0)            \
  X(mg_fc_r, CAKE_SWG_FWD_COL, 64, 12, 32, 32, 1, 0, 2, 0, 0, 0)           \
  X(mg_fb_s8, CAKE_SWG_FWD_BOTH, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8, 1) \
  X(mg_br_s8, CAKE_SWG_BWD_ROW, 128, 6, 32, 32, 1, 0, 1, 3, 0, 0, 0, 8)    \
  X(mg_bc_r, CAKE_SWG_BWD_COL, 128, 4, 64, 64, 2, 1, 1, 3, 0, 0)           \
  X(mg_bb_r, CAKE_SWG_BWD_BOTH, 64, 12, 32, 32, 1, 0, 1, 2, 0, 0)          \
  X(mg_fc_s4, CAKE_SWG_FWD_COL, 32, 4, 32, 32, 1, 0, 2, 2, 4, 0)           \
  X(mg_fb_w, CAKE_SWG_FWD_BOTH, 512, 1, 128, 128, 2, 0, 1, 3, 2, 0, 8)     \
  X(mg_bb_w, CAKE_SWG_BWD_BOTH, 512, 1, 128, 64, 1, 0, 1, 2, 2, 0)          \
  X(mg_fc_p, CAKE_SWG_FWD_COL, 256, 2, 128, 64, 2, 0, 1, 3, 2, -2, 4)      \
  X(mg_fb_pw, CAKE_SWG_FWD_BOTH, 512, 1, 128, 128, 2, 0, 1, 3, 2, -2, 8)   \
  X(mg_bc_pw, CAKE_SWG_BWD_COL, 512, 1, 128, 64, 1, 0, 1, 1, 3, -2, 4)     \
  X(mg_bb_pw, CAKE_SWG_BWD_BOTH, 512, 1, 128, 64, 1, 0, 1, 2, 2, -2, 4)    \
  X(mg_fb_p32, CAKE_SWG_FWD_BOTH, 64, 4, 32, 32, 1, 0, 1, 3, 2, -2)                    \
  X(mg_fc_ru, CAKE_SWG_FWD_COL, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 4, 0, 0, 0, 1)      \
  X(mg_fb_ru, CAKE_SWG_FWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 4, 0, 0, 0, 1)     \
  X(mg_bc_ru, CAKE_SWG_BWD_COL, 256, 3, 64, 64, 1, 0, 1, 1, 2, 0, 4, 0, 0, 0, 1)      \
  X(mg_bb_ru, CAKE_SWG_BWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 2, 2, 0, 4, 0, 0, 0, 1)     \
  X(mg_fb_ru2, CAKE_SWG_FWD_BOTH, 256, 3, 64, 64, 1, 0, 1, 3, 2, 0, 2, 0, 0, 0, 1)    \
  X(mg_fc_rur, CAKE_SWG_FWD_COL, 64, 12, 32, 32, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1)     \
  X(mg_bb_pru, CAKE_SWG_BWD_BOTH, 512, 1, 128, 64, 1, 0, 1, 2, 2, -2, 4, 0, 0, 0, 1)

// FP8 blockwise: sym, form, threads, min_ctas, tile_rows, rows_per_thread, load_hint, sigmoid,
// band, batch, pipeline, tail. The first six are the tables' grouped programs.
#define EMU_F8_PROGRAMS(X)                                            \
  X(fg_fr, CAKE_SWG_FWD_ROW, 128, 8, 16, 1, 0, 1, 3, 0, 0, 1)         \
  X(fg_br, CAKE_SWG_BWD_ROW, 128, 6, 16, 1, 0, 1, 3, 0, 0, 1)         \
  X(fg_fc, CAKE_SWG_FWD_COL, 256, 2, 128, 1, 0, 1, 3, 0, 1, 1)        \
  X(fg_fb, CAKE_SWG_FWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 0, 1, 1)       \
  X(fg_bc, CAKE_SWG_BWD_COL, 512, 1, 128, 1, 0, 1, 3, 0, 1, 1)        \
  X(fg_bb, CAKE_SWG_BWD_BOTH, 512, 1, 128, 1, 0, 1, 1, 0, 1, 1)       \
  X(fg_fr_t4, CAKE_SWG_FWD_ROW, 32, 16, 4, 1, 1, 2, 0, 0, 0, 1)       \
  X(fg_br_p, CAKE_SWG_BWD_ROW, 64, 4, 16, 2, 2, 1, 2, 0, 1, 1)        \
  X(fg_fc_b, CAKE_SWG_FWD_COL, 128, 4, 128, 2, 1, 2, 2, 2, 0, 1)      \
  X(fg_bb_b, CAKE_SWG_BWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 2, 0, 1)

#define EMU_MX_INSTANTIATE(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, ...) \
  CAKE_SWIGLU_PROGRAM(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, __VA_ARGS__)
EMU_MX_PROGRAMS(EMU_MX_INSTANTIATE)
#define EMU_F8_INSTANTIATE(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail) \
  CAKE_SWIGLU_FP8_PROGRAM(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail)
EMU_F8_PROGRAMS(EMU_F8_INSTANTIATE)

namespace {

namespace mx = cake::mx;

struct MxProgram {
  const char *name;
  void (*fn)(cake_swiglu_mxfp8_grouped_params);
  cake_program_desc desc;
};
struct F8Program {
  const char *name;
  void (*fn)(cake_swiglu_fp8_grouped_params);
  cake_program_desc desc;
};

#define EMU_MX_ENTRY(sym, form, threads, ctas, tr, tc, rpt, hint, sig, band, ...) \
  {#sym, emu_##sym,                                                                \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_MXFP8, form, threads, ctas,                    \
    {tr, tc, rpt, hint, sig, band, __VA_ARGS__}}},
const MxProgram kMxPrograms[] = {EMU_MX_PROGRAMS(EMU_MX_ENTRY)};
#define EMU_F8_ENTRY(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail) \
  {#sym, emu_##sym,                                                                        \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_FP8, form, threads, ctas,                               \
    {tr, rpt, hint, sig, band, batch, pipe, tail}}},
const F8Program kF8Programs[] = {EMU_F8_PROGRAMS(EMU_F8_ENTRY)};

using cake_swiglu_emu::Inputs;
using cake_swiglu_emu::table;

constexpr uint8_t kPoison = 0xA5;

// Block-scaled normals (an exponent per 32 values over [-40, 40]) and, with K >= 64, the
// non-finite specials in rows 0..4 (whichever experts hold them).
Inputs make_inputs(int64_t T, int64_t K, uint32_t seed) {
  Inputs x;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ke(-40, 40);
  x.in.resize((size_t)(T * 2 * K));
  x.grad.resize((size_t)(T * K));
  for (std::vector<uint16_t> *v : {&x.in, &x.grad}) {
    int k = 0;
    for (size_t i = 0; i < v->size(); ++i) {
      if (i % 32 == 0) k = ke(rng);
      (*v)[i] = mx::bf16_rn(ldexpf(nd(rng), k));
    }
  }
  if (K >= 64 && T >= 5) cake_swiglu_emu::add_nonfinite(&x, K);
  return x;
}

// One grouped case: the experts' end offsets (which may break the rules) and T, K.
struct Case {
  int64_t T, K;
  std::vector<int32_t> offsets;
};

// k_unit: the family's K multiple (MXFP8 32, FP8 blockwise 128).
std::vector<Case> cases(int64_t k_unit) {
  const bool mxfp8 = k_unit == 32;
  std::vector<Case> c;
  c.push_back({700, (mxfp8 ? 3 : 2) * k_unit, cake_ref::grouped_test_offsets(700, 8, 11)});
  c.push_back({256, 2 * k_unit, {33, 33, 200}});  // the spec's MXFP8 example's split
  c.push_back({513, (mxfp8 ? 5 : 1) * k_unit,
               cake_ref::grouped_test_offsets(513, 12, 12)});  // T odd: col_q unaligned
  c.push_back({128, k_unit, {128}});                           // one expert: the ungrouped call
  c.push_back({96, 2 * k_unit, cake_ref::grouped_test_offsets(96, 40, 13)});  // many empty
  // Experts starting on 16-row boundaries (col_q aligned, the tile pairs' case): whole pairs,
  // pairs with a partial lower tile, a unit of one whole or one partial tile, an empty expert.
  c.push_back({1424, (mxfp8 ? 4 : 1) * k_unit, {16, 288, 288, 560, 832, 1040, 1424}});
  return c;
}

// Offsets no valid call has: decreasing, negative, past T (the effective offsets and the status
// word of the spec).
std::vector<Case> invalid_cases(int64_t k_unit) {
  return {{300, k_unit, {100, 40, 250, 900}},  // decreasing, then past T
          {200, k_unit, {-5, 60, 60, 130}},    // negative first offset
          {160, k_unit, {170, 10}}};           // past T first, then below the running end
}

template <class Program, class Params, class Fill>
bool run_one(const Program &prog, const Case &c, int sm, int rule, Fill fill) {
  const int form = prog.desc.op, base = cake::sw_base_form(form);
  const int64_t E = (int64_t)c.offsets.size();
  const Inputs x = make_inputs(c.T, c.K, (uint32_t)(c.T * 7 + c.K + form * 131 + E));
  cake::SwigluGroupedSizes sz;
  const bool mxfp8 = prog.desc.family == CAKE_FAMILY_SWIGLU_MXFP8;
  assert_true(mxfp8 ? cake::swiglu_mxfp8_grouped_sizes(form, c.T, c.K, E, &sz)
                    : cake::swiglu_fp8_grouped_sizes(form, c.T, c.K, E, &sz));
  std::vector<uint8_t> rq((size_t)sz.row_q_bytes, kPoison), rs((size_t)sz.row_s_bytes, kPoison);
  std::vector<uint8_t> cq((size_t)sz.col_q_bytes, kPoison), cs((size_t)sz.col_s_bytes, kPoison);
  int32_t status = -1;
  const cake::SwigluGroupedTensors t = {x.in.data(), x.grad.data(), c.offsets.data(),
                                        rq.data(),   rs.data(),     cq.data(),
                                        cs.data(),   &status};
  Params p;
  assert_true(fill(prog.desc, c, t, &p));
  const cake::LaunchShape ls = cake::swiglu_grouped_launch_shape(prog.desc, c.T, c.K, E, sm);
  assert_true(ls.smem_bytes <= 227 * 1024);
  cake_emu::launch([&] { prog.fn(p); }, ls.grid[0], ls.block);

  cake_ref::GroupedOut want;
  if (mxfp8) {
    cake_ref::swiglu_mxfp8_grouped_model(base, x.in.data(), x.grad.data(), c.T, c.K, c.offsets,
                                         table().data(), kPoison, &want);
  } else {
    cake_ref::swiglu_fp8_grouped_model(base, x.in.data(), x.grad.data(), c.T, c.K, c.offsets,
                                       table().data(), rule, kPoison, &want);
  }
  const cake_ref::GroupedCompare r =
      cake_ref::grouped_compare(base, want, rq.data(), rs.data(), cq.data(), cs.data());
  const int32_t want_status = cake_ref::grouped_rows(c.offsets, c.T).status;
  if (!r.ok || status != want_status) {
    fprintf(stderr, "%s T=%lld K=%lld E=%lld grid=%u rule %d: status %d (want %d), %s", prog.name,
            (long long)c.T, (long long)c.K, (long long)E, ls.grid[0], rule, status, want_status,
            r.detail.c_str());
    return false;
  }
  return true;
}

bool mx_fill(const cake_program_desc &prog, const Case &c, const cake::SwigluGroupedTensors &t,
             cake_swiglu_mxfp8_grouped_params *p) {
  return cake::swiglu_mxfp8_grouped_fill_params(prog, c.T, c.K, (int64_t)c.offsets.size(), t, p);
}

template <int kRule>
bool f8_fill(const cake_program_desc &prog, const Case &c, const cake::SwigluGroupedTensors &t,
             cake_swiglu_fp8_grouped_params *p) {
  return cake::swiglu_fp8_grouped_fill_params(prog, c.T, c.K, (int64_t)c.offsets.size(), kRule,
                                              t, p);
}

void test_mxfp8_programs(void **) {
  int n = 0;
  for (const MxProgram &prog : kMxPrograms) {
    assert_true(cake::swiglu_mxfp8_program_ok(prog.desc));
    for (const Case &c : cases(32)) {
      for (int sm : {1, 3}) {
        assert_true((run_one<MxProgram, cake_swiglu_mxfp8_grouped_params>(prog, c, sm, 0,
                                                                           mx_fill)));
        ++n;
      }
    }
  }
  print_message("%d grouped MXFP8 cases, %zu programs\n", n,
                sizeof kMxPrograms / sizeof kMxPrograms[0]);
}

void test_fp8_programs(void **) {
  int n = 0;
  for (const F8Program &prog : kF8Programs) {
    assert_true(cake::swiglu_fp8_program_ok(prog.desc));
    for (const Case &c : cases(128)) {
      for (int rule = 0; rule < 2; ++rule) {
        const int sm = rule ? 3 : 1;
        assert_true(rule ? (run_one<F8Program, cake_swiglu_fp8_grouped_params>(prog, c, sm, 1,
                                                                              f8_fill<1>))
                         : (run_one<F8Program, cake_swiglu_fp8_grouped_params>(prog, c, sm, 0,
                                                                              f8_fill<0>)));
        ++n;
      }
    }
  }
  print_message("%d grouped FP8 blockwise cases, %zu programs\n", n,
                sizeof kF8Programs / sizeof kF8Programs[0]);
}

// Offsets that break the rules: every byte as the effective offsets give, the status word's
// bits, through the tables' grouped programs.
void test_invalid_offsets(void **) {
  for (const MxProgram &prog : kMxPrograms) {
    if (std::string(prog.name).find('_', 3) != std::string::npos) continue;  // tables' only
    for (const Case &c : invalid_cases(32)) {
      assert_true((run_one<MxProgram, cake_swiglu_mxfp8_grouped_params>(prog, c, 2, 0, mx_fill)));
    }
  }
  for (const F8Program &prog : kF8Programs) {
    if (std::string(prog.name).find('_', 3) != std::string::npos) continue;
    for (const Case &c : invalid_cases(128)) {
      assert_true((run_one<F8Program, cake_swiglu_fp8_grouped_params>(prog, c, 2, 0,
                                                                       f8_fill<0>)));
    }
  }
  // The model's effective offsets and status for the first case, written out.
  const cake_ref::GroupRows g = cake_ref::grouped_rows({100, 40, 250, 900}, 300);
  const int64_t want_rows[] = {100, 0, 150, 50};
  for (int e = 0; e < 4; ++e) assert_int_equal(g.rows[e], want_rows[e]);
  assert_int_equal(g.status, CAKE_SWIGLU_GROUPED_OFFSETS_DECREASING |
                                 CAKE_SWIGLU_GROUPED_OFFSETS_PAST_TOKENS);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mxfp8_programs),
      cmocka_unit_test(test_fp8_programs),
      cmocka_unit_test(test_invalid_offsets),
  };
  return cmocka_run_group_tests_name("swiglu_grouped_emulated", tests, NULL, NULL);
}
