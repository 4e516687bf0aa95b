#include "families/normgate_launch.h"

#include <algorithm>
#include <cstring>

#include "fp8_blockwise_encode.h"
#include "mxfp8_encode.h"
#include "normgate_general_layout.h"
#include "normgate_workspace.h"

namespace cake {

bool normgate_program_serves(const cake_program_desc &prog, int32_t d, int32_t form) {
  if (prog.family != CAKE_FAMILY_NORMGATE) return false;
  // A variant call needs a variant program; the default form keeps its own programs, so that
  // every program serving a form gives the same bytes (the variant programs' order differs).
  if (((form & 1) != 0) != (prog.knobs[kNgVariant] != 0)) return false;
  // A quantized call needs a program writing its format, a plain call one writing none.
  if ((form >> 2) != prog.knobs[kNgQuant]) return false;
  if (prog.knobs[kNgSlots] != 0) {  // a tile program: 16-bit x and z, a tile that holds d
    const int32_t threads = static_cast<int32_t>(prog.threads);
    cake_ng_tile t;
    if ((form & 2) != 0) return false;
    if (prog.op != CAKE_NG_OP_FWD) return cake_ng_tile_bwd_serves(d, threads, prog.knobs[kNgSlots]) != 0;
    return cake_ng_tile_of(d, threads, prog.knobs[kNgSlots], &t) != 0;
  }
  // A variant backward with a load ring copies x and z as 16-bit vectors.
  if (prog.knobs[kNgVariant] == 1 && prog.op != CAKE_NG_OP_FWD && prog.knobs[kNgDepth] != 0 &&
      (form & 2) != 0)
    return false;
  if (prog.knobs[kNgD] != 0) return prog.knobs[kNgD] == d;
  return cake_ng_general_serves(d, static_cast<int32_t>(prog.threads)) != 0;
}

bool normgate_call_is_variant(const cake_normgate_desc &desc, bool backward) {
  if (desc.gate != CAKE_NORMGATE_GATE_SILU || desc.placement != CAKE_NORMGATE_GATE_AFTER_NORM)
    return true;
  if (desc.group_size != 0 && desc.group_size != desc.d) return true;
  if (desc.x_dtype != CAKE_DTYPE_BF16 || desc.z_dtype != CAKE_DTYPE_BF16 ||
      desc.w_dtype != CAKE_DTYPE_BF16)
    return true;
  return backward && desc.dw_dtype != CAKE_DTYPE_BF16 && desc.dw_dtype != CAKE_DTYPE_F32;
}

int64_t normgate_groups_per_cta(const cake_program_desc &prog, int32_t d) {
  const int64_t tuned = prog.knobs[kNgD];
  if (tuned != 0) return prog.threads / (tuned / 8);
  cake_ng_tile tile;
  if (prog.knobs[kNgSlots] != 0 &&
      cake_ng_tile_of(d, static_cast<int32_t>(prog.threads), prog.knobs[kNgSlots], &tile) != 0)
    return tile.row_groups;
  return cake_ng_general_groups(d, static_cast<int32_t>(prog.threads));
}

bool normgate_is_tuned_backward(const cake_program_desc &prog) {
  return prog.family == CAKE_FAMILY_NORMGATE && prog.op != CAKE_NG_OP_FWD && prog.knobs[kNgD] != 0;
}

uint32_t normgate_smem_bytes(const cake_program_desc &prog) {
  if (prog.family != CAKE_FAMILY_NORMGATE) return 0;
  if (prog.knobs[kNgSlots] != 0) {
    const int32_t threads = static_cast<int32_t>(prog.threads);
    if (prog.op != CAKE_NG_OP_FWD) {
      return static_cast<uint32_t>(cake_ng_tile_bwd_smem(threads, prog.knobs[kNgSlots],
                                                         prog.op == CAKE_NG_OP_BWD_NONDET,
                                                         prog.knobs[kNgDepth]));
    }
    return static_cast<uint32_t>(cake_ng_tile_smem(threads, prog.knobs[kNgSlots], prog.knobs[kNgDepth]));
  }
  if (prog.op == CAKE_NG_OP_FWD) return 0;
  if (prog.knobs[kNgD] == 0) {
    return static_cast<uint32_t>(
        cake_ng_general_bwd_smem(prog.knobs[kNgDepth], static_cast<int32_t>(prog.threads),
                                 prog.op == CAKE_NG_OP_BWD_NONDET));
  }
  return static_cast<uint32_t>(cake_ng_bwd_smem_of(prog.knobs[kNgD], static_cast<int32_t>(prog.threads),
                                                   prog.knobs[kNgRowsPerGroup], prog.knobs[kNgDepth],
                                                   prog.knobs[kNgTree])
                                   .bytes);
}

NormgateLaunch normgate_launch(const cake_program_desc &prog, int64_t rows, int32_t d,
                               int64_t resident_ctas) {
  NormgateLaunch l;
  l.block = prog.threads;
  l.smem_bytes = normgate_smem_bytes(prog);
  // The tuned deterministic backward builds the dw tree's levels between grid barriers.
  l.cooperative = normgate_is_tuned_backward(prog) && prog.op == CAKE_NG_OP_BWD_DET;
  if (normgate_is_tuned_backward(prog)) {  // units of one step, a persistent grid takes them
    l.rows_per_block = normgate_groups_per_cta(prog, d) * prog.knobs[kNgRowsPerGroup];
    l.num_blocks = (rows + l.rows_per_block - 1) / l.rows_per_block;
    l.grid = static_cast<uint32_t>(
        std::min<int64_t>(std::min(l.num_blocks, std::max<int64_t>(resident_ctas, 1)), INT32_MAX));
    return l;
  }
  const int64_t groups = normgate_groups_per_cta(prog, d);
  // Forward: each group takes rows_per_group rows per trip (a tile program: each row group its
  // threads' rows). Backward: each group one dw chunk.
  cake_ng_tile tile;
  if (prog.knobs[kNgSlots] != 0 && prog.op == CAKE_NG_OP_FWD &&
      cake_ng_tile_of(d, static_cast<int32_t>(prog.threads), prog.knobs[kNgSlots], &tile) != 0) {
    l.rows_per_block = int64_t(tile.row_groups) * tile.rows_per_thread;
  } else {
    l.rows_per_block = prog.op == CAKE_NG_OP_FWD ? groups * prog.knobs[kNgRowsPerGroup]
                                                  : groups * CAKE_NG_DW_CHUNK_ROWS;
  }
  l.num_blocks = (rows + l.rows_per_block - 1) / l.rows_per_block;
  int64_t grid = l.num_blocks;
  if (prog.knobs[kNgPersistent] != 0) grid = std::min(grid, std::max<int64_t>(resident_ctas, 1));
  l.grid = static_cast<uint32_t>(std::min<int64_t>(grid, INT32_MAX));
  return l;
}

int64_t normgate_workspace_bytes(const cake_program_desc &prog, int64_t rows, int32_t d,
                                 bool skip_dw) {
  if (skip_dw || prog.op == CAKE_NG_OP_FWD) return 0;
  if (prog.op == CAKE_NG_OP_BWD_NONDET) return cake_ng_nondet_bytes(d);
  // Level-0 nodes: one per unit (a step of rows) for the tuned programs, per block (a chunk per
  // group) for the general ones.
  const int64_t chunks_per_node =
      normgate_is_tuned_backward(prog)
          ? normgate_groups_per_cta(prog, d) * prog.knobs[kNgRowsPerGroup] / CAKE_NG_DW_CHUNK_ROWS
          : normgate_groups_per_cta(prog, d);
  // The tuned programs keep a row, a column or a grouped column tree (their knob) and hand
  // units out from a counter kept after it.
  if (normgate_is_tuned_backward(prog))
    return cake_ng_det_tuned_bytes(rows, d, chunks_per_node, prog.knobs[kNgTree]);
  const cake_ng_tree tree = cake_ng_tree_of(rows, d, chunks_per_node);
  return cake_ng_tree_bytes(&tree);
}

cake_ng_det_layout normgate_det_layout(const cake_program_desc &prog, int64_t rows, int32_t d,
                                       int64_t grid) {
  const int64_t chunks_per_unit =
      normgate_groups_per_cta(prog, d) * prog.knobs[kNgRowsPerGroup] / CAKE_NG_DW_CHUNK_ROWS;
  return cake_ng_det_layout_of(rows, d, chunks_per_unit, prog.knobs[kNgTree], grid);
}

bool normgate_backward_cooperative(const NormgateLaunch &launch, uint32_t flags) {
  return launch.cooperative && (flags & CAKE_NORMGATE_DW_SKIP) == 0;
}

namespace {

// An enum field as the integer the caller stored (the forward does not check dw_dtype, and
// loading an out-of-range value as the enum type is undefined).
template <class E>
int32_t bits_of(const E &e) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized");
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// The variant programs' fields (the others ignore them).
void fill_variant(const cake_normgate_desc &desc, cake_normgate_params *p) {
  p->gate = bits_of(desc.gate);
  p->placement = bits_of(desc.placement);
  p->group = desc.group_size == 0 ? desc.d : desc.group_size;
  p->x_dtype = bits_of(desc.x_dtype);
  p->z_dtype = bits_of(desc.z_dtype);
  p->w_dtype = bits_of(desc.w_dtype);
  p->dw_dtype = bits_of(desc.dw_dtype);
}

}  // namespace

void normgate_fill_forward_params(const cake_normgate_desc &desc, const NormgateLaunch &launch,
                                  const NormgateForwardTensors &t, cake_normgate_params *out) {
  cake_normgate_params &p = *out;
  std::memset(&p, 0, sizeof p);
  p.x = static_cast<const uint16_t *>(t.x);
  p.z = static_cast<const uint16_t *>(t.z);
  p.w = static_cast<const uint16_t *>(t.w);
  p.y = static_cast<uint16_t *>(t.y);
  p.rstd = t.rstd;
  p.rows = desc.rows;
  p.x_stride = desc.x_stride;
  p.z_stride = desc.z_stride;
  p.y_stride = desc.y_stride;
  p.rows_per_block = launch.rows_per_block;
  p.num_blocks = launch.num_blocks;
  p.d = desc.d;
  p.eps = desc.eps;
  p.packed = (desc.x_stride == desc.d && desc.z_stride == desc.d) ? 1 : 0;
  fill_variant(desc, &p);
}

bool normgate_quant_plan(int64_t rows, int32_t d, int32_t format, int32_t rule, int64_t heads,
                         NormgateQuantPlan *out) {
  NormgateQuantPlan q;
  q.format = format;
  q.scale_rule = format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE ? rule : 0;
  q.heads = heads;
  q.q_rows = rows / heads;
  if (!mx::checked_mul(heads, d, &q.q_cols) || !mx::checked_mul(rows, d, &q.q_bytes)) return false;
  if (format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE) {
    q.s_cols = q.q_cols / fp8b::kBlockElems;
    q.s_cols_padded = q.s_cols;
    q.s_stride = q.q_rows;
    q.cover_rows = rows;
    if (!mx::checked_mul(q.q_rows, q.s_cols, &q.s_bytes) || q.s_bytes > INT64_MAX / 4) return false;
    q.s_bytes *= 4;
  } else {
    q.s_cols = q.q_cols / mx::kBlockElems;
    q.s_cols_padded = mx::scale_cols_padded(q.s_cols);
    q.s_stride = 0;
    if (!mx::scale_matrix_bytes(q.q_rows, q.s_cols, &q.s_bytes)) return false;
    if (!mx::checked_mul(mx::scale_rows_padded(q.q_rows), heads, &q.cover_rows)) return false;
  }
  *out = q;
  return true;
}

void normgate_fill_quant_params(const NormgateQuantPlan &plan, void *q, void *q_scale,
                                cake_normgate_params *out) {
  out->q = static_cast<uint8_t *>(q);
  out->q_scale = q_scale;
  out->q_rows = plan.q_rows;
  out->cover_rows = plan.cover_rows;
  out->heads = static_cast<int32_t>(plan.heads);
  out->scale_rule = plan.scale_rule;
  out->s_cols_padded = static_cast<int32_t>(plan.s_cols_padded);
}

void normgate_fill_backward_params(const cake_program_desc &prog, const cake_normgate_desc &desc,
                                   const NormgateLaunch &launch, const NormgateBackwardTensors &t,
                                   cake_normgate_params *out) {
  const bool skip_dw = (desc.flags & CAKE_NORMGATE_DW_SKIP) != 0;
  cake_normgate_params &p = *out;
  std::memset(&p, 0, sizeof p);
  p.x = static_cast<const uint16_t *>(t.x);
  p.z = static_cast<const uint16_t *>(t.z);
  p.w = static_cast<const uint16_t *>(t.w);
  p.dy = static_cast<const uint16_t *>(t.dy);
  p.dx = static_cast<uint16_t *>(t.dx);
  p.dz = static_cast<uint16_t *>(t.dz);
  p.dw = skip_dw ? nullptr : t.dw;
  p.workspace = t.workspace;
  p.rows = desc.rows;
  p.x_stride = desc.x_stride;
  p.z_stride = desc.z_stride;
  p.dy_stride = desc.dy_stride;
  p.dx_stride = desc.dx_stride;
  p.dz_stride = desc.dz_stride;
  p.rows_per_block = launch.rows_per_block;
  p.num_blocks = launch.num_blocks;
  p.d = desc.d;
  p.eps = desc.eps;
  p.packed = (desc.x_stride == desc.d && desc.z_stride == desc.d && desc.dy_stride == desc.d) ? 1 : 0;
  p.dw_f32 = desc.dw_dtype == CAKE_DTYPE_F32 ? 1 : 0;
  p.dw_flags = static_cast<int32_t>(desc.flags);
  if (normgate_backward_cooperative(launch, desc.flags)) {
    p.det = normgate_det_layout(prog, desc.rows, desc.d, launch.grid);
  }
  fill_variant(desc, &p);
}

}  // namespace cake
