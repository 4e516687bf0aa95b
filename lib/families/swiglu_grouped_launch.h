// How a grouped SwiGLU program (forms 6..11, both families) is launched: pure host arithmetic
// from T, K, E and the program's knobs, never from the offsets (they are device memory the host
// does not read). Every bound here holds for every split of T rows into E experts
// (kernels/common/swiglu_grouped_layout.h), so one launch serves any offsets the device holds
// when it runs. Spec: docs/spec/swiglu-grouped.md.
#pragma once
#include <stdint.h>

#include "families/swiglu_launch_common.h"
#include "program_desc.h"
#include "swiglu_grouped_params.h"

namespace cake {

// Buffer sizes of a grouped form (bytes, 64-bit; a disabled orientation gets 0). False on a bad
// shape (T, E out of range, K not a positive multiple of the family's block, 2K past 2^31) or
// overflow.
struct SwigluGroupedSizes {
  int64_t out_cols;    // O
  int64_t scale_rows;  // P
  int64_t row_q_bytes, row_s_bytes, col_q_bytes, col_s_bytes;
};
bool swiglu_mxfp8_grouped_sizes(int form, int64_t T, int64_t K, int64_t E,
                                SwigluGroupedSizes *out);
bool swiglu_fp8_grouped_sizes(int form, int64_t T, int64_t K, int64_t E, SwigluGroupedSizes *out);

// The group table's shared memory for E experts on the program's threads.
uint32_t swiglu_grouped_table_bytes(const cake_program_desc &prog, int64_t E);

// The walk units of the bound: every split's row units (floor((T + (tr - 1) min(E, T)) / tr),
// tr the tile rows, twice them for tile pairs) times the program's K tiles; -1 on a bad
// argument.
int64_t swiglu_grouped_tiles(const cake_program_desc &prog, int64_t T, int64_t K, int64_t E);

// One wave over the bound's tiles (swiglu_one_wave), dynamic shared memory the program's own
// (MXFP8 staged ring, FP8 blockwise Y tile) plus the group table of E experts.
LaunchShape swiglu_grouped_launch_shape(const cake_program_desc &prog, int64_t T, int64_t K,
                                        int64_t E, int sm_count);

// The tensors and experts of one grouped call (pointers of a disabled orientation stored NULL).
struct SwigluGroupedTensors {
  const void *in, *grad;
  const int32_t *offsets;
  void *row_q, *row_s, *col_q, *col_s;
  int32_t *status;
};

// Fill the kernel parameters; false when the kernel cannot run the problem (a program of
// another family or an ungrouped form, sizes as swiglu_*_grouped_sizes refuse, more than 2^31-1
// tiles, a rule other than 0 and 1).
bool swiglu_mxfp8_grouped_fill_params(const cake_program_desc &prog, int64_t T, int64_t K,
                                      int64_t E, const SwigluGroupedTensors &t,
                                      cake_swiglu_mxfp8_grouped_params *out);
bool swiglu_fp8_grouped_fill_params(const cake_program_desc &prog, int64_t T, int64_t K,
                                    int64_t E, int rule, const SwigluGroupedTensors &t,
                                    cake_swiglu_fp8_grouped_params *out);

}  // namespace cake
