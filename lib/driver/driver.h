// The one place that knows libcuda: opened with dlopen on first need, every entry point
// resolved through cuGetProcAddress into one symbol table. Nothing links libcuda.
// cuda.h is used for types and prototypes only (decltype), never for linking.
#pragma once
#include <cuda.h>

#include "cake.h"

// X-macro of every driver entry point Cake calls: (name, ABI version asked of the driver).
#define CAKE_DRIVER_FUNCTIONS(X)        \
  X(cuGetErrorName, 6000)               \
  X(cuGetErrorString, 6000)             \
  X(cuDriverGetVersion, 2020)           \
  X(cuDeviceGetCount, 2000)             \
  X(cuDeviceGet, 2000)                  \
  X(cuDeviceGetAttribute, 2000)         \
  X(cuDeviceGetName, 2000)              \
  X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuDevicePrimaryCtxRelease, 11000)   \
  X(cuCtxGetCurrent, 4000)              \
  X(cuCtxPushCurrent, 4000)             \
  X(cuCtxPopCurrent, 4000)              \
  X(cuModuleLoadData, 2000)             \
  X(cuModuleUnload, 2000)               \
  X(cuModuleGetFunction, 2000)          \
  X(cuFuncGetAttribute, 2020)           \
  X(cuFuncSetAttribute, 9000)           \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuPointerGetAttribute, 4000)        \
  X(cuLaunchKernel, 7000)               \
  X(cuLaunchKernelEx, 11060)

namespace cake {

struct Driver {
#define CAKE_DRIVER_MEMBER(name, version) decltype(&::name) name = nullptr;
  CAKE_DRIVER_FUNCTIONS(CAKE_DRIVER_MEMBER)
#undef CAKE_DRIVER_MEMBER
  int driver_version = 0;
};

// Loads libcuda.so.1 and runs cuInit(0) once per process. On failure returns
// CAKE_STATUS_DRIVER_UNAVAILABLE (or CAKE_STATUS_NO_DEVICE when cuInit finds none) with a
// message; later calls return the same result without retrying.
cake_status_t driver_get(const Driver **out);

// Turns a failed CUresult into CAKE_STATUS_CUDA_ERROR with the call and the driver's name.
cake_status_t cuda_fail(const Driver &drv, CUresult result, const char *what);

}  // namespace cake

#define CAKE_CU(drv, call)                                                   \
  do {                                                                       \
    const CUresult cake_cu_result_ = (drv).call;                             \
    if (cake_cu_result_ != CUDA_SUCCESS)                                     \
      return ::cake::cuda_fail((drv), cake_cu_result_, #call);              \
  } while (0)
