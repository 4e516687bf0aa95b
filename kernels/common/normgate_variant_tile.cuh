// The normgate variant tile programs' forward: the variant programs' function and bits
// (normgate_variant_fwd.cuh: every gate, placement, group size; the canonical group order of
// docs/spec/normgate.md), in the tile layout of normgate_general_layout.h (cake_ng_tile_of):
// each thread holds several 16-byte leaves, so that a row's reduction work (the piece scans, the
// sums of pieces) is shared by more columns and a row of 8192 columns fits a CTA of 256 threads,
// several CTAs an SM (the one-leaf layout needs 1024 threads a row and then runs one CTA an SM,
// its loads idle while its barriers wait). The gate and placement are template arguments of the
// body (one switch at entry), so the per-element arithmetic has no branches; x and z are 16-bit
// (BF16 or F16: FP32 x or z take the one-leaf variant programs), w any dtype.
//
// Per slot the thread keeps x and z as loaded (gate after the norm: a(z) is computed again after
// the reduction, the same bits) or u = x * a(z) in FP32 (gate before the norm), so the registers
// stay within 64 with four slots.
#pragma once
#include <stdint.h>

#include "cake.h"
#include "normgate_general_layout.h"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_variant_fwd.cuh"
#include "normgate_variant_tile_sum.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

template <int kGate>
__device__ __forceinline__ float tile_gate(float z) {
  if constexpr (kGate == CAKE_NORMGATE_GATE_SILU) return __fmul_rn(z, sigmoid(z));
  if constexpr (kGate == CAKE_NORMGATE_GATE_SIGMOID) return sigmoid(z);
  return 1.0f;
}

// a(z) from s = sigmoid(z): tile_gate's bits.
template <int kGate>
__device__ __forceinline__ float tile_gate_of(float z, float s) {
  if constexpr (kGate == CAKE_NORMGATE_GATE_SILU) return __fmul_rn(z, s);
  if constexpr (kGate == CAKE_NORMGATE_GATE_SIGMOID) return s;
  return 1.0f;
}

// The slots' places of this thread, and which slots' columns of w hold a magnitude of 2^24 or
// more (bit m: slot m; through an opaque copy, one register for the walk, not a predicate a
// slot).
template <int kSlots>
__device__ __forceinline__ uint32_t tile_setup(const cake_normgate_params &p, const cake_ng_tile &t,
                                               const TileGeom &g, uint32_t (&place0)[kSlots]) {
#pragma unroll
  for (int m = 0; m < kSlots; ++m) place0[m] = tile_place(t, g, m);
  uint32_t w_wide = 0;
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    float wf[8];
    load8_as_f32(p.w, int64_t(tile_leaf(place0[m])) * 8, p.w_dtype, tile_used(place0[m]), wf);
    if (!(chunk_absmax(wf) < kWideMaxInput)) w_wide |= 1u << m;
  }
  return opaque_u32(w_wide);
}

// One trip's loads into a load ring's stage (this thread's vectors: x, then z when gated and dy
// when kDy, each kSlots * kThreads vectors after the one before), committed as one group: slot
// m's columns of row row_of(place), zero-filled where the trip is past the walk (!live), the
// slot unused or the row past the end.
template <int kThreads, int kSlots, bool kGated, bool kDy, class RowOf>
__device__ __forceinline__ void tile_ring_issue(uint4 *stage, const cake_normgate_params &p,
                                                const uint32_t (&place0)[kSlots], bool live,
                                                RowOf row_of) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int m = 0; m < kSlots; ++m) {
    const uint32_t pl = opaque_u32(place0[m]);
    const int64_t row = row_of(pl);
    const bool ok = live && tile_used(pl) && row < p.rows;
    const int64_t at = ok ? row : 0;
    const int64_t c8 = int64_t(tile_leaf(pl)) * 8;
    uint4 *v = stage + m * kThreads + tid;
    cp_async16(v, static_cast<const uint16_t *>(p.x) + at * p.x_stride + c8, ok);
    if constexpr (kGated) {
      cp_async16(v + kSlots * kThreads, static_cast<const uint16_t *>(p.z) + at * p.z_stride + c8, ok);
    }
    if constexpr (kDy) {
      cp_async16(v + 2 * kSlots * kThreads, static_cast<const uint16_t *>(p.dy) + at * p.dy_stride + c8, ok);
    }
  }
  cp_async_commit();
}

// One trip: the CTA's rows_per_thread * row_groups rows of block b. red: the CTA's shared
// scans (2 x slots x threads floats, by trip parity), used only when a group spans 32-leaf runs.
// kRowTree: a default-form call (SiLU after a whole-row norm, BF16 tensors), its row sums in the
// default form's tree (tile_row_tree_sums) rather than the variant group order.
template <int kThreads, int kSlots, int kDepth, int kGate, bool kBefore, bool kRowTree = false>
__device__ __forceinline__ void fwd_tile_rows(const cake_normgate_params &p, float *red,
                                              uint4 *ring) {
  cake_ng_tile t;
  if (!cake_ng_tile_of(p.d, kThreads, kSlots, &t)) return;  // the router serves no such width
  constexpr bool kGated = kGate != CAKE_NORMGATE_GATE_NONE;
  const int tid = static_cast<int>(threadIdx.x);
  const TileGeom g = tile_geom(t, p.d, p.group, tid);
  const int q = g.q;
  const float inv_g = inverse_width(p.group);
  const int64_t ngroups = p.d / p.group;

  uint32_t place0[kSlots];
  const uint32_t w_wide = tile_setup<kSlots>(p, t, g, place0);
  auto row_of_slot = [&](uint32_t pl) { return g.rg + tile_sub(pl) * t.row_groups; };
  const int64_t rows_per_block = int64_t(t.rows_per_thread) * t.row_groups;

  // kDepth > 0: a ring of kDepth trips of x and z in shared memory (ring: [kDepth][x, z][slot]
  // [thread] 16-byte vectors, each thread its own), filled by cp.async kDepth trips ahead, so
  // that the loads of the next trips are in flight while this one reduces and stores.
  auto issue = [&](int64_t bb, int stage) {
    if constexpr (kDepth > 0) {
      tile_ring_issue<kThreads, kSlots, kGated, false>(
          ring + stage * 2 * kSlots * kThreads, p, place0, bb < p.num_blocks,
          [&](uint32_t pl) { return bb * rows_per_block + row_of_slot(pl); });
    }
  };
#pragma unroll
  for (int st = 0; st < kDepth; ++st) issue(blockIdx.x + int64_t(st) * gridDim.x, st);

  int parity = 0, stage = 0;
  for (int64_t b = blockIdx.x; b < p.num_blocks; b += gridDim.x, parity ^= 1) {
    const int64_t row0 = b * rows_per_block;
    // The slots' places pass through an opaque copy each trip, so that what derives from them
    // (a few integer operations) is recomputed in the trip instead of being hoisted out of the
    // walk, where it would not fit the registers beside the trip's data.
    uint32_t place[kSlots];
#pragma unroll
    for (int m = 0; m < kSlots; ++m) place[m] = opaque_u32(place0[m]);
    uint4 xr[kSlots], zr[kSlots];
    if constexpr (kDepth > 0) {
      cp_async_wait<kDepth - 1>();
#pragma unroll
      for (int m = 0; m < kSlots; ++m) {
        const uint4 *v = ring + (stage * 2 * kSlots + m) * kThreads + tid;
        xr[m] = v[0];
        zr[m] = kGated ? v[kSlots * kThreads] : make_uint4(0, 0, 0, 0);
      }
    } else {
#pragma unroll
      for (int m = 0; m < kSlots; ++m) {  // every load of the trip in flight before the first use
        const int64_t row = row0 + row_of_slot(place[m]);
        const bool ok = tile_used(place[m]) && row < p.rows;
        const int64_t c8 = int64_t(tile_leaf(place[m])) * 8;
        xr[m] = ok ? load16<kLoadDefault>(static_cast<const uint16_t *>(p.x) + row * p.x_stride + c8)
                   : make_uint4(0, 0, 0, 0);
        zr[m] = (ok && kGated)
                    ? load16<kLoadDefault>(static_cast<const uint16_t *>(p.z) + row * p.z_stride + c8)
                    : make_uint4(0, 0, 0, 0);
      }
    }
    float uf[kBefore ? kSlots : 1][8];  // gate before the norm: u = x * a(z), kept
    float v[kSlots];                    // each leaf's sum of squares, then its piece scan
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      // A leaf with an input of 2^24 or more makes its group wide (normgate_wide.cuh): BF16 from
      // the exponent fields; F16's finite values are all smaller (Inf and NaN reach the sum).
      const bool wide_in = (w_wide >> m & 1u) != 0u ||
                           (p.x_dtype == CAKE_DTYPE_BF16 && bf16x8_wide(xr[m])) ||
                           (kGated && p.z_dtype == CAKE_DTYPE_BF16 && bf16x8_wide(zr[m]));
      float x[8];
      unpack16_as_f32(xr[m], p.x_dtype, x);
      if constexpr (kBefore) {
        float z[8];
        unpack16_as_f32(zr[m], p.z_dtype, z);
#pragma unroll
        for (int i = 0; i < 8; ++i) uf[m][i] = __fmul_rn(x[i], tile_gate<kGate>(z[i]));
        v[m] = mark_wide(chunk_sumsq<false>(uf[m], 1.0f), wide_in);
      } else {
        v[m] = mark_wide(chunk_sumsq<false>(x, 1.0f), wide_in);
      }
    }
    float total[kSlots];
    if constexpr (kRowTree) {
      tile_row_tree_sums<kThreads, kSlots>(v, place, g, red + parity * kSlots * kThreads, total);
    } else {
      tile_group_sums<kThreads, kSlots>(v, place, g, red + parity * kSlots * kThreads, total);
    }
    uint32_t wide_slots = 0;  // bit m: slot m's group is wide, computed after the trip's stores
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      const int64_t row = row0 + row_of_slot(place[m]);
      const bool used = tile_used(place[m]);
      const bool ok = used && row < p.rows;
      const float rstd = rstd_from_sumsq(total[m], inv_g, p.eps);
      const int64_t c8 = int64_t(tile_leaf(place[m])) * 8;
      if (ok && !stats_in_range(total[m], inv_g, p.eps)) {  // rare: a wide group (normgate_wide.cuh)
        wide_slots |= 1u << m;
        continue;
      }
      float wf[8], yf[8];
      // w's column through an opaque copy: its load stays here, after the reduction, instead of
      // being hoisted above it beside the trip's data (an FP32 w is 8 registers a slot).
      load8_as_f32(p.w, int64_t(opaque_u32(uint32_t(c8))), p.w_dtype, used, wf);
      if constexpr (kBefore) {
#pragma unroll
        for (int i = 0; i < 8; ++i) yf[i] = __fmul_rn(__fmul_rn(uf[m][i], rstd), wf[i]);
      } else {
        // x and z unpacked again from their 16-bit copies (opaque, so the compiler does not keep
        // the first unpacking's FP32 values, twice the registers, across the reduction).
        float x[8];
        unpack16_as_f32(opaque_u4(xr[m]), p.x_dtype, x);
        float z[8];
        if constexpr (kGated) unpack16_as_f32(opaque_u4(zr[m]), p.z_dtype, z);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          const float nw = __fmul_rn(__fmul_rn(x[i], rstd), wf[i]);
          yf[i] = kGated ? __fmul_rn(nw, tile_gate<kGate>(z[i])) : nw;
        }
      }
      if (ok) {
        store8_from_f32(p.y, row * p.y_stride + c8, p.x_dtype, yf);
        const int gi = tile_group(place[m]);
        if (p.rstd != nullptr && tile_leaf(place[m]) == gi * q) p.rstd[row * ngroups + gi] = rstd;
      }
    }
    // The wide groups' leaves in FP64, after the trip's other slots are stored and their data
    // have left the registers: the FP64 path then shares the registers with the walk's state
    // only. One copy of it (the loop is not unrolled; a slot's place is selected, not indexed).
    if (wide_slots != 0u) {  // rare
#pragma unroll 1
      for (int m = 0; m < kSlots; ++m) {
        if ((wide_slots >> m & 1u) == 0u) continue;
        uint32_t pl = 0;
#pragma unroll
        for (int k = 0; k < kSlots; ++k) pl = k == m ? place0[k] : pl;
        wide_forward_store(p, !kRowTree, row0 + row_of_slot(pl), tile_leaf(pl) * 8);
      }
    }
    // The stage read at the top of this trip (its values long in registers) takes the trip
    // kDepth ahead.
    issue(b + int64_t(kDepth) * gridDim.x, stage);
    stage = stage + 1 == kDepth ? 0 : stage + 1;
  }
}

template <class Cfg>
__device__ __forceinline__ void fwd_variant_tile(const cake_normgate_params &p) {
  constexpr int kT = Cfg::kThreads, kS = Cfg::kSlots, kD = Cfg::kPrefetch;
  __shared__ float red[2 * kS * kT];
  uint4 *ring = dynamic_smem<uint4>();  // cake_ng_tile_smem bytes
  if (p.gate == CAKE_NORMGATE_GATE_NONE) {
    fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_NONE, false>(p, red, ring);
  } else if (p.placement == CAKE_NORMGATE_GATE_BEFORE_NORM) {
    if (p.gate == CAKE_NORMGATE_GATE_SILU) {
      fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_SILU, true>(p, red, ring);
    } else {
      fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_SIGMOID, true>(p, red, ring);
    }
  } else if (p.gate == CAKE_NORMGATE_GATE_SILU) {
    fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_SILU, false>(p, red, ring);
  } else {
    fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_SIGMOID, false>(p, red, ring);
  }
}

// The default form's tile forward: the same body with its one gate and placement and the
// default row tree, so that it gives the general programs' bytes.
template <class Cfg>
__device__ __forceinline__ void fwd_default_tile(const cake_normgate_params &p) {
  constexpr int kT = Cfg::kThreads, kS = Cfg::kSlots, kD = Cfg::kPrefetch;
  __shared__ float red[2 * kS * kT];
  uint4 *ring = dynamic_smem<uint4>();  // cake_ng_tile_smem bytes
  fwd_tile_rows<kT, kS, kD, CAKE_NORMGATE_GATE_SILU, false, true>(p, red, ring);
}

}  // namespace ng
}  // namespace cake
