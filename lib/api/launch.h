// The last step of every call: one cuLaunchKernel on the caller's stream, in the handle's
// context. No allocation, no synchronisation.
#pragma once
#include <stdint.h>

#include "api/handle.h"

namespace cake {

cake_status_t launch_program(cake_handle_t handle, int program, uint32_t grid, uint32_t block,
                             uint32_t smem_bytes, cake_stream_t stream, void *params);


}  // namespace cake
