/* How the general normgate programs (any D, a multiple of 8 up to 8192) cut a CTA into row
 * groups. Plain C + CAKE_HD: the host derives rows per block, the dw tree's node size and the
 * shared memory from it, the kernels their lanes, so the two agree by construction.
 *
 * A row is held by a group of lanes, one 16-byte vector (8 columns) per lane, so lane c holds
 * leaf c of the canonical row tree (normgate_math.cuh) and the tree's levels are xor-shuffles
 * (and, past 32 leaves, one exchange of warp sums through shared memory). A group has as many
 * lanes as the tree has leaves (D/8 rounded up to a power of two), and at least threads/64:
 * the backward's CTA takes one dw chunk per group per block, and a block's chunks must be an
 * aligned subtree of one level-1 node (CAKE_NG_TREE_FANOUT = 64 children). A program of T
 * threads serves the widths whose tree has at most T leaves (D <= 8 T). */
#ifndef CAKE_KERNELS_COMMON_NORMGATE_GENERAL_LAYOUT_H_
#define CAKE_KERNELS_COMMON_NORMGATE_GENERAL_LAYOUT_H_

#include <stdint.h>

#include "hd.h"

/* Leaves of the canonical row tree: D/8 rounded up to a power of two. */
static CAKE_HD inline int32_t cake_ng_tree_leaves(int32_t d) {
  int32_t p2 = 1;
  while (p2 < d / 8) p2 <<= 1;
  return p2;
}

/* True when a general program of `threads` threads computes rows of width d. */
static CAKE_HD inline int cake_ng_general_serves(int32_t d, int32_t threads) {
  return d >= 8 && cake_ng_tree_leaves(d) <= threads;
}

/* Lanes of one row group (a power of two dividing threads). */
static CAKE_HD inline int32_t cake_ng_general_lanes(int32_t d, int32_t threads) {
  const int32_t p2 = cake_ng_tree_leaves(d);
  return p2 > threads / 64 ? p2 : threads / 64;
}

/* Row groups in one CTA (at most 64). */
static CAKE_HD inline int32_t cake_ng_general_groups(int32_t d, int32_t threads) {
  return threads / cake_ng_general_lanes(d, threads);
}

/* Dynamic shared memory of the general backward, in bytes from the start:
 *   ring   [stages][x, z, dy][threads] 16-byte vectors: the load ring
 *   acc    [2][threads] float4: each thread's FP32 chunk sums of its 8 columns
 *   part   (non-deterministic) [8][threads] doubles: each thread's FP64 sums over its chunks
 * The sums live here, not in registers: 64 registers are the budget of 1024 threads. */
static CAKE_HD inline int32_t cake_ng_general_acc_offset(int32_t stages, int32_t threads) {
  return stages * 3 * threads * 16;
}
static CAKE_HD inline int32_t cake_ng_general_part_offset(int32_t stages, int32_t threads) {
  return cake_ng_general_acc_offset(stages, threads) + 2 * threads * 16;
}
static CAKE_HD inline int32_t cake_ng_general_bwd_smem(int32_t stages, int32_t threads,
                                                       int32_t nondet) {
  return cake_ng_general_part_offset(stages, threads) + (nondet ? 8 * threads * 8 : 0);
}

/* The tile layout of the variant tile programs (normgate_variant_tile.cuh): each thread holds
 * `slots` 16-byte vectors (8 columns each) so that the per-row work of the reduction is spread
 * over several leaves, and a CTA of a few hundred threads holds a row of up to 8 * threads *
 * slots columns. A row of n = D/8 leaves is held by `lanes` lanes: rows of at most 32 leaves by
 * the power of two >= n (one leaf a lane, several rows a warp); wider rows by a multiple of 32
 * lanes, leaf c at lane c % lanes, slot c / lanes, so that each aligned run of 32 leaves sits in
 * one warp at one slot (the variant order's pieces are warp scans); a CTA whose thread count is
 * not a power of two gives a row all of its lanes. A thread's slots beyond a row's go to further
 * rows (rows_per_thread). */
typedef struct cake_ng_tile {
  int32_t lanes;           /* lanes of one row */
  int32_t row_slots;       /* slots of one row: ceil(n / lanes) */
  int32_t rows_per_thread; /* slots / row_slots */
  int32_t row_groups;      /* threads / lanes */
} cake_ng_tile;

/* The tile of width d for a program of `threads` threads and `slots` slots; 0 when no tile of
 * that program holds a row of d columns. */
static CAKE_HD inline int cake_ng_tile_of(int32_t d, int32_t threads, int32_t slots,
                                          cake_ng_tile *t) {
  const int32_t n = d / 8;
  int32_t lanes = 1;
  if (d < 8 || slots < 1) return 0;
  if (n <= 32) {
    while (lanes < n) lanes <<= 1;
  } else {
    lanes = 32;
    while (lanes * slots < n && lanes < threads) lanes <<= 1;
    if (lanes * slots < n || threads % lanes != 0) {
      /* A CTA of a thread count that is not a power of two (320 for rows of 5120 columns):
       * the row takes all of its warps. */
      lanes = threads;
      if (threads % 32 != 0 || lanes * slots < n) return 0;
    }
  }
  if (lanes > threads) return 0;
  t->lanes = lanes;
  t->row_slots = (n + lanes - 1) / lanes;
  t->rows_per_thread = slots / t->row_slots;
  t->row_groups = threads / lanes;
  return 1;
}

/* Dynamic shared memory of a tile program: its load ring of `depth` trips, x and z, each
 * thread's slots (16 bytes each). */
static CAKE_HD inline int32_t cake_ng_tile_smem(int32_t threads, int32_t slots, int32_t depth) {
  return depth * 2 * slots * threads * 16;
}

/* Dynamic shared memory of a tile program's backward (normgate_variant_tile_bwd.cuh), in bytes
 * from the start:
 *   acc    [slots][2][threads] float4: each thread's FP32 chunk sums of its slots' columns
 *   sig    [slots][2][threads] float4: the trip's sigmoid(z) of its slots' columns
 *   part   (non-deterministic) [slots][8][threads] doubles: its FP64 sums over its chunks
 *   ring   [depth][x, z, dy][slots][threads] 16-byte vectors: later trips' inputs, in flight
 * The trip's x, z and dy stay in registers (their 16-bit copies). */
static CAKE_HD inline int32_t cake_ng_tile_sig_offset(int32_t threads, int32_t slots) {
  return slots * 2 * threads * 16;
}
static CAKE_HD inline int32_t cake_ng_tile_part_offset(int32_t threads, int32_t slots) {
  return 2 * cake_ng_tile_sig_offset(threads, slots);
}
static CAKE_HD inline int32_t cake_ng_tile_ring_offset(int32_t threads, int32_t slots, int32_t nondet) {
  return cake_ng_tile_part_offset(threads, slots) + (nondet ? slots * 8 * threads * 8 : 0);
}
static CAKE_HD inline int32_t cake_ng_tile_bwd_smem(int32_t threads, int32_t slots, int32_t nondet,
                                                    int32_t depth) {
  return cake_ng_tile_ring_offset(threads, slots, nondet) + depth * 3 * slots * threads * 16;
}

/* True when a tile program's backward holds rows of width d: one row a row group. */
static CAKE_HD inline int cake_ng_tile_bwd_serves(int32_t d, int32_t threads, int32_t slots) {
  cake_ng_tile t;
  return cake_ng_tile_of(d, threads, slots, &t) && t.rows_per_thread == 1;
}

#endif /* CAKE_KERNELS_COMMON_NORMGATE_GENERAL_LAYOUT_H_ */
