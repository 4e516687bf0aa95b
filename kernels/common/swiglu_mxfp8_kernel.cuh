// SwiGLU + MXFP8 quantization: one kernel body for all six forms (docs/spec/swiglu-mxfp8.md).
//
//   forward   Y[m, k] = bf16(g*s*u),                       O = K output columns
//   backward  Y[m, k] = bf16((fma(g*s, 1-s, s)*grad)*u)    (dgate, columns [0, K))
//             Y[m, K+k] = bf16((g*s)*grad)                 (dup,   columns [K, 2K)), O = 2K
//   then Y is quantized in blocks of 32 along rows (rowwise: row_q [M, O], row_s) and/or along
//   columns (colwise: col_q = the transpose [O, M], col_s); scales in the swizzled 128x4 layout.
//
// The idea, for the H200 memory roofline (every byte read once, written once, 16 bytes a time):
//
//   CTA tile   tile_rows x tile_cols of the input's k-columns (tile_cols gate columns and the
//              matching up/grad columns; backward tiles produce 2*tile_cols output columns).
//              A 1-D grid strides over tiles (tile = blockIdx.x + i*gridDim.x, k fastest), so
//              M is limited by nothing but 64-bit indexing; the host sizes the grid to one
//              wave at the program's CTAs per SM, at one CTA a SM to the fewest CTAs that keep
//              the busiest one's tile count (lib/families/swiglu_mxfp8_launch.cc).
//   phase 1    each thread takes a slot of 16 k-columns x rows_per_thread rows (rows
//              tile_rows/rows_per_thread apart, so each load instruction of a warp is
//              coalesced along k): 16-byte loads (2 per operand per row, cache hint from the
//              program), the sigmoid in the program's sigmoid/band form, the BF16 Y.
//     rowwise  quantized straight from registers: a 32-column block is two adjacent lanes
//              (one shuffle exchanges the packed 16-bit amaxes of two blocks at once), 16 E4M3
//              bytes per lane = one 16-byte store; the even/odd lane writes the scale byte.
//     colwise  Y (BF16) goes to shared memory, row-major with a 16-byte XOR swizzle and
//              padding every 16 rows, so that phase 1's 16-byte stores and phase 2's column
//              reads are both free of bank conflicts.
//   phase 2    (colwise and both) each thread takes two adjacent columns x 16 rows (a 32-bit
//              shared load per row, the 16 words held for the amax and the conversion), the
//              lane pair (h = 0, 1) of a 32-row block exchanges the packed amax, and each lane
//              writes two 16-byte pieces of the transposed output col_q[o*M + m]: the lanes of
//              a column pair hold col_lanes consecutive 16-row chunks, so one store instruction
//              writes col_lanes * 16 contiguous bytes of each of 32 / col_lanes columns (2
//              lanes: 32-byte segments of 16 columns; 8 on a 128-row tile: 128-byte runs of 4).
//              Scale bytes go straight to col_s, or, in the staged
//              programs on 128-row tiles, into shared memory and out as whole pieces of the
//              swizzled layout after the next tile's barrier (kStagedScales).
//   NaN block  a block whose amax is Inf or NaN has the NaN scale; its multiplier is NaN, so
//              every product is the canonical NaN and converts to 0x7F with no select.
//   band path  with a fast sigmoid form, flagged gates (g below about -87.3, NaN) are recomputed
//              by sigmoid_band(), the exact sequence with a call-free rcp.rn; in the
//              flagged-pair loop form the pair's inputs are read again from global memory (an
//              L1/L2 hit) and its Y word is patched through a select chain.
//   both       Y is computed once; rowwise from registers, colwise from the same tile in shared
//              memory: both == rowwise + colwise byte for byte because the bytes come from the
//              same Y and the same encoder.
//   padding    scale padding entries (R or C not a multiple of 128 / 4) are written 0x00 by a
//              grid-stride loop at the end; with M, K multiples of 128 (the API rule) there are
//              none and the loop runs zero times.
////
// The knobs, their defaults and every rule derived from them (tile and slot geometry, shared
// memory sizes, the staged scale paths) are in swiglu_mxfp8_config.h, shared with the host.
// Every knob changes only the schedule: all programs of a form write the same bytes.
//
// The steps, one file each: swiglu_phase1.cuh (loads, Y, rowwise bytes from registers),
// swiglu_phase2.cuh (colwise bytes from the Y tile), swiglu_quantize.cuh (the E4M3 block
// encoder they share), swiglu_stage.cuh (the staged input ring), swiglu_scales.cuh (staged
// scale pieces, scale padding), swiglu_tile_walk.cuh (the tile orders), swiglu_smem_layout.cuh
// (the shared-memory layouts). This file holds the three schedules and the kernel body.
#pragma once
#include <stdint.h>

#include <type_traits>

#include "hd.h"
#include "mxfp8_encode.h"
#include "program_desc.h"
#include "swiglu_grouped_params.h"
#include "swiglu_grouped_walk.cuh"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_mxfp8_problem.cuh"
#include "swiglu_phase1.cuh"
#include "swiglu_phase2.cuh"
#include "swiglu_scales.cuh"
#include "swiglu_sigmoid.cuh"
#include "swiglu_stage.cuh"
#include "swiglu_tile_walk.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

// The staged loop's walk: the grouped pair walk for a grouped problem's tile pairs, else
// StagedWalk (an ungrouped problem's tiles or pairs, or a grouped problem's tiles, each located
// in the group table by the schedule).
template <class Cfg, class Problem>
__device__ __forceinline__ auto staged_walk(const Problem &pb, uint32_t tiles, uint32_t tiles_k,
                                            uint32_t step) {
  if constexpr (Problem::kGrouped && Cfg::kPairRows == 2) {
    return GroupedPairWalk<Cfg>(pb.t, tiles, tiles_k, step, pb.p.col_q, pb.p.col_ld);
  } else {
    return StagedWalk<Cfg>(tiles, tiles_k, step);
  }
}

// The staged schedule (pipeline >= 2): the inputs of the CTA's next S-1 tiles in flight through
// the ring in dynamic shared memory, one CTA barrier a tile.
template <class Cfg, class Problem>
__device__ __forceinline__ void staged_schedule(const cake_swiglu_mxfp8_params &p,
                                                const Problem &pb) {
  __shared__ __align__(16) uint32_t smem[Cfg::kSmemWords];  // Y tile (colwise/both)
  // Tiles are counted in 32 bits (the host checks tiles < 2^31: even a 32x32 tile gives 2^30 of
  // them at M*K = 2^40); the divisions are uniform 32-bit ones, at the start only.
  const uint32_t tiles = pb.tiles(), tiles_k = (uint32_t)p.tiles_k;
  const uint32_t step = gridDim.x;
  // Staged: copies run S-1 tiles ahead. At the top of each tile one barrier makes the tile's
  // copies (every thread's) visible, and, since every thread has left the tile before, frees
  // that tile's stage for the next copies and its Y tile for this phase 1 (phase 2 needs no
  // closing barrier).
  uint4 *ring = dynamic_smem<uint4>();  // kStages stages of kStageVecs vectors
  constexpr int S = Cfg::kStages;
  constexpr int kItemPasses = (Cfg::kColItems + Cfg::kThreads - 1) / Cfg::kThreads;
  const auto sw = staged_walk<Cfg>(pb, tiles, tiles_k, step);
  using SPos = typename decltype(sw)::Pos;
  // A grouped tile's expert and its rows within the expert's view: the pair walk places its
  // tiles (origin gives the expert's rows); a tile of the other walks is found in the group
  // table from its row over every expert.
  constexpr bool kWalkPlaces = Problem::kGrouped && Cfg::kPairRows == 2;
  SPos at = sw.start();  // the tile being computed
  SPos ahead = at;       // the next tile to copy
  auto issue_ahead = [&](uint4 *dst) {
    const bool valid = sw.valid(ahead);
    int64_t am0 = 0, ak0 = 0;
    int32_t ae = 0;  // the tile's expert (any when not valid: not read)
    if (valid) sw.origin(ahead, am0, ak0);
    if constexpr (kWalkPlaces) {
      ae = sw.expert(ahead);
    } else if constexpr (Problem::kGrouped) {
      const swg::TileAt ta = pb.locate(am0);
      ae = ta.e;
      am0 = ta.m0;
    }
    stage_issue<Cfg>(pb.view(ae), valid, am0, ak0, dst);
    sw.advance(ahead);
  };
#pragma unroll
  for (int s = 0; s < S - 1; ++s) issue_ahead(ring + s * Cfg::kStageVecs);
  int stage = 0;  // stage of `at`
  ColPieces held[Cfg::kPairRows == 2 ? kItemPasses : 1];  // upper tile of a pair
  // Staged scales: the pieces of the tile before, stored after the barrier that ends it; the
  // row scales' two buffers follow the column pieces.
  uint8_t *const sscale = reinterpret_cast<uint8_t *>(smem + Cfg::kYWords);
  uint8_t *const rscale = sscale + Cfg::kScalePieces * Cfg::kScalePiece;
  bool pieces = false, rpieces = false;
  int rbuf = 0;  // this tile's row-scale buffer
  int64_t pm0 = 0, pk0 = 0;
  int32_t pe = 0;  // the expert of the tile whose pieces wait
#pragma unroll 1
  while (sw.valid(at)) {
    cp_async_wait<S - 2>();  // this thread's copies of `at` have landed
    __syncthreads();
    issue_ahead(ring + (stage == 0 ? S - 1 : stage - 1) * Cfg::kStageVecs);  // (stage+S-1)%S
    if constexpr (Cfg::kStagedScales) {
      if (pieces) store_staged_scales<Cfg>(pb.view(pe), pm0, pk0, sscale);
    }
    if constexpr (Cfg::kStagedRowScales) {
      if (rpieces) {
        store_staged_row_scales<Cfg>(pb.view(pe), pm0, pk0,
                                     rscale + (rbuf ^ 1) * Cfg::kRowScaleBytes);
      }
    }
    int64_t m0, k0;
    sw.origin(at, m0, k0);
    const int pair = sw.pair_state(at);
    int32_t e = 0;
    if constexpr (kWalkPlaces) e = sw.expert(at);  // before the walk leaves the pair
    sw.advance(at);
    if constexpr (Problem::kGrouped && !kWalkPlaces) {
      const swg::TileAt ta = pb.locate(m0);
      e = ta.e;
      m0 = ta.m0;
    }
    const cake_swiglu_mxfp8_params &tp = pb.view(e);  // the tile's problem
    const uint4 *in_stage = ring + stage * Cfg::kStageVecs;
    // This tile's pieces: written in its phase 2 (column scales) or phase 1 (row scales),
    // stored after the next top barrier by the first threads before they reach the next phase
    // 2's opening barrier, the only way to the next rewrite of the column pieces; the row
    // scales alternate between two buffers, the next tile's phase 1 writing the other one.
    if constexpr (Cfg::kStagedScales) {
      pieces = staged_scales_ok<Cfg>(tp, m0, k0);
      pm0 = m0;
      pk0 = k0;
      pe = e;
    }
    if constexpr (Cfg::kStagedRowScales) rpieces = pieces && staged_row_scales_ok<Cfg>(tp);
    uint8_t *const rs = rpieces ? rscale + rbuf * Cfg::kRowScaleBytes : nullptr;
#pragma unroll
    for (int pass = 0; pass < Cfg::kPasses; ++pass) {
      const int slot = threadIdx.x + pass * Cfg::kThreads;
      SlotIn<Cfg> in;
#pragma unroll
      for (int r = 0; r < Cfg::kRpt; ++r) stage_row<Cfg>(in_stage, slot, r, in);
#pragma unroll
      for (int r = 0; r < Cfg::kRpt; ++r) {
        compute_row<Cfg>(tp, m0, k0, slot, r, in, smem, rs);
      }
    }
    phase2_tile<Cfg>(tp, m0, k0, smem, pair, held, pieces ? sscale : nullptr);
    stage = stage == S - 1 ? 0 : stage + 1;  // no closing barrier: the next top one
    rbuf ^= 1;
  }
  if constexpr (Cfg::kStagedScales) {
    __syncthreads();
    if (pieces) store_staged_scales<Cfg>(pb.view(pe), pm0, pk0, sscale);
  }
  if constexpr (Cfg::kStagedRowScales) {
    if (rpieces) {
      store_staged_row_scales<Cfg>(pb.view(pe), pm0, pk0,
                                   rscale + (rbuf ^ 1) * Cfg::kRowScaleBytes);
    }
  }
  cp_async_wait<0>();  // only empty groups can be left; nothing in flight at exit
  pb.finish();
}

// The register schedule (pipeline 0): each tile's loads issued at the tile's start, every load of
// a slot in flight before any arithmetic.
template <class Cfg, class Problem>
__device__ __forceinline__ void register_schedule(const Problem &pb) {
  __shared__ __align__(16) uint32_t smem[Cfg::kSmemWords];  // Y tile (colwise/both)
  // Tiles are counted in 32 bits (the host checks tiles < 2^31: even a 32x32 tile gives 2^30 of
  // them at M*K = 2^40); the divisions are uniform 32-bit ones, at the start only.
  const uint32_t tiles = pb.tiles(), tiles_k = (uint32_t)pb.base().tiles_k;
  const uint32_t step = gridDim.x;
  const TileWalk<Cfg> walk(tiles_k, tiles / tiles_k, step);
  using Pos = typename TileWalk<Cfg>::Pos;
  Pos at = walk.at(blockIdx.x);
  for (uint32_t tile = blockIdx.x; tile < tiles; tile += step) {
    int64_t m0, k0;
    walk.origin(at, m0, k0);
    walk.advance(at);
    int32_t e = 0;
    if constexpr (Problem::kGrouped) {  // the tile's expert; m0 within it
      const swg::TileAt ta = pb.locate(m0);
      e = ta.e;
      m0 = ta.m0;
    }
    const cake_swiglu_mxfp8_params &p = pb.view(e);  // the tile's problem

    // Phase 1: loads, sigmoid, Y; rowwise bytes; Y to shared memory for colwise.
#pragma unroll
    for (int pass = 0; pass < Cfg::kPasses; ++pass) {
      phase1_slot<Cfg>(p, m0, k0, threadIdx.x + pass * Cfg::kThreads, smem);
    }

    phase2_tile<Cfg>(p, m0, k0, smem);  // colwise bytes from the Y tile
  }
  pb.finish();
}

// The pipelined schedule (pipeline 1): the next tile's loads issued row by row behind the
// current tile's rows, in the same registers.
template <class Cfg>
__device__ __forceinline__ void pipelined_schedule(const PlainProblem<Cfg> &pb) {
  const cake_swiglu_mxfp8_params &p = pb.base();
  __shared__ __align__(16) uint32_t smem[Cfg::kSmemWords];  // Y tile (colwise/both)
  // Tiles are counted in 32 bits (the host checks tiles < 2^31: even a 32x32 tile gives 2^30 of
  // them at M*K = 2^40); the divisions are uniform 32-bit ones, at the start only.
  const uint32_t tiles = (uint32_t)p.tiles, tiles_k = (uint32_t)p.tiles_k;
  const uint32_t step = gridDim.x;
  const TileWalk<Cfg> walk(tiles_k, tiles / tiles_k, step);
  using Pos = typename TileWalk<Cfg>::Pos;
  // Pipelined: the loads of the CTA's next tile are issued row by row as soon as the current
  // tile's row has been computed from the same registers, so they are in flight during the
  // rest of phase 1, phase 2 and the barriers (one input buffer per thread, no extra one).
  SlotIn<Cfg> in[Cfg::kPasses];
  uint32_t tile = blockIdx.x;
  Pos at = walk.at(tile);
  int64_t m0 = 0, k0 = 0;
  if (tile < tiles) {
    walk.origin(at, m0, k0);
#pragma unroll
    for (int pass = 0; pass < Cfg::kPasses; ++pass) {
#pragma unroll
      for (int r = 0; r < Cfg::kRpt; ++r) {
        load_row<Cfg>(p, m0, k0, threadIdx.x + pass * Cfg::kThreads, r, in[pass]);
      }
    }
  }
  while (tile < tiles) {
    // tile + step < 2^32: tile < 2^31 and step <= tiles.
    const uint32_t next = tile + step;
    const bool has_next = next < tiles;
    walk.advance(at);
    int64_t nm0 = 0, nk0 = 0;
    if (has_next) walk.origin(at, nm0, nk0);

#pragma unroll
    for (int pass = 0; pass < Cfg::kPasses; ++pass) {
      const int slot = threadIdx.x + pass * Cfg::kThreads;
#pragma unroll
      for (int r = 0; r < Cfg::kRpt; ++r) {
        compute_row<Cfg>(p, m0, k0, slot, r, in[pass], smem);
        if (has_next) load_row<Cfg>(p, nm0, nk0, slot, r, in[pass]);
      }
    }

    phase2_tile<Cfg>(p, m0, k0, smem);
    tile = next;
    m0 = nm0;
    k0 = nk0;
  }
  pb.finish();
}

// The variant schedule (variant 1): the register schedule over whole row tiles, a CTA taking
// row tiles blockIdx.x, blockIdx.x + gridDim.x, ... and each one's k-tiles in column order, so
// that every slot row's dp sum runs through the row's tiles in the spec's order and is stored
// once, by the row's first lane, after its last tile (weighted backward only).
template <class Cfg, class Problem>
__device__ __forceinline__ void variant_schedule(const Problem &pb) {
  __shared__ __align__(16) uint32_t smem[Cfg::kSmemWords];  // Y tile (colwise/both)
  const uint32_t tiles_k = (uint32_t)pb.base().tiles_k;
  const uint32_t row_tiles = pb.tiles() / tiles_k;
  for (uint32_t rt = blockIdx.x; rt < row_tiles; rt += gridDim.x) {
    int64_t m0 = (int64_t)rt * Cfg::kTileRows;
    int32_t e = 0;
    if constexpr (Problem::kGrouped) {  // the row tile's expert; m0 within it
      const swg::TileAt ta = pb.locate(m0);
      e = ta.e;
      m0 = ta.m0;
    }
    const cake_swiglu_mxfp8_params &p = pb.view(e);
    float acc[Cfg::kPasses][Cfg::kRpt];
#pragma unroll
    for (int pass = 0; pass < Cfg::kPasses; ++pass) {
#pragma unroll
      for (int r = 0; r < Cfg::kRpt; ++r) acc[pass][r] = 0.0f;
    }
#pragma unroll 1
    for (uint32_t kt = 0; kt < tiles_k; ++kt) {
      const int64_t k0 = (int64_t)kt * Cfg::kTileCols;
#pragma unroll
      for (int pass = 0; pass < Cfg::kPasses; ++pass) {
        const int slot = threadIdx.x + pass * Cfg::kThreads;
        SlotIn<Cfg> in;
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) load_row<Cfg>(p, m0, k0, slot, r, in);
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) {
          compute_row<Cfg>(p, m0, k0, slot, r, in, smem, nullptr, &acc[pass][r]);
        }
      }
      phase2_tile<Cfg>(p, m0, k0, smem);
    }
    if constexpr (Cfg::kBackward) {
      if (p.var.weighted != 0) {
#pragma unroll
        for (int pass = 0; pass < Cfg::kPasses; ++pass) {
          const int slot = threadIdx.x + pass * Cfg::kThreads;
#pragma unroll
          for (int r = 0; r < Cfg::kRpt; ++r) {
            const int64_t m = m0 + slot / Cfg::kChunksPerRow + r * Cfg::kRowGroups;
            if (slot % Cfg::kChunksPerRow == 0 && m < p.M) p.var.dp[m] = acc[pass][r];
          }
        }
      }
    }
  }
  pb.finish();
}

}  // namespace swiglu

template <class Cfg>
__device__ __forceinline__ void swiglu_mxfp8_body(const cake_swiglu_mxfp8_params &p) {
  const swiglu::PlainProblem<Cfg> pb(p);
  if constexpr (Cfg::kVariant) {
    swiglu::variant_schedule<Cfg>(pb);
  } else if constexpr (Cfg::kStages >= 2) {
    swiglu::staged_schedule<Cfg>(p, pb);
  } else if constexpr (Cfg::kPipeline == 0) {
    swiglu::register_schedule<Cfg>(pb);
  } else {
    swiglu::pipelined_schedule<Cfg>(pb);
  }
}

// A grouped program (forms 6..11): the same schedules over every expert's tiles.
template <class Cfg>
__device__ __forceinline__ void swiglu_mxfp8_body(const cake_swiglu_mxfp8_grouped_params &p) {
  static_assert(Cfg::kGrouped, "grouped parameters for a grouped form");
  const swiglu::GroupedProblem<Cfg> pb(p);
  if constexpr (Cfg::kVariant) {
    swiglu::variant_schedule<Cfg>(pb);
  } else if constexpr (Cfg::kStages >= 2) {
    swiglu::staged_schedule<Cfg>(p.base, pb);
  } else {
    swiglu::register_schedule<Cfg>(pb);
  }
}

// The kernel parameter of a form: the grouped forms take the experts too.
template <int kForm>
using swiglu_mxfp8_params_t =
    typename std::conditional<sw_grouped(kForm), cake_swiglu_mxfp8_grouped_params,
                              cake_swiglu_mxfp8_params>::type;

}  // namespace cake

// One manifest line -> one extern "C" kernel. The includer defines CAKE_KERNEL_NAME(sym), which
// pastes the architecture prefix (cake_<arch>_<sym>).
// Knobs after band_form are optional (pipeline, group_rows, col_lanes, slot_cols,
// row_from_tile, variant, col_runs; 0 when left out).
#ifndef CAKE_SWIGLU_PROGRAM
#define CAKE_SWIGLU_PROGRAM(sym, form, threads, min_ctas, tile_rows, tile_cols, rows_per_thread,  \
                            load_hint, sigmoid_form, band_form, ...)                            \
  extern "C" __global__ void __launch_bounds__(threads, min_ctas)                               \
      CAKE_KERNEL_NAME(sym)(const __grid_constant__ cake::swiglu_mxfp8_params_t<form> p) {      \
    cake::swiglu_mxfp8_body<cake::SwigluCfg<form, threads, tile_rows, tile_cols,                \
                                            rows_per_thread, load_hint, sigmoid_form,          \
                                            band_form, ##__VA_ARGS__>>(p);                     \
  }
#endif
