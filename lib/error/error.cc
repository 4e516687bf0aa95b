#include "error/error.h"

#include <cstdarg>
#include <cstdio>

namespace cake {
namespace {

thread_local char g_message[1024];

struct StatusName {
  cake_status_t status;
  const char *name;
};

// The one table of status names; cake_status_string() reads nothing else.
constexpr StatusName kStatusNames[] = {
    {CAKE_STATUS_SUCCESS, "CAKE_STATUS_SUCCESS"},
    {CAKE_STATUS_INVALID_ARGUMENT, "CAKE_STATUS_INVALID_ARGUMENT"},
    {CAKE_STATUS_ARCH_UNSUPPORTED, "CAKE_STATUS_ARCH_UNSUPPORTED"},
    {CAKE_STATUS_DRIVER_UNAVAILABLE, "CAKE_STATUS_DRIVER_UNAVAILABLE"},
    {CAKE_STATUS_CUDA_ERROR, "CAKE_STATUS_CUDA_ERROR"},
    {CAKE_STATUS_INSUFFICIENT_WORKSPACE, "CAKE_STATUS_INSUFFICIENT_WORKSPACE"},
    {CAKE_STATUS_UNSUPPORTED_SHAPE, "CAKE_STATUS_UNSUPPORTED_SHAPE"},
    {CAKE_STATUS_MISALIGNED, "CAKE_STATUS_MISALIGNED"},
    {CAKE_STATUS_INVALID_HANDLE, "CAKE_STATUS_INVALID_HANDLE"},
    {CAKE_STATUS_PROGRAM_NOT_FOUND, "CAKE_STATUS_PROGRAM_NOT_FOUND"},
    {CAKE_STATUS_INTERNAL_ERROR, "CAKE_STATUS_INTERNAL_ERROR"},
    {CAKE_STATUS_NO_DEVICE, "CAKE_STATUS_NO_DEVICE"},
};

}  // namespace

cake_status_t fail(cake_status_t status, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(g_message, sizeof g_message, fmt, args);
  va_end(args);
  return status;
}

void clear_error() { g_message[0] = '\0'; }

}  // namespace cake

extern "C" {

CAKE_API const char *cake_status_string(cake_status_t status) {
  for (const auto &entry : cake::kStatusNames) {
    if (entry.status == status) return entry.name;
  }
  return "CAKE_STATUS_UNKNOWN";
}

CAKE_API const char *cake_last_error_message(void) { return cake::g_message; }

CAKE_API int cake_version(void) { return CAKE_VERSION; }

}  // extern "C"
