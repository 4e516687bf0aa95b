// What the SwiGLU families' configurations share (swiglu_mxfp8_config.h, swiglu_fp8_config.h):
// the forms (the manifest's op: forward/backward x rowwise/colwise/both) and the rules of the
// knobs both families have with the same meaning and range. Compile-time and host arithmetic
// only (CAKE_HD marks the functions for nvcc); a family's knob struct is the template argument.
#pragma once
#include <stdint.h>

#include "hd.h"
#include "program_desc.h"

namespace cake {

// ---- forms ----
// 0..5 the ungrouped forms, 6..11 the same grouped over experts (docs/spec/swiglu-grouped.md):
// the ungrouped form plus CAKE_SWG_FWD_ROW.
CAKE_HD constexpr bool sw_form_valid(int form) {
  return form >= CAKE_SW_FWD_ROW && form <= CAKE_SWG_BWD_BOTH;
}
CAKE_HD constexpr bool sw_grouped(int form) { return form >= CAKE_SWG_FWD_ROW; }
CAKE_HD constexpr int sw_base_form(int form) { return form % CAKE_SWG_FWD_ROW; }
CAKE_HD constexpr bool sw_backward(int form) { return sw_base_form(form) >= CAKE_SW_BWD_ROW; }
CAKE_HD constexpr int sw_orientation(int form) { return form % 3; }  // 0 row, 1 col, 2 both
CAKE_HD constexpr bool sw_rowwise(int form) { return sw_orientation(form) != 1; }
CAKE_HD constexpr bool sw_colwise(int form) { return sw_orientation(form) != 0; }
CAKE_HD constexpr int64_t sw_out_per_k(int form) { return sw_backward(form) ? 2 : 1; }
CAKE_HD constexpr int64_t sw_ops(int form) { return sw_backward(form) ? 3 : 2; }  // gate, up (, grad)

// ---- the knobs both families share ----
template <class Knobs>
CAKE_HD constexpr bool sw_load_hint_ok(const Knobs &k) {
  return k.load_hint >= 0 && k.load_hint <= 2;
}
template <class Knobs>
CAKE_HD constexpr bool sw_sigmoid_form_ok(const Knobs &k) {
  return k.sigmoid_form == 1 || k.sigmoid_form == 2;
}
template <class Knobs>
CAKE_HD constexpr bool sw_band_form_ok(const Knobs &k) {
  return k.band_form >= 0 && k.band_form <= 3;
}

}  // namespace cake
