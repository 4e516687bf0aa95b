#include "families/family.h"

#include <cstdio>

#include "families/normgate_launch.h"
#include "families/swiglu_fp8_launch.h"
#include "families/swiglu_mxfp8_launch.h"

namespace cake {
namespace {

void normgate_forced(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "op %d, d %d", req.op, req.d);
}

void normgate_unrouted(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "normgate op %d, d = %d, %lld rows per SM", req.op, req.d,
                static_cast<long long>(req.metric));
}

// A SwiGLU variant call (weighted or clamped) needs a variant program.
const char *swiglu_variant_call(const ProgramRequest &req) {
  return (req.variant & kSwRouteVariant) ? ", a SwiGLU variant (a variant program's)" : "";
}

// A SwiGLU + MXFP8 op is its form (direction and orientations).
void swiglu_mxfp8_forced(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "form %d%s", req.op, swiglu_variant_call(req));
}

void swiglu_mxfp8_unrouted(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "swiglu_mxfp8 form %d, M*K = %lld%s", req.op,
                static_cast<long long>(req.metric), swiglu_variant_call(req));
}

// A SwiGLU + FP8 call is its form, and whether M needs a tail program (kSwRouteTail).
const char *swiglu_fp8_rows(const ProgramRequest &req) {
  return (req.variant & kSwRouteTail) ? ", M not a multiple of 128 (a tail program's)" : "";
}

void swiglu_fp8_forced(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "form %d%s%s", req.op, swiglu_fp8_rows(req), swiglu_variant_call(req));
}

void swiglu_fp8_unrouted(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "swiglu_fp8 form %d, M*K = %lld%s%s", req.op,
                static_cast<long long>(req.metric), swiglu_fp8_rows(req),
                swiglu_variant_call(req));
}

constexpr FamilyOps kFamilies[] = {
    {CAKE_FAMILY_NORMGATE, normgate_smem_bytes,
     {normgate_program_serves, normgate_forced, normgate_unrouted}},
    // Every program of a SwiGLU + MXFP8 form serves every shape of it; a SwiGLU variant call
    // only the variant programs (swiglu_mxfp8_program_serves).
    {CAKE_FAMILY_SWIGLU_MXFP8, swiglu_mxfp8_dynamic_smem_bytes,
     {swiglu_mxfp8_program_serves, swiglu_mxfp8_forced, swiglu_mxfp8_unrouted}},
    // A SwiGLU + FP8 blockwise call whose M is a multiple of 128 is served by every program of
    // its form, any other only by the tail programs (swiglu_fp8_program_serves).
    {CAKE_FAMILY_SWIGLU_FP8, swiglu_fp8_dynamic_smem_bytes,
     {swiglu_fp8_program_serves, swiglu_fp8_forced, swiglu_fp8_unrouted}},
};

}  // namespace

const FamilyOps *family_ops(uint16_t family) {
  for (const FamilyOps &ops : kFamilies) {
    if (ops.family == family) return &ops;
  }
  return nullptr;
}

}  // namespace cake
