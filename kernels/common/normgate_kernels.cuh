// Expands the manifest's CAKE_NORMGATE_PROGRAM lines into extern "C" kernels. The includer
// defines CAKE_KERNEL_NAME(sym) (it pastes the architecture prefix).
#pragma once
#include "normgate_bwd.cuh"
#include "normgate_fwd.cuh"
#include "normgate_general.cuh"
#include "normgate_variant.cuh"
#include "normgate_variant_tile.cuh"
#include "normgate_variant_tile_bwd.cuh"
#include "program_desc.h"

namespace cake {

template <class Cfg>
__device__ __forceinline__ void normgate_program(const cake_normgate_params &p) {
  if constexpr (Cfg::kSlots != 0 && Cfg::kVariant == 0) {
    ng::fwd_default_tile<Cfg>(p);
  } else if constexpr (Cfg::kVariant == 2) {
    if constexpr (Cfg::kOp == CAKE_NG_OP_FWD) {
      ng::fwd_variant_tile<Cfg>(p);
    } else {
      ng::bwd_variant_tile<Cfg>(p);
    }
  } else if constexpr (Cfg::kVariant != 0) {
    if constexpr (Cfg::kOp == CAKE_NG_OP_FWD) {
      ng::fwd_variant<Cfg>(p);
    } else {
      ng::bwd_variant<Cfg>(p);
    }
  } else if constexpr (Cfg::kOp == CAKE_NG_OP_FWD) {
    if constexpr (Cfg::kD == 0) {
      ng::fwd_general<Cfg>(p);
    } else {
      ng::fwd_tuned<Cfg>(p);
    }
  } else if constexpr (Cfg::kD == 0) {
    ng::bwd_general<Cfg>(p);
  } else {
    ng::bwd_tuned<Cfg>(p);
  }
}

}  // namespace cake

#ifndef CAKE_NORMGATE_PROGRAM
#define CAKE_NORMGATE_PROGRAM(sym, op, d, threads, min_ctas, rows_per_group, prefetch,      \
                              persistent, ...)                                              \
  extern "C" __global__ void __launch_bounds__(threads, min_ctas)                           \
      CAKE_KERNEL_NAME(sym)(const __grid_constant__ cake_normgate_params p) {               \
    cake::normgate_program<cake::NormgateCfg<op, d, threads, rows_per_group, prefetch,      \
                                             persistent, ##__VA_ARGS__>>(p);                \
  }
#endif
