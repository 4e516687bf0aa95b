#include "api/validate.h"

#include "error/error.h"

namespace cake {

cake_status_t check_not_null(const void *ptr, const char *name) {
  if (ptr == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "%s: must not be NULL", name);
  return CAKE_STATUS_SUCCESS;
}

cake_status_t check_aligned16(const void *ptr, const char *name) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(ptr);
  if (addr % 16 != 0) {
    return fail(CAKE_STATUS_MISALIGNED,
                "%s = %p: must be 16-byte aligned (programs load 16-byte vectors); it is off by "
                "%u bytes",
                name, ptr, static_cast<unsigned>(addr % 16));
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t check_row_stride(int64_t stride, int32_t d, const char *name, int64_t *out) {
  if (stride == 0) {
    *out = d;
    return CAKE_STATUS_SUCCESS;
  }
  if (stride < d) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s = %lld: a row stride must be >= d = %d elements (or 0 for packed rows)", name,
                static_cast<long long>(stride), d);
  }
  if (stride % 8 != 0) {
    return fail(CAKE_STATUS_MISALIGNED,
                "%s = %lld: must be a multiple of 8 elements so that every row starts 16-byte "
                "aligned (programs load 16-byte vectors)",
                name, static_cast<long long>(stride));
  }
  *out = stride;
  return CAKE_STATUS_SUCCESS;
}

cake_status_t check_extent(int64_t rows, int64_t stride, int64_t elem_bytes, const char *name) {
  if (rows > INT64_MAX / stride / elem_bytes) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s: %lld rows x stride %lld x %lld bytes overflows a 64-bit byte count", name,
                static_cast<long long>(rows), static_cast<long long>(stride),
                static_cast<long long>(elem_bytes));
  }
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
