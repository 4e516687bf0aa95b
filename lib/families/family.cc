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

// A SwiGLU + MXFP8 op is its form (direction and orientations).
void swiglu_mxfp8_forced(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "form %d", req.op);
}

void swiglu_mxfp8_unrouted(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "swiglu_mxfp8 form %d, M*K = %lld", req.op,
                static_cast<long long>(req.metric));
}

void swiglu_fp8_unrouted(const ProgramRequest &req, char *buf, size_t size) {
  std::snprintf(buf, size, "swiglu_fp8 form %d, M*K = %lld", req.op,
                static_cast<long long>(req.metric));
}

constexpr FamilyOps kFamilies[] = {
    {CAKE_FAMILY_NORMGATE, normgate_smem_bytes,
     {normgate_program_serves, normgate_forced, normgate_unrouted}},
    // Every program of a SwiGLU + MXFP8 form serves every shape of it.
    {CAKE_FAMILY_SWIGLU_MXFP8, swiglu_mxfp8_dynamic_smem_bytes,
     {nullptr, swiglu_mxfp8_forced, swiglu_mxfp8_unrouted}},
    // Likewise every program of a SwiGLU + FP8 blockwise form (M, K multiples of 128).
    {CAKE_FAMILY_SWIGLU_FP8, swiglu_fp8_dynamic_smem_bytes,
     {nullptr, swiglu_mxfp8_forced, swiglu_fp8_unrouted}},
};

}  // namespace

const FamilyOps *family_ops(uint16_t family) {
  for (const FamilyOps &ops : kFamilies) {
    if (ops.family == family) return &ops;
  }
  return nullptr;
}

}  // namespace cake
