// The answer of every *_query entry point: which program a call runs, and why.
#pragma once
#include <stdint.h>

#include "api/handle.h"
#include "router/router.h"

namespace cake {

// Writes `choice` (with the launch's grid, the product of its dimensions, and the call's route
// metric) into the caller's `info`, up to its struct_size. CAKE_STATUS_INVALID_ARGUMENT when
// info is NULL or not initialised.
cake_status_t write_program_info(cake_handle_t handle, const ProgramChoice &choice, int64_t grid,
                                 int64_t metric, cake_program_info *info);

}  // namespace cake
