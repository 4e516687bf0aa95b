// SwiGLU + FP8 blockwise 1x128: one kernel body for all six forms (docs/spec/fp8-blockwise.md).
//
//   Y is exactly the SwiGLU + MXFP8 family's BF16 Y (the same compute_y of swiglu_phase1.cuh: the
//   same sigmoid sequence, sigmoid and band forms, the same BF16 rounding); only the encoding
//   differs: E4M3 with one FP32 scale per 128 values (fp8_block_quant.cuh), scales MN-major.
//
// Schedule (register schedule; every knob changes only the schedule, never a byte):
//   CTA tile   tile_rows x 128 k-columns (one 1x128 block a row and output range). A 1-D grid
//              strides over tiles (k fastest); the host sizes the grid to one wave at the
//              program's CTAs per SM.
//   phase 1    a thread slot is 16 k-columns x rows_per_thread rows; the 8 slots of a row's
//              128 columns are 8 adjacent lanes, so each warp load instruction reads 256
//              contiguous bytes of 4 rows. load_batch passes of loads are issued before their
//              arithmetic.
//     rowwise  from registers: the block's amax over its 8 lanes (3 shuffle levels, dgate's and
//              dup's amax packed in one word backward), 16 E4M3 bytes a lane = one 16-byte store;
//              the block's first lane (dup: second) writes the FP32 scale at j*M + m, so a
//              warp's scale stores are contiguous along m.
//     colwise  Y (BF16) to the Y tile in dynamic shared memory: row-major, 4 words of padding
//              every 16 rows, a slot's two 16-byte halves written in an order that depends on the
//              slot (slots 4..7 of a row write their upper half first) so that a quarter-warp's
//              stores hit 32 distinct banks.
//   phase 2    (colwise/both, tile_rows = 128) an item is one column pair x 16 rows; the 8 items
//              of a column pair's 128 rows are 8 adjacent lanes (amax over 3 shuffle levels), a
//              warp reads 4 column pairs x 8 chunks = 32 distinct banks a row step, and writes
//              128 contiguous bytes of each of 8 col_q columns; chunk 0 and 1 lanes write the two
//              columns' scales at i*O + o (contiguous along o).
//   pipeline   (knob) the next tile's loads go out right after this tile's phase 1, in the same
//              registers, and fly during phase 2 and the barriers.
//   NaN block  the NaN multiplier turns every product into NaN and every byte into 0x7F.
//   tail       (knob) any M: the last row tile's rows past M load zeros (Y = +0, which leaves
//              a partial colwise block's amax that of its rows) and store nothing; col_q
//              pieces that are partial or not 16-byte aligned (M % 16 != 0) go out byte by byte.
#pragma once
#include <stdint.h>

#include <type_traits>

#include "fp8_block_quant.cuh"
#include "fp8_blockwise_encode.h"
#include "hd.h"
#include "program_desc.h"
#include "swiglu_fp8_config.h"
#include "swiglu_fp8_params.h"
#include "swiglu_fp8_problem.cuh"
#include "swiglu_grouped_params.h"
#include "swiglu_phase1.cuh"
#include "swiglu_sigmoid.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu_fp8 {

// The loaded inputs of one slot row: 16 gates, 16 ups, (backward) 16 grads.
struct SlotRow {
  uint4 g[2], u[2], d[2];
};

template <class Cfg>
__device__ __forceinline__ void load_slot_row(const cake_swiglu_fp8_params &p, int64_t m,
                                              int64_t k, SlotRow &s) {
  if constexpr (Cfg::kTail) {
    if (m >= p.M) {  // past the last row: zeros, whose Y is +0
      s.g[0] = s.g[1] = s.u[0] = s.u[1] = s.d[0] = s.d[1] = make_uint4(0u, 0u, 0u, 0u);
      return;
    }
  }
  const int64_t K = p.K;
  const uint16_t *gate = p.in + m * (2 * K) + k;  // [M, 2K]: gate | up
  s.g[0] = load16<Cfg::kLoadHint>(gate);
  s.g[1] = load16<Cfg::kLoadHint>(gate + 8);
  s.u[0] = load16<Cfg::kLoadHint>(gate + K);
  s.u[1] = load16<Cfg::kLoadHint>(gate + K + 8);
  if constexpr (Cfg::kBackward) {
    const uint16_t *grad = p.grad + m * K + k;
    s.d[0] = load16<Cfg::kLoadHint>(grad);
    s.d[1] = load16<Cfg::kLoadHint>(grad + 8);
  } else {
    s.d[0] = s.d[1] = make_uint4(0u, 0u, 0u, 0u);
  }
}

// Word w of tile row `row` in the Y tile.
template <class Cfg>
__device__ __forceinline__ int y_word(int row, int w) {
  return row * Cfg::kRowWords + (row >> 4) * kFp8YPad + w;
}

// One slot row: Y, its rowwise bytes and scale, its copy into the Y tile. A variant program
// (acc: the slot row's running dp sum) adds the tile's part of the row's dp.
template <class Cfg>
__device__ __forceinline__ void compute_slot_row(const cake_swiglu_fp8_params &p, int64_t m,
                                                 int row, int64_t k, int chunk, const SlotRow &s,
                                                 uint32_t *ytile, float *acc = nullptr) {
  constexpr int G = Cfg::kOutPerK;  // Y, or dgate and dup
  const int64_t K = p.K;
  uint32_t y[G][8];
  const uint16_t *gate = p.in + m * (2 * K) + k;
  const uint16_t *grad = Cfg::kBackward ? p.grad + m * K + k : nullptr;
  if constexpr (Cfg::kVariant) {
    const float t = swiglu::compute_y<Cfg>(s.g, s.u, s.d, gate, grad, K, y[0], y[G - 1],
                                           swiglu::variant_act(p.var, m, m < p.M));
    *acc = swiglu::dp_add_tile<kFp8BlockLanes, 32 / kFp8SlotCols>(t, *acc);
  } else {
    swiglu::compute_y<Cfg>(s.g, s.u, s.d, gate, grad, K, y[0], y[G - 1]);
  }

  if constexpr (Cfg::kRowwise) {
    uint32_t a = fp8b_amax16(y[0]);
    if constexpr (G == 2) a |= fp8b_amax16(y[1]) << 16;
    a = fp8b_group_max<kFp8BlockLanes>(a);
    const int lane_in_block = threadIdx.x & (kFp8BlockLanes - 1);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const fp8b::BlockScale bs = fp8b::block_scale(g ? a >> 16 : a & 0xFFFFu, (int)p.rule);
      uint32_t q[4];
      fp8b_quantize_words(y[g], bs.r, q);
      const int64_t o = (g ? K : 0) + k;
      if (!Cfg::kTail || m < p.M) {
        store16(p.row_q + m * p.O + o, make_uint4(q[0], q[1], q[2], q[3]));
        if (lane_in_block == g) p.row_s[(o >> 7) * p.M + m] = bs.s;
      }
    }
  }

  if constexpr (Cfg::kColwise) {
    const int h = (chunk >> 2) & 1;  // which half goes first: see the file comment
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint4 lo = make_uint4(y[g][0], y[g][1], y[g][2], y[g][3]);
      const uint4 hi = make_uint4(y[g][4], y[g][5], y[g][6], y[g][7]);
      uint32_t *base = ytile + y_word<Cfg>(row, g * (kFp8TileCols / 2) + chunk * 8);
      *reinterpret_cast<uint4 *>(base + 4 * h) = h ? hi : lo;
      *reinterpret_cast<uint4 *>(base + 4 * (h ^ 1)) = h ? lo : hi;
    }
  }
}

// Phase 2: one item (a column pair x 16 rows of the 128-row tile).
template <class Cfg>
__device__ __forceinline__ void phase2_item(const cake_swiglu_fp8_params &p, int64_t m0,
                                            int64_t k0, int item, const uint32_t *ytile) {
  const int chunk = item & (kFp8BlockLanes - 1);  // 16-row chunk of the 128-row block
  const int c2 = item >> 3;                       // word column = column pair
  const uint32_t *col = ytile + y_word<Cfg>(chunk * 16, c2);
  uint32_t wv[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) wv[j] = col[j * Cfg::kRowWords];
  uint32_t a = swiglu::amax2(wv);  // column 2*c2 in the low half, 2*c2+1 in the high half
  a = fp8b_group_max<kFp8BlockLanes>(a);
  const fp8b::BlockScale lo = fp8b::block_scale(a & 0xFFFFu, (int)p.rule);
  const fp8b::BlockScale hi = fp8b::block_scale(a >> 16, (int)p.rule);
  const int w = 2 * c2;  // first of the two tile output columns
  const bool dup = Cfg::kBackward && w >= kFp8TileCols;
  const int64_t o = dup ? p.K + k0 + (w - kFp8TileCols) : k0 + w;
  uint32_t ql[4], qh[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    ql[i] = fp8b_e4m3x4(bf16_lo(wv[4 * i]), bf16_lo(wv[4 * i + 1]), bf16_lo(wv[4 * i + 2]),
                        bf16_lo(wv[4 * i + 3]), lo.r);
    qh[i] = fp8b_e4m3x4(bf16_hi(wv[4 * i]), bf16_hi(wv[4 * i + 1]), bf16_hi(wv[4 * i + 2]),
                        bf16_hi(wv[4 * i + 3]), hi.r);
  }
  const int64_t r0 = m0 + chunk * 16;  // the item's first row
  uint8_t *dst = p.col_q + o * p.M + r0;
  if (!Cfg::kTail || (r0 + 16 <= p.M && (p.M & 15) == 0)) {
    store16(dst, make_uint4(ql[0], ql[1], ql[2], ql[3]));
    store16(dst + p.M, make_uint4(qh[0], qh[1], qh[2], qh[3]));
  } else {
    // A partial chunk, or rows not 16-byte aligned in col_q: the bytes of rows < M one by one.
    const int64_t n = p.M - r0 < 16 ? p.M - r0 : 16;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i < n) {
        dst[i] = (uint8_t)(ql[i >> 2] >> (8 * (i & 3)));
        dst[p.M + i] = (uint8_t)(qh[i >> 2] >> (8 * (i & 3)));
      }
    }
  }
  if (chunk < 2) p.col_s[(m0 >> 7) * p.O + o + chunk] = chunk ? hi.s : lo.s;
}


// Issue the loads of passes [b0, b0 + kBatch) of the tile at (m0, k0).
template <class Cfg>
__device__ __forceinline__ void load_batch(const cake_swiglu_fp8_params &p, int64_t m0,
                                           int64_t k0, int b0,
                                           SlotRow (&in)[Cfg::kBatch][Cfg::kRpt]) {
#pragma unroll
  for (int b = 0; b < Cfg::kBatch; ++b) {
    const int slot = threadIdx.x + (b0 + b) * Cfg::kThreads;
    const int chunk = slot & (kFp8BlockLanes - 1), rg = slot >> 3;
#pragma unroll
    for (int r = 0; r < Cfg::kRpt; ++r) {
      load_slot_row<Cfg>(p, m0 + rg + r * Cfg::kRowGroups, k0 + chunk * kFp8SlotCols, in[b][r]);
    }
  }
}

// Phase 1 of passes [b0, b0 + kBatch) from their loaded inputs (a variant program: with the
// dp sums of all passes' slot rows, acc[pass][r]).
template <class Cfg>
__device__ __forceinline__ void compute_batch(const cake_swiglu_fp8_params &p, int64_t m0,
                                              int64_t k0, int b0,
                                              const SlotRow (&in)[Cfg::kBatch][Cfg::kRpt],
                                              uint32_t *ytile, float (*acc)[Cfg::kRpt] = nullptr) {
#pragma unroll
  for (int b = 0; b < Cfg::kBatch; ++b) {
    const int slot = threadIdx.x + (b0 + b) * Cfg::kThreads;
    const int chunk = slot & (kFp8BlockLanes - 1), rg = slot >> 3;
#pragma unroll
    for (int r = 0; r < Cfg::kRpt; ++r) {
      const int row = rg + r * Cfg::kRowGroups;
      compute_slot_row<Cfg>(p, m0 + row, row, k0 + chunk * kFp8SlotCols, chunk, in[b][r], ytile,
                            Cfg::kVariant ? &acc[b0 + b][r] : nullptr);
    }
  }
}

// Phase 2 of a tile (colwise/both): every item once the Y tile is whole; the closing barrier
// keeps the next tile's phase 1 off the Y tile until every item has read it.
template <class Cfg>
__device__ __forceinline__ void phase2_tile(const cake_swiglu_fp8_params &p, int64_t m0,
                                            int64_t k0, const uint32_t *ytile) {
  if constexpr (Cfg::kColwise) {
    __syncthreads();
#pragma unroll 1
    for (int item = threadIdx.x; item < Cfg::kColItems; item += Cfg::kThreads) {
      phase2_item<Cfg>(p, m0, k0, item, ytile);
    }
    __syncthreads();
  }
}

}  // namespace swiglu_fp8

namespace swiglu_fp8 {

// The walk over the problem's tiles (k fastest) with the schedule's loads; a tile's parameters
// are its problem's view of the tile's expert (the parameters themselves when ungrouped).
template <class Cfg, class Problem>
__device__ __forceinline__ void run_tiles(const Problem &pb) {
  uint32_t *ytile = dynamic_smem<uint32_t>();
  // Tiles are counted in 32 bits (the host checks tiles < 2^31); one uniform division a tile.
  const uint32_t tiles = pb.tiles(), tiles_k = (uint32_t)pb.base().tiles_k;
  auto origin = [&](uint32_t tile, int64_t &m0, int64_t &k0) {
    m0 = (int64_t)(tile / tiles_k) * Cfg::kTileRows;
    k0 = (int64_t)(tile % tiles_k) * kFp8TileCols;
    int32_t e = 0;
    if constexpr (Problem::kGrouped) {  // the tile's expert; m0 within it
      const swg::TileAt ta = pb.locate(m0);
      e = ta.e;
      m0 = ta.m0;
    }
    return e;
  };
  if constexpr (Cfg::kVariant) {
    // Whole row tiles a CTA, each one's k-tiles in column order: every slot row's dp sum runs
    // through the row's tiles in the spec's order and is stored once, by the row's first lane,
    // after its last tile (weighted backward only).
    const uint32_t row_tiles = tiles / tiles_k;
    for (uint32_t rt = blockIdx.x; rt < row_tiles; rt += gridDim.x) {
      int64_t m0, k0;
      const auto &p = pb.view(origin(rt * tiles_k, m0, k0));
      float acc[Cfg::kPasses][Cfg::kRpt];
#pragma unroll
      for (int b = 0; b < Cfg::kPasses; ++b) {
#pragma unroll
        for (int r = 0; r < Cfg::kRpt; ++r) acc[b][r] = 0.0f;
      }
#pragma unroll 1
      for (uint32_t kt = 0; kt < tiles_k; ++kt) {
        k0 = (int64_t)kt * kFp8TileCols;
        SlotRow in[Cfg::kBatch][Cfg::kRpt];
        load_batch<Cfg>(p, m0, k0, 0, in);
        compute_batch<Cfg>(p, m0, k0, 0, in, ytile, acc);
        phase2_tile<Cfg>(p, m0, k0, ytile);
      }
      if constexpr (Cfg::kBackward) {
        if (p.var.weighted != 0) {
#pragma unroll
          for (int b = 0; b < Cfg::kPasses; ++b) {
            const int slot = threadIdx.x + b * Cfg::kThreads;
#pragma unroll
            for (int r = 0; r < Cfg::kRpt; ++r) {
              const int64_t m = m0 + (slot >> 3) + r * Cfg::kRowGroups;
              if ((slot & (kFp8BlockLanes - 1)) == 0 && m < p.M) p.var.dp[m] = acc[b][r];
            }
          }
        }
      }
    }
  } else if constexpr (Cfg::kPipeline == 1) {
    // Every pass's loads in registers (kBatch == kPasses); the next tile's are issued after
    // this tile's phase 1 and land during its phase 2. tile + gridDim.x < 2^32: tile < 2^31.
    SlotRow in[Cfg::kBatch][Cfg::kRpt];
    uint32_t tile = blockIdx.x;
    int64_t m0 = 0, k0 = 0;
    int32_t e = 0;
    if (tile < tiles) {
      e = origin(tile, m0, k0);
      load_batch<Cfg>(pb.view(e), m0, k0, 0, in);
    }
    while (tile < tiles) {
      const auto &p = pb.view(e);
      compute_batch<Cfg>(p, m0, k0, 0, in, ytile);
      const uint32_t next = tile + gridDim.x;
      int64_t nm0 = 0, nk0 = 0;
      int32_t ne = 0;
      if (next < tiles) {
        ne = origin(next, nm0, nk0);
        load_batch<Cfg>(pb.view(ne), nm0, nk0, 0, in);
      }
      phase2_tile<Cfg>(p, m0, k0, ytile);
      tile = next;
      m0 = nm0;
      k0 = nk0;
      e = ne;
    }
  } else {
    for (uint32_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int64_t m0, k0;
      const auto &p = pb.view(origin(tile, m0, k0));
#pragma unroll
      for (int b0 = 0; b0 < Cfg::kPasses; b0 += Cfg::kBatch) {
        SlotRow in[Cfg::kBatch][Cfg::kRpt];
        load_batch<Cfg>(p, m0, k0, b0, in);
        compute_batch<Cfg>(p, m0, k0, b0, in, ytile);
      }
      phase2_tile<Cfg>(p, m0, k0, ytile);
    }
  }
}

}  // namespace swiglu_fp8

template <class Cfg>
__device__ __forceinline__ void swiglu_fp8_body(const cake_swiglu_fp8_params &p) {
  swiglu_fp8::run_tiles<Cfg>(swiglu_fp8::PlainProblem<Cfg>(p));
}

// A grouped program (forms 6..11): the same walk over every expert's tiles.
template <class Cfg>
__device__ __forceinline__ void swiglu_fp8_body(const cake_swiglu_fp8_grouped_params &p) {
  static_assert(Cfg::kGrouped, "grouped parameters for a grouped form");
  swiglu_fp8::run_tiles<Cfg>(swiglu_fp8::GroupedProblem<Cfg>(p));
}

// The kernel parameter of a form: the grouped forms take the experts too.
template <int kForm>
using swiglu_fp8_params_t =
    typename std::conditional<sw_grouped(kForm), cake_swiglu_fp8_grouped_params,
                              cake_swiglu_fp8_params>::type;

}  // namespace cake

// One manifest line -> one extern "C" kernel (the includer defines CAKE_KERNEL_NAME(sym)).
// load_batch, pipeline, tail and variant are optional (0 when left out).
#ifndef CAKE_SWIGLU_FP8_PROGRAM
#define CAKE_SWIGLU_FP8_PROGRAM(sym, form, threads, min_ctas, tile_rows, rows_per_thread,        \
                                load_hint, sigmoid_form, band_form, ...)                         \
  extern "C" __global__ void __launch_bounds__(threads, min_ctas)                                \
      CAKE_KERNEL_NAME(sym)(const __grid_constant__ cake::swiglu_fp8_params_t<form> p) {         \
    cake::swiglu_fp8_body<cake::SwigluFp8Cfg<form, threads, tile_rows, rows_per_thread,          \
                                             load_hint, sigmoid_form, band_form,                 \
                                             ##__VA_ARGS__>>(p);                                 \
  }
#endif
