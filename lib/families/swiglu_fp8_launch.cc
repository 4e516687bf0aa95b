#include "families/swiglu_fp8_launch.h"

#include "fp8_blockwise_encode.h"
#include "mxfp8_encode.h"
#include "swiglu_grouped_layout.h"

namespace cake {

namespace {
constexpr int64_t kMaxTiles = INT32_MAX;  // the kernel counts tiles in 32 bits
}  // namespace

SwigluFp8Knobs swiglu_fp8_knobs(const cake_program_desc &prog) {
  SwigluFp8Knobs k{};
  k.form = prog.op;
  k.threads = prog.threads > 1024u ? -1 : static_cast<int>(prog.threads);
  k.tile_rows = prog.knobs[kF8TileRows];
  k.rows_per_thread = prog.knobs[kF8RowsPerThread];
  k.load_hint = prog.knobs[kF8LoadHint];
  k.sigmoid_form = prog.knobs[kF8SigmoidForm];
  k.band_form = prog.knobs[kF8BandForm];
  k.load_batch = prog.knobs[kF8LoadBatch];
  k.pipeline = prog.knobs[kF8Pipeline];
  k.tail = prog.knobs[kF8Tail];
  k.variant = prog.knobs[kF8Variant];
  return k;
}

uint32_t swiglu_fp8_ytile_bytes(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_FP8 || !sw_form_valid(prog.op)) return 0;
  const SwigluFp8Knobs k = swiglu_fp8_knobs(prog);
  // Only knobs the kernel compiles with have a size (the rules keep the arithmetic defined).
  if (!f8_threads_ok(k) || !f8_rows_per_thread_ok(k) || !f8_tile_rows_ok(k)) return 0;
  return static_cast<uint32_t>(f8_dynamic_smem_bytes(k));
}

uint32_t swiglu_fp8_dynamic_smem_bytes(const cake_program_desc &prog) {
  const uint32_t ytile = swiglu_fp8_ytile_bytes(prog);
  if (prog.family != CAKE_FAMILY_SWIGLU_FP8 || !sw_form_valid(prog.op) || !sw_grouped(prog.op)) {
    return ytile;
  }
  return ytile + static_cast<uint32_t>(swg_table_bytes(kSwgMaxExperts, prog.threads));
}

bool swiglu_fp8_program_ok(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_SWIGLU_FP8 || prog.min_ctas_per_sm == 0) return false;
  const SwigluFp8Knobs k = swiglu_fp8_knobs(prog);
  if (!sw_form_valid(k.form) || !f8_threads_ok(k) || !f8_rows_per_thread_ok(k) ||
      !f8_tile_rows_ok(k) || !f8_slots_ok(k) || !f8_knobs_ok(k)) {
    return false;
  }
  // Only a program with dynamic shared memory has a limit to check (its Y tile; grouped, the
  // group table too: min_ctas CTAs a SM at kSwgFitExperts experts, one at the most).
  const int64_t smem = f8_dynamic_smem_bytes(k);
  if (sw_grouped(k.form)) {
    return swiglu_smem_fits(prog.min_ctas_per_sm,
                            smem + swg_table_bytes(kSwgFitExperts, prog.threads)) &&
           swiglu_smem_fits(1, smem + swg_table_bytes(kSwgMaxExperts, prog.threads));
  }
  return smem <= 0 || swiglu_smem_fits(prog.min_ctas_per_sm, smem);
}

bool swiglu_fp8_serves_rows(const cake_program_desc &prog, int64_t M) {
  return M % fp8b::kBlockElems == 0 || prog.knobs[kF8Tail] == 1;
}

int32_t swiglu_fp8_variant(int64_t M) { return M % fp8b::kBlockElems == 0 ? 0 : kSwRouteTail; }

bool swiglu_fp8_program_serves(const cake_program_desc &prog, int32_t, int32_t variant) {
  return ((variant & kSwRouteTail) == 0 || prog.knobs[kF8Tail] == 1) &&
         ((variant & kSwRouteVariant) == 0 || swiglu_program_variant(prog));
}

int64_t swiglu_fp8_tiles(const cake_program_desc &prog, int64_t M, int64_t K) {
  const int64_t tr = prog.knobs[kF8TileRows];
  if (M <= 0 || K <= 0 || tr <= 0 || K % kFp8TileCols != 0) return -1;
  if (prog.knobs[kF8Tail] != 1 && M % tr != 0) return -1;
  int64_t tiles;
  if (!mx::checked_mul(mx::ceil_div(M, tr), K / kFp8TileCols, &tiles)) return -1;
  return tiles;
}

LaunchShape swiglu_fp8_launch_shape(const cake_program_desc &prog, int64_t M, int64_t K,
                                    int sm_count) {
  return swiglu_one_wave(prog, swiglu_walk_units(prog, swiglu_fp8_tiles(prog, M, K),
                                                 K / kFp8TileCols),
                         swiglu_fp8_dynamic_smem_bytes(prog), sm_count);
}

bool swiglu_fp8_sizes(int form, int64_t M, int64_t K, SwigluFp8Sizes *out) {
  if (!sw_form_valid(form)) return false;
  if (M <= 0 || K <= 0 || K % fp8b::kBlockElems != 0) return false;
  if (K > INT64_MAX / 2) return false;
  const int64_t O = sw_backward(form) ? 2 * K : K;
  int64_t q, in_bytes;
  if (!mx::checked_mul(M, O, &q) || !mx::checked_mul(M, 2 * K, &in_bytes) ||
      in_bytes > INT64_MAX / 2) {
    return false;
  }
  // row_s holds M * (O / 128) FP32 values (q / 32 bytes), col_s ceil(M / 128) * O.
  const int64_t row_s_bytes = q / fp8b::kBlockElems * 4;
  int64_t col_s_row, col_s_bytes;  // bytes of one block row of col_s, of col_s
  if (!mx::checked_mul(O, 4, &col_s_row) ||
      !mx::checked_mul(mx::ceil_div(M, int64_t{fp8b::kBlockElems}), col_s_row, &col_s_bytes)) {
    return false;
  }
  SwigluFp8Sizes r{};
  r.out_cols = O;
  if (sw_rowwise(form)) {
    r.row_q_bytes = q;
    r.row_s_bytes = row_s_bytes;
  }
  if (sw_colwise(form)) {
    r.col_q_bytes = q;
    r.col_s_bytes = col_s_bytes;
  }
  *out = r;
  return true;
}

bool swiglu_fp8_fill_params(const cake_program_desc &prog, int64_t M, int64_t K, int rule,
                            const void *in, const void *grad, void *row_q, void *row_s,
                            void *col_q, void *col_s, cake_swiglu_fp8_params *out) {
  const int form = prog.op;
  if (prog.family != CAKE_FAMILY_SWIGLU_FP8 || !sw_form_valid(form) || sw_grouped(form)) {
    return false;
  }
  if (rule != fp8b::kScaleExact && rule != fp8b::kScalePow2) return false;
  SwigluFp8Sizes sz;
  if (!swiglu_fp8_sizes(form, M, K, &sz)) return false;
  const int64_t tiles = swiglu_fp8_tiles(prog, M, K);
  if (tiles < 1 || tiles > kMaxTiles) return false;
  const bool bwd = sw_backward(form), row = sw_rowwise(form), col = sw_colwise(form);
  cake_swiglu_fp8_params p{};
  p.in = static_cast<const uint16_t *>(in);
  p.grad = bwd ? static_cast<const uint16_t *>(grad) : nullptr;
  p.row_q = row ? static_cast<uint8_t *>(row_q) : nullptr;
  p.row_s = row ? static_cast<float *>(row_s) : nullptr;
  p.col_q = col ? static_cast<uint8_t *>(col_q) : nullptr;
  p.col_s = col ? static_cast<float *>(col_s) : nullptr;
  p.M = M;
  p.K = K;
  p.O = sz.out_cols;
  p.tiles_k = K / kFp8TileCols;
  p.tiles = tiles;
  p.form = static_cast<uint32_t>(form);
  p.rule = static_cast<uint32_t>(rule);
  *out = p;
  return true;
}

}  // namespace cake
