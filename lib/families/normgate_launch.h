// How a normgate program is launched for a problem: pure host arithmetic from the program's
// manifest knobs, no CUDA. The kernel reads rows_per_block/num_blocks from its parameters,
// so host and device agree by construction.
#pragma once
#include <stdint.h>

#include "program_desc.h"

namespace cake {

// Manifest knob positions of CAKE_NORMGATE_PROGRAM after threads and min_ctas.
enum NormgateKnob { kNgD = 0, kNgRowsPerGroup = 1, kNgPrefetch = 2, kNgPersistent = 3 };

struct NormgateLaunch {
  int64_t rows_per_block;  // rows one CTA takes per loop trip
  int64_t num_blocks;
  uint32_t grid;           // CTAs; the kernel strides over blocks by gridDim.x
  uint32_t block;          // threads
};

// True when the program computes rows of width d (its tuned width, or any for general ones).
bool normgate_program_serves(const cake_program_desc &prog, int32_t d);

// resident_ctas: CTAs of this program that fit on the device at once (SMs x occupancy).
NormgateLaunch normgate_launch(const cake_program_desc &prog, int64_t rows, int64_t resident_ctas);

}  // namespace cake
