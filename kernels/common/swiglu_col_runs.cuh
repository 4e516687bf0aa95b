// SwigluCfg's col_runs knob (grouped colwise and both forms): phase 2's col_q pieces of an
// expert whose rows do not start on a 16-byte boundary of col_q, or that end inside a piece,
// stored as aligned runs. The col_lanes lanes of a column pair hold consecutive 16-row pieces of
// both columns; with each lane's piece starting d bytes past a 16-byte boundary, a lane stores the
// aligned 16 bytes that begin d bytes before its piece (the last d bytes of the lane before's
// piece, one shuffle away, then the first 16 - d of its own) as one 16-byte store. Bytes that
// belong to no piece of the group (before its first piece, past the expert's last row) are never
// written: the group's first lane and the window past its last valid piece store only their own
// bytes, in the fewest naturally aligned stores of 1, 2, 4 and 8 bytes.
#pragma once
#include <stdint.h>

#include "vector_io.cuh"

namespace cake {
namespace swiglu {

// Bytes [off, off + 16) of the 32 bytes a then b (0 <= off <= 16).
__device__ __forceinline__ uint4 bytes_at(const uint4 &a, const uint4 &b, int off) {
  const uint32_t w[9] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, 0u};
  const int q = off >> 2;
  const uint32_t s = 8u * (uint32_t)(off & 3);
  uint32_t v[5];
#pragma unroll
  for (int j = 0; j < 5; ++j) {  // w[q + j] by selects: q is 0..4, no local-memory indexing
    v[j] = q == 0 ? w[j] : q == 1 ? w[j + 1] : q == 2 ? w[j + 2] : q == 3 ? w[j + 3] : w[j + 4];
  }
  return make_uint4(__funnelshift_r(v[0], v[1], s), __funnelshift_r(v[1], v[2], s),
                    __funnelshift_r(v[2], v[3], s), __funnelshift_r(v[3], v[4], s));
}

// Bytes [lo, hi) of the 16-byte window w at the 16-byte aligned address `a`.
__device__ __forceinline__ void store_window(uint8_t *a, const uint4 &w, int lo, int hi) {
  if (lo == 0 && hi == 16) {
    store16(a, w);
    return;
  }
  const uint64_t h0 = (uint64_t)w.x | ((uint64_t)w.y << 32);
  const uint64_t h1 = (uint64_t)w.z | ((uint64_t)w.w << 32);
  auto bits = [&](int b) { return (b < 8 ? h0 : h1) >> (8 * (b & 7)); };
  int b = lo;
  // Up to the next 16-byte boundary in rising sizes, then the rest in falling ones: every store
  // naturally aligned, at most four each way.
  if ((b & 1) && b + 1 <= hi) { a[b] = (uint8_t)bits(b); b += 1; }
  if ((b & 2) && b + 2 <= hi) { *reinterpret_cast<uint16_t *>(a + b) = (uint16_t)bits(b); b += 2; }
  if ((b & 4) && b + 4 <= hi) { *reinterpret_cast<uint32_t *>(a + b) = (uint32_t)bits(b); b += 4; }
  if ((b & 8) && b + 8 <= hi) { *reinterpret_cast<uint64_t *>(a + b) = bits(b); b += 8; }
  if (b + 8 <= hi) { *reinterpret_cast<uint64_t *>(a + b) = bits(b); b += 8; }
  if (b + 4 <= hi) { *reinterpret_cast<uint32_t *>(a + b) = (uint32_t)bits(b); b += 4; }
  if (b + 2 <= hi) { *reinterpret_cast<uint16_t *>(a + b) = (uint16_t)bits(b); b += 2; }
  if (b + 1 <= hi) a[b] = (uint8_t)bits(b);
}

// One column's piece of this lane, `own`, for col_q bytes from `p` (its 16 rows), `prev` the
// piece of the lane before in the group (li > 0), `valid` the rows of the expert from the
// piece's first row (at most 0: nothing to store). L lanes a group.
template <int L>
__device__ __forceinline__ void store_run_piece(uint8_t *p, const uint4 &own, const uint4 &prev,
                                                int64_t valid, int li) {
  if (valid <= 0) return;
  const int d = (int)(reinterpret_cast<uintptr_t>(p) & 15);
  const int v = valid < 16 ? (int)valid : 16;
  uint8_t *const a = p - d;  // the window: prev's last d bytes, then own's first 16 - d
  store_window(a, bytes_at(prev, own, 16 - d), li == 0 ? d : 0, d + v < 16 ? d + v : 16);
  // Own's last d bytes fall in the next window, which the next lane stores unless this lane is
  // the group's last or the expert ends within its piece.
  if (d != 0 && (li == L - 1 || valid <= 16) && v > 16 - d) {
    store_window(a + 16, bytes_at(own, make_uint4(0u, 0u, 0u, 0u), 16 - d), 0, v - (16 - d));
  }
}

// Both columns' pieces of a lane (column o's from `col`, o+1's from `col + ld`): every lane of
// the warp calls it (the shuffle), `valid` 0 for a lane with nothing to store.
template <int L>
__device__ __forceinline__ void store_col_runs(uint8_t *col, int64_t ld, const uint4 &lo,
                                               const uint4 &hi, int64_t valid, int li) {
  const auto before = [](const uint4 &v) {  // the lane before's v (its own in a group's first)
    return make_uint4(__shfl_up_sync(0xFFFFFFFFu, v.x, 1, L), __shfl_up_sync(0xFFFFFFFFu, v.y, 1, L),
                      __shfl_up_sync(0xFFFFFFFFu, v.z, 1, L), __shfl_up_sync(0xFFFFFFFFu, v.w, 1, L));
  };
  store_run_piece<L>(col, lo, before(lo), valid, li);
  store_run_piece<L>(col + ld, hi, before(hi), valid, li);
}

}  // namespace swiglu
}  // namespace cake
