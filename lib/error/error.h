// Status strings and the thread-local last-error message. Every failing path goes through
// fail(), which records the message and returns the status, so a call site reads
// `return fail(CAKE_STATUS_INVALID_ARGUMENT, "x: must not be NULL");`.
#pragma once
#include "cake.h"

namespace cake {

cake_status_t fail(cake_status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void clear_error();

}  // namespace cake

// Propagate a non-success status (the callee has already recorded the message).
#define CAKE_TRY(expr)                                 \
  do {                                                 \
    const cake_status_t cake_try_status_ = (expr);     \
    if (cake_try_status_ != CAKE_STATUS_SUCCESS) return cake_try_status_; \
  } while (0)
