#include "driver/driver.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "error/error.h"

namespace cake {
namespace {

typedef CUresult (*GetProcAddressFn)(const char *, void **, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult *);

struct DriverState {
  Driver driver;
  cake_status_t status = CAKE_STATUS_SUCCESS;
  char message[512] = {0};
};

DriverState *load() {
  static DriverState state;
  // Libraries loaded by the process already (PyTorch, JAX) are found first; CAKE_LIBCUDA lets
  // a test point at a library that is not there, to check the no-driver path.
  const char *path = std::getenv("CAKE_LIBCUDA");
  if (path == nullptr || path[0] == '\0') path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    state.status = fail(CAKE_STATUS_DRIVER_UNAVAILABLE,
                        "cannot load the CUDA driver (%s): %s; install an NVIDIA driver with "
                        "CUDA 12.0 or newer",
                        path, dlerror());
    return &state;
  }
  auto get_proc = reinterpret_cast<GetProcAddressFn>(dlsym(lib, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    state.status = fail(CAKE_STATUS_DRIVER_UNAVAILABLE,
                        "the CUDA driver at %s has no cuGetProcAddress_v2: it is older than "
                        "CUDA 12.0, which Cake needs",
                        path);
    return &state;
  }
  Driver &drv = state.driver;
#define CAKE_DRIVER_RESOLVE(name, version)                                                    \
  {                                                                                           \
    void *fn = nullptr;                                                                       \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;              \
    const CUresult r = get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);    \
    if (r != CUDA_SUCCESS || fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {         \
      state.status = fail(CAKE_STATUS_DRIVER_UNAVAILABLE,                                     \
                          "the CUDA driver at %s lacks %s (version %d)", path, #name, version); \
      return &state;                                                                          \
    }                                                                                         \
    drv.name = reinterpret_cast<decltype(drv.name)>(fn);                                      \
  }
  CAKE_DRIVER_FUNCTIONS(CAKE_DRIVER_RESOLVE)
#undef CAKE_DRIVER_RESOLVE
  void *init_fn = nullptr;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc("cuInit", &init_fn, 2000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
      init_fn == nullptr) {
    state.status = fail(CAKE_STATUS_DRIVER_UNAVAILABLE, "the CUDA driver at %s lacks cuInit", path);
    return &state;
  }
  const CUresult init = reinterpret_cast<decltype(&::cuInit)>(init_fn)(0);
  if (init != CUDA_SUCCESS) {
    const char *name = "?";
    drv.cuGetErrorName(init, &name);
    state.status = fail(init == CUDA_ERROR_NO_DEVICE ? CAKE_STATUS_NO_DEVICE
                                                     : CAKE_STATUS_DRIVER_UNAVAILABLE,
                        "cuInit(0) failed with %s: no usable CUDA device or driver", name);
    return &state;
  }
  drv.cuDriverGetVersion(&drv.driver_version);
  return &state;
}

}  // namespace

cake_status_t driver_get(const Driver **out) {
  static std::once_flag once;
  static DriverState *state = nullptr;
  std::call_once(once, [] {
    state = load();
    if (state->status != CAKE_STATUS_SUCCESS) {
      // Keep the first failure's text for every later caller on any thread.
      snprintf(state->message, sizeof state->message, "%s", cake_last_error_message());
    }
  });
  if (state->status != CAKE_STATUS_SUCCESS) return fail(state->status, "%s", state->message);
  *out = &state->driver;
  return CAKE_STATUS_SUCCESS;
}

cake_status_t cuda_fail(const Driver &drv, CUresult result, const char *what) {
  const char *name = "?";
  const char *text = "?";
  drv.cuGetErrorName(result, &name);
  drv.cuGetErrorString(result, &text);
  return fail(CAKE_STATUS_CUDA_ERROR, "%s failed: %s (%s)", what, name, text);
}

}  // namespace cake
