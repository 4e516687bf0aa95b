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
// kNgVariant: 1 for a variant program (every gate, placement, group size and dtype).
enum NormgateKnob {
  kNgD = 0,
  kNgRowsPerGroup = 1,
  kNgDepth = 2,
  kNgPersistent = 3,
  kNgTree = 4,
  kNgVariant = 5
};

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
// any width whose row tree fits its CTA (normgate_general_layout.h). variant != 0: the call is
// not the default form (normgate_call_is_variant), which only the variant programs serve.
bool normgate_program_serves(const cake_program_desc &prog, int32_t d, int32_t variant = 0);

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
void normgate_fill_backward_params(const cake_program_desc &prog, const cake_normgate_desc &desc,
                                   const NormgateLaunch &launch, const NormgateBackwardTensors &t,
                                   cake_normgate_params *out);

}  // namespace cake
