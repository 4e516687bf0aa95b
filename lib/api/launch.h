// The last step of every call: one kernel launch on the caller's stream, in the handle's
// context. No allocation, no synchronisation.
#pragma once
#include <stdint.h>

#include "api/handle.h"

namespace cake {

// The pointer is memory of the handle's device (device or managed memory): a tensor on another
// GPU, or pageable host memory, is refused with its name instead of being computed on. One
// driver query per pointer, no synchronisation.
cake_status_t check_device_pointer(cake_handle_t handle, const void *ptr, const char *name);

// cooperative: a cooperative launch (every CTA resident at once, or the launch fails), for
// kernels with grid barriers.
cake_status_t launch_program(cake_handle_t handle, int program, uint32_t grid, uint32_t block,
                             uint32_t smem_bytes, cake_stream_t stream, void *params,
                             bool cooperative = false);


}  // namespace cake
