// Normgate backward, tuned programs (D = 64, 128, 256; bwd_tuned): the walk over the units of
// rows and the tail that reduces their dw nodes. The row arithmetic is normgate_bwd_rows.cuh, the
// trees normgate_dw*.cuh, the workspace layout normgate_workspace.h.
#pragma once
#include <stdint.h>

#include "cta_timeline.cuh"
#include "normgate_bwd_rows.cuh"
#include "normgate_dw.cuh"
#include "normgate_fwd.cuh"
#include "normgate_params.h"
#include "normgate_workspace.h"
#include "program_desc.h"
#include "vector_io.cuh"

namespace cake {
namespace ng {

// Grouped tree (normgate_workspace.h): unit u's node (its subtree's value v for column col).
// A single unit's goes to the singles. A group's units arrive in consecutive steps: each parks
// its value in its slot of the group buffer (shared, [CAKE_NG_GROUP_UNITS][d]) and the last
// one builds the group's aligned subtree from the slots (independent loads, a tree of
// dependent depth three) as its leaf, so that seven steps in eight cost one shared store
// (merging at every step held every warp's chunk lanes for a chain of loads and adds). Steps
// of one CTA are ordered by the step barrier, whichever threads take the chunk sums.
__device__ __forceinline__ void group_node(const cake_normgate_params &p, double *slots, int64_t u,
                                           int col, double v) {
  char *ws = static_cast<char *>(p.workspace);
  const int64_t grouped_units = p.det.groups * CAKE_NG_GROUP_UNITS;
  if (u >= grouped_units) {
    reinterpret_cast<double *>(ws + p.det.singles_offset)[col * p.det.singles_span + (u - grouped_units)] = v;
    return;
  }
  const int k = static_cast<int>(u & (CAKE_NG_GROUP_UNITS - 1));
  if (k != CAKE_NG_GROUP_UNITS - 1) {
    slots[k * p.d + col] = v;
    return;
  }
  double w[CAKE_NG_GROUP_UNITS];
#pragma unroll
  for (int j = 0; j < CAKE_NG_GROUP_UNITS - 1; ++j) w[j] = slots[j * p.d + col];
  w[CAKE_NG_GROUP_UNITS - 1] = v;
#pragma unroll
  for (int h = 1; h < CAKE_NG_GROUP_UNITS; h <<= 1) {  // adjacent pairs first
#pragma unroll
    for (int j = 0; j < CAKE_NG_GROUP_UNITS; j += 2 * h) w[j] = __dadd_rn(w[j], w[j + h]);
  }
  reinterpret_cast<double *>(ws)[cake_ng_colnode_index(u >> CAKE_NG_GROUP_UNITS_LOG2, p.d, col,
                                                       p.det.leaf_span)] = w[0];
}

// Tuned programs (D = 64, 128, 256). Persistent grid. The rows are cut into units of one step
// (kRowsPerGroup * kGroups rows, whole chunks); each CTA takes its first kPrefetch + 1 units
// by its index and every later one from a shared counter, so fast and slow SMs finish
// together. Consecutive groups take consecutive rows of a unit. Loads run kPrefetch - 1 steps
// ahead through a shared-memory ring (bulk copies or cp.async: bytes in flight without
// registers). Each row's dw terms go to one of two shared-memory step buffers; after the
// step's one barrier, one thread per (chunk, column) adds the chunk's 16 rows in row order
// (the canonical FP32 chunk sum) while the other warps start the next step (the Nsight
// Compute profile of the two-barrier version had a quarter of all warp cycles waiting at
// barriers). The deterministic package adds the unit's chunk sums as their aligned FP64
// subtree (xor-shuffles across the chunk lanes) into the unit's level-0 node of the workspace's
// tree (normgate_workspace.h); the non-deterministic one keeps an FP64 sum per chunk thread (one
// atomic per column and CTA at the end). Both packages see the same chunk sums.
template <class Cfg>
struct BwdTuned {
  static constexpr int kD = Cfg::kD;
  static constexpr int kLanes = kD / 8;
  static constexpr bool kDet = Cfg::kOp == CAKE_NG_OP_BWD_DET;
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kGroups = kThreads / kLanes;
  static constexpr int kR = Cfg::kRowsPerGroup;
  static constexpr int kStages = Cfg::kPrefetch;
  static constexpr int kChunk = CAKE_NG_DW_CHUNK_ROWS;
  static constexpr int kStepRows = kR * kGroups;
  static constexpr int kStepChunks = kStepRows / kChunk;
  static constexpr int kStageVecs = kR * 3 * kThreads;
  static constexpr int kRing = kStages + 2;  // unit ids: steps <= kStages + 1 static, later ones fetched
  static_assert(kStepRows % kChunk == 0, "a step holds whole chunks");
  static_assert((kStepChunks & (kStepChunks - 1)) == 0 && kStepChunks <= 8, "unit: 2^k chunks");
  static_assert(kStages >= 2 && kStages <= 6, "the ring needs a stage in flight while one is read");
  // The chunk sums: one thread per (column, chunk of the step), the chunks of a column in
  // adjacent lanes (their FP64 subtree is a few xor-shuffles).
  static constexpr int kChunkItems = kStepChunks * kD;
  static_assert(kChunkItems <= kThreads && kChunkItems % 32 == 0, "one thread per chunk column");
  // tbuf: two step buffers (the chunk sums of step i run while other warps start step i + 1),
  // each [chunk][16 rows][kD] floats with 32/kStepChunks floats after every chunk, so that the
  // lanes of a chunk-sum read (kStepChunks chunks x 32/kStepChunks columns) hit 32 banks.
  static constexpr int kTChunk = CAKE_NG_DW_CHUNK_ROWS * kD + 32 / kStepChunks;
  static constexpr int kTBuf = kStepChunks * kTChunk;
  static constexpr bool kGrouped = kDet && Cfg::kTree == 2;
  static_assert(!kGrouped || 2 * kTBuf * 4 >= (32 + CAKE_NG_SINGLES_MAX / CAKE_NG_GROUP_UNITS + 1) * 8,
                "tbuf (the tail's scratch) holds the leaves built from the singles");
  // A stage holds the step's rows of x, z and dy, each tensor's rows packed: [3][kStepRows][kD].
  // Packed tensors (stride == d) arrive as three bulk copies issued by thread 0 and complete on
  // the stage's mbarrier (the issue costs the other threads nothing: the kernel is
  // instruction-bound); strided ones as one 16-byte cp.async per thread, row and tensor.
  static constexpr int kTensorVecs = kStepRows * kD / 8;  // 16-byte vectors of one tensor in a stage
  static constexpr int kStaticTickets = kStages + 1;
  // Where the CTA has twice the chunk threads' count, the lower and the upper half take the
  // chunk sums of alternate steps, so that every warp waits as long at the step's barrier.
  static constexpr bool kAlternate = 2 * kChunkItems <= kThreads;

  // ---- the unit schedule ----
  // The unit of step j is static for j <= kStages + 1, else fetched by thread 0 and written to
  // the unit ring at step j - kStages - 1, so that a barrier lies between the write and the
  // first read (every thread's issue() of step j, at the top of step j - kStages + 1).
  // Without dw there is no workspace and so no counter: grid-strided.
  // The grouped tree (normgate_workspace.h) takes every unit from the ring: thread 0 expands
  // tickets into units (a group's in consecutive steps), the first kStages + 1 tickets static.
  // Step counts and ring slots are 32-bit and advanced by increments, never divided (the 64-bit
  // `j % kRing` and `j / kStages` of every step: 1.7% of the non-deterministic walk's
  // instructions, Nsight Compute on the H200; no change in time). A step moves 80 KB of
  // the five tensors in every tuned program, so one CTA never walks 2^31 of them.
  static __device__ int slot_after(int slot, int k) {  // (j + k) % kRing from slot = j % kRing
    return slot + k >= kRing ? slot + k - kRing : slot + k;
  }
  // The unit of step j (ring slot `slot`).
  struct UnitOf {
    const bool &want_dw;
    long long *&unit_ring;
    __device__ int64_t operator()(int j, int slot) const {
      if (kGrouped && want_dw) return unit_ring[slot];
      return (j <= kStages + 1 || !want_dw) ? blockIdx.x + int64_t(j) * gridDim.x : unit_ring[slot];
    }
  };
  // Thread 0, grouped tree: this CTA's unit after `prev` (units past the end once its tickets
  // are). The next of a group's units, else the unit of the next ticket: the first
  // kStaticTickets are static (blockIdx.x + k grid), later ones from the counter (fetched one
  // ticket ahead). Derived from the previous unit alone, no state kept: thread 0 issues the
  // ring's copies, and its warp gates the step's barrier.
  struct Tickets {
    const cake_normgate_params &p;
    const int64_t &units;
    unsigned *&unit_counter;
    unsigned &held;
    __device__ int64_t ticket_unit(int64_t t) const {
      const int64_t groups = p.det.groups;
      if (t < groups) return t * CAKE_NG_GROUP_UNITS;
      return t < groups + p.det.singles ? groups * (CAKE_NG_GROUP_UNITS - 1) + t : units;
    }
    __device__ int64_t next_unit(int64_t prev) const {
      if (prev >= units) return prev + 1;
      const int64_t grouped_units = p.det.groups * CAKE_NG_GROUP_UNITS;
      if (prev < grouped_units && ((prev + 1) & (CAKE_NG_GROUP_UNITS - 1)) != 0) return prev + 1;
      const int64_t t = prev < grouped_units ? prev / CAKE_NG_GROUP_UNITS
                                             : p.det.groups + (prev - grouped_units);
      if (t < int64_t(kStaticTickets - 1) * gridDim.x) return ticket_unit(t + gridDim.x);
      const int64_t next = int64_t(kStaticTickets) * gridDim.x + held;
      held = atomicAdd(unit_counter, 1u);
      return ticket_unit(next);
    }
  };

  // Issues the copies of step `step`'s unit into ring stage `stage`.
  struct StageIssue {
    const cake_normgate_params &p;
    const UnitOf &unit_of;
    uint4 *&ring;
    uint64_t *&bars;
    const bool &bulk;
    const int &tid, &lane, &group;
    const int64_t &units;
    __device__ void operator()(int step, int slot, int stage) const {
      const int64_t u = unit_of(step, slot);
      uint4 *st = ring + stage * kStageVecs;
      if (bulk) {
        if (tid == 0 && u < units) {
          const int64_t row0 = u * kStepRows;
          const unsigned bytes = static_cast<unsigned>(min(int64_t(kStepRows), p.rows - row0) * kD * 2);
          mbar_arrive_expect(&bars[stage], 3 * bytes);
          bulk_copy_g2s(st, p.x + row0 * kD, bytes, &bars[stage]);
          bulk_copy_g2s(st + kTensorVecs, p.z + row0 * kD, bytes, &bars[stage]);
          bulk_copy_g2s(st + 2 * kTensorVecs, p.dy + row0 * kD, bytes, &bars[stage]);
        }
        return;
      }
      if (u < units) {
#pragma unroll
        for (int r = 0; r < kR; ++r) {
          const int in_step = r * kGroups + group;
          const int64_t row = u * kStepRows + in_step;
          const bool ok = row < p.rows;
          const int64_t src = ok ? row : 0;
          uint4 *v = st + in_step * kLanes + lane;
          cp_async16(v, p.x + src * p.x_stride + lane * 8, ok);
          cp_async16(v + kTensorVecs, p.z + src * p.z_stride + lane * 8, ok);
          cp_async16(v + 2 * kTensorVecs, p.dy + src * p.dy_stride + lane * 8, ok);
        }
      }
      cp_async_commit();  // possibly empty: the group count stays uniform
    }
  };

  // ---- the walk ----
  static __device__ __forceinline__ void walk(const cake_normgate_params &p) {
    extern __shared__ __align__(16) unsigned char smem[];
    tl_mark(0);  // marks 0-2 and tl_finish: development builds only (cta_timeline.cuh)
    const cake_ng_bwd_smem lay = cake_ng_bwd_smem_of(kD, kThreads, kR, kStages, Cfg::kTree);
    uint4 *ring = reinterpret_cast<uint4 *>(smem);
    float *tbuf = reinterpret_cast<float *>(smem + lay.t_offset);
    int *flag = reinterpret_cast<int *>(smem + lay.words_offset);
    long long *unit_ring = reinterpret_cast<long long *>(smem + lay.ring_offset);
    uint64_t *bars = reinterpret_cast<uint64_t *>(smem + lay.words_offset + 16);  // [kStages <= 6]
    const int tid = threadIdx.x;
    const int lane = tid % kLanes;
    const int group = tid / kLanes;
    const bool want_dw = (p.dw_flags & kDwSkip) == 0;
    const int64_t units = (p.rows + kStepRows - 1) / kStepRows;
    // The package's words (normgate_workspace.h): the non-deterministic ticket or the
    // deterministic trees' words, the unit counter beside them.
    unsigned *ticket = reinterpret_cast<unsigned *>(
        static_cast<char *>(p.workspace) + (kDet ? p.det.words_offset : cake_ng_nondet_counter_offset(kD)));
    unsigned *unit_counter = ticket + 1;
    const int64_t node_span = cake_ng_colspan(units);  // the column tree's level 0
    const int64_t dynamic_base = int64_t(kStages + 2) * gridDim.x;
    const UnitOf unit_of{want_dw, unit_ring};
    double *group_slots = reinterpret_cast<double *>(smem + lay.slots_offset);
    unsigned held = 0;  // thread 0: the last fetched counter value, used one step (or ticket) later
    const Tickets tickets{p, units, unit_counter, held};
    if (kGrouped && want_dw && tid == 0) {
      held = atomicAdd(unit_counter, 1u);
      unit_ring[0] = tickets.ticket_unit(blockIdx.x);
#pragma unroll 1
      for (int j = 1; j <= kStages; ++j) unit_ring[j] = tickets.next_unit(unit_ring[j - 1]);
    }
    const bool bulk = p.packed != 0;
    if (bulk && tid == 0) {
#pragma unroll
      for (int s = 0; s < kStages; ++s) mbar_init(&bars[s], 1);
      mbar_init_fence();
    }
    __syncthreads();
    const StageIssue issue{p, unit_of, ring, bars, bulk, tid, lane, group, units};
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue(s, s, s);

    float wf[8];
    const uint4 wv = load16<kLoadDefault>(p.w + lane * 8);
    unpack8(wv, wf);
    const bool w_wide = bf16x8_wide(wv);
    int64_t dx_off[kR], dz_off[kR];  // this thread's columns of its rows, from a step's first row
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      const int64_t in_step = r * kGroups + group;
      dx_off[r] = in_step * p.dx_stride + lane * 8;
      dz_off[r] = in_step * p.dz_stride + lane * 8;
    }
    const float inv_d = inverse_width(kD);
    const int item = kAlternate ? tid % kChunkItems : tid;
    const int chunk_k = item % kStepChunks, chunk_col = item / kStepChunks;
    const int chunk_half = kAlternate ? tid / kChunkItems : 0;  // 0, 1; 2+ never sums
    const bool chunk_thread = want_dw && (kAlternate ? chunk_half < 2 : tid < kChunkItems);
    // This chunk column's part of its level-0 node index (the unit's part is uniform a step).
    const int64_t node_col = Cfg::kTree == 1 ? cake_ng_colnode_col_part(chunk_col, node_span) : chunk_col;
    double part = 0.0;  // non-deterministic: FP64 sum of this thread's chunk sums
    int stage = 0;      // i % kStages
    unsigned phase = 0;  // (i / kStages) & 1: the stage's use count, its mbarrier's parity
    int slot = 0;        // i % kRing
    int i = 0;           // steps walked
    for (;; ++i, slot = slot_after(slot, 1)) {
      const int64_t u = unit_of(i, slot);
      if (u >= units) break;  // CTA-uniform: fetched ids only grow
      issue(i + kStages - 1, slot_after(slot, kStages - 1), stage == 0 ? kStages - 1 : stage - 1);
      if (bulk) {
        mbar_wait(&bars[stage], phase);
      } else {
        cp_async_wait<kStages - 1>();
      }
      const uint4 *st = ring + stage * kStageVecs;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1u;
      }
      // The step's rows start at row0: one uniform 64-bit product a tensor and step, the rows'
      // offsets from it fixed per thread (dx_off, dz_off).
      const int64_t row0 = u * kStepRows;
      uint16_t *const dx0 = p.dx + row0 * p.dx_stride;
      uint16_t *const dz0 = p.dz + row0 * p.dz_stride;
      const int rows_here = static_cast<int>(min(int64_t(kStepRows), p.rows - row0));
      uint32_t wide_rows = 0;  // bit r: row r of this lane is wide (normgate_wide.cuh)
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        const int in_step = r * kGroups + group;
        const bool valid = in_step < rows_here;
        const uint4 *v = st + in_step * kLanes + lane;
        float t[8];
        if (row_backward<kLanes>(p, dx0 + dx_off[r], dz0 + dz_off[r], valid, v[0], v[kTensorVecs],
                                 v[2 * kTensorVecs], wf, w_wide, inv_d, t)) {
          wide_rows |= 1u << r;
        }
        if (rows_here < kStepRows) {  // the last unit: rows past the end add +0
#pragma unroll
          for (int k = 0; k < 8; ++k) t[k] = valid ? t[k] : 0.0f;
        }
        if (want_dw) {
          float4 *dst = reinterpret_cast<float4 *>(tbuf + (i & 1) * kTBuf +
                                                   (in_step / kChunk) * kTChunk +
                                                   (in_step % kChunk) * kD + lane * 8);
          dst[0] = make_float4(t[0], t[1], t[2], t[3]);
          dst[1] = make_float4(t[4], t[5], t[6], t[7]);
        }
      }
      // The step's wide rows in FP64, after its rows' FP32 work (the registers free): dx, dz
      // stored and the dw terms over the FP32 ones in tbuf, before the barrier publishes them.
      if (wide_rows != 0u) {  // rare
#pragma unroll 1
        for (int r = 0; r < kR; ++r) {
          if ((wide_rows >> r & 1u) == 0u) continue;
          const int in_step = r * kGroups + group;
          float *t = want_dw ? tbuf + (i & 1) * kTBuf + (in_step / kChunk) * kTChunk +
                                   (in_step % kChunk) * kD + lane * 8
                             : nullptr;
          wide_backward_to(p, false, row0 + in_step, lane * 8, t);
        }
      }
      // One barrier a step: the step's dw terms are in tbuf[i & 1] and the unit ring's writes are
      // visible; the chunk sums of step i - 1 (the other buffer) and every read of the ring
      // stage that thread 0 refills next are behind every thread.
      __syncthreads();
      if (want_dw && tid == 0) {  // the unit of step i + kStages + 1 (fetched last step)
        if constexpr (kGrouped) {
          unit_ring[slot_after(slot, kStages + 1)] = tickets.next_unit(unit_ring[slot_after(slot, kStages)]);
        } else {
          if (i >= 1) unit_ring[slot_after(slot, kStages + 1)] = dynamic_base + held;
          held = atomicAdd(unit_counter, 1u);
        }
      }
      // Whether this thread takes a chunk sum this step: the same for every lane of a warp (the
      // chunk threads are whole warps; the halves alternate by step), so the deterministic
      // package's xor-shuffles run outside the branch, in code the compiler sees converged.
      const bool sums_now = chunk_thread && (!kAlternate || chunk_half == (i & 1));
      double c = 0.0;
      if (sums_now) {  // canonical FP32 chunk sum
        const float *src = tbuf + (i & 1) * kTBuf + chunk_k * kTChunk + chunk_col;
        float acc = src[0];
#pragma unroll
        for (int r = 1; r < kChunk; ++r) acc = __fadd_rn(acc, src[r * kD]);
        c = chunk_to_double(acc);
      }
      if constexpr (kDet) {  // the unit's aligned subtree, adjacent pairs first
#pragma unroll
        for (int h = 1; h < kStepChunks; h <<= 1) c = __dadd_rn(c, __shfl_xor_sync(0xffffffffu, c, h));
        // Level 0 starts the workspace (normgate_workspace.h): the unit's node, a row of the
        // row tree or a column entry of the column tree.
        if (sums_now && chunk_k == 0) {
          if constexpr (kGrouped) {
            group_node(p, group_slots, u, chunk_col, c);
          } else {
            static_cast<double *>(p.workspace)[node_col + (Cfg::kTree ? cake_ng_colnode_node_part(u, kD, node_span)
                                                                      : u * kD)] = c;
          }
        }
      } else if (sums_now) {
        part = __dadd_rn(part, c);
      }
    }
    cp_async_wait<0>();
    tl_mark(1);
    tail(p, want_dw, tbuf, ticket, flag, i, part, item, chunk_thread, chunk_half, chunk_k, chunk_col);
  }

  // ---- the tail: the walk's dw nodes (or sums) into dw ----
  static __device__ __forceinline__ void tail(const cake_normgate_params &p, bool want_dw,
                                              float *tbuf, unsigned *ticket, int *flag, int i,
                                              double part, int item, bool chunk_thread,
                                              int chunk_half, int chunk_k, int chunk_col) {
    if (!want_dw) return;
    if constexpr (kDet) {
      __syncthreads();  // tbuf is free: the scratch of the tree's combines
      if constexpr (kGrouped) {
        GroupedLeaves leaves;
        leaves.singles = reinterpret_cast<double *>(static_cast<char *>(p.workspace) + p.det.singles_offset);
        leaves.singles_span = p.det.singles_span;
        leaves.singles_count = p.det.singles;
        leaves.groups = p.det.groups;
        reduce_column_tree<kThreads, true>(p, cake_ng_leaves_of(p.rows, kD, kStepChunks), ticket,
                                           reinterpret_cast<double *>(tbuf), leaves);
      } else if constexpr (Cfg::kTree) {
        reduce_column_tree<kThreads>(p, cake_ng_coltree_of(p.rows, kD, kStepChunks), ticket,
                                     reinterpret_cast<double *>(tbuf));
      } else {
        build_tree_cooperative(p, cake_ng_tree_of(p.rows, kD, kStepChunks), ticket,
                               reinterpret_cast<double *>(tbuf));
      }
    } else {
      if constexpr (kAlternate) {  // the upper half's sums join the lower half's
        double *halves = reinterpret_cast<double *>(tbuf);
        __syncthreads();  // the last step's chunk sums have read tbuf
        if (chunk_thread && chunk_half == 1) halves[item] = part;
        __syncthreads();
        if (chunk_thread && chunk_half == 0) part = __dadd_rn(part, halves[item]);
      }
      if (chunk_thread && chunk_half == 0) {
#pragma unroll
        for (int h = 1; h < kStepChunks; h <<= 1) part = __dadd_rn(part, __shfl_xor_sync(0xffffffffu, part, h));
        if (chunk_k == 0) nondet_add(p, chunk_col, part);
      }
      tl_mark(2);
      nondet_finish(p, flag);  // its last CTA also resets the unit counter
    }
    tl_finish(i, kDet ? 1 : 0);
  }
};

template <class Cfg>
__device__ __forceinline__ void bwd_tuned(const cake_normgate_params &p) {
  BwdTuned<Cfg>::walk(p);
}

}  // namespace ng
}  // namespace cake
