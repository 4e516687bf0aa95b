// Route lookup: (table, family, op, d, size metric) -> program index. Pure, no CUDA.
#pragma once
#include <stdint.h>

#include "router/tables.h"

namespace cake {

// Whether a general route's program computes rows of width d (a family's rule).
typedef bool (*RouteServes)(const cake_program_desc &prog, int32_t d);

// The route serving the call, or nullptr. Routes written for this exact `d` win over the
// table's general routes (d = 0), of which the first whose program serves d (every one when
// `serves` is null) is taken. A wave route (wave_rows != 0) holds only where `rows` over `sms`
// SMs fall in its wave band (kernels/common/program_desc.h); without sms (0) none does.
const cake_route_desc *find_route(const ArchTable &table, uint16_t family, uint16_t op, int32_t d,
                                  int64_t metric, RouteServes serves = nullptr, int64_t rows = 0,
                                  int32_t sms = 0);

// Index of the program named `name` ("sm90.ng_fwd_d128_short"), or -1.
int find_program(const ArchTable &table, const char *name);

}  // namespace cake
