// Versioned public structs: a caller's struct may be older (smaller) or newer (larger) than
// this library's. Older: the missing tail keeps the defaults the library filled in. Newer: it
// is accepted only when every field this library does not know is zero.
#pragma once
#include <stddef.h>

#include <string.h>

#include "cake.h"
#include "error/error.h"

namespace cake {

// Copy the caller's `src` (src_size bytes, its struct_size) over `dst` (this library's
// defaults, dst_size bytes). min_size is the size of the struct's first version.
cake_status_t read_struct(const char *what, const void *src, size_t src_size, size_t min_size,
                          void *dst, size_t dst_size);

// Copy this library's `src` out into the caller's struct, up to the caller's struct_size;
// the caller's struct_size is kept.
cake_status_t write_struct(const char *what, void *dst, const void *src, size_t src_size);

// The body of every *_init function: zero the struct, set its struct_size (defaults that are not
// zero are set by the caller afterwards). Clears the thread's error message first.
template <class T>
cake_status_t init_struct(T *s, const char *name) {
  clear_error();
  if (s == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "%s: must not be NULL", name);
  memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
