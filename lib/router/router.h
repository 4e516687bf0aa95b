// Route lookup: (table, family, op, d, size metric) -> program index. Pure, no CUDA.
#pragma once
#include <stdint.h>

#include "router/tables.h"

namespace cake {

// The route serving the call, or nullptr. Routes written for this exact `d` win over the
// table's general routes (d = 0).
const cake_route_desc *find_route(const ArchTable &table, uint16_t family, uint16_t op, int32_t d,
                                  int64_t metric);

// Index of the program named `name` ("sm90.ng_fwd_d128_short"), or -1.
int find_program(const ArchTable &table, const char *name);

}  // namespace cake
