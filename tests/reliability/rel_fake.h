// Host-only harness of the reliability suite: device-less handles for the real entry points.
//
// Two kinds of fake handle, both with a real architecture table and an SM count:
//   - make_crashing_handle(): no driver at all (as tests/host/fake_handle.h). A call that wrongly
//     gets past validation dereferences the NULL driver at launch and the test dies: every
//     *rejection* test uses this one, so "nothing was launched" cannot be faked.
//   - make_recording_handle(): a stub driver whose cuLaunchKernel records the launch (program,
//     grid, block, shared memory, a copy of the parameter struct) instead of running it. The
//     fuzzer and the acceptance cases use it to check what an accepted call would launch.
// The stub driver implements only what the launch path may call (context current/push/pop,
// launch, error names, function attributes, pointer attributes); every other entry stays NULL
// so an unexpected driver call crashes loudly.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "api/handle.h"
#include "driver/driver.h"
#include "modules/images.h"
#include "normgate_params.h"
#include "router/tables.h"
#include "swiglu_mxfp8_params.h"
#include "swiglu_weak.h"

namespace rel {

// One recorded cuLaunchKernel.
struct Launch {
  int program = -1;  // index into the handle's table (the fake CUfunction encodes it)
  unsigned grid[3] = {0, 0, 0};
  unsigned block[3] = {0, 0, 0};
  unsigned smem = 0;
  CUstream stream = nullptr;
  unsigned char params[320];  // kernelParams[0], copied (the one parameter struct)
  static_assert(sizeof(cake_normgate_params) <= 320 && sizeof(cake_swiglu_mxfp8_params) <= 320,
                "a parameter struct outgrew the record");
  int extra_used = 0;         // the `extra` argument was non-NULL (Cake never uses it)
  int cooperative = 0;        // launched by cuLaunchKernelEx with the cooperative attribute
};

// Launches recorded on this thread since the last reset (thread-local: TSan hammers it).
inline std::vector<Launch> &launches() {
  thread_local std::vector<Launch> v;
  return v;
}
inline int &driver_calls() {  // any stub call, launches included
  thread_local int n = 0;
  return n;
}
inline void reset_recording() {
  launches().clear();
  driver_calls() = 0;
}

// The fake context every recording handle lives in; "current" per thread, like the driver's.
inline CUcontext fake_context() { return reinterpret_cast<CUcontext>(uintptr_t{0xC0C0C0}); }
inline CUcontext &current_context() {
  thread_local CUcontext c = fake_context();
  return c;
}

inline size_t param_bytes_of(const cake_program_desc &prog) {
  return prog.family == CAKE_FAMILY_NORMGATE ? sizeof(cake_normgate_params) : sizeof(cake_swiglu_mxfp8_params);
}

namespace stub {
inline CUresult get_error_name(CUresult, const char **s) {
  ++driver_calls();
  *s = "CUDA_ERROR_STUB";
  return CUDA_SUCCESS;
}
inline CUresult get_error_string(CUresult, const char **s) {
  ++driver_calls();
  *s = "stub driver";
  return CUDA_SUCCESS;
}
inline CUresult ctx_get_current(CUcontext *c) {
  ++driver_calls();
  *c = current_context();
  return CUDA_SUCCESS;
}
inline CUresult ctx_push(CUcontext c) {
  ++driver_calls();
  current_context() = c;
  return CUDA_SUCCESS;
}
inline CUresult ctx_pop(CUcontext *c) {
  ++driver_calls();
  if (c) *c = current_context();
  current_context() = fake_context();
  return CUDA_SUCCESS;
}
inline CUresult func_get_attribute(int *v, CUfunction_attribute, CUfunction) {
  ++driver_calls();
  *v = 0;
  return CUDA_SUCCESS;
}
inline CUresult func_set_attribute(CUfunction, CUfunction_attribute, int) {
  ++driver_calls();
  return CUDA_SUCCESS;
}
inline CUresult pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr) {
  ++driver_calls();
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *static_cast<CUcontext *>(data) = fake_context(); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned *>(data) = CU_MEMORYTYPE_DEVICE; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int *>(data) = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}
// The program is found through the function: fake CUfunctions are
// (table index << 16 | program index) + 1, so a NULL one (a crashing handle) is never made.
inline CUresult launch_kernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, CUstream stream,
                              void **params, void **extra) {
  ++driver_calls();
  Launch l;
  const uintptr_t id = reinterpret_cast<uintptr_t>(f) - 1;
  int count = 0;
  const cake::ArchTable *tables = cake::arch_tables(&count);
  const int table = static_cast<int>(id >> 16);
  l.program = static_cast<int>(id & 0xffff);
  l.grid[0] = gx, l.grid[1] = gy, l.grid[2] = gz;
  l.block[0] = bx, l.block[1] = by, l.block[2] = bz;
  l.smem = smem;
  l.stream = stream;
  l.extra_used = extra != nullptr;
  std::memset(l.params, 0, sizeof l.params);
  if (table < count && l.program < tables[table].program_count && params != nullptr &&
      params[0] != nullptr) {
    std::memcpy(l.params, params[0], param_bytes_of(tables[table].programs[l.program]));
  }
  launches().push_back(l);
  return CUDA_SUCCESS;
}
inline CUresult launch_kernel_ex(const CUlaunchConfig *c, CUfunction f, void **params,
                                 void **extra) {
  int cooperative = 0;
  for (unsigned i = 0; i < c->numAttrs; ++i) {
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) cooperative = c->attrs[i].value.cooperative;
  }
  const CUresult r = launch_kernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                                   c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                                   params, extra);
  launches().back().cooperative = cooperative;
  return r;
}
}  // namespace stub

inline const cake::Driver *recording_driver() {
  static const cake::Driver drv = [] {
    cake::Driver d;
    d.cuGetErrorName = stub::get_error_name;
    d.cuGetErrorString = stub::get_error_string;
    d.cuCtxGetCurrent = stub::ctx_get_current;
    d.cuCtxPushCurrent = stub::ctx_push;
    d.cuCtxPopCurrent = stub::ctx_pop;
    d.cuFuncGetAttribute = stub::func_get_attribute;
    d.cuFuncSetAttribute = stub::func_set_attribute;
    d.cuPointerGetAttribute = stub::pointer_get_attribute;
    d.cuLaunchKernel = stub::launch_kernel;
    d.cuLaunchKernelEx = stub::launch_kernel_ex;
    d.driver_version = 13000;
    return d;
  }();
  return &drv;
}

inline int table_index(const cake::ArchTable *t) {
  int count = 0;
  const cake::ArchTable *tables = cake::arch_tables(&count);
  for (int i = 0; i < count; ++i) {
    if (&tables[i] == t) return i;
  }
  return -1;
}

// A device-less handle for `arch`'s table. routing_sm_count as options.sm_count would set it.
// With `recording`, the stub driver above; else no driver (calls that launch crash).
inline cake_handle_t make_handle(cake_arch_t arch, int sm_count, int routing_sm_count,
                                 bool recording) {
  const cake::ArchTable *table = cake::arch_table(arch);
  if (table == nullptr || sm_count < 1) return nullptr;
  auto *h = new cake_handle_st();
  h->magic = cake::kHandleMagic;
  h->drv = recording ? recording_driver() : nullptr;
  h->ordinal = 0;
  h->context = recording ? fake_context() : nullptr;
  h->table = table;
  h->sm_count = sm_count;
  h->routing_sm_count = routing_sm_count > 0 ? routing_sm_count : sm_count;
  h->cc_major = static_cast<int>(arch) / 10;
  h->cc_minor = static_cast<int>(arch) % 10;
  // The image the device of that architecture would load: device queries read it.
  h->image = nullptr;
  h->jit = false;
  cake::select_image(h->cc_major, h->cc_minor, CAKE_ARCH_NONE, &h->image, &h->jit);
  const int t = table_index(table);
  h->functions.assign(table->program_count, nullptr);
  for (int i = 0; i < table->program_count; ++i) {
    if (recording) {
      h->functions[i] = reinterpret_cast<CUfunction>((uintptr_t(t) << 16 | uintptr_t(i)) + 1);
    }
    // Occupancy as the launch bounds promise it.
    h->ctas_per_sm.push_back(static_cast<int>(table->programs[i].min_ctas_per_sm));
  }
  std::snprintf(h->device_name, sizeof h->device_name, "fake %s", table->tag);
  return h;
}

inline cake_handle_t make_crashing_handle(cake_arch_t arch, int sm_count = 132) {
  return make_handle(arch, sm_count, 0, false);
}
inline cake_handle_t make_recording_handle(cake_arch_t arch, int sm_count = 132,
                                           int routing_sm_count = 0) {
  return make_handle(arch, sm_count, routing_sm_count, true);
}

inline void free_handle(cake_handle_t h) {
  if (h == nullptr) return;
  h->magic = 0;
  delete h;
}

}  // namespace rel
