// SwiGLU + MXFP8 phase 1: a thread's slot of k-columns x rows_per_thread rows. The loads (from
// global memory, or from a stage of the staged ring: swiglu_stage.cuh), the sigmoid and the
// BF16 Y, the rowwise bytes quantized straight from registers (a 32-column block is 2 or 4
// adjacent lanes: one shuffle level a lane pair), and Y's copy into the Y tile for phase 2.
#pragma once
#include <stdint.h>

#include "mxfp8_encode.h"
#include "swiglu_mxfp8_config.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_quantize.cuh"
#include "swiglu_sigmoid.cuh"
#include "swiglu_smem_layout.cuh"
#include "vector_io.cuh"

namespace cake {
namespace swiglu {

namespace mx = cake::mx;

// The smallest |grad| (BF16 bits) that compute_y sends to the wide dgate: 1.8125 * 2^127, with
// 1.8125 * 2^127 * 1.0999 below FLT_MAX for the BF16 value below it (1.8047 * 2^127).
constexpr uint32_t kHugeGradBits = 0x7F68u;

// dgate where dact * grad overflowed FP32: ((dact / 2) * grad) * u * 2 (y_pair says why).
__device__ __forceinline__ float wide_dgate(float dact, float grad, float u) {
  return __fmul_rn(__fmul_rn(__fmul_rn(__fmul_rn(dact, 0.5f), grad), u), 2.0f);
}

// ---- Y of one slot row ----
// One pair of outputs from one pair of gates and their sigmoid: the only place the SwiGLU
// arithmetic is written (emit and refix both call it). Forward: yw0 = Y. Backward: yw0 = dgate,
// yw1 = dup.
//
// dact * grad overflows FP32 for finite inputs when |grad| > FLT_MAX / |dact| (|dact| <= 1.0998,
// so |grad| above about 3.09e38, near BF16's largest value), although dgate = dact * grad * u is
// finite for |u| < 1 and +-0 for u = 0 (where Inf * 0 would give NaN). kWide (the refix path
// only) then evaluates dgate with that product's exponent unbounded: ((dact / 2) * grad) * u * 2,
// the bits the plain sequence gives with FP32's precision and a wider exponent, rounded to FP32
// (dact / 2 and the final doubling are exact there: |dact| > 1, and |((dact / 2) * grad) * u| is
// 0 or at least 2^127 * 2^-133, a normal number). Where the product is finite kWide changes
// nothing, so the fast pass keeps the plain sequence and compute_y sends a slot row with a huge
// grad to the refix path. docs/spec/swiglu-mxfp8.md, "Range".
template <class Cfg, bool kWide = false>
__device__ __forceinline__ void y_pair(float2 g, float2 s, uint32_t uw, uint32_t dw,
                                       uint32_t &yw0, uint32_t &yw1) {
  constexpr int kSig = Cfg::kSig;
  const float2 u = bf16x2_to_float2(uw);
  const float2 a = pmul<kSig>(g, s);  // silu(g) = g * sigmoid(g)
  if constexpr (!Cfg::kBackward) {
    const float2 y = pmul<kSig>(a, u);
    yw0 = pack_bf16x2(y.x, y.y);
  } else {
    const float2 d = bf16x2_to_float2(dw);
    const float2 oms = psub<kSig>(make_float2(1.0f, 1.0f), s);
    const float2 dact = pfma<kSig>(a, oms, s);  // d silu / dg, one rounding
    const float2 dd = pmul<kSig>(dact, d);
    float2 dg = pmul<kSig>(dd, u);
    if constexpr (kWide) {
      const float inf = __uint_as_float(0x7F800000u);
      if (fabsf(dd.x) == inf) dg.x = wide_dgate(dact.x, d.x, u.x);
      if (fabsf(dd.y) == inf) dg.y = wide_dgate(dact.y, d.y, u.y);
    }
    const float2 du = pmul<kSig>(a, d);
    yw0 = pack_bf16x2(dg.x, dg.y);
    yw1 = pack_bf16x2(du.x, du.y);
  }
}

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

template <class Cfg>
__device__ __forceinline__ void compute_y(const uint4 (&gv)[Cfg::kSlotVecs],
                                          const uint4 (&uv)[Cfg::kSlotVecs],
                                          const uint4 (&dv)[Cfg::kSlotVecs], const uint16_t *gate,
                                          const uint16_t *grad, int64_t K,
                                          uint32_t (&y0)[Cfg::kSlotWords],
                                          uint32_t (&y1)[Cfg::kSlotWords]) {
  constexpr int W = Cfg::kSlotWords;
  uint32_t gw[W], uw[W], dw[W];
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
  const bool huge_grad = halves_max(gmax) >= kHugeGradBits;
  for_each_sigmoid_pair<Cfg::kSig, Cfg::kBand, W>(
      gw, [&](int i, float2 g, float2 s) { y_pair<Cfg>(g, s, uw[i], dw[i], y0[i], y1[i]); },
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
        y_pair<Cfg, true>(bf16x2_to_float2(gword), sigmoid_exact_pair(gword), uword, dword, a, b);
#pragma unroll
        for (int i = 0; i < W; ++i) {
          y0[i] = (i == j) ? a : y0[i];
          if constexpr (Cfg::kBackward) y1[i] = (i == j) ? b : y1[i];
        }
      },
      [&] {
        constexpr uint32_t kAll = W == 32 ? 0xFFFFFFFFu : (1u << W) - 1u;
        return huge_grad ? kAll : 0u;
      });
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
// before the next row.
template <class Cfg>
__device__ __forceinline__ void compute_row(const cake_swiglu_mxfp8_params &p, int64_t m0,
                                            int64_t k0, int slot, int r, const SlotIn<Cfg> &in,
                                            uint32_t *smem, uint8_t *rscale = nullptr) {
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
  compute_y<Cfg>(in.g[r], in.u[r], in.d[r], gate, Cfg::kBackward ? p.grad + m * K + k : nullptr,
                 K, y[0], y[G - 1]);

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
