// The normgate variant tile programs' backward: the variant programs' function and bits
// (normgate_variant.cuh's backward: every gate, placement and group size, the canonical group
// order, the dw chunk sums and tree of both packages) in the tile layout of
// normgate_general_layout.h, one row a row group a trip: each thread holds several 16-byte
// leaves of x, z and dy (their 16-bit copies in registers), so that a row of 8192 columns fits
// a CTA of 256 threads and several CTAs an SM; one CTA's reductions then overlap another's loads
// (the one-leaf layout runs one CTA of 1024 threads an SM, its loads idle at each barrier). The
// gate and placement are template arguments of the body (one switch at entry), so the
// per-element arithmetic has no branches; x and z are 16-bit (BF16 or F16), w any dtype.
//
// A trip: the row's x, z, dy loaded, the group sums of u^2 and of dn * n (tile_group_sums, two
// shared buffers by turn), then dx, dz and the dw terms. s = sigmoid(z) is computed once a trip
// (two SFU operations an element, the SFU's quarter rate the scarcest issue) and kept in the
// thread's own shared memory, [slot][2][thread] float4, for the later passes; the FP32 values of
// x, z, dy are unpacked again from the 16-bit copies in each pass (the same bits) rather than
// kept in registers. The dw terms of slot m go into the thread's FP32 chunk sums in shared
// memory, [slot][2][thread] float4 (cake_ng_tile_bwd_smem); a row group walks one chunk (16
// rows) of its block in row order.
#pragma once
#include <stdint.h>

#include "cake.h"
#include "normgate_general_layout.h"
#include "normgate_math.cuh"
#include "normgate_params.h"
#include "normgate_variant.cuh"
#include "normgate_variant_fwd.cuh"
#include "normgate_variant_tile.cuh"
#include "normgate_variant_tile_sum.cuh"
#include "normgate_wide.cuh"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// Whether 8 values of a 16-bit tensor hold one of 2^24 or more in magnitude, or Inf or NaN
// (normgate_wide.cuh's wide inputs): BF16 from the exponent fields; F16's finite values are all
// smaller, so only an all-ones exponent field counts.
__device__ __forceinline__ bool half8_wide(uint4 v, int32_t dtype) {
  if (dtype != CAKE_DTYPE_F16) return bf16x8_wide(v);
  constexpr uint32_t kLo = 0x7c00u, kHi = 0x7c000000u;
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  bool wide = false;
#pragma unroll
  for (int i = 0; i < 4; ++i) wide = wide || (w[i] & kLo) == kLo || (w[i] & kHi) == kHi;
  return wide;
}

// a'(z) of the gate.
template <int kGate>
__device__ __forceinline__ float tile_slope(float z, float s) {
  const float one_minus = __fsub_rn(1.0f, s);
  if constexpr (kGate == CAKE_NORMGATE_GATE_SILU) return __fmul_rn(s, __fmaf_rn(z, one_minus, 1.0f));
  return __fmul_rn(s, one_minus);
}

// kDepth > 0: a ring of kDepth trips of x, z and dy in shared memory ([depth][x, z, dy][slot]
// [thread] 16-byte vectors, each thread its own; cake_ng_tile_ring_offset), filled by cp.async
// kDepth trips ahead, so that a trip's loads are in flight while the trips before it reduce: a
// CTA of 512 threads is alone on its SM, and without the ring each trip waited out its loads.
template <int kThreads, int kSlots, int kDepth, bool kDet, int kGate, bool kBefore>
__device__ __forceinline__ void bwd_tile_rows(const cake_normgate_params &p, float *red,
                                              double *sums, double *scratch, int *flag,
                                              unsigned char *smem) {
  constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  constexpr bool kGated = kGate != CAKE_NORMGATE_GATE_NONE;
  cake_ng_tile t;
  // The router serves widths whose tile holds one row a row group.
  if (!cake_ng_tile_of(p.d, kThreads, kSlots, &t) || t.rows_per_thread != 1) return;
  const int tid = static_cast<int>(threadIdx.x);
  const TileGeom g = tile_geom(t, p.d, p.group, tid);
  const float inv_g = inverse_width(p.group);
  const bool want_dw = (p.dw_flags & kDwSkip) == 0;
  float4 *acc = reinterpret_cast<float4 *>(smem) + tid;  // [slot][2][thread]
  // sigmoid(z) of slot m, element i: sig(m)[(i / 4) * kThreads], lane i % 4. Its address through
  // an opaque copy at each read, so that the compiler reloads it rather than keeping the values
  // in registers across the trip.
  auto sig = [&](int m) {
    return reinterpret_cast<float4 *>(smem + opaque_u32(uint32_t(cake_ng_tile_sig_offset(kThreads, kSlots)))) +
           2 * m * kThreads + tid;
  };
  auto put_sig = [&](int m, const float (&sv)[8]) {
    float4 *q = sig(m);
    q[0] = make_float4(sv[0], sv[1], sv[2], sv[3]);
    q[kThreads] = make_float4(sv[4], sv[5], sv[6], sv[7]);
  };
  auto get_sig = [&](int m, float (&sv)[8]) {
    const float4 *q = sig(m);
    const float4 a = q[0], b = q[kThreads];
    sv[0] = a.x; sv[1] = a.y; sv[2] = a.z; sv[3] = a.w;
    sv[4] = b.x; sv[5] = b.y; sv[6] = b.z; sv[7] = b.w;
  };
  double *part = reinterpret_cast<double *>(smem + cake_ng_tile_part_offset(kThreads, kSlots)) + tid;

  uint32_t place0[kSlots];
  const uint32_t w_wide = tile_setup<kSlots>(p, t, g, place0);
  if constexpr (!kDet) {
#pragma unroll
    for (int i = 0; i < 8 * kSlots; ++i) part[i * kThreads] = 0.0;
  }

  // The CTA's trips: its blocks' 16 rows each, in order (32 bits: see bwd_variant).
  const int trips = static_cast<int>(cta_blocks(p.num_blocks)) * kChunk;
  auto row_of_trip = [&](int k) {
    const int64_t blk = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
    return blk * p.rows_per_block + int64_t(g.rg) * kChunk + k % kChunk;
  };
  uint4 *ring = reinterpret_cast<uint4 *>(
      smem + cake_ng_tile_ring_offset(kThreads, kSlots, kDet ? 0 : 1));
  auto issue = [&](int k, int stage) {  // trip k's x, z, dy into the ring's stage
    if constexpr (kDepth > 0) {
      const int64_t row = row_of_trip(k);
      tile_ring_issue<kThreads, kSlots, kGated, true>(ring + stage * 3 * kSlots * kThreads, p, place0,
                                                      k < trips, [&](uint32_t) { return row; });
    }
  };
#pragma unroll
  for (int st = 0; st < kDepth; ++st) issue(st, st);
  int stage = 0;
  for (int k = 0; k < trips; ++k) {
    const int r = k % kChunk;
    const int64_t blk = blockIdx.x + (k / kChunk) * int64_t(gridDim.x);
    const int64_t row = row_of_trip(k);
    const bool valid = row < p.rows;
    // The places through an opaque copy each trip: recomputed here, not held across the walk.
    uint32_t place[kSlots];
#pragma unroll
    for (int m = 0; m < kSlots; ++m) place[m] = opaque_u32(place0[m]);
    uint4 xr[kSlots], zr[kSlots], dyr[kSlots];
    if constexpr (kDepth > 0) {
      // This trip's stage (this thread's own vectors: no barrier), then the trip kDepth ahead
      // into it, its values now in registers.
      cp_async_wait<kDepth - 1>();
#pragma unroll
      for (int m = 0; m < kSlots; ++m) {
        const uint4 *v = ring + (stage * 3 * kSlots + m) * kThreads + tid;
        xr[m] = v[0];
        zr[m] = kGated ? v[kSlots * kThreads] : make_uint4(0, 0, 0, 0);
        dyr[m] = v[2 * kSlots * kThreads];
      }
      issue(k + kDepth, stage);
      stage = stage + 1 == kDepth ? 0 : stage + 1;
    } else {
#pragma unroll
      for (int m = 0; m < kSlots; ++m) {  // every load of the trip in flight before the first use
        const bool ok = valid && tile_used(place[m]);
        const int64_t c8 = int64_t(tile_leaf(place[m])) * 8;
        const uint4 zero = make_uint4(0, 0, 0, 0);
        xr[m] = ok ? load16<kLoadDefault>(static_cast<const uint16_t *>(p.x) + row * p.x_stride + c8) : zero;
        zr[m] = (ok && kGated) ? load16<kLoadDefault>(static_cast<const uint16_t *>(p.z) + row * p.z_stride + c8)
                               : zero;
        dyr[m] = ok ? load16<kLoadDefault>(static_cast<const uint16_t *>(p.dy) + row * p.dy_stride + c8) : zero;
      }
    }
    // Sum 1: u^2.
    float v[kSlots], ss[kSlots];
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      float u[8];
      unpack16_as_f32(xr[m], p.x_dtype, u);
      if constexpr (kBefore) {
        float z[8], sv[8];
        unpack16_as_f32(zr[m], p.z_dtype, z);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          sv[i] = sigmoid(z[i]);
          u[i] = __fmul_rn(u[i], tile_gate_of<kGate>(z[i], sv[i]));
        }
        put_sig(m, sv);
      }
      v[m] = chunk_sumsq<false>(u, 1.0f);
    }
    tile_group_sums<kThreads, kSlots>(v, place, g, red, ss);
    // Sum 2: dn * n, a leaf marked when it holds a wide input (then the group's mean is NaN).
    float mt[kSlots];
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      const float rstd = rstd_from_sumsq(ss[m], inv_g, p.eps);
      float wf[8], x[8], z[8], dy[8], sv[8];
      load8_as_f32(p.w, int64_t(opaque_u32(uint32_t(tile_leaf(place[m]) * 8))), p.w_dtype,
                   tile_used(place[m]), wf);
      unpack16_as_f32(opaque_u4(xr[m]), p.x_dtype, x);
      if constexpr (kGated) unpack16_as_f32(opaque_u4(zr[m]), p.z_dtype, z);
      unpack16_as_f32(opaque_u4(dyr[m]), p.x_dtype, dy);
      if constexpr (kBefore && kGated) {
        get_sig(m, sv);
      } else if constexpr (kGated) {
#pragma unroll
        for (int i = 0; i < 8; ++i) sv[i] = sigmoid(z[i]);
        put_sig(m, sv);
      }
      float leaf = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float a = kGated ? tile_gate_of<kGate>(z[i], sv[i]) : 1.0f;
        const float n = __fmul_rn(kBefore && kGated ? __fmul_rn(x[i], a) : x[i], rstd);
        const float dn = __fmul_rn(kBefore || !kGated ? dy[i] : __fmul_rn(dy[i], a), wf[i]);
        leaf = i == 0 ? __fmul_rn(dn, n) : __fmaf_rn(dn, n, leaf);
      }
      const bool wide = (w_wide >> m & 1u) != 0u || half8_wide(xr[m], p.x_dtype) ||
                        (kGated && half8_wide(zr[m], p.z_dtype)) || half8_wide(dyr[m], p.x_dtype);
      v[m] = mark_wide(leaf, wide);
    }
    tile_group_sums<kThreads, kSlots>(v, place, g, red + kSlots * kThreads, mt);
    // dx, dz and the dw terms.
    uint32_t wide_slots = 0;  // bit m: slot m's group is wide, computed after the other slots
#pragma unroll
    for (int m = 0; m < kSlots; ++m) {
      const bool ok = valid && tile_used(place[m]);
      const float mean = mean_of(mt[m], inv_g);
      if (ok && (!stats_in_range(ss[m], inv_g, p.eps) || isnan(mean))) {  // rare
        wide_slots |= 1u << m;
        continue;
      }
      const float rstd = rstd_from_sumsq(ss[m], inv_g, p.eps);
      const int64_t c8 = int64_t(tile_leaf(place[m])) * 8;
      float wf[8], x[8], z[8], dy[8], sv[8];
      load8_as_f32(p.w, int64_t(opaque_u32(uint32_t(c8))), p.w_dtype, tile_used(place[m]), wf);
      unpack16_as_f32(opaque_u4(xr[m]), p.x_dtype, x);
      if constexpr (kGated) {
        unpack16_as_f32(opaque_u4(zr[m]), p.z_dtype, z);
        get_sig(m, sv);
      }
      unpack16_as_f32(opaque_u4(dyr[m]), p.x_dtype, dy);
      float dxf[8], dzf[8], tf[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const float s = kGated ? sv[i] : 1.0f;
        const float a = kGate == CAKE_NORMGATE_GATE_SILU ? __fmul_rn(z[i], s) : s;
        const float n = __fmul_rn(kBefore && kGated ? __fmul_rn(x[i], a) : x[i], rstd);
        const float pdy = kBefore || !kGated ? dy[i] : __fmul_rn(dy[i], a);
        const float dn = __fmul_rn(pdy, wf[i]);
        const float du = __fmul_rn(__fmaf_rn(-n, mean, dn), rstd);
        float da = 0.0f;
        if constexpr (kBefore) {  // u = x * a: dx = du * a, da = du * x
          dxf[i] = kGated ? __fmul_rn(du, a) : du;
          da = __fmul_rn(du, x[i]);
        } else {  // y = (n * w) * a: da = dy * (n * w)
          dxf[i] = du;
          da = __fmul_rn(dy[i], __fmul_rn(n, wf[i]));
        }
        dzf[i] = kGated ? __fmul_rn(da, tile_slope<kGate>(z[i], s)) : 0.0f;
        tf[i] = valid ? __fmul_rn(pdy, n) : 0.0f;
      }
      if (ok) {
        store8_from_f32(p.dx, row * p.dx_stride + c8, p.x_dtype, dxf);
        if constexpr (kGated) store8_from_f32(p.dz, row * p.dz_stride + c8, p.z_dtype, dzf);
      }
      float4 *slot = acc + 2 * m * kThreads;
      if (r == 0) {
        slot[0] = make_float4(tf[0], tf[1], tf[2], tf[3]);
        slot[kThreads] = make_float4(tf[4], tf[5], tf[6], tf[7]);
      } else {
        const float4 a0 = slot[0], a1 = slot[kThreads];
        slot[0] = make_float4(__fadd_rn(a0.x, tf[0]), __fadd_rn(a0.y, tf[1]), __fadd_rn(a0.z, tf[2]), __fadd_rn(a0.w, tf[3]));
        slot[kThreads] = make_float4(__fadd_rn(a1.x, tf[4]), __fadd_rn(a1.y, tf[5]), __fadd_rn(a1.z, tf[6]), __fadd_rn(a1.w, tf[7]));
      }
    }
    // The wide groups' leaves in FP64, after the other slots have left the registers (one copy
    // of the FP64 path: the loop is not unrolled; a slot's place is selected, not indexed).
    if (wide_slots != 0u) {  // rare
#pragma unroll 1
      for (int m = 0; m < kSlots; ++m) {
        if ((wide_slots >> m & 1u) == 0u) continue;
        uint32_t pl = 0;
#pragma unroll
        for (int i = 0; i < kSlots; ++i) pl = i == m ? place0[i] : pl;
        wide_backward_acc(p, true, row, tile_leaf(pl) * 8, reinterpret_cast<float *>(acc + 2 * m * kThreads),
                          4 * kThreads, r == 0, scratch + 2 * tid);
      }
    }
    if (r != kChunk - 1 || !want_dw) continue;  // CTA-uniform
    if constexpr (kDet) {
      const cake_ng_tree tree = cake_ng_tree_of(p.rows, p.d, g.row_groups);
      double *node = tree_node(p, cake_ng_level_of(&tree, 0), blk);
      const float *accf = reinterpret_cast<const float *>(acc - tid);
      auto value = [&](int group, int column) {  // column's chunk sum in row group `group`
        const int c = column >> 3, ms = c / g.lanes, lane = c - ms * g.lanes;
        const int v4 = (2 * ms + ((column >> 2) & 1)) * kThreads + group * g.lanes + lane;
        return chunk_to_double(accf[v4 * 4 + (column & 3)]);
      };
      variant_det_node_of<kThreads>(value, g.row_groups, sums, node, p.d);
      tree_publish(p, tree, blk, flag, StoreDwVariant{});
    } else {
#pragma unroll
      for (int m = 0; m < kSlots; ++m) {
        const float4 a0 = acc[2 * m * kThreads], a1 = acc[(2 * m + 1) * kThreads];
        const float c[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          double *q = part + (8 * m + i) * kThreads;
          *q = __dadd_rn(*q, chunk_to_double(c[i]));
        }
      }
    }
  }
  if constexpr (!kDet) {
    if (!want_dw) return;
    // Each column's FP64 sums of the CTA's row groups (in group order) into the accumulator.
    __syncthreads();
    const double *partd = part - tid;
    for (int col = tid; col < p.d; col += kThreads) {
      const int c = col >> 3, ms = c / g.lanes, lane = c - ms * g.lanes;
      double sum = 0.0;
      for (int group = 0; group < g.row_groups; ++group) {
        sum = __dadd_rn(sum, partd[(8 * ms + (col & 7)) * kThreads + group * g.lanes + lane]);
      }
      nondet_add(p, col, sum);
    }
    nondet_finish(p, flag, StoreDwVariant{});
  }
}

template <class Cfg>
__device__ __forceinline__ void bwd_variant_tile(const cake_normgate_params &p) {
  constexpr int kT = Cfg::kThreads, kS = Cfg::kSlots, kD = Cfg::kPrefetch;
  constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  __shared__ float red[2 * kS * kT];
  __shared__ double sums[kCombineDoubles<kT>];
  __shared__ double scratch[2 * kT];  // a wide group's statistics, two doubles a thread
  __shared__ int flag;
  unsigned char *smem = dynamic_smem<unsigned char>();  // cake_ng_tile_bwd_smem bytes
  if (p.gate == CAKE_NORMGATE_GATE_NONE) {
    bwd_tile_rows<kT, kS, kD, kDet, CAKE_NORMGATE_GATE_NONE, false>(p, red, sums, scratch, &flag, smem);
  } else if (p.placement == CAKE_NORMGATE_GATE_BEFORE_NORM) {
    if (p.gate == CAKE_NORMGATE_GATE_SILU) {
      bwd_tile_rows<kT, kS, kD, kDet, CAKE_NORMGATE_GATE_SILU, true>(p, red, sums, scratch, &flag, smem);
    } else {
      bwd_tile_rows<kT, kS, kD, kDet, CAKE_NORMGATE_GATE_SIGMOID, true>(p, red, sums, scratch, &flag, smem);
    }
  } else if (p.gate == CAKE_NORMGATE_GATE_SILU) {
    bwd_tile_rows<kT, kS, kD, kDet, CAKE_NORMGATE_GATE_SILU, false>(p, red, sums, scratch, &flag, smem);
  } else {
    bwd_tile_rows<kT, kS, kD, kDet, CAKE_NORMGATE_GATE_SIGMOID, false>(p, red, sums, scratch, &flag, smem);
  }
}

}  // namespace ng
}  // namespace cake
