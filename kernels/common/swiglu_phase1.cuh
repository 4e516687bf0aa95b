// SwiGLU + MXFP8 phase 1: a thread's slot of k-columns x rows_per_thread rows. The loads (from
// global memory, or from a stage of the staged ring: swiglu_stage.cuh), the sigmoid and the
// BF16 Y, the rowwise bytes quantized straight from registers (a 32-column block is 2 or 4
// adjacent lanes: one shuffle level a lane pair), and Y's copy into the Y tile for phase 2.
#pragma once
#include <stdint.h>

#include <type_traits>

#include "mxfp8_encode.h"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_quantize.cuh"
#include "swiglu_sigmoid.cuh"
#include "swiglu_smem_layout.cuh"
#include "swiglu_variant.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

namespace mx = cake::mx;

// Y of 16 k-columns of one row. gate points at the row's 16 gates (up at gate + K, grad at
// grad); only the flagged-pair loop reads them again.
// The words of V 16-byte vectors. (Two vectors through a const initializer list, as before
// slot_cols existed: a loop of copies gives the 16-column programs the same instructions in
// another order, and their SASS was to stay as measured.)
template <int V>
__device__ __forceinline__ void words_of(const uint4 (&v)[V], uint32_t (&w)[4 * V]) {
  if constexpr (V == 2) {
    const uint32_t c[8] = {v[0].x, v[0].y, v[0].z, v[0].w, v[1].x, v[1].y, v[1].z, v[1].w};
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = c[i];
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      w[4 * i] = v[i].x;
      w[4 * i + 1] = v[i].y;
      w[4 * i + 2] = v[i].z;
      w[4 * i + 3] = v[i].w;
    }
  }
}

// The activation (swiglu_pair.cuh, swiglu_variant.cuh) gives each pair's arithmetic and the
// gate the sigmoid is taken of; the return value is the slot row's dp sum (dp_slot_tree; 0 for
// the plain SwiGLU, where nothing computes it).
template <class Cfg, class Act = PlainAct>
__device__ __forceinline__ float compute_y(const uint4 (&gv)[Cfg::kSlotVecs],
                                           const uint4 (&uv)[Cfg::kSlotVecs],
                                           const uint4 (&dv)[Cfg::kSlotVecs], const uint16_t *gate,
                                           const uint16_t *grad, int64_t K,
                                           uint32_t (&y0)[Cfg::kSlotWords],
                                           uint32_t (&y1)[Cfg::kSlotWords],
                                           const Act &act = Act()) {
  constexpr int W = Cfg::kSlotWords;
  uint32_t gw[W], uw[W], dw[W];
  float ps[W];  // the pairs' dp sums (dead code for the plain SwiGLU)
  words_of(gv, gw);
  words_of(uv, uw);
  words_of(dv, dw);
  // Backward: dact * grad can overflow only where |grad| >= FLT_MAX / 1.1 (|dact| <= 1.0999),
  // so a slot row with |grad| at or above 0x7F68 (1.8125 * 2^127 = 3.08e38, BF16 bits; Inf and
  // NaN included) is recomputed pair by pair with the wide dgate after the fast pass. Where no
  // product overflowed refix gives the same bits, so the test only has to be conservative; it
  // reads the grad words before the fast pass (a flag, not the outputs, stays live across it).
  uint32_t gmax = 0;
  if constexpr (Cfg::kBackward) {
#pragma unroll
    for (int i = 0; i < W; ++i) gmax = __vmaxu2(gmax, dw[i] & 0x7FFF7FFFu);
  }
  const bool huge_grad = act.huge(halves_max(gmax) >= kHugeGradBits);
  // The plain SwiGLU keeps the exact code it had before the variants existed (a refix path's
  // register allocation around the band form's call is sensitive to the shape of this code).
  constexpr bool kPlain = std::is_same<Act, PlainAct>::value;
  for_each_sigmoid_pair_of<Cfg::kSig, Cfg::kBand, W>(
      gw, [&](float2 g) { return act.pre(g); },
      [&](int i, float2 g, float2 s) {
        if constexpr (kPlain) {
          y_pair<Cfg>(g, s, uw[i], dw[i], y0[i], y1[i]);
        } else {
          ps[i] = act.template pair<Cfg, false>(g, s, uw[i], dw[i], y0[i], y1[i]);
        }
      },
      [&](int j) {
        // Flagged pairs only exist in rows that were loaded (a zero-filled slot has g = 0 and
        // grad = 0).
        const uint32_t gword = __ldg(reinterpret_cast<const unsigned int *>(gate) + j);
        const uint32_t uword = __ldg(reinterpret_cast<const unsigned int *>(gate + K) + j);
        uint32_t dword = 0;
        if constexpr (Cfg::kBackward) {
          dword = __ldg(reinterpret_cast<const unsigned int *>(grad) + j);
        }
        uint32_t a = 0, b = 0;
        float t = 0.0f;
        if constexpr (kPlain) {
          y_pair<Cfg, true>(bf16x2_to_float2(gword), sigmoid_exact_pair(gword), uword, dword, a,
                            b);
        } else {
          const float2 g = bf16x2_to_float2(gword);
          const float2 z = act.pre(g);
          t = act.template pair<Cfg, true>(
              g, make_float2(sigmoid_band(z.x), sigmoid_band(z.y)), uword, dword, a, b);
        }
#pragma unroll
        for (int i = 0; i < W; ++i) {
          y0[i] = (i == j) ? a : y0[i];
          if constexpr (Cfg::kBackward) y1[i] = (i == j) ? b : y1[i];
          if constexpr (!kPlain) ps[i] = (i == j) ? t : ps[i];
        }
      },
      [&] {
        constexpr uint32_t kAll = W == 32 ? 0xFFFFFFFFu : (1u << W) - 1u;
        return huge_grad ? kAll : 0u;
      });
  if constexpr (kPlain) {
    return 0.0f;
  } else {
    return dp_slot_tree(ps);
  }
}

// ---- phase 1: one slot (16 k-columns x kRpt rows) ----
// The loaded inputs of one slot: kRpt rows of 16 gates, 16 ups and (backward) 16 grads.
template <class Cfg>
struct SlotIn {
  uint4 g[Cfg::kRpt][Cfg::kSlotVecs], u[Cfg::kRpt][Cfg::kSlotVecs], d[Cfg::kRpt][Cfg::kSlotVecs];
};

// Issue the loads of row r of a slot (zeros outside the problem).
template <class Cfg>
__device__ __forceinline__ void load_row(const cake_swiglu_mxfp8_params &p, int64_t m0, int64_t k0,
                                         int slot, int r, SlotIn<Cfg> &in) {
  const int chunk = slot % Cfg::kChunksPerRow;
  const int row_group = slot / Cfg::kChunksPerRow;
  const int64_t K = p.K;
  const int64_t k = k0 + chunk * Cfg::kSlotCols;
  const int64_t m = m0 + row_group + r * Cfg::kRowGroups;
  const uint4 z = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int v = 0; v < Cfg::kSlotVecs; ++v) in.g[r][v] = in.u[r][v] = in.d[r][v] = z;
  if (k < K && m < p.M) {
    const uint16_t *gate = p.in + m * (2 * K) + k;  // [M, 2K]: gate | up
#pragma unroll
    for (int v = 0; v < Cfg::kSlotVecs; ++v) in.g[r][v] = load16<Cfg::kLoadHint>(gate + 8 * v);
#pragma unroll
    for (int v = 0; v < Cfg::kSlotVecs; ++v) in.u[r][v] = load16<Cfg::kLoadHint>(gate + K + 8 * v);
    if constexpr (Cfg::kBackward) {
      const uint16_t *grad = p.grad + m * K + k;  // [M, K]
#pragma unroll
      for (int v = 0; v < Cfg::kSlotVecs; ++v) in.d[r][v] = load16<Cfg::kLoadHint>(grad + 8 * v);
    }
  }
}

// Row r of a slot from its loaded inputs: Y, its rowwise bytes, its shared-memory copy; Y dies
// before the next row. A variant program (acc: the slot row's running dp sum) adds the tile's
// part of the row's dp (dp_add_tile).
template <class Cfg>
__device__ __forceinline__ void compute_row(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int slot, int r, const SlotIn<Cfg> &in,
                                            uint32_t *smem, uint8_t *rscale = nullptr,
                                            float *acc = nullptr) {
  constexpr int G = Cfg::kOutPerK;  // 16-value groups per row: Y, or dgate and dup
  const int chunk = slot % Cfg::kChunksPerRow;
  const int row_group = slot / Cfg::kChunksPerRow;
  const int64_t K = p.K;
  const int64_t k = k0 + chunk * Cfg::kSlotCols;
  const int row = row_group + r * Cfg::kRowGroups;  // within the tile
  const int64_t m = m0 + row;
  const bool ok = k < K && m < p.M;
  const uint16_t *gate = p.in + m * (2 * K) + k;
  uint32_t y[G][Cfg::kSlotWords];
  const uint16_t *grad = Cfg::kBackward ? p.grad + m * K + k : nullptr;
  if constexpr (Cfg::kVariant) {
    const float t = compute_y<Cfg>(in.g[r], in.u[r], in.d[r], gate, grad, K, y[0], y[G - 1],
                                   variant_act(p.var, m, ok));
    *acc = dp_add_tile<Cfg::kChunksPerRow, Cfg::kBlockLanes>(t, *acc);
  } else {
    compute_y<Cfg>(in.g[r], in.u[r], in.d[r], gate, grad, K, y[0], y[G - 1]);
  }

  if constexpr (Cfg::kRowwise && !Cfg::kRowFromTile) {
    // The kBlockLanes adjacent lanes (2, or 4 with 8-column slots) of a 32-column block hold
    // its pieces. Backward, the dgate and dup amaxes travel in one shuffle a level, and the
    // block's first lane writes dgate's scale byte, its second dup's; forward, the first lane
    // writes the one scale byte.
    constexpr int L = Cfg::kBlockLanes;
    const int lane_in_block = threadIdx.x & (L - 1);
    uint32_t a = halves_max(amax2(y[0]));
    if constexpr (G == 2) a |= halves_max(amax2(y[1])) << 16;
#pragma unroll
    for (int lm = 1; lm < L; lm <<= 1) a = __vmaxu2(a, __shfl_xor_sync(0xFFFFFFFFu, a, lm));
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const uint32_t s = mx::scale_from_amax_bits(g ? a >> 16 : a & 0xFFFFu);
      uint32_t q[Cfg::kSlotWords / 2];
      quantize_words(y[g], s, q);
      if (ok) {
        const int64_t o = g ? K + k : k;
        if constexpr (Cfg::kSlotCols == 16) {
          store16(p.row_q + m * p.O + o, make_uint4(q[0], q[1], q[2], q[3]));
        } else {
          store8(p.row_q + m * p.O + o, make_uint2(q[0], q[1]));
        }
        if (lane_in_block == g) {
          if (Cfg::kStagedRowScales && rscale != nullptr) {  // the tile's block copy
            rscale[g * 512 + (row & 31) * 16 + ((row >> 5) & 3) * 4 + ((o >> 5) & 3)] =
                (uint8_t)s;
          } else {
            p.row_s[mx::swizzle_offset(m, o >> 5, p.row_s_cols_padded)] = (uint8_t)s;
          }
        }
      }
    }
  }

  if constexpr (Cfg::kColwise) {
    // Grouped: an expert's last 32-row block may be partial, and its rows past the expert come
    // from zero inputs (Y = +0), which leave the block's amax that of its rows.
    if (Cfg::kGrouped ? k < K : ok) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        // Words w .. w+kSlotWords-1 of the row: Y, or dgate then (kTileCols/2 words on) dup.
        const int w = (g ? Cfg::kTileCols / 2 : 0) + chunk * Cfg::kSlotWords;
        *reinterpret_cast<uint4 *>(smem + smem_word<Cfg>(row, w)) =
            make_uint4(y[g][0], y[g][1], y[g][2], y[g][3]);
        if constexpr (Cfg::kSlotVecs == 2) {
          *reinterpret_cast<uint4 *>(smem + smem_word<Cfg>(row, w + 4)) =
              make_uint4(y[g][4], y[g][5], y[g][6], y[g][7]);
        }
      }
    }
  }
}

// One slot, unpipelined: every load of the slot in flight before any arithmetic.
template <class Cfg>
__device__ __forceinline__ void phase1_slot(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int slot, uint32_t *smem) {
  SlotIn<Cfg> in;
#pragma unroll
  for (int r = 0; r < Cfg::kRpt; ++r) load_row<Cfg>(p, m0, k0, slot, r, in);
#pragma unroll
  for (int r = 0; r < Cfg::kRpt; ++r) compute_row<Cfg>(p, m0, k0, slot, r, in, smem);
}

}  // namespace swiglu
}  // namespace cake
