// How a normgate program is launched for a problem: pure host arithmetic from the program's
// manifest knobs, no CUDA. The kernel reads rows_per_block/num_blocks from its parameters,
// so host and device agree by construction.
#pragma once
#include <stdint.h>

#include "normgate_params.h"
#include "program_desc.h"

namespace cake {

// Manifest knob positions of CAKE_NORMGATE_PROGRAM after threads and min_ctas.
// kNgDepth: forward, bulk L2 prefetch trips ahead (0 = none); backward, stages of the
// shared-memory load ring.
// kNgVariant: 1 for a variant program (every gate, placement, group size and dtype; a backward
// with a load ring, kNgDepth > 0, 16-bit x and z only), 2 for a variant tile program (the same
// calls with 16-bit x and z, in the tile layout).
// kNgSlots: a tile program's leaves a thread (normgate_general_layout.h, cake_ng_tile_of): a
// variant tile program's (kNgVariant 2), or a default-form tile forward's (kNgVariant 0).
enum NormgateKnob {
  kNgD = 0,
  kNgRowsPerGroup = 1,
  kNgDepth = 2,
  kNgPersistent = 3,
  kNgTree = 4,
  kNgVariant = 5,
  kNgQuant = 6,  // the quantized y's format (cake_normgate_quant_format_t), 0 for none
  kNgSlots = 7   // a tile program's leaves a thread, else 0
};

// A call's form as the router's RouteServes sees it: bit 0 a variant call, bit 1 FP32 x or z
// (which the tile programs do not read), the bits above the quantized y's format (0: none). A
// program serves a form only when they match its knobs.
inline int32_t normgate_form(bool variant, int32_t quant_format, bool f32_inputs = false) {
  return (variant ? 1 : 0) | (f32_inputs ? 2 : 0) | (quant_format << 2);
}

// The quantized y of a call, derived from its checked rows, d and cake_normgate_quant_desc
// (docs/spec/normgate.md, "Quantized y"): the [q_rows, q_cols] matrix and its scales.
struct NormgateQuantPlan {
  int32_t format;         // cake_normgate_quant_format_t
  int32_t scale_rule;     // FP8 blockwise: cake_fp8_scale_rule_t; MXFP8: 0
  int64_t heads;          // >= 1
  int64_t q_rows, q_cols; // rows / heads, heads * d
  int64_t q_bytes;        // rows * d
  int64_t s_cols;         // q_cols / 128 or / 32
  int64_t s_cols_padded;  // MXFP8: s_cols rounded up to 4; FP8 blockwise: s_cols
  int64_t s_stride;       // FP8 blockwise: q_rows; MXFP8: 0
  int64_t s_bytes;
  int64_t cover_rows;     // normgate rows the grid walks (MXFP8: the padded scale rows * heads)
};

// The plan for rows x d with `format`, `rule` and `heads` (>= 1) that already meet the rules;
// false when a size overflows 64 bits.
bool normgate_quant_plan(int64_t rows, int32_t d, int32_t format, int32_t rule, int64_t heads,
                         NormgateQuantPlan *out);

struct NormgateLaunch {
  int64_t rows_per_block;  // rows one CTA takes per loop trip
  int64_t num_blocks;
  uint32_t grid;           // CTAs; the kernel strides over blocks by gridDim.x
  uint32_t block;          // threads
  uint32_t smem_bytes;     // dynamic shared memory
  bool cooperative;        // every CTA resident together (grid barriers in the kernel)
};

// The tuned backward programs (balanced chunk ranges, shared-memory ring): D != 0, backward.
bool normgate_is_tuned_backward(const cake_program_desc &prog);

// Dynamic shared memory a normgate program launches with (0 for most).
uint32_t normgate_smem_bytes(const cake_program_desc &prog);

// True when the program computes rows of width d: its tuned width, or for a general program
// any width whose row tree fits its CTA (normgate_general_layout.h). form: normgate_form() of the
// call; a variant call (not the default form, normgate_call_is_variant) only the variant
// programs serve, a quantized call only the quantizing programs of its format.
bool normgate_program_serves(const cake_program_desc &prog, int32_t d, int32_t form = 0);

// Whether a checked descriptor asks for anything but the default form (SiLU gate after a
// whole-row norm, BF16 x, z, w; backward: BF16 or FP32 dw), which only variant programs serve.
bool normgate_call_is_variant(const cake_normgate_desc &desc, bool backward);

// resident_ctas: CTAs of this program that fit on the device at once (SMs x occupancy).
NormgateLaunch normgate_launch(const cake_program_desc &prog, int64_t rows, int32_t d,
                               int64_t resident_ctas);

// Row groups in one CTA for rows of width d: tuned programs d/8 lanes a group, general ones
// the layout of normgate_general_layout.h. Forward: a group takes rows_per_group rows a trip;
// backward: a tuned group one row of a step, a general group one dw chunk.
int64_t normgate_groups_per_cta(const cake_program_desc &prog, int32_t d);

// Workspace bytes the backward program needs for `rows` x `d` (0 when dw is skipped).
int64_t normgate_workspace_bytes(const cake_program_desc &prog, int64_t rows, int32_t d,
                                 bool skip_dw);

// A tuned deterministic backward's workspace layout for a launch of `grid` CTAs (its params).
cake_ng_det_layout normgate_det_layout(const cake_program_desc &prog, int64_t rows, int32_t d,
                                       int64_t grid);

// The tensors of a forward call (rstd may be NULL).
struct NormgateForwardTensors {
  const void *x, *z, *w;
  void *y;
  float *rstd;
};

// The tensors of a backward call (dw may be NULL when dw is skipped; workspace when the call
// needs none).
struct NormgateBackwardTensors {
  const void *dy, *x, *z, *w;
  void *dx, *dz, *dw, *workspace;
};

// Whether a backward launch is cooperative: the program builds the dw tree between grid
// barriers (launch.cooperative) and the call computes dw (flags without
// CAKE_NORMGATE_DW_SKIP).
bool normgate_backward_cooperative(const NormgateLaunch &launch, uint32_t flags);

// The kernel parameters of a call. `desc` is the checked descriptor with its strides resolved
// (0 -> d) and `launch` normgate_launch()'s answer for `prog` and it. Every byte of *out is
// written (the unused fields and the padding zero).
void normgate_fill_forward_params(const cake_normgate_desc &desc, const NormgateLaunch &launch,
                                  const NormgateForwardTensors &t, cake_normgate_params *out);
// The quantized output's fields of a quantized forward's parameters (after
// normgate_fill_forward_params; y may be NULL there).
void normgate_fill_quant_params(const NormgateQuantPlan &plan, void *q, void *q_scale,
                                cake_normgate_params *out);
void normgate_fill_backward_params(const cake_program_desc &prog, const cake_normgate_desc &desc,
                                   const NormgateLaunch &launch, const NormgateBackwardTensors &t,
                                   cake_normgate_params *out);

}  // namespace cake
