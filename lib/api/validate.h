// Argument checks shared by every entry point: one message format, the argument named.
#pragma once
#include <stdint.h>

#include "cake.h"

#include <string.h>

namespace cake {

// The bits of an enum field a caller filled in: compared as an integer, since a value outside
// the enumeration must not be loaded as the enum type (undefined behaviour in C++).
template <class E>
inline int32_t enum_bits(const E &field) {
  static_assert(sizeof(E) == sizeof(int32_t), "C enums of this ABI are 32-bit");
  int32_t v;
  memcpy(&v, &field, sizeof v);
  return v;
}

cake_status_t check_not_null(const void *ptr, const char *name);
// 16-byte alignment of a device pointer (every program loads 16-byte vectors).
cake_status_t check_aligned16(const void *ptr, const char *name);
// A row stride in elements: 0 means packed (returns d); else >= d and a multiple of 8.
cake_status_t check_row_stride(int64_t stride, int32_t d, const char *name, int64_t *out);
// rows * stride * elem_bytes must fit in int64.
cake_status_t check_extent(int64_t rows, int64_t stride, int64_t elem_bytes, const char *name);

}  // namespace cake
