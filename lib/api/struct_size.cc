#include "api/struct_size.h"

#include <cstring>

#include "error/error.h"

namespace cake {

cake_status_t read_struct(const char *what, const void *src, size_t src_size, size_t min_size,
                          void *dst, size_t dst_size) {
  if (src_size < min_size) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s->struct_size = %zu: smaller than its first version (%zu); initialise it with "
                "its *_init function",
                what, src_size, min_size);
  }
  if (src_size > dst_size) {
    const unsigned char *extra = static_cast<const unsigned char *>(src) + dst_size;
    for (size_t i = 0; i < src_size - dst_size; ++i) {
      if (extra[i] != 0) {
        return fail(CAKE_STATUS_INVALID_ARGUMENT,
                    "%s->struct_size = %zu: from a newer Cake (this one knows %zu bytes) and sets "
                    "a field this library does not have (byte %zu is not zero)",
                    what, src_size, dst_size, dst_size + i);
      }
    }
  }
  std::memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
  *static_cast<size_t *>(dst) = dst_size;
  return CAKE_STATUS_SUCCESS;
}

cake_status_t write_struct(const char *what, void *dst, const void *src, size_t src_size) {
  size_t dst_size = 0;
  std::memcpy(&dst_size, dst, sizeof dst_size);
  if (dst_size < sizeof(size_t)) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "%s->struct_size = %zu: not initialised (use its *_init function)", what,
                dst_size);
  }
  const size_t n = dst_size < src_size ? dst_size : src_size;
  std::memcpy(static_cast<unsigned char *>(dst) + sizeof(size_t),
              static_cast<const unsigned char *>(src) + sizeof(size_t), n - sizeof(size_t));
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
