#include "api/launch.h"

#include "error/error.h"

namespace cake {

cake_status_t check_device_pointer(cake_handle_t handle, const void *ptr, const char *name) {
  if (ptr == nullptr || handle->drv == nullptr) return CAKE_STATUS_SUCCESS;
  const Driver &drv = *handle->drv;
  const CUdeviceptr addr = reinterpret_cast<CUdeviceptr>(ptr);
  unsigned type = 0;
  if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr) != CUDA_SUCCESS) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s = %p: not memory the CUDA driver knows (pageable host memory?); pass device "
                "memory of device %d",
                name, ptr, handle->ordinal);
  }
  int managed = 0;
  drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, addr);
  if (managed) return CAKE_STATUS_SUCCESS;
  if (type != CU_MEMORYTYPE_DEVICE) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s = %p: host memory (memory type %u); pass device memory of device %d", name,
                ptr, type, handle->ordinal);
  }
  int ordinal = -1;
  if (drv.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, addr) ==
          CUDA_SUCCESS &&
      ordinal != handle->ordinal) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s = %p: memory of device %d, but this handle serves device %d", name, ptr,
                ordinal, handle->ordinal);
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t launch_program(cake_handle_t handle, int program, uint32_t grid, uint32_t block,
                             uint32_t smem_bytes, cake_stream_t stream, void *params,
                             bool cooperative) {
  ScopedHandleContext scope;
  CAKE_TRY(scope.enter(handle));
  void *args[] = {params};
  CUresult r;
  if (cooperative) {
    CUlaunchAttribute attr = {};
    attr.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr.value.cooperative = 1;
    CUlaunchConfig config = {};
    config.gridDimX = grid;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = block;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = smem_bytes;
    config.hStream = reinterpret_cast<CUstream>(stream);
    config.attrs = &attr;
    config.numAttrs = 1;
    r = handle->drv->cuLaunchKernelEx(&config, handle->functions[program], args, nullptr);
  } else {
    r = handle->drv->cuLaunchKernel(handle->functions[program], grid, 1, 1, block, 1, 1,
                                    smem_bytes, reinterpret_cast<CUstream>(stream), args, nullptr);
  }
  if (r != CUDA_SUCCESS) {
    return cuda_fail(*handle->drv, r, handle->table->programs[program].kernel);
  }
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
