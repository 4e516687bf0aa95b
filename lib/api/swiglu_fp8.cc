// SwiGLU + FP8 blockwise entry points (the MXFP8 family's flow, lib/api/swiglu_mxfp8.cc): validate every argument, pick the program, fill the parameters,
// launch. Nothing is launched or written when an argument is wrong.
#include "api/handle.h"
#include "api/launch.h"
#include "api/program_info.h"
#include "api/struct_size.h"
#include "api/validate.h"
#include "error/error.h"
#include "families/family.h"
#include "families/swiglu_fp8_launch.h"
#include "router/router.h"

namespace cake {
namespace {

struct SwigluCall {
  cake_swiglu_fp8_desc desc;
  int form;
  ProgramChoice choice;
  int64_t metric;  // M*K
  LaunchShape launch;
};

int form_of(bool backward, cake_mxfp8_orientation_t o) {
  const int orient = o == CAKE_MXFP8_ROWWISE ? 0 : (o == CAKE_MXFP8_COLWISE ? 1 : 2);
  return (backward ? 3 : 0) + orient;
}

cake_status_t read_desc(const cake_swiglu_fp8_desc *user, int backward,
                        cake_swiglu_fp8_desc *d, int *form) {
  CAKE_TRY(check_not_null(user, "desc"));
  cake_swiglu_fp8_desc_init(d);
  CAKE_TRY(read_struct("desc", user, user->struct_size, sizeof(cake_swiglu_fp8_desc), d, sizeof *d));
  if (backward != 0 && backward != 1) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "backward = %d: 0 (forward) or 1 (backward)", backward);
  }
  if (d->m <= 0 || d->k <= 0) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc->m = %lld, desc->k = %lld: both must be > 0",
                static_cast<long long>(d->m), static_cast<long long>(d->k));
  }
  if (d->m % 128 != 0 || d->k % 128 != 0) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->m = %lld, desc->k = %lld: both must be multiples of 128 (the 1x128 "
                "scale block)",
                static_cast<long long>(d->m), static_cast<long long>(d->k));
  }
  const int32_t orientation = enum_bits(d->orientation);
  if (orientation != CAKE_MXFP8_ROWWISE && orientation != CAKE_MXFP8_COLWISE &&
      orientation != CAKE_MXFP8_BOTH) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->orientation = %d: CAKE_MXFP8_ROWWISE (1), _COLWISE (2) or _BOTH (3); at "
                "least one orientation must be enabled",
                orientation);
  }
  const int32_t rule = enum_bits(d->scale_rule);
  if (rule != CAKE_FP8_SCALE_EXACT && rule != CAKE_FP8_SCALE_POW2) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->scale_rule = %d: CAKE_FP8_SCALE_EXACT (0) or CAKE_FP8_SCALE_POW2 (1)", rule);
  }
  *form = form_of(backward != 0, d->orientation);
  SwigluFp8Sizes sizes;
  // Input [M, 2K] BF16 and every output must be addressable with 64-bit byte counts.
  if (d->m > INT64_MAX / d->k / 4 || !swiglu_fp8_sizes(*form, d->m, d->k, &sizes)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "desc->m = %lld, desc->k = %lld: the buffers overflow 64-bit byte counts",
                static_cast<long long>(d->m), static_cast<long long>(d->k));
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t prepare(cake_handle_t h, const cake_swiglu_fp8_desc *user, int backward,
                      SwigluCall *call) {
  CAKE_TRY(check_handle(h));
  CAKE_TRY(read_desc(user, backward, &call->desc, &call->form));
  const ArchTable &table = *h->table;
  call->metric = call->desc.m * call->desc.k;
  const ProgramRequest req = {CAKE_FAMILY_SWIGLU_FP8, static_cast<uint16_t>(call->form), 0,
                              call->metric, 0, 0, call->desc.program, 0};
  CAKE_TRY(
      resolve_program(table, family_ops(CAKE_FAMILY_SWIGLU_FP8)->routing, req, &call->choice));
  const cake_program_desc &prog = table.programs[call->choice.program];
  const int64_t tiles = swiglu_fp8_tiles(prog, call->desc.m, call->desc.k);
  if (tiles < 1 || tiles > INT32_MAX) {
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE,
                "desc->m = %lld, desc->k = %lld: %lld CTA tiles for program %s; at most %d",
                static_cast<long long>(call->desc.m), static_cast<long long>(call->desc.k),
                static_cast<long long>(tiles), prog.name, INT32_MAX);
  }
  call->launch = swiglu_fp8_launch_shape(prog, call->desc.m, call->desc.k, h->sm_count);
  return CAKE_STATUS_SUCCESS;
}

cake_status_t run(cake_handle_t handle, const cake_swiglu_fp8_desc *desc, int backward,
                  const void *in, const void *grad, void *row_q, void *row_s, void *col_q,
                  void *col_s, cake_stream_t stream) {
  SwigluCall call;
  CAKE_TRY(prepare(handle, desc, backward, &call));
  const bool rows = call.desc.orientation & CAKE_MXFP8_ROWWISE;
  const bool cols = call.desc.orientation & CAKE_MXFP8_COLWISE;
  CAKE_TRY(check_not_null(in, "in"));
  if (backward) CAKE_TRY(check_not_null(grad, "grad"));
  if (rows) {
    CAKE_TRY(check_not_null(row_q, "row_q"));
    CAKE_TRY(check_not_null(row_s, "row_s"));
  }
  if (cols) {
    CAKE_TRY(check_not_null(col_q, "col_q"));
    CAKE_TRY(check_not_null(col_s, "col_s"));
  }
  CAKE_TRY(check_aligned16(in, "in"));
  if (backward) CAKE_TRY(check_aligned16(grad, "grad"));
  if (rows) {
    CAKE_TRY(check_aligned16(row_q, "row_q"));
    CAKE_TRY(check_aligned16(row_s, "row_s"));
  }
  if (cols) {
    CAKE_TRY(check_aligned16(col_q, "col_q"));
    CAKE_TRY(check_aligned16(col_s, "col_s"));
  }
  const struct {
    const void *ptr;
    const char *name;
  } tensors[] = {{in, "in"},         {backward ? grad : nullptr, "grad"},
                 {rows ? row_q : nullptr, "row_q"}, {rows ? row_s : nullptr, "row_s"},
                 {cols ? col_q : nullptr, "col_q"}, {cols ? col_s : nullptr, "col_s"}};
  for (const auto &t : tensors) CAKE_TRY(check_device_pointer(handle, t.ptr, t.name));
  const cake_program_desc &prog = handle->table->programs[call.choice.program];
  cake_swiglu_fp8_params p;
  if (!swiglu_fp8_fill_params(prog, call.desc.m, call.desc.k, enum_bits(call.desc.scale_rule),
                              in, backward ? grad : nullptr,
                              rows ? row_q : nullptr, rows ? row_s : nullptr,
                              cols ? col_q : nullptr, cols ? col_s : nullptr, &p)) {
    return fail(CAKE_STATUS_INTERNAL_ERROR, "program %s cannot run M = %lld, K = %lld", prog.name,
                static_cast<long long>(call.desc.m), static_cast<long long>(call.desc.k));
  }
  return launch_program(handle, call.choice.program, call.launch.grid[0], call.launch.block,
                        call.launch.smem_bytes, stream, &p);
}

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_swiglu_fp8_desc_init(cake_swiglu_fp8_desc *desc) {
  CAKE_TRY(init_struct(desc, "desc"));
  desc->orientation = CAKE_MXFP8_ROWWISE;
  desc->scale_rule = CAKE_FP8_SCALE_EXACT;
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_swiglu_fp8_sizes_init(cake_swiglu_fp8_sizes *sizes) {
  return init_struct(sizes, "sizes");
}

CAKE_API cake_status_t cake_swiglu_fp8_buffer_sizes(const cake_swiglu_fp8_desc *desc,
                                                      int backward,
                                                      cake_swiglu_fp8_sizes *sizes) {
  clear_error();
  cake_swiglu_fp8_desc d;
  int form = 0;
  CAKE_TRY(read_desc(desc, backward, &d, &form));
  CAKE_TRY(check_not_null(sizes, "sizes"));
  // Sizes of both orientations, whatever the descriptor enables.
  SwigluFp8Sizes s;
  swiglu_fp8_sizes(form_of(backward != 0, CAKE_MXFP8_BOTH), d.m, d.k, &s);
  cake_swiglu_fp8_sizes out;
  cake_swiglu_fp8_sizes_init(&out);
  out.out_cols = backward ? 2 * d.k : d.k;
  out.q_bytes = static_cast<size_t>(s.row_q_bytes);
  out.row_s_bytes = static_cast<size_t>(s.row_s_bytes);
  out.col_s_bytes = static_cast<size_t>(s.col_s_bytes);
  out.row_s_stride = d.m;
  out.col_s_stride = out.out_cols;
  return write_struct("sizes", sizes, &out, sizeof out);
}

CAKE_API cake_status_t cake_swiglu_fp8_forward(cake_handle_t handle,
                                                 const cake_swiglu_fp8_desc *desc,
                                                 const void *in, void *row_q, void *row_s,
                                                 void *col_q, void *col_s, cake_stream_t stream) {
  clear_error();
  return run(handle, desc, 0, in, nullptr, row_q, row_s, col_q, col_s, stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_backward(cake_handle_t handle,
                                                  const cake_swiglu_fp8_desc *desc,
                                                  const void *in, const void *grad, void *row_q,
                                                  void *row_s, void *col_q, void *col_s,
                                                  cake_stream_t stream) {
  clear_error();
  return run(handle, desc, 1, in, grad, row_q, row_s, col_q, col_s, stream);
}

CAKE_API cake_status_t cake_swiglu_fp8_query(cake_handle_t handle,
                                               const cake_swiglu_fp8_desc *desc, int backward,
                                               cake_program_info *info) {
  clear_error();
  SwigluCall call;
  CAKE_TRY(prepare(handle, desc, backward, &call));
  const int64_t grid = int64_t(call.launch.grid[0]) * call.launch.grid[1] * call.launch.grid[2];
  return write_program_info(handle, call.choice, grid, call.metric, info);
}

}  // extern "C"
