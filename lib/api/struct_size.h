// Versioned public structs: a caller's struct may be older (smaller) or newer (larger) than
// this library's. Older: the missing tail keeps the defaults the library filled in. Newer: it
// is accepted only when every field this library does not know is zero.
#pragma once
#include <stddef.h>

#include "cake.h"

namespace cake {

// Copy the caller's `src` (src_size bytes, its struct_size) over `dst` (this library's
// defaults, dst_size bytes). min_size is the size of the struct's first version.
cake_status_t read_struct(const char *what, const void *src, size_t src_size, size_t min_size,
                          void *dst, size_t dst_size);

// Copy this library's `src` out into the caller's struct, up to the caller's struct_size;
// the caller's struct_size is kept.
cake_status_t write_struct(const char *what, void *dst, const void *src, size_t src_size);

}  // namespace cake
