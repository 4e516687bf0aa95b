#include "families/swiglu_grouped_launch.h"

#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_mxfp8_launch.h"
#include "fp8_blockwise_encode.h"
#include "mxfp8_encode.h"
#include "swiglu_forms.h"
#include "swiglu_grouped_layout.h"

namespace cake {

namespace {

constexpr int64_t kMaxTiles = INT32_MAX;  // the kernels count tiles in 32 bits

// The shape rules both families share: T, E in range, K a positive multiple of the block, O
// below 2^31, the input addressable.
bool shape_ok(int form, int64_t T, int64_t K, int64_t E, int64_t k_multiple) {
  if (!sw_form_valid(form) || !sw_grouped(form)) return false;
  if (T < 1 || T > kSwgMaxTokens || E < 1 || E > kSwgMaxExperts) return false;
  if (K <= 0 || K % k_multiple != 0 || 2 * K > kSwgMaxCols) return false;
  int64_t in_elems;
  return mx::checked_mul(T, 2 * K, &in_elems) && in_elems <= INT64_MAX / 2;
}

bool is_mxfp8(const cake_program_desc &prog) { return prog.family == CAKE_FAMILY_SWIGLU_MXFP8; }

// The program's K tiles and its own dynamic shared memory (the staged ring, the Y tile).
int64_t tile_cols(const cake_program_desc &prog) {
  return is_mxfp8(prog) ? prog.knobs[kSwTileCols] : kFp8TileCols;
}
uint32_t own_smem_bytes(const cake_program_desc &prog) {
  return is_mxfp8(prog) ? swiglu_mxfp8_ring_bytes(prog) : swiglu_fp8_ytile_bytes(prog);
}

// The sizes of the form's orientations (a disabled one gets 0).
bool set_sizes(int form, int64_t O, int64_t P, int64_t q, int64_t row_s, int64_t col_s,
               SwigluGroupedSizes *out) {
  SwigluGroupedSizes s{};
  s.out_cols = O;
  s.scale_rows = P;
  if (sw_rowwise(form)) {
    s.row_q_bytes = q;
    s.row_s_bytes = row_s;
  }
  if (sw_colwise(form)) {
    s.col_q_bytes = q;
    s.col_s_bytes = col_s;
  }
  *out = s;
  return true;
}

bool grouped_program(const cake_program_desc &prog, uint16_t family) {
  return prog.family == family && sw_form_valid(prog.op) && sw_grouped(prog.op);
}

}  // namespace

bool swiglu_mxfp8_grouped_sizes(int form, int64_t T, int64_t K, int64_t E,
                                SwigluGroupedSizes *out) {
  if (!shape_ok(form, T, K, E, mx::kBlockElems)) return false;
  const int64_t O = sw_backward(form) ? 2 * K : K;
  const int64_t P = swg_scale_rows_bound(T, E);
  int64_t q, row_s, col_s;
  if (!mx::checked_mul(T, O, &q)) return false;
  // row_s: the swizzled [P, O/32] matrix; col_s: P/32 columns of the [O, *] one, R' rows.
  if (!mx::checked_mul(P, mx::scale_cols_padded(O / mx::kBlockElems), &row_s)) return false;
  if (!mx::checked_mul(mx::scale_rows_padded(O), P / mx::kBlockElems, &col_s)) return false;
  return set_sizes(form, O, P, q, row_s, col_s, out);
}

bool swiglu_fp8_grouped_sizes(int form, int64_t T, int64_t K, int64_t E, SwigluGroupedSizes *out) {
  if (!shape_ok(form, T, K, E, fp8b::kBlockElems)) return false;
  const int64_t O = sw_backward(form) ? 2 * K : K;
  const int64_t P = swg_scale_rows_bound(T, E);
  int64_t q, row_s, col_s;
  if (!mx::checked_mul(T, O, &q)) return false;
  // row_s: P rows of O/128 FP32 scales; col_s: P/128 blocks of O.
  if (!mx::checked_mul(P, O / fp8b::kBlockElems * 4, &row_s)) return false;
  if (!mx::checked_mul(P / fp8b::kBlockElems, O * 4, &col_s)) return false;
  return set_sizes(form, O, P, q, row_s, col_s, out);
}

uint32_t swiglu_grouped_table_bytes(const cake_program_desc &prog, int64_t E) {
  return static_cast<uint32_t>(swg_table_bytes(E, prog.threads));
}

int64_t swiglu_grouped_tiles(const cake_program_desc &prog, int64_t T, int64_t K, int64_t E) {
  // The walk's row units: tile_rows (knob 0 of both families), or two tiles for the MXFP8
  // family's tile pairs (swiglu_grouped_walk.cuh).
  const int64_t pair = is_mxfp8(prog) && prog.knobs[kSwGroupRows] == -2 ? 2 : 1;
  const int64_t tr = prog.knobs[0] * pair, tc = tile_cols(prog);
  if (T < 1 || E < 1 || K <= 0 || tr <= 0 || tc <= 0) return -1;
  int64_t tiles;
  if (!mx::checked_mul(swg_row_tiles_bound(T, E, tr), mx::ceil_div(K, tc), &tiles)) return -1;
  return tiles;
}

LaunchShape swiglu_grouped_launch_shape(const cake_program_desc &prog, int64_t T, int64_t K,
                                        int64_t E, int sm_count) {
  return swiglu_one_wave(prog,
                         swiglu_walk_units(prog, swiglu_grouped_tiles(prog, T, K, E),
                                           mx::ceil_div(K, tile_cols(prog))),
                         own_smem_bytes(prog) + swiglu_grouped_table_bytes(prog, E), sm_count);
}

namespace {

// What both families' grouped parameters hold alike: the whole buffers (NULL for what the form
// does not use), T, K, O and the tiles of the bound as the base; the experts. False when the
// program is not a grouped one of `family`, the shape is refused (`sizes`) or the tiles pass
// 2^31 - 1.
template <class GP, class Sizes>
bool fill_common(const cake_program_desc &prog, uint16_t family, Sizes sizes, int64_t T,
                 int64_t K, int64_t E, const SwigluGroupedTensors &t, SwigluGroupedSizes *sz,
                 GP *gp) {
  if (!grouped_program(prog, family)) return false;
  const int form = prog.op;
  if (!sizes(form, T, K, E, sz)) return false;
  const int64_t tiles = swiglu_grouped_tiles(prog, T, K, E);
  if (tiles < 1 || tiles > kMaxTiles) return false;
  *gp = GP{};
  auto &p = gp->base;
  const bool bwd = sw_backward(form), row = sw_rowwise(form), col = sw_colwise(form);
  using Scale = decltype(p.row_s);
  p.in = static_cast<const uint16_t *>(t.in);
  p.grad = bwd ? static_cast<const uint16_t *>(t.grad) : nullptr;
  p.row_q = row ? static_cast<uint8_t *>(t.row_q) : nullptr;
  p.row_s = row ? static_cast<Scale>(t.row_s) : nullptr;
  p.col_q = col ? static_cast<uint8_t *>(t.col_q) : nullptr;
  p.col_s = col ? static_cast<Scale>(t.col_s) : nullptr;
  p.M = T;
  p.K = K;
  p.O = sz->out_cols;
  p.tiles_k = mx::ceil_div(K, tile_cols(prog));
  p.tiles = tiles;
  p.form = static_cast<uint32_t>(form);
  gp->groups.offsets = t.offsets;
  gp->groups.status = t.status;
  gp->groups.tokens = T;
  gp->groups.experts = static_cast<int32_t>(E);
  gp->groups.table_offset = own_smem_bytes(prog);
  return true;
}

}  // namespace

bool swiglu_mxfp8_grouped_fill_params(const cake_program_desc &prog, int64_t T, int64_t K,
                                      int64_t E, const SwigluGroupedTensors &t,
                                      cake_swiglu_mxfp8_grouped_params *out) {
  cake_swiglu_mxfp8_grouped_params gp;
  SwigluGroupedSizes sz;
  if (!fill_common(prog, CAKE_FAMILY_SWIGLU_MXFP8, swiglu_mxfp8_grouped_sizes, T, K, E, t, &sz,
                   &gp)) {
    return false;
  }
  cake_swiglu_mxfp8_params &p = gp.base;
  // The experts' views (swiglu_mxfp8_problem.cuh) replace the row-dependent fields; these are
  // the whole buffers': P scale rows, O/32 scale columns; col_s rows padded to 128.
  p.row_s_cols = p.O / mx::kBlockElems;
  p.row_s_cols_padded = mx::scale_cols_padded(p.row_s_cols);
  p.row_s_rows_padded = sz.scale_rows;
  p.col_s_cols = sz.scale_rows / mx::kBlockElems;
  p.col_s_cols_padded = p.col_s_cols;
  p.col_s_rows_padded = mx::scale_rows_padded(p.O);
  p.reserved = 0;
  p.col_ld = T;
  *out = gp;
  return true;
}

bool swiglu_fp8_grouped_fill_params(const cake_program_desc &prog, int64_t T, int64_t K,
                                    int64_t E, int rule, const SwigluGroupedTensors &t,
                                    cake_swiglu_fp8_grouped_params *out) {
  if (rule != fp8b::kScaleExact && rule != fp8b::kScalePow2) return false;
  cake_swiglu_fp8_grouped_params gp;
  SwigluGroupedSizes sz;
  if (!fill_common(prog, CAKE_FAMILY_SWIGLU_FP8, swiglu_fp8_grouped_sizes, T, K, E, t, &sz,
                   &gp)) {
    return false;
  }
  gp.base.rule = static_cast<uint32_t>(rule);
  *out = gp;
  return true;
}

}  // namespace cake
