#include "families/swiglu_mxfp8_launch.h"

#include "mxfp8_encode.h"
#include "swiglu_grouped_layout.h"

namespace cake {

namespace {

constexpr int64_t kMaxTiles = INT32_MAX;  // the kernel counts tiles in 32 bits

bool form_ok(int form) { return sw_form_valid(form); }

// The program's manifest knobs in the kernel's configuration order (SwigluCfg's template
// arguments), so that the rules of swiglu_mxfp8_config.h apply to them as they do to the kernel.
SwigluKnobs knobs_of(const cake_program_desc &prog) {
  SwigluKnobs k{};
  k.form = prog.op;
  k.threads = prog.threads > 1024u ? -1 : static_cast<int>(prog.threads);
  k.tile_rows = prog.knobs[kSwTileRows];
  k.tile_cols = prog.knobs[kSwTileCols];
  k.rows_per_thread = prog.knobs[kSwRowsPerThread];
  k.load_hint = prog.knobs[kSwLoadHint];
  k.sigmoid_form = prog.knobs[kSwSigmoidForm];
  k.band_form = prog.knobs[kSwBandForm];
  k.pipeline = prog.knobs[kSwPipeline];
  k.group_rows = prog.knobs[kSwGroupRows];
  k.col_lanes = prog.knobs[kSwColLanes];
  k.slot_cols = prog.knobs[kSwSlotCols];
  k.row_from_tile = prog.knobs[kSwRowFromTile];
  k.variant = prog.knobs[kSwVariant];
  k.col_runs = prog.knobs[kSwColRuns];
  return k;
}

}  // namespace

uint32_t swiglu_mxfp8_ring_bytes(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(prog.op)) return 0;
  const SwigluKnobs k = knobs_of(prog);
  if (sw_stages(k) < 2) return 0;
  const int64_t bytes = sw_dynamic_smem_bytes(k);
  return bytes > 0 && bytes <= INT32_MAX ? static_cast<uint32_t>(bytes) : 0;
}

uint32_t swiglu_mxfp8_dynamic_smem_bytes(const cake_program_desc &prog) {
  const uint32_t ring = swiglu_mxfp8_ring_bytes(prog);
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(prog.op) || !sw_grouped(prog.op)) {
    return ring;
  }
  return ring + static_cast<uint32_t>(swg_table_bytes(kSwgMaxExperts, prog.threads));
}

bool swiglu_mxfp8_program_serves(const cake_program_desc &prog, int32_t, int32_t variant) {
  return (variant & kSwRouteVariant) == 0 || swiglu_program_variant(prog);
}

bool swiglu_mxfp8_form_backward(int form) { return sw_backward(form); }
bool swiglu_mxfp8_form_rowwise(int form) { return form_ok(form) && sw_rowwise(form); }
bool swiglu_mxfp8_form_colwise(int form) { return form_ok(form) && sw_colwise(form); }

bool swiglu_mxfp8_program_ok(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || prog.min_ctas_per_sm == 0) return false;
  // The kernel's compile-time rules, checked in the order that keeps their arithmetic defined.
  const SwigluKnobs k = knobs_of(prog);
  if (!sw_knobs_ok(k)) return false;
  // Staged: ring + static shared memory within one CTA's limit, and the grid's min_ctas a SM
  // must fit the SM's shared memory together.
  if (sw_stages(k) >= 2) {
    const int64_t cta_smem = sw_smem_words(k) * 4 + sw_dynamic_smem_bytes(k);
    if (!swiglu_smem_fits(prog.min_ctas_per_sm, cta_smem)) return false;
  }
  // Grouped: the group table too, min_ctas CTAs a SM at kSwgFitExperts experts and one CTA at
  // the most experts.
  if (sw_grouped(k.form)) {
    const int64_t own = sw_smem_words(k) * 4 + (sw_stages(k) >= 2 ? sw_dynamic_smem_bytes(k) : 0);
    if (!swiglu_smem_fits(prog.min_ctas_per_sm,
                          own + swg_table_bytes(kSwgFitExperts, prog.threads)) ||
        !swiglu_smem_fits(1, own + swg_table_bytes(kSwgMaxExperts, prog.threads))) {
      return false;
    }
  }
  return true;
}

int64_t swiglu_mxfp8_tiles(const cake_program_desc &prog, int64_t M, int64_t K) {
  const int64_t tr = prog.knobs[kSwTileRows], tc = prog.knobs[kSwTileCols];
  if (M <= 0 || K <= 0 || tr <= 0 || tc <= 0) return -1;
  int64_t tiles;
  if (!mx::checked_mul(mx::ceil_div(M, tr), mx::ceil_div(K, tc), &tiles)) return -1;
  return tiles;
}

LaunchShape swiglu_mxfp8_launch_shape(const cake_program_desc &prog, int64_t M, int64_t K,
                                      int sm_count) {
  int64_t units = swiglu_walk_units(prog, swiglu_mxfp8_tiles(prog, M, K),
                                    mx::ceil_div(K, int64_t{prog.knobs[kSwTileCols]}));
  // Tile pairs: a CTA's unit of work is a pair of row tiles (the last one alone when the row
  // tiles are odd in number).
  const SwigluKnobs k = knobs_of(prog);
  if (units >= 1 && sw_pair_rows(k) == 2) {
    const int64_t tiles_k = mx::ceil_div(K, int64_t{k.tile_cols});
    units = sw_walk_rows(units / tiles_k, sw_pair_rows(k)) * tiles_k;
  }
  return swiglu_one_wave(prog, units, swiglu_mxfp8_dynamic_smem_bytes(prog), sm_count);
}

bool swiglu_mxfp8_sizes(int form, int64_t M, int64_t K, SwigluMxfp8Sizes *out) {
  if (!form_ok(form)) return false;
  mx::SwigluBufferBytes b;
  if (!mx::swiglu_buffer_bytes(swiglu_mxfp8_form_backward(form), M, K, &b)) return false;
  SwigluMxfp8Sizes s{};
  if (swiglu_mxfp8_form_rowwise(form)) {
    s.row_q_bytes = b.q_bytes;
    s.row_s_bytes = b.row_s_bytes;
  }
  if (swiglu_mxfp8_form_colwise(form)) {
    s.col_q_bytes = b.q_bytes;
    s.col_s_bytes = b.col_s_bytes;
  }
  *out = s;
  return true;
}

bool swiglu_mxfp8_fill_params(const cake_program_desc &prog, int64_t M, int64_t K,
                              const void *in, const void *grad, void *row_q, void *row_s,
                              void *col_q, void *col_s, cake_swiglu_mxfp8_params *out) {
  const int form = prog.op;
  if (prog.family != CAKE_FAMILY_SWIGLU_MXFP8 || !form_ok(form) || sw_grouped(form)) return false;
  if (M <= 0 || K <= 0 || M % mx::kBlockElems != 0 || K % mx::kBlockElems != 0) return false;
  mx::SwigluBufferBytes b;
  if (!mx::swiglu_buffer_bytes(swiglu_mxfp8_form_backward(form), M, K, &b)) return false;
  const int64_t tiles = swiglu_mxfp8_tiles(prog, M, K);
  if (tiles < 1 || tiles > kMaxTiles) return false;
  // The kernel's tile walk keeps a position within a group of group_rows x tiles_k tiles in 32
  // bits and adds the grid stride to it before the carry: the group must stay below 2^31 tiles.
  const int64_t tiles_k = mx::ceil_div(K, int64_t{prog.knobs[kSwTileCols]});
  const int64_t group_rows = sw_group_rows(knobs_of(prog));
  if (group_rows > 0 && tiles_k > kMaxTiles / group_rows) return false;

  const bool bwd = swiglu_mxfp8_form_backward(form);
  const bool row = swiglu_mxfp8_form_rowwise(form), col = swiglu_mxfp8_form_colwise(form);
  cake_swiglu_mxfp8_params p{};
  p.in = static_cast<const uint16_t *>(in);
  p.grad = bwd ? static_cast<const uint16_t *>(grad) : nullptr;
  p.row_q = row ? static_cast<uint8_t *>(row_q) : nullptr;
  p.row_s = row ? static_cast<uint8_t *>(row_s) : nullptr;
  p.col_q = col ? static_cast<uint8_t *>(col_q) : nullptr;
  p.col_s = col ? static_cast<uint8_t *>(col_s) : nullptr;
  p.M = M;
  p.K = K;
  p.O = b.out_cols;
  p.row_s_cols = p.O / mx::kBlockElems;
  p.row_s_cols_padded = mx::scale_cols_padded(p.row_s_cols);
  p.row_s_rows_padded = mx::scale_rows_padded(M);
  p.col_s_cols = M / mx::kBlockElems;
  p.col_s_cols_padded = mx::scale_cols_padded(p.col_s_cols);
  p.col_s_rows_padded = mx::scale_rows_padded(p.O);
  p.tiles_k = tiles_k;
  p.tiles = tiles;
  p.form = static_cast<uint32_t>(form);
  p.reserved = 0;
  p.col_ld = M;
  *out = p;
  return true;
}

}  // namespace cake
