// cake_create / cake_destroy / device and program queries.
#include "api/handle.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "api/struct_size.h"
#include "api/validate.h"
#include "error/error.h"
#include "families/family.h"

namespace cake {

cake_status_t check_handle(cake_handle_t handle) {
  if (handle == nullptr) return fail(CAKE_STATUS_INVALID_HANDLE, "handle: must not be NULL");
  if (handle->magic != kHandleMagic) {
    return fail(CAKE_STATUS_INVALID_HANDLE, "handle: not a live Cake handle (destroyed?)");
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t ScopedHandleContext::enter(cake_handle_t handle) {
  CAKE_TRY(check_handle(handle));
  handle_ = handle;
  CUcontext current = nullptr;
  CAKE_CU(*handle->drv, cuCtxGetCurrent(&current));
  if (current != handle->context) {
    CAKE_CU(*handle->drv, cuCtxPushCurrent(handle->context));
    pushed_ = true;
  }
  return CAKE_STATUS_SUCCESS;
}

ScopedHandleContext::~ScopedHandleContext() {
  if (pushed_) {
    CUcontext popped = nullptr;
    handle_->drv->cuCtxPopCurrent(&popped);
  }
}

namespace {

cake_status_t load_programs(cake_handle_t h) {
  const Driver &drv = *h->drv;
  CAKE_CU(drv, cuModuleLoadData(&h->module, h->image->data));
  const int n = h->table->program_count;
  h->functions.assign(n, nullptr);
  h->ctas_per_sm.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const cake_program_desc &prog = h->table->programs[i];
    const CUresult r = drv.cuModuleGetFunction(&h->functions[i], h->module, prog.kernel);
    if (r != CUDA_SUCCESS) {
      return fail(CAKE_STATUS_INTERNAL_ERROR,
                  "program %s: kernel %s is not in the %s image (%s): manifest and image "
                  "disagree",
                  prog.name, prog.kernel, h->image->targets, h->table->tag);
    }
    const FamilyOps *ops = family_ops(prog.family);
    if (ops == nullptr) {
      return fail(CAKE_STATUS_INTERNAL_ERROR, "program %s: family %d is not one this library has",
                  prog.name, prog.family);
    }
    // Programs with dynamic shared memory opt in to it once, here: without the opt-in, static
    // and dynamic together may not pass 48 KiB.
    const uint32_t smem = ops->dynamic_smem_bytes(prog);
    if (smem > 0) {
      CAKE_CU(drv, cuFuncSetAttribute(h->functions[i],
                                      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                      static_cast<int>(smem)));
    }
    CAKE_CU(drv, cuOccupancyMaxActiveBlocksPerMultiprocessor(&h->ctas_per_sm[i], h->functions[i],
                                                             static_cast<int>(prog.threads), smem));
    if (h->ctas_per_sm[i] < 1) {
      return fail(CAKE_STATUS_INTERNAL_ERROR, "program %s: the driver reports no resident CTA",
                  prog.name);
    }
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t create(cake_handle_t h, int ordinal, const cake_handle_options &opts) {
  CAKE_TRY(driver_get(&h->drv));
  const Driver &drv = *h->drv;
  int count = 0;
  CAKE_CU(drv, cuDeviceGetCount(&count));
  if (ordinal < 0 || ordinal >= count) {
    return fail(CAKE_STATUS_NO_DEVICE, "device_ordinal %d: the driver sees %d device(s)", ordinal,
                count);
  }
  h->ordinal = ordinal;
  CAKE_CU(drv, cuDeviceGet(&h->device, ordinal));
  CAKE_CU(drv, cuDeviceGetAttribute(&h->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    h->device));
  CAKE_CU(drv, cuDeviceGetAttribute(&h->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    h->device));
  CAKE_CU(drv, cuDeviceGetAttribute(&h->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                    h->device));
  CAKE_CU(drv, cuDeviceGetName(h->device_name, sizeof h->device_name, h->device));
  h->routing_sm_count = opts.sm_count > 0 ? opts.sm_count : h->sm_count;
  CAKE_TRY(select_image(h->cc_major, h->cc_minor, opts.table, &h->image, &h->jit));
  h->table = arch_table(h->image->table);
  if (h->table == nullptr) return fail(CAKE_STATUS_INTERNAL_ERROR, "image without a table");
  CAKE_CU(drv, cuDevicePrimaryCtxRetain(&h->context, h->device));
  CAKE_CU(drv, cuCtxPushCurrent(h->context));
  const cake_status_t st = load_programs(h);
  CUcontext popped = nullptr;
  drv.cuCtxPopCurrent(&popped);
  return st;
}

void release(cake_handle_t h) {
  if (h->drv != nullptr && h->context != nullptr) {
    if (h->module != nullptr) {
      h->drv->cuCtxPushCurrent(h->context);
      h->drv->cuModuleUnload(h->module);
      CUcontext popped = nullptr;
      h->drv->cuCtxPopCurrent(&popped);
    }
    h->drv->cuDevicePrimaryCtxRelease(h->device);
  }
  h->magic = 0;
  delete h;
}

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_handle_options_init(cake_handle_options *options) {
  return init_struct(options, "options");
}

CAKE_API cake_status_t cake_create(cake_handle_t *handle, int device_ordinal) {
  return cake_create_ex(handle, device_ordinal, nullptr);
}

CAKE_API cake_status_t cake_create_ex(cake_handle_t *handle, int device_ordinal,
                                      const cake_handle_options *options) {
  clear_error();
  if (handle == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "handle: must not be NULL");
  *handle = nullptr;
  cake_handle_options opts;
  cake_handle_options_init(&opts);
  if (options != nullptr) {
    CAKE_TRY(read_struct("options", options, options->struct_size,
                         offsetof(cake_handle_options, sm_count) + sizeof(int32_t), &opts,
                         sizeof opts));
    const int32_t table = enum_bits(opts.table);
    if (table != CAKE_ARCH_NONE && arch_table(table) == nullptr) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT,
                  "options.table = %d: not a table (90, 100, 103, 107 or 0 for the device's)",
                  table);
    }
    if (opts.sm_count < 0) {
      return fail(CAKE_STATUS_INVALID_ARGUMENT, "options.sm_count = %d: must be >= 0",
                  opts.sm_count);
    }
  }
  cake_handle_t h = new (std::nothrow) cake_handle_st();
  if (h == nullptr) return fail(CAKE_STATUS_INTERNAL_ERROR, "out of host memory");
  h->magic = kHandleMagic;
  const cake_status_t st = create(h, device_ordinal, opts);
  if (st != CAKE_STATUS_SUCCESS) {
    release(h);
    return st;
  }
  *handle = h;
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_destroy(cake_handle_t handle) {
  clear_error();
  if (handle == nullptr) return CAKE_STATUS_SUCCESS;
  CAKE_TRY(check_handle(handle));
  release(handle);
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_device_info_init(cake_device_info *info) {
  return init_struct(info, "info");
}

CAKE_API cake_status_t cake_device_query(cake_handle_t handle, cake_device_info *info) {
  clear_error();
  CAKE_TRY(check_handle(handle));
  if (info == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "info: must not be NULL");
  cake_device_info out;
  cake_device_info_init(&out);
  out.device_ordinal = handle->ordinal;
  out.cc_major = handle->cc_major;
  out.cc_minor = handle->cc_minor;
  out.sm_count = handle->sm_count;
  out.routing_sm_count = handle->routing_sm_count;
  out.table = handle->table->arch;
  out.jit = handle->jit ? 1 : 0;
  out.cross_check = handle->image->cross_check ? 1 : 0;
  out.program_count = handle->table->program_count;
  std::snprintf(out.image, sizeof out.image, "%s", handle->image->targets);
  std::snprintf(out.device_name, sizeof out.device_name, "%s", handle->device_name);
  return write_struct("info", info, &out, sizeof out);
}

CAKE_API cake_status_t cake_program_info_init(cake_program_info *info) {
  return init_struct(info, "info");
}

CAKE_API int cake_program_count(cake_handle_t handle) {
  if (check_handle(handle) != CAKE_STATUS_SUCCESS) return -1;
  return handle->table->program_count;
}

CAKE_API const char *cake_program_name(cake_handle_t handle, int index) {
  if (check_handle(handle) != CAKE_STATUS_SUCCESS) return nullptr;
  if (index < 0 || index >= handle->table->program_count) return nullptr;
  return handle->table->programs[index].name;
}

}  // extern "C"
