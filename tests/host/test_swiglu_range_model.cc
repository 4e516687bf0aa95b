// The SwiGLU range rows through the host model (docs/spec/swiglu-mxfp8.md, "Range"), exhaustively:
// every finite BF16 gate against every pair of BF16 max, -max, the smallest normal and 0 as up
// and grad, in both layouts, forward and backward: Y holds no NaN and agrees with float64 (on
// the FP32 sigmoid) where that is finite, and the MXFP8 and FP8 blockwise encodings (both
// orientations, both FP8 scale rules) hold NaN bytes only in blocks with an Inf. The plain
// dgate (without the wide form) fails the same check, so the rows reach the overflow. The
// emulated kernel tests and the GPU test run the same rows through the programs.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmath>
#include <vector>

extern "C" {
#include <cmocka.h>
}

#include "mxfp8_encode.h"
#include "swiglu_fp8_ref.h"
#include "swiglu_mxfp8_ref.h"
#include "swiglu_range_ref.h"

namespace {

namespace mx = cake::mx;

constexpr int64_t kM = 1024, kK = 1024;  // 16 x 65,280 values and a few more

const std::vector<uint32_t> &table() {
  static std::vector<uint32_t> t;
  if (t.empty()) cake_ref::host_sigmoid_table(&t);
  return t;
}

void expect_ok(const cake_ref::RangeReport &r, const char *what, int layout, int backward) {
  if (!r.ok) {
    print_error("%s layout %d backward %d: %lld NaN, %lld wrong Inf, %lld missing Inf, %lld far "
                "of %lld\n%s",
                what, layout, backward, (long long)r.nan, (long long)r.wrong_inf,
                (long long)r.missing_inf, (long long)r.far, (long long)r.checked,
                r.detail.c_str());
  }
  assert_true(r.ok);
}

void test_model_range_rows(void **) {
  const std::vector<uint16_t> gates = cake_ref::finite_bf16_values();
  assert_int_equal(gates.size(), 65280);
  for (int layout = 0; layout < 2; ++layout) {
    std::vector<uint16_t> in, grad;
    cake_ref::swiglu_range_inputs(layout, gates, kM, kK, &in, &grad);
    for (int bwd = 0; bwd < 2; ++bwd) {
      std::vector<uint16_t> y;
      cake_ref::swiglu_y(bwd == 1, in.data(), grad.data(), kM, kK, table().data(), &y);
      const cake_ref::RangeReport ry =
          cake_ref::check_range_y(bwd == 1, in.data(), grad.data(), kM, kK, table().data(), y);
      expect_ok(ry, "Y", layout, bwd);
      print_message("layout %d backward %d: %lld values, %lld Inf (overflowing BF16), %lld with "
                    "dact * grad past FP32\n",
                    layout, bwd, (long long)ry.checked, (long long)ry.inf, (long long)ry.wide);
      assert_true(ry.inf > 0);
      if (bwd) assert_true(ry.wide > 0);
      const int64_t O = bwd ? 2 * kK : kK;
      cake_ref::Mxfp8Out mxo;
      cake_ref::mxfp8_quantize(y.data(), kM, O, true, true, &mxo);
      expect_ok(cake_ref::check_range_mxfp8(bwd * 3 + 2, kM, kK, y, mxo.row_q.data(),
                                            mxo.row_s.data(), mxo.col_q.data(), mxo.col_s.data()),
                "MXFP8", layout, bwd);
      for (int rule = 0; rule < 2; ++rule) {
        cake_ref::Fp8Out f8;
        cake_ref::fp8_blockwise_quantize(y.data(), kM, O, true, true, rule, &f8);
        expect_ok(cake_ref::check_range_fp8(bwd * 3 + 2, kM, kK, y, f8.row_q.data(),
                                            f8.row_s.data(), f8.col_q.data(), f8.col_s.data()),
                  "FP8 blockwise", layout, bwd);
      }
    }
  }
}

// The check has teeth: the plain dgate bf16((dact * grad) * u), without the wide form, gives
// NaN (Inf * 0) and Inf for finite values on the same rows.
void test_plain_dgate_fails(void **) {
  const std::vector<uint16_t> gates = cake_ref::finite_bf16_values();
  std::vector<uint16_t> in, grad, y;
  cake_ref::swiglu_range_inputs(0, gates, kM, kK, &in, &grad);
  cake_ref::swiglu_y(true, in.data(), grad.data(), kM, kK, table().data(), &y);
  int64_t changed = 0;
  for (int64_t m = 0; m < kM; ++m) {
    for (int64_t k = 0; k < kK; ++k) {
      const uint16_t gb = in[(size_t)(m * 2 * kK + k)];
      const float g = mx::bf16_to_float(gb), u = mx::bf16_to_float(in[(size_t)(m * 2 * kK + kK + k)]);
      const float s = mx::bits_to_float(table()[gb]);
      const float dact = fmaf(g * s, 1.0f - s, s);
      const uint16_t plain = mx::bf16_rn((dact * mx::bf16_to_float(grad[(size_t)(m * kK + k)])) * u);
      changed += plain != y[(size_t)(m * 2 * kK + k)];
      y[(size_t)(m * 2 * kK + k)] = plain;
    }
  }
  const cake_ref::RangeReport r =
      cake_ref::check_range_y(true, in.data(), grad.data(), kM, kK, table().data(), y);
  print_message("plain dgate: %lld values differ from the wide form; %lld NaN, %lld wrong Inf\n",
                (long long)changed, (long long)r.nan, (long long)r.wrong_inf);
  assert_true(changed > 0 && r.nan > 0 && r.wrong_inf > 0 && !r.ok);
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_range_rows),
      cmocka_unit_test(test_plain_dgate_fails),
  };
  return cmocka_run_group_tests_name("swiglu_range_model", tests, NULL, NULL);
}
