// The SwiGLU + FP8 blockwise kernel body run on the CPU (tests/host/cuda_host_emulation.h)
// against the host model (tests/reference/swiglu_fp8_ref.h), byte for byte: every form, both
// scale rules, programs covering every knob (tile rows 1..128, 1 and 2 rows a thread, several
// passes and load batches, the pipelined schedule, grid striding, all sigmoid x band forms, every load hint), shapes
// with M and K not multiples of 512, block-scaled inputs with exponents over [-100, 100],
// NaN/Inf blocks, all-zero blocks and blocks below the amax floor. Also: the kernels' block
// scale (kernels/common/fp8_blockwise_encode.h) equals the model's, written independently, for
// every BF16 amax and both rules; the model's bytes meet the format's semantics (decode error,
// scale range). The emulator replaces ex2.approx by a correctly rounded 2^t, so the model runs
// with cake_ref::host_sigmoid_table(); the GPU test repeats this with the device's table.
#include "cuda_host_emulation.h"

#define CAKE_KERNEL_NAME(sym) emu_##sym
#include "swiglu_fp8_kernel.cuh"

CAKE_EMULATION_GLOBALS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <random>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include "families/swiglu_fp8_launch.h"
#include "fp8_blockwise_encode.h"
#include "swiglu_emu_common.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_mxfp8_ref.h"

// sym, form, threads, min_ctas, tile_rows, rows_per_thread, load_hint, sigmoid, band, batch,
// pipeline, tail (the *_t programs: any M)
#define EMU_PROGRAMS(X)                                        \
  X(fr_a, CAKE_SW_FWD_ROW, 128, 8, 16, 1, 0, 1, 3, 0, 0, 0)       \
  X(fr_b, CAKE_SW_FWD_ROW, 32, 16, 4, 1, 1, 2, 0, 0, 0, 0)        \
  X(fr_c, CAKE_SW_FWD_ROW, 64, 4, 16, 2, 2, 1, 2, 0, 0, 0)        \
  X(fr_d, CAKE_SW_FWD_ROW, 32, 4, 64, 1, 0, 1, 1, 4, 0, 0)        \
  X(fr_e, CAKE_SW_FWD_ROW, 32, 4, 128, 2, 0, 2, 3, 2, 0, 0)       \
  X(fr_p, CAKE_SW_FWD_ROW, 64, 4, 16, 1, 0, 1, 2, 0, 1, 0)        \
  X(fc_a, CAKE_SW_FWD_COL, 256, 2, 128, 1, 0, 1, 3, 0, 0, 0)      \
  X(fc_b, CAKE_SW_FWD_COL, 128, 4, 128, 2, 1, 2, 2, 2, 0, 0)      \
  X(fc_c, CAKE_SW_FWD_COL, 512, 1, 128, 1, 2, 1, 0, 1, 0, 0)      \
  X(fc_p, CAKE_SW_FWD_COL, 256, 2, 128, 1, 0, 1, 3, 0, 1, 0)      \
  X(fb_a, CAKE_SW_FWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 0, 0, 0)     \
  X(fb_b, CAKE_SW_FWD_BOTH, 128, 4, 128, 2, 0, 2, 1, 4, 0, 0)     \
  X(fb_p, CAKE_SW_FWD_BOTH, 512, 1, 128, 2, 1, 2, 2, 0, 1, 0)     \
  X(br_a, CAKE_SW_BWD_ROW, 128, 6, 16, 1, 0, 1, 3, 0, 0, 0)       \
  X(br_b, CAKE_SW_BWD_ROW, 32, 16, 4, 1, 1, 2, 2, 0, 0, 0)        \
  X(br_c, CAKE_SW_BWD_ROW, 64, 4, 32, 2, 2, 1, 0, 1, 0, 0)        \
  X(br_p, CAKE_SW_BWD_ROW, 32, 4, 8, 2, 0, 2, 3, 0, 1, 0)         \
  X(bc_a, CAKE_SW_BWD_COL, 256, 2, 128, 1, 0, 1, 3, 2, 0, 0)      \
  X(bc_b, CAKE_SW_BWD_COL, 128, 2, 128, 2, 1, 2, 1, 1, 0, 0)      \
  X(bc_p, CAKE_SW_BWD_COL, 512, 1, 128, 1, 0, 1, 3, 0, 1, 0)      \
  X(bb_a, CAKE_SW_BWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 2, 0, 0)     \
  X(bb_b, CAKE_SW_BWD_BOTH, 512, 1, 128, 2, 2, 2, 2, 0, 0, 0)     \
  X(bb_p, CAKE_SW_BWD_BOTH, 512, 1, 128, 1, 0, 1, 3, 0, 1, 0)     \
  X(fr_t1, CAKE_SW_FWD_ROW, 128, 8, 16, 1, 0, 1, 3, 0, 0, 1)   \
  X(fr_t2, CAKE_SW_FWD_ROW, 32, 4, 128, 2, 0, 2, 2, 2, 0, 1)   \
  X(fr_t3, CAKE_SW_FWD_ROW, 64, 4, 16, 1, 0, 1, 2, 0, 1, 1)    \
  X(fc_t1, CAKE_SW_FWD_COL, 256, 2, 128, 1, 0, 1, 3, 0, 1, 1)  \
  X(fc_t2, CAKE_SW_FWD_COL, 128, 4, 128, 2, 1, 2, 2, 2, 0, 1)  \
  X(fb_t1, CAKE_SW_FWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 0, 1, 1) \
  X(fb_t2, CAKE_SW_FWD_BOTH, 128, 4, 128, 2, 0, 2, 1, 4, 0, 1) \
  X(br_t1, CAKE_SW_BWD_ROW, 128, 6, 16, 1, 0, 1, 3, 0, 0, 1)   \
  X(br_t2, CAKE_SW_BWD_ROW, 32, 4, 8, 2, 0, 2, 3, 0, 1, 1)     \
  X(bc_t1, CAKE_SW_BWD_COL, 512, 1, 128, 1, 0, 1, 3, 0, 1, 1)  \
  X(bc_t2, CAKE_SW_BWD_COL, 128, 2, 128, 2, 1, 2, 1, 1, 0, 1)  \
  X(bb_t1, CAKE_SW_BWD_BOTH, 512, 1, 128, 1, 0, 1, 3, 0, 1, 1) \
  X(bb_t2, CAKE_SW_BWD_BOTH, 256, 2, 128, 1, 0, 1, 3, 2, 0, 1)

#define EMU_INSTANTIATE(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail) \
  CAKE_SWIGLU_FP8_PROGRAM(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail)
EMU_PROGRAMS(EMU_INSTANTIATE)

namespace {

namespace mx = cake::mx;

struct EmuProgram {
  const char *name;
  void (*fn)(cake_swiglu_fp8_params);
  cake_program_desc desc;
};

#define EMU_ENTRY(sym, form, threads, ctas, tr, rpt, hint, sig, band, batch, pipe, tail) \
  {#sym, emu_##sym,                                                                     \
   {#sym, #sym, CAKE_FAMILY_SWIGLU_FP8, form, threads, ctas,                            \
    {tr, rpt, hint, sig, band, batch, pipe, tail}}},
const EmuProgram kPrograms[] = {EMU_PROGRAMS(EMU_ENTRY)};

using cake_swiglu_emu::Inputs;
using cake_swiglu_emu::table;

// Normals with one exponent per 128 values over [-kspan, kspan] and a jitter of +-4 per 16
// values (blocks whose values span many binades: some underflow E4M3 after scaling), then the
// specials: NaN and Inf gates/ups/grads, a max-finite gate, a row block of zero gates (an
// all-zero rowwise block), a column of zero gates over rows 0..127 (an all-zero colwise block)
// and a tiny up block (Y below the amax floor).
Inputs make_inputs(int64_t M, int64_t K, int kspan, bool specials, uint32_t seed) {
  Inputs x;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_int_distribution<int> ke(-kspan, kspan), jit(-4, 4);
  x.in.resize((size_t)(M * 2 * K));
  x.grad.resize((size_t)(M * K));
  auto fill = [&](std::vector<uint16_t> &v) {
    int k = 0, j = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i % 128 == 0) k = ke(rng);
      if (i % 16 == 0) j = jit(rng);
      v[i] = mx::bf16_rn(ldexpf(nd(rng), k + j));
    }
  };
  fill(x.in);
  fill(x.grad);
  if (specials && M >= 7) {
    cake_swiglu_emu::add_nonfinite(&x, K);
    for (int j = 0; j < 128; ++j) x.in[(size_t)(5 * 2 * K + j)] = 0;  // zero gates
    for (int64_t m = 0; m < std::min<int64_t>(M, 128); ++m) {
      x.in[(size_t)(m * 2 * K + K - 1)] = 0;  // a zero column (block)
    }
    // Row 6, columns [0, 128): ups of 2^-125 with gates near 1: Y about 2^-126, below the floor.
    for (int j = 0; j < 128; ++j) {
      x.in[(size_t)(6 * 2 * K + j)] = mx::bf16_rn(1.0f + j / 256.0f);
      x.in[(size_t)(6 * 2 * K + K + j)] = mx::bf16_rn(ldexpf(1.0f + j / 128.0f, -125 - j % 8));
    }
    x.grad[(size_t)(6 * K + 1)] = mx::bf16_rn(ldexpf(1.0f, -130));
  }
  return x;
}

struct Bufs {
  std::vector<uint8_t> rq, cq;
  std::vector<uint32_t> rs, cs;
};

void run_program(const EmuProgram &prog, int64_t M, int64_t K, int rule, int sm_count,
                 const Inputs &x, Bufs *b) {
  cake::SwigluFp8Sizes sz;
  assert_true(cake::swiglu_fp8_sizes(prog.desc.op, M, K, &sz));
  b->rq.assign((size_t)sz.row_q_bytes, 0xAB);
  b->cq.assign((size_t)sz.col_q_bytes, 0xAB);
  b->rs.assign((size_t)sz.row_s_bytes / 4, 0xABABABABu);
  b->cs.assign((size_t)sz.col_s_bytes / 4, 0xABABABABu);
  cake_swiglu_fp8_params p;
  assert_true(cake::swiglu_fp8_program_ok(prog.desc));
  assert_true(cake::swiglu_fp8_fill_params(prog.desc, M, K, rule, x.in.data(), x.grad.data(),
                                           b->rq.data(), b->rs.data(), b->cq.data(),
                                           b->cs.data(), &p));
  const cake::LaunchShape ls = cake::swiglu_fp8_launch_shape(prog.desc, M, K, sm_count);
  cake_emu::launch([&] { prog.fn(p); }, ls.grid[0], ls.block);
}

void run_case(const EmuProgram &prog, int64_t M, int64_t K, int rule, int sm_count, int kspan) {
  const int form = prog.desc.op;
  const Inputs x = make_inputs(M, K, kspan, true, (uint32_t)(M * 131 + K * 7 + form + 17 * rule));
  Bufs b;
  run_program(prog, M, K, rule, sm_count, x, &b);
  cake_ref::Fp8Out want;
  cake_ref::swiglu_fp8_model(form, x.in.data(), x.grad.data(), M, K, table().data(), rule, &want);
  const cake_ref::Fp8Compare r = cake_ref::fp8_compare(form, M, K, want, b.rq.data(), b.rs.data(),
                                                       b.cq.data(), b.cs.data());
  if (!r.ok) {
    fprintf(stderr, "%s M=%lld K=%lld rule=%d: %lld of %lld bytes differ\n%s", prog.name,
            (long long)M, (long long)K, rule, (long long)r.differing, (long long)r.bytes,
            r.detail.c_str());
  }
  assert_true(r.ok);
}

void test_block_scale_matches_model(void **) {
  for (int rule = 0; rule < 2; ++rule) {
    for (uint32_t a = 0; a <= 0x7FFFu; ++a) {
      const cake::fp8b::BlockScale k = cake::fp8b::block_scale(a, rule);
      float s, r;
      cake_ref::fp8_block_scale_model(a, rule, &s, &r);
      uint32_t ks, kr, ms, mr;
      memcpy(&ks, &k.s, 4);
      memcpy(&kr, &k.r, 4);
      memcpy(&ms, &s, 4);
      memcpy(&mr, &r, 4);
      if (ks != ms || kr != mr) {
        fprintf(stderr, "rule %d amax 0x%04x: kernel s %08x r %08x, model s %08x r %08x\n", rule,
                a, ks, kr, ms, mr);
      }
      assert_true(ks == ms && kr == mr);
    }
  }
  // The spec's fixed points: the floor gives s = 2^-126 under both rules; amax = 448 gives
  // s = 1; pow2 of amax = 449 (BF16 450) gives 2; an all-zero block takes the floor.
  float s, r;
  cake_ref::fp8_block_scale_model(0, 0, &s, &r);
  assert_true(s == ldexpf(1.0f, -126) && r == ldexpf(1.0f, 126));
  cake_ref::fp8_block_scale_model(0, 1, &s, &r);
  assert_true(s == ldexpf(1.0f, -126));
  cake_ref::fp8_block_scale_model(0x43E0, 0, &s, &r);  // 448
  assert_true(s == 1.0f && r == 1.0f);
  cake_ref::fp8_block_scale_model(0x43E1, 1, &s, &r);  // 450
  assert_true(s == 2.0f && r == 0.5f);
  cake_ref::fp8_block_scale_model(0x43E0, 1, &s, &r);
  assert_true(s == 1.0f);
  cake_ref::fp8_block_scale_model(0x7F80, 0, &s, &r);
  assert_true(isnan(s) && isnan(r));
}

void test_model_semantics(void **) {
  // Every block of the model's output, both orientations and rules, meets the format's
  // decode bounds (checked without the rule's arithmetic).
  const int64_t M = 256, K = 384;
  const Inputs x = make_inputs(M, K, 100, true, 5);
  for (int bwd = 0; bwd < 2; ++bwd) {
    std::vector<uint16_t> y;
    cake_ref::swiglu_y(bwd, x.in.data(), x.grad.data(), M, K, table().data(), &y);
    const int64_t O = bwd ? 2 * K : K;
    for (int rule = 0; rule < 2; ++rule) {
      cake_ref::Fp8Out o;
      cake_ref::fp8_blockwise_quantize(y.data(), M, O, true, true, rule, &o);
      int64_t blocks = 0, nan_blocks = 0, floor_blocks = 0;
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t j = 0; j < O / 128; ++j) {
          const uint32_t s = o.row_s[j * M + m];
          const std::string e = cake_ref::fp8_block_semantics(
              y.data() + m * O + j * 128, 128, 1, o.row_q.data() + m * O + j * 128, 1, s, rule);
          if (!e.empty()) fprintf(stderr, "row block (%lld, %lld): %s\n", (long long)m, (long long)j, e.c_str());
          assert_true(e.empty());
          ++blocks;
          nan_blocks += (s & 0x7FFFFFFFu) > 0x7F800000u;
          floor_blocks += s == 0x00800000u;
        }
      }
      for (int64_t oo = 0; oo < O; ++oo) {
        for (int64_t i = 0; i < M / 128; ++i) {
          const std::string e = cake_ref::fp8_block_semantics(
              y.data() + i * 128 * O + oo, 128, O, o.col_q.data() + oo * M + i * 128, 1,
              o.col_s[i * O + oo], rule);
          if (!e.empty()) fprintf(stderr, "col block (%lld, %lld): %s\n", (long long)oo, (long long)i, e.c_str());
          assert_true(e.empty());
        }
      }
      // The inputs reach the special cases: NaN blocks and blocks at the floor (zero or tiny).
      assert_true(nan_blocks > 0);
      assert_true(floor_blocks > 0);
      print_message("bwd %d rule %d: %lld row blocks, %lld NaN, %lld at the floor\n", bwd, rule,
                    (long long)blocks, (long long)nan_blocks, (long long)floor_blocks);
    }
  }
}

void test_all_programs(void **) {
  // (M, K): one tile; M and K not multiples of 512; several k-tiles and row tiles.
  const int64_t shapes[][2] = {{128, 128}, {384, 256}, {256, 640}};
  int cases = 0;
  for (const EmuProgram &prog : kPrograms) {
    for (const auto &sh : shapes) {
      for (int rule = 0; rule < 2; ++rule) {
        run_case(prog, sh[0], sh[1], rule, rule == 0 ? 1 : 3, 100);
        ++cases;
      }
    }
  }
  print_message("%d emulated cases, %zu programs\n", cases, sizeof(kPrograms) / sizeof(kPrograms[0]));
}

bool is_tail(const EmuProgram &prog) { return prog.desc.knobs[cake::kF8Tail] == 1; }

void test_tails(void **) {
  // Any M: one row; below one 16-row chunk; 31, 33, 127, 129 rows (partial col_q chunks not
  // 16-byte aligned); 272 (M % 16 == 0: whole aligned chunks, then a partial 128-row block);
  // 200 rows with K = 384 (three k-tiles, several row tiles).
  const int64_t shapes[][2] = {{1, 128},   {5, 256},   {31, 128}, {33, 256},
                               {127, 128}, {129, 256}, {272, 128}, {200, 384}};
  int cases = 0;
  for (const EmuProgram &prog : kPrograms) {
    for (const auto &sh : shapes) {
      if (!is_tail(prog)) {
        // A program without the tail knob refuses a shape it cannot tile whole.
        if (sh[0] % prog.desc.knobs[cake::kF8TileRows] != 0) {
          cake_swiglu_fp8_params p;
          assert_false(cake::swiglu_fp8_fill_params(prog.desc, sh[0], sh[1], 0, nullptr, nullptr,
                                                    nullptr, nullptr, nullptr, nullptr, &p));
          assert_true(cake::swiglu_fp8_tiles(prog.desc, sh[0], sh[1]) == -1);
        }
        continue;
      }
      for (int rule = 0; rule < 2; ++rule) {
        run_case(prog, sh[0], sh[1], rule, rule == 0 ? 1 : 3, 100);
        ++cases;
      }
    }
  }
  // Sizes: col_s holds ceil(M / 128) blocks a column.
  cake::SwigluFp8Sizes sz;
  assert_true(cake::swiglu_fp8_sizes(CAKE_SW_BWD_BOTH, 129, 256, &sz));
  assert_true(sz.out_cols == 512 && sz.row_q_bytes == 129 * 512 && sz.col_q_bytes == 129 * 512);
  assert_true(sz.row_s_bytes == 4 * 129 * 4 && sz.col_s_bytes == 4 * 2 * 512);
  print_message("%d emulated tail cases\n", cases);
}

// The range rows (tests/reference/swiglu_range_ref.h: gates at and near the ends of BF16's range
// and where dact * grad overflows FP32, against ups and grads at BF16 max, -max, the smallest
// normal and 0) through every program, both layouts (one rule each): the model's bytes (its
// wide dgate included), no NaN byte or scale outside a block holding an Inf.
void test_range_rows(void **) {
  const int64_t M = 128, K = 256;
  int cases = 0;
  for (int layout = 0; layout < 2; ++layout) {
    const cake_swiglu_emu::RangeRows rows = cake_swiglu_emu::range_rows(layout, M, K);
    const Inputs &x = rows.x;
    const int rule = layout;
    for (const EmuProgram &prog : kPrograms) {
      const int form = prog.desc.op;
      Bufs b;
      run_program(prog, M, K, rule, 2, x, &b);
      cake_ref::Fp8Out want;
      cake_ref::swiglu_fp8_model(form, x.in.data(), x.grad.data(), M, K, table().data(), rule,
                                 &want);
      const cake_ref::Fp8Compare r = cake_ref::fp8_compare(form, M, K, want, b.rq.data(),
                                                           b.rs.data(), b.cq.data(), b.cs.data());
      if (!r.ok) fprintf(stderr, "%s layout %d: %s", prog.name, layout, r.detail.c_str());
      assert_true(r.ok);
      const cake_ref::RangeReport rr = cake_ref::check_range_fp8(
          form, M, K, rows.y[form >= 3], b.rq.data(), b.rs.data(), b.cq.data(), b.cs.data());
      if (!rr.ok) fprintf(stderr, "%s layout %d: %s", prog.name, layout, rr.detail.c_str());
      assert_true(rr.ok);
      ++cases;
    }
  }
  print_message("%d range-row cases\n", cases);
}

void test_both_equals_parts(void **) {
  for (int bwd = 0; bwd < 2; ++bwd) {
    const int64_t M = 256, K = 384;
    const Inputs x = make_inputs(M, K, 30, true, 77 + bwd);
    const char *names[3] = {bwd ? "br_a" : "fr_a", bwd ? "bc_b" : "fc_b", bwd ? "bb_a" : "fb_a"};
    Bufs out[3];
    for (int o = 0; o < 3; ++o) {
      const EmuProgram *prog = nullptr;
      for (const EmuProgram &pp : kPrograms) {
        if (std::string(pp.name) == names[o]) prog = &pp;
      }
      assert_non_null(prog);
      run_program(*prog, M, K, 1, 2, x, &out[o]);
    }
    assert_true(out[2].rq == out[0].rq && out[2].rs == out[0].rs);
    assert_true(out[2].cq == out[1].cq && out[2].cs == out[1].cs);
  }
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_block_scale_matches_model),
      cmocka_unit_test(test_model_semantics),
      cmocka_unit_test(test_all_programs),
      cmocka_unit_test(test_tails),
      cmocka_unit_test(test_both_equals_parts),
      cmocka_unit_test(test_range_rows),
  };
  return cmocka_run_group_tests_name("swiglu_fp8_emulated", tests, NULL, NULL);
}
