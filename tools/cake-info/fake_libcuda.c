/* A stand-in libcuda.so.1 for the cake_info_fake_device test: two devices, ordinal 0 an sm_90
 * with 132 SMs and a name that needs JSON escaping, ordinal 1 an sm_80 (refused by Cake). It
 * launches nothing: it answers only what cake_create() asks. libcake.so opens it through its
 * CAKE_LIBCUDA test hook (lib/driver/driver.cc). No CUDA header: the few types are spelled out. */
#include <stddef.h>
#include <string.h>

typedef int result_t; /* CUresult: 0 is CUDA_SUCCESS */

enum { kAttrSmCount = 16, kAttrCcMajor = 75, kAttrCcMinor = 76 }; /* CUdevice_attribute */

/* Every entry point this file does not define: success, touching nothing. */
static result_t ok(void) { return 0; }
static result_t device_count(int *n) { *n = 2; return 0; }
static result_t device_get(int *device, int ordinal) { *device = ordinal; return 0; }
static result_t device_attribute(int *value, int attr, int device) {
  *value = attr == kAttrSmCount ? 132 : attr == kAttrCcMajor ? (device == 0 ? 9 : 8) : 0;
  return 0;
}
static result_t device_name(char *name, int len, int device) {
  strncpy(name, device == 0 ? "Fake \"H200\" \\ test" : "Fake A100", (size_t)len);
  return 0;
}
static result_t occupancy(int *ctas, void *function, int threads, size_t smem_bytes) {
  (void)function, (void)threads, (void)smem_bytes;
  *ctas = 2;
  return 0;
}
static result_t error_name(result_t error, const char **text) {
  (void)error;
  *text = "CUDA_ERROR_FAKE";
  return 0;
}
static result_t driver_version(int *version) { *version = 13000; return 0; }
static result_t handle_out(void **out) { *out = (void *)16; return 0; } /* context, module */
static result_t module_function(void **function, void *module, const char *name) {
  (void)module, (void)name;
  *function = (void *)16;
  return 0;
}
static result_t context_retain(void **context, int device) {
  (void)device;
  *context = (void *)16;
  return 0;
}

result_t cuGetProcAddress_v2(const char *symbol, void **fn, int version, unsigned long long flags,
                             int *status) {
  static const struct {
    const char *name;
    void *fn;
  } table[] = {
      {"cuDeviceGetCount", (void *)device_count},
      {"cuDeviceGet", (void *)device_get},
      {"cuDeviceGetAttribute", (void *)device_attribute},
      {"cuDeviceGetName", (void *)device_name},
      {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void *)occupancy},
      {"cuGetErrorName", (void *)error_name},
      {"cuGetErrorString", (void *)error_name},
      {"cuDriverGetVersion", (void *)driver_version},
      {"cuModuleLoadData", (void *)handle_out},
      {"cuCtxGetCurrent", (void *)handle_out},
      {"cuModuleGetFunction", (void *)module_function},
      {"cuDevicePrimaryCtxRetain", (void *)context_retain},
  };
  (void)version, (void)flags;
  *fn = (void *)ok;
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (strcmp(symbol, table[i].name) == 0) *fn = table[i].fn;
  }
  if (status != NULL) *status = 0; /* CU_GET_PROC_ADDRESS_SUCCESS */
  return 0;
}
