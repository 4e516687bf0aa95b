// The entry-point flow the SwiGLU families share (lib/api/swiglu_mxfp8.cc, swiglu_fp8.cc): read
// and validate the descriptor, pick the program, check the tile count, check the pointers, fill
// the parameters, launch; the query answers from the same preparation. A family supplies its
// traits (descriptor and parameter types, family id, the multiples M and K must be and why, its
// extra descriptor checks, the router's variant, sizes, tiles, launch shape and parameter
// fill), so every check
// and message is written once and both families validate in the same order.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "api/handle.h"
#include "api/launch.h"
#include "api/program_info.h"
#include "api/struct_size.h"
#include "api/validate.h"
#include "cake.h"
#include "error/error.h"
#include "families/family.h"
#include "families/swiglu_launch_common.h"
#include "router/router.h"
#include "swiglu_variant_params.h"

namespace cake {

// The form of a call: 0..2 forward rowwise/colwise/both, 3..5 the same backward.
int swiglu_form_of(bool backward, cake_mxfp8_orientation_t o);

// A family's shape rule: M a multiple of m_multiple, K of k_multiple, and why.
struct SwigluShapeRule {
  int64_t m_multiple, k_multiple;
  const char *why;
};

// backward is 0 or 1; the orientation one of the three (the grouped calls check them too).
cake_status_t swiglu_check_backward(int backward);
cake_status_t swiglu_check_orientation(const cake_mxfp8_orientation_t &orientation);

// The FP8 blockwise scale rule (ungrouped and grouped descriptors): EXACT or POW2.
cake_status_t swiglu_check_scale_rule(const cake_fp8_scale_rule_t &rule);

// The caller's descriptor over desc_init's defaults (a smaller, older struct keeps the defaults
// of the fields it lacks: one without `variant` is the plain SwiGLU). Ungrouped and grouped
// families.
template <class Desc>
cake_status_t swiglu_read_struct(const Desc *user, cake_status_t (*desc_init)(Desc *), Desc *d) {
  CAKE_TRY(check_not_null(user, "desc"));
  desc_init(d);
  return read_struct("desc", user, user->struct_size, offsetof(Desc, variant), d, sizeof *d);
}

// The variant defaults every SwiGLU desc_init sets: the plain SwiGLU, gpt-oss's alpha and limit.
void swiglu_variant_defaults(cake_swiglu_variant_desc *v);

// The descriptor's variant rules (docs/spec/swiglu-mxfp8.md, "Variants"): activation one of the
// enum, alpha finite and limit positive (not NaN) when clamped, weighted 0 or 1.
cake_status_t swiglu_check_variant(const cake_swiglu_variant_desc &v);

// True for a call that needs a variant program (weighted or clamped).
bool swiglu_is_variant(const cake_swiglu_variant_desc &v);

// The router's variant bit of the call (kSwRouteVariant or 0).
int32_t swiglu_route_variant(const cake_swiglu_variant_desc &v);

// The variant's pointers: p (weighted) and dp (weighted backward) non-NULL, 4-byte aligned,
// device memory of the handle's device; NULL first, then alignment, then memory.
cake_status_t swiglu_check_variant_tensors(cake_handle_t handle, int backward,
                                           const cake_swiglu_variant_desc &v);

// The kernels' run-time variant of a checked call (dp only in the weighted backward).
cake_swiglu_variant swiglu_kernel_variant(const cake_swiglu_variant_desc &v, int backward);

cake_status_t check_aligned4(const void *ptr, const char *name);

// One call prepared: its descriptor, form, program, the routing metric (rows times K) and the
// launch shape. Ungrouped and grouped families.
template <class Desc>
struct SwigluCall {
  Desc desc;
  int form;
  ProgramChoice choice;
  int64_t metric;
  LaunchShape launch;
};

// The query's answer for a prepared call.
template <class Desc>
cake_status_t swiglu_query_info(cake_handle_t handle, const SwigluCall<Desc> &call,
                                cake_program_info *info) {
  const int64_t grid = int64_t(call.launch.grid[0]) * call.launch.grid[1] * call.launch.grid[2];
  return write_program_info(handle, call.choice, grid, call.metric, info);
}

// The descriptor checks of both families, in order: backward is 0 or 1, M and K positive and
// multiples of the family's rule, the orientation one of the three.
cake_status_t swiglu_check_desc(int backward, int64_t m, int64_t k,
                                const cake_mxfp8_orientation_t &orientation,
                                const SwigluShapeRule &rule);

// Input [M, 2K] BF16 and every output must be addressable with 64-bit byte counts: `sizes_ok`
// is the family's own size computation for the form.
cake_status_t swiglu_check_bytes(int64_t m, int64_t k, bool sizes_ok);

// The program's CTA tiles must be 1 .. INT32_MAX.
cake_status_t swiglu_check_tiles(int64_t tiles, int64_t m, int64_t k,
                                 const cake_program_desc &prog);

// The tensors of one call. swiglu_check_tensors() checks those the form uses (non-NULL, 16-byte
// aligned, device memory) and sets those it does not use to NULL.
struct SwigluTensors {
  const void *in;
  const void *grad;
  void *row_q, *row_s, *col_q, *col_s;
};
cake_status_t swiglu_check_tensors(cake_handle_t handle, int backward,
                                   cake_mxfp8_orientation_t orientation, SwigluTensors *t);

// The parameter fill refused a problem the API accepted.
cake_status_t swiglu_fill_failed(const cake_program_desc &prog, int64_t m, int64_t k);

// F, a family's traits: Desc, Params, Sizes (the family's host sizes, row_/col_ q/s bytes),
// SizesOut (the ABI's sizes struct); kFamily, kShape; desc_init, sizes_init, sizes, tiles,
// launch_shape (the family's functions); check_desc (checks beyond the shared ones, after them),
// variant (the router's RouteServes variant of a call), fill_params, more_sizes (SizesOut
// fields beyond the shared ones).
template <class F>
struct SwigluApi {
  using Desc = typename F::Desc;
  using Call = SwigluCall<Desc>;

  static cake_status_t read_desc(const Desc *user, int backward, Desc *d, int *form) {
    CAKE_TRY(swiglu_read_struct(user, F::desc_init, d));
    CAKE_TRY(swiglu_check_desc(backward, d->m, d->k, d->orientation, F::kShape));
    CAKE_TRY(F::check_desc(*d));
    CAKE_TRY(swiglu_check_variant(d->variant));
    *form = swiglu_form_of(backward != 0, d->orientation);
    typename F::Sizes sizes;
    return swiglu_check_bytes(d->m, d->k,
                              d->m <= INT64_MAX / d->k / 4 && F::sizes(*form, d->m, d->k, &sizes));
  }

  static cake_status_t prepare(cake_handle_t h, const Desc *user, int backward, Call *call) {
    CAKE_TRY(check_handle(h));
    CAKE_TRY(read_desc(user, backward, &call->desc, &call->form));
    const ArchTable &table = *h->table;
    call->metric = call->desc.m * call->desc.k;
    const ProgramRequest req = {F::kFamily,   static_cast<uint16_t>(call->form), 0,
                                call->metric, 0,
                                0,            call->desc.program,
                                F::variant(call->desc) | swiglu_route_variant(call->desc.variant)};
    CAKE_TRY(resolve_program(table, family_ops(F::kFamily)->routing, req, &call->choice));
    const cake_program_desc &prog = table.programs[call->choice.program];
    CAKE_TRY(swiglu_check_tiles(F::tiles(prog, call->desc.m, call->desc.k), call->desc.m,
                                call->desc.k, prog));
    call->launch = F::launch_shape(prog, call->desc.m, call->desc.k, h->sm_count);
    return CAKE_STATUS_SUCCESS;
  }

  static cake_status_t run(cake_handle_t handle, const Desc *desc, int backward, SwigluTensors t,
                           cake_stream_t stream) {
    Call call;
    CAKE_TRY(prepare(handle, desc, backward, &call));
    CAKE_TRY(swiglu_check_tensors(handle, backward, call.desc.orientation, &t));
    CAKE_TRY(swiglu_check_variant_tensors(handle, backward, call.desc.variant));
    const cake_program_desc &prog = handle->table->programs[call.choice.program];
    typename F::Params p;
    if (!F::fill_params(prog, call.desc, t, &p)) {
      return swiglu_fill_failed(prog, call.desc.m, call.desc.k);
    }
    p.var = swiglu_kernel_variant(call.desc.variant, backward);
    return launch_program(handle, call.choice.program, call.launch.grid[0], call.launch.block,
                          call.launch.smem_bytes, stream, &p);
  }

  // Sizes of both orientations, whatever the descriptor enables; the family adds its own fields.
  static cake_status_t buffer_sizes(const Desc *desc, int backward, typename F::SizesOut *sizes) {
    Desc d;
    int form = 0;
    CAKE_TRY(read_desc(desc, backward, &d, &form));
    CAKE_TRY(check_not_null(sizes, "sizes"));
    typename F::Sizes s;
    F::sizes(swiglu_form_of(backward != 0, CAKE_MXFP8_BOTH), d.m, d.k, &s);
    typename F::SizesOut out;
    F::sizes_init(&out);
    out.out_cols = backward ? 2 * d.k : d.k;
    out.q_bytes = static_cast<size_t>(s.row_q_bytes);
    out.row_s_bytes = static_cast<size_t>(s.row_s_bytes);
    out.col_s_bytes = static_cast<size_t>(s.col_s_bytes);
    F::more_sizes(d, &out);
    return write_struct("sizes", sizes, &out, sizeof out);
  }

  static cake_status_t query(cake_handle_t handle, const Desc *desc, int backward,
                             cake_program_info *info) {
    Call call;
    CAKE_TRY(prepare(handle, desc, backward, &call));
    return swiglu_query_info(handle, call, info);
  }
};

}  // namespace cake
