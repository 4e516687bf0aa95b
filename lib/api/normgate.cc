// Normgate entry points: validate every argument, pick the program, fill the parameters,
// launch. Nothing is launched or written when an argument is wrong.
#include <cmath>
#include <cstddef>
#include <cstring>

#include "api/handle.h"
#include "api/launch.h"
#include "api/normgate_call.h"
#include "api/program_info.h"
#include "api/struct_size.h"
#include "api/validate.h"
#include "error/error.h"
#include "families/family.h"
#include "families/normgate_launch.h"
#include "normgate_params.h"
#include "router/router.h"

namespace cake {
namespace {

constexpr int32_t kMaxD = 8192;

// The size of the descriptor's first version (0.1, 0.2): everything before `gate`.
constexpr size_t kDescV1Size = offsetof(cake_normgate_desc, gate);

bool known_dtype(int32_t dtype) {
  return dtype == CAKE_DTYPE_BF16 || dtype == CAKE_DTYPE_F32 || dtype == CAKE_DTYPE_F16;
}

int64_t dtype_bytes(int32_t dtype) { return dtype == CAKE_DTYPE_F32 ? 4 : 2; }

// The variant fields (0.3): the gate, its placement, the mean-square group and the dtypes.
// Checked after d, so that the group rule can name it.
cake_status_t check_variant(const cake_normgate_desc &d) {
  const int32_t gate = enum_bits(d.gate), placement = enum_bits(d.placement);
  if (gate != CAKE_NORMGATE_GATE_SILU && gate != CAKE_NORMGATE_GATE_SIGMOID &&
      gate != CAKE_NORMGATE_GATE_NONE) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->gate = %d: not a cake_normgate_gate_t (0 SiLU, 1 sigmoid, 2 none)", gate);
  }
  if (placement != CAKE_NORMGATE_GATE_AFTER_NORM && placement != CAKE_NORMGATE_GATE_BEFORE_NORM) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->placement = %d: not a cake_normgate_placement_t (0 gate after the norm, 1 "
                "gate before the norm)",
                placement);
  }
  if (d.group_size < 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->group_size = %d: must be >= 0 (0: the whole row)", d.group_size);
  }
  if (d.group_size != 0 && (d.group_size % 8 != 0 || d.d % d.group_size != 0)) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->group_size = %d: must be 0 (the whole row) or a multiple of 8 that divides "
                "d = %d",
                d.group_size, d.d);
  }
  const struct {
    int32_t value;
    const char *name;
  } dtypes[] = {{enum_bits(d.x_dtype), "desc->x_dtype"},
                {enum_bits(d.z_dtype), "desc->z_dtype"},
                {enum_bits(d.w_dtype), "desc->w_dtype"}};
  for (const auto &t : dtypes) {
    if (!known_dtype(t.value)) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT,
                  "%s = %d: not a tensor dtype (CAKE_DTYPE_BF16 1, CAKE_DTYPE_F32 2, "
                  "CAKE_DTYPE_F16 3)",
                  t.name, t.value);
    }
  }
  return CAKE_STATUS_SUCCESS;
}

bool gated(const cake_normgate_desc &d) { return d.gate != CAKE_NORMGATE_GATE_NONE; }

cake_status_t read_desc(const cake_normgate_desc *user, cake_normgate_desc *desc) {
  CAKE_TRY(check_not_null(user, "desc"));
  cake_normgate_desc_init(desc);
  CAKE_TRY(read_struct("desc", user, user->struct_size, kDescV1Size, desc, sizeof *desc));
  if (desc->rows <= 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc->rows = %lld: must be > 0",
                static_cast<long long>(desc->rows));
  }
  if (desc->d < 8 || desc->d > kMaxD || desc->d % 8 != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->d = %d: Cake serves multiples of 8 from 8 to %d (tuned: 64, 128, 256)",
                desc->d, kMaxD);
  }
  if (!std::isfinite(desc->eps) || desc->eps < 0.0f) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc->eps = %g: must be finite and >= 0",
                static_cast<double>(desc->eps));
  }
  return check_variant(*desc);
}

// A tensor's row stride, resolved into *out; elem_dtype: the tensor's cake_dtype_t.
cake_status_t check_rows(const cake_normgate_desc &d, int64_t stride, const char *name,
                         int32_t elem_dtype, int64_t *out) {
  CAKE_TRY(check_row_stride(stride, d.d, name, out));
  return check_extent(d.rows, *out, dtype_bytes(elem_dtype), name);
}

// quant: the quantized forward's plan, or nullptr. The grid walks its cover rows (the padding
// rows of an MXFP8 scale matrix included).
cake_status_t choose_program(cake_handle_t h, uint16_t op, const cake_normgate_desc &desc,
                             const NormgateQuantPlan *quant, NormgateCall *call) {
  const ArchTable &table = *h->table;
  call->metric = desc.rows / h->routing_sm_count;
  const bool variant = normgate_call_is_variant(desc, op != CAKE_NG_OP_FWD);
  const bool f32_inputs = enum_bits(desc.x_dtype) == CAKE_DTYPE_F32 ||
                          enum_bits(desc.z_dtype) == CAKE_DTYPE_F32;
  const int32_t form = normgate_form(variant, quant != nullptr ? quant->format : 0, f32_inputs);
  const ProgramRequest req = {CAKE_FAMILY_NORMGATE, op,           desc.d,       call->metric,
                              desc.rows,            h->routing_sm_count, desc.program, form};
  CAKE_TRY(resolve_program(table, family_ops(CAKE_FAMILY_NORMGATE)->routing, req, &call->choice));
  const int program = call->choice.program;
  const int64_t resident = int64_t(h->sm_count) * h->ctas_per_sm[program];
  const int64_t walked = quant != nullptr ? quant->cover_rows : desc.rows;
  call->launch = normgate_launch(table.programs[program], walked, desc.d, resident);
  return CAKE_STATUS_SUCCESS;
}

cake_status_t prepare_forward(cake_handle_t h, const cake_normgate_desc *user, NormgateCall *call) {
  return normgate_prepare_forward(h, user, nullptr, call);
}

uint16_t backward_op(const cake_normgate_desc &d) {
  return d.package == CAKE_NORMGATE_NONDETERMINISTIC ? CAKE_NG_OP_BWD_NONDET : CAKE_NG_OP_BWD_DET;
}

cake_status_t prepare_backward(cake_handle_t h, const cake_normgate_desc *user, NormgateCall *call) {
  CAKE_TRY(check_handle(h));
  CAKE_TRY(read_desc(user, &call->desc));
  cake_normgate_desc &d = call->desc;
  const int32_t package = enum_bits(d.package), dw_dtype = enum_bits(d.dw_dtype);
  if (package != CAKE_NORMGATE_DETERMINISTIC && package != CAKE_NORMGATE_NONDETERMINISTIC) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->package = %d: not a cake_normgate_package_t (0 deterministic, 1 "
                "non-deterministic)",
                package);
  }
  if (!known_dtype(dw_dtype)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->dw_dtype = %d: dw is CAKE_DTYPE_BF16 (1), CAKE_DTYPE_F32 (2) or "
                "CAKE_DTYPE_F16 (3)",
                dw_dtype);
  }
  const uint32_t known = CAKE_NORMGATE_DW_ACCUMULATE | CAKE_NORMGATE_DW_SKIP;
  if ((d.flags & ~known) != 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc->flags = 0x%x: unknown bits 0x%x", d.flags,
                d.flags & ~known);
  }
  if ((d.flags & CAKE_NORMGATE_DW_ACCUMULATE) && (d.flags & CAKE_NORMGATE_DW_SKIP)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->flags: CAKE_NORMGATE_DW_ACCUMULATE and CAKE_NORMGATE_DW_SKIP together");
  }
  CAKE_TRY(check_rows(d, d.dy_stride, "desc->dy_stride", d.x_dtype, &d.dy_stride));
  CAKE_TRY(check_rows(d, d.x_stride, "desc->x_stride", d.x_dtype, &d.x_stride));
  if (gated(d)) CAKE_TRY(check_rows(d, d.z_stride, "desc->z_stride", d.z_dtype, &d.z_stride));
  CAKE_TRY(check_rows(d, d.dx_stride, "desc->dx_stride", d.x_dtype, &d.dx_stride));
  if (gated(d)) CAKE_TRY(check_rows(d, d.dz_stride, "desc->dz_stride", d.z_dtype, &d.dz_stride));
  return choose_program(h, backward_op(d), d, nullptr, call);
}

int64_t workspace_need(cake_handle_t h, const NormgateCall &call) {
  return normgate_workspace_bytes(h->table->programs[call.choice.program], call.desc.rows, call.desc.d,
                                  (call.desc.flags & CAKE_NORMGATE_DW_SKIP) != 0);
}

typedef cake_status_t (*PrepareFn)(cake_handle_t, const cake_normgate_desc *, NormgateCall *);

// The *_query entry points: prepare as the call would, then describe the choice.
cake_status_t query(cake_handle_t h, const cake_normgate_desc *desc, PrepareFn prepare,
                    cake_program_info *info) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(prepare(h, desc, &call));
  return write_program_info(h, call.choice, call.launch.grid, call.metric, info);
}

}  // namespace

cake_status_t normgate_prepare_forward(cake_handle_t h, const cake_normgate_desc *user,
                                       const cake_normgate_quant_desc *quant, NormgateCall *call) {
  CAKE_TRY(check_handle(h));
  CAKE_TRY(read_desc(user, &call->desc));
  cake_normgate_desc &d = call->desc;
  CAKE_TRY(check_rows(d, d.x_stride, "desc->x_stride", d.x_dtype, &d.x_stride));
  if (gated(d)) CAKE_TRY(check_rows(d, d.z_stride, "desc->z_stride", d.z_dtype, &d.z_stride));
  CAKE_TRY(check_rows(d, d.y_stride, "desc->y_stride", d.x_dtype, &d.y_stride));
  if (quant == nullptr) return choose_program(h, CAKE_NG_OP_FWD, d, nullptr, call);
  CAKE_TRY(normgate_check_quant(d, quant, &call->quant));
  return choose_program(h, CAKE_NG_OP_FWD, d, &call->quant, call);
}

cake_status_t normgate_read_forward_desc(const cake_normgate_desc *user, cake_normgate_desc *out) {
  return read_desc(user, out);
}

cake_status_t normgate_check_forward_tensors(cake_handle_t handle, const cake_normgate_desc &desc,
                                             const void *x, const void *&z, const void *w,
                                             const void *y, bool y_optional, const float *rstd) {
  // Without a gate z is not read: it may be NULL and is not checked.
  const bool use_z = gated(desc);
  if (!use_z) z = nullptr;
  CAKE_TRY(check_not_null(x, "x"));
  if (use_z) CAKE_TRY(check_not_null(z, "z"));
  CAKE_TRY(check_not_null(w, "w"));
  if (!y_optional) CAKE_TRY(check_not_null(y, "y"));
  CAKE_TRY(check_aligned16(x, "x"));
  if (use_z) CAKE_TRY(check_aligned16(z, "z"));
  CAKE_TRY(check_aligned16(w, "w"));
  if (y != nullptr) CAKE_TRY(check_aligned16(y, "y"));
  if (rstd != nullptr && reinterpret_cast<uintptr_t>(rstd) % 4 != 0) {
    return fail(CAKE_STATUS_MISALIGNED, "rstd = %p: must be 4-byte aligned",
                static_cast<const void *>(rstd));
  }
  const struct {
    const void *ptr;
    const char *name;
  } tensors[] = {{x, "x"}, {z, "z"}, {w, "w"}, {y, "y"}, {rstd, "rstd"}};
  for (const auto &t : tensors) {
    if (t.ptr != nullptr) CAKE_TRY(check_device_pointer(handle, t.ptr, t.name));
  }
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake

using namespace cake;

extern "C" {

// The CAKE_0 version of cake_normgate_desc_init (lib/cake.map): binaries built against the
// first descriptor layout pass a struct of kDescV1Size bytes, so only those are written.
extern "C" CAKE_API cake_status_t cake_normgate_desc_init_v0(cake_normgate_desc *desc);
__asm__(".symver cake_normgate_desc_init_v0,cake_normgate_desc_init@CAKE_0");

CAKE_API cake_status_t cake_normgate_desc_init_v0(cake_normgate_desc *desc) {
  clear_error();
  if (desc == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc: must not be NULL");
  cake_normgate_desc full;
  cake_normgate_desc_init(&full);
  full.struct_size = kDescV1Size;
  memcpy(desc, &full, kDescV1Size);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_normgate_desc_init(cake_normgate_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->eps = 1e-6f;
  desc->package = CAKE_NORMGATE_DETERMINISTIC;
  desc->dw_dtype = CAKE_DTYPE_BF16;
  desc->gate = CAKE_NORMGATE_GATE_SILU;
  desc->placement = CAKE_NORMGATE_GATE_AFTER_NORM;
  desc->x_dtype = CAKE_DTYPE_BF16;
  desc->z_dtype = CAKE_DTYPE_BF16;
  desc->w_dtype = CAKE_DTYPE_BF16;
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_normgate_forward_query(cake_handle_t handle,
                                                   const cake_normgate_desc *desc,
                                                   cake_program_info *info) {
  return query(handle, desc, prepare_forward, info);
}

CAKE_API cake_status_t cake_normgate_forward(cake_handle_t handle, const cake_normgate_desc *desc,
                                             const void *x, const void *z, const void *w,
                                             void *y, float *rstd, cake_stream_t stream) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(prepare_forward(handle, desc, &call));
  CAKE_TRY(normgate_check_forward_tensors(handle, call.desc, x, z, w, y, false, rstd));
  cake_normgate_params p;
  normgate_fill_forward_params(call.desc, call.launch, {x, z, w, y, rstd}, &p);
  return launch_program(handle, call.choice.program, call.launch.grid, call.launch.block,
                        call.launch.smem_bytes, stream, &p);
}

CAKE_API cake_status_t cake_normgate_workspace_size(cake_handle_t handle,
                                                    const cake_normgate_desc *desc,
                                                    size_t *bytes) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(prepare_backward(handle, desc, &call));
  CAKE_TRY(check_not_null(bytes, "bytes"));
  *bytes = static_cast<size_t>(workspace_need(handle, call));
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_normgate_backward_query(cake_handle_t handle,
                                                    const cake_normgate_desc *desc,
                                                    cake_program_info *info) {
  return query(handle, desc, prepare_backward, info);
}

CAKE_API cake_status_t cake_normgate_backward(cake_handle_t handle, const cake_normgate_desc *desc,
                                              const void *dy, const void *x, const void *z,
                                              const void *w, void *dx, void *dz, void *dw,
                                              void *workspace, size_t workspace_bytes,
                                              cake_stream_t stream) {
  clear_error();
  NormgateCall call;
  CAKE_TRY(prepare_backward(handle, desc, &call));
  const cake_normgate_desc &d = call.desc;
  const bool skip_dw = (d.flags & CAKE_NORMGATE_DW_SKIP) != 0;
  // Without a gate z is not read and dz not written: both may be NULL and are not checked.
  if (!gated(d)) {
    z = nullptr;
    dz = nullptr;
  }
  struct Tensor {
    const void *ptr;
    const char *name;
  };
  // The tensors the call reads or writes, in the order they are checked.
  const Tensor with_gate[] = {{dy, "dy"}, {x, "x"}, {z, "z"}, {w, "w"}, {dx, "dx"}, {dz, "dz"}};
  const Tensor without_gate[] = {{dy, "dy"}, {x, "x"}, {w, "w"}, {dx, "dx"}};
  const Tensor *tensors = gated(d) ? with_gate : without_gate;
  const int count = gated(d) ? 6 : 4;
  for (int i = 0; i < count; ++i) CAKE_TRY(check_not_null(tensors[i].ptr, tensors[i].name));
  if (!skip_dw) CAKE_TRY(check_not_null(dw, "dw"));
  for (int i = 0; i < count; ++i) CAKE_TRY(check_aligned16(tensors[i].ptr, tensors[i].name));
  if (!skip_dw) CAKE_TRY(check_aligned16(dw, "dw"));
  const int64_t need = workspace_need(handle, call);
  if (need > 0) {
    if (workspace == nullptr || workspace_bytes < static_cast<uint64_t>(need)) {
      return fail(CAKE_STATUS_INSUFFICIENT_WORKSPACE,
                  "workspace_bytes = %zu%s: this call (program %s) needs %lld bytes; ask "
                  "cake_normgate_workspace_size()",
                  workspace_bytes, workspace == nullptr ? " (workspace is NULL)" : "",
                  handle->table->programs[call.choice.program].name, static_cast<long long>(need));
    }
    CAKE_TRY(check_aligned16(workspace, "workspace"));
  }
  for (int i = 0; i < count; ++i) CAKE_TRY(check_device_pointer(handle, tensors[i].ptr, tensors[i].name));
  if (!skip_dw) CAKE_TRY(check_device_pointer(handle, dw, "dw"));
  if (need > 0) CAKE_TRY(check_device_pointer(handle, workspace, "workspace"));
  const cake_program_desc &prog = handle->table->programs[call.choice.program];
  cake_normgate_params p;
  normgate_fill_backward_params(prog, d, call.launch, {dy, x, z, w, dx, dz, dw, workspace}, &p);
  return launch_program(handle, call.choice.program, call.launch.grid, call.launch.block,
                        call.launch.smem_bytes, stream, &p,
                        normgate_backward_cooperative(call.launch, d.flags));
}

}  // extern "C"
