// What the SwiGLU emulated tests share (test_swiglu_mxfp8_emulated.cc,
// test_swiglu_fp8_emulated.cc): the host sigmoid table the models run with (the emulator's ex2
// is correctly rounded), the inputs of a case and the non-finite specials both families' inputs
// carry, the range rows. Each test keeps its own value generator (the scale blocks differ: 32 values for MXFP8,
// 128 for FP8 blockwise).
#pragma once
#include <stdint.h>

#include <vector>

#include "swiglu_mxfp8_ref.h"
#include "swiglu_range_ref.h"

namespace cake_swiglu_emu {

inline const std::vector<uint32_t> &table() {
  static std::vector<uint32_t> t;
  if (t.empty()) cake_ref::host_sigmoid_table(&t);
  return t;
}

// in: [M, 2K] gates then ups a row; grad: [M, K].
struct Inputs {
  std::vector<uint16_t> in, grad;
};

// A NaN gate (row 0), a +Inf up (row 1), a -Inf gate (row 2), the largest finite gate (row 3)
// and a NaN grad (row 4): rows 0..4 of any case with at least 5 rows.
inline void add_nonfinite(Inputs *x, int64_t K) {
  x->in[5] = 0x7FC0;                             // NaN gate, row 0
  x->in[(size_t)(1 * 2 * K + K + 40)] = 0x7F80;  // +Inf up, row 1
  x->in[(size_t)(2 * 2 * K + 3)] = 0xFF80;       // -Inf gate, row 2
  x->in[(size_t)(3 * 2 * K + 7)] = 0x7F7F;       // max finite gate
  x->grad[(size_t)(4 * K + 9)] = 0xFFC0;         // NaN grad
}

// The range rows of one layout over the sampled gates (swiglu_range_ref.h) and the model's Y of
// each direction, which the encoded bytes are checked against.
struct RangeRows {
  Inputs x;
  std::vector<uint16_t> y[2];  // forward, backward
};
inline RangeRows range_rows(int layout, int64_t M, int64_t K) {
  RangeRows r;
  cake_ref::swiglu_range_inputs(layout, cake_ref::range_gate_sample(), M, K, &r.x.in, &r.x.grad);
  for (int bwd = 0; bwd < 2; ++bwd) {
    cake_ref::swiglu_y(bwd == 1, r.x.in.data(), r.x.grad.data(), M, K, table().data(), &r.y[bwd]);
  }
  return r;
}

}  // namespace cake_swiglu_emu
