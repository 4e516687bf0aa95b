// What the normgate entry points share (lib/api/normgate.cc, lib/api/normgate_quant.cc): the
// checked form of a call and the forward's preparation.
#pragma once
#include "cake.h"
#include "families/normgate_launch.h"
#include "router/router.h"

namespace cake {

// The checked, normalised form of a caller's descriptor.
struct NormgateCall {
  cake_normgate_desc desc;  // strides resolved (0 -> d)
  ProgramChoice choice;
  NormgateLaunch launch;
  int64_t metric;
  NormgateQuantPlan quant;  // a quantized forward's output (else unused)
};

// Every descriptor rule of a forward (quant: the quantized output's too, or nullptr for the
// plain forward), then the program and its launch.
cake_status_t normgate_prepare_forward(cake_handle_t h, const cake_normgate_desc *user,
                                       const cake_normgate_quant_desc *quant, NormgateCall *call);

// The descriptor rules alone (no handle): rows, d, eps, the variant fields.
cake_status_t normgate_read_forward_desc(const cake_normgate_desc *user, cake_normgate_desc *out);

// The rules of a quantized output for a checked descriptor, and its plan (lib/api/normgate_quant.cc).
cake_status_t normgate_check_quant(const cake_normgate_desc &desc,
                                   const cake_normgate_quant_desc *user, NormgateQuantPlan *out);

// The forward's tensor rules: x, z (with a gate; set to NULL without one), w, y (NULL allowed
// when y_optional), rstd.
cake_status_t normgate_check_forward_tensors(cake_handle_t handle, const cake_normgate_desc &desc,
                                             const void *x, const void *&z, const void *w,
                                             const void *y, bool y_optional, const float *rstd);

}  // namespace cake
