#include "api/launch.h"

#include "error/error.h"

namespace cake {

cake_status_t launch_program(cake_handle_t handle, int program, uint32_t grid, uint32_t block,
                             uint32_t smem_bytes, cake_stream_t stream, void *params) {
  ScopedHandleContext scope;
  CAKE_TRY(scope.enter(handle));
  void *args[] = {params};
  const CUresult r =
      handle->drv->cuLaunchKernel(handle->functions[program], grid, 1, 1, block, 1, 1, smem_bytes,
                                  reinterpret_cast<CUstream>(stream), args, nullptr);
  if (r != CUDA_SUCCESS) {
    return cuda_fail(*handle->drv, r, handle->table->programs[program].kernel);
  }
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
