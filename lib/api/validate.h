// Argument checks shared by every entry point: one message format, the argument named.
#pragma once
#include <stdint.h>

#include "cake.h"

namespace cake {

cake_status_t check_not_null(const void *ptr, const char *name);
// 16-byte alignment of a device pointer (every program loads 16-byte vectors).
cake_status_t check_aligned16(const void *ptr, const char *name);
// A row stride in elements: 0 means packed (returns d); else >= d and a multiple of 8.
cake_status_t check_row_stride(int64_t stride, int32_t d, const char *name, int64_t *out);
// rows * stride * elem_bytes must fit in int64.
cake_status_t check_extent(int64_t rows, int64_t stride, int64_t elem_bytes, const char *name);

}  // namespace cake
