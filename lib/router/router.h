// Route lookup: (table, family, op, d, size metric) -> program index, and the one resolution
// of a call's program that every family shares (forced by name, else routed). No CUDA.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "cake.h"
#include "router/tables.h"

namespace cake {

// Whether a route's program computes rows of width d in the call's form `variant` (a family's
// rule; 0 is the family's default form).
typedef bool (*RouteServes)(const cake_program_desc &prog, int32_t d, int32_t variant);

// The route serving the call, or nullptr. Routes written for this exact `d` whose program serves
// the call win over the table's general routes (d = 0), of which the first whose program serves
// d (every one when `serves` is null) is taken; `variant` is the call's form (see RouteServes). A wave route (wave_rows != 0) holds only where `rows` over `sms`
// SMs fall in its wave band (kernels/common/program_desc.h); without sms (0) none does.
const cake_route_desc *find_route(const ArchTable &table, uint16_t family, uint16_t op, int32_t d,
                                  int64_t metric, RouteServes serves = nullptr, int64_t rows = 0,
                                  int32_t sms = 0, int32_t variant = 0);

// Index of the program named `name` ("sm90.ng_fwd_d128_short"), or -1.
int find_program(const ArchTable &table, const char *name);

// One call as the router sees it.
struct ProgramRequest {
  uint16_t family;
  uint16_t op;
  int32_t d;           // normgate row width; 0 for families without one
  int64_t metric;      // the routes' size metric (normgate: rows per SM; swiglu_mxfp8: M*K)
  int64_t rows;        // rows for wave routes; 0 when the family has none
  int32_t sms;         // SMs for wave routes; 0 when the family has none
  const char *forced;  // the descriptor's program name; NULL: route
  int32_t variant;     // the call's form for RouteServes (normgate: 1 for a variant call); 0
};

// A family's routing rule and how its calls read in error messages. The describe functions
// run only on failure, so a successful call formats nothing.
struct FamilyRouting {
  RouteServes serves;  // null: every program of the op serves every call
  // The call as "desc->program = ...: it does not serve this call (<here>)" shows it.
  void (*describe_forced)(const ProgramRequest &req, char *buf, size_t size);
  // The call as "no sm90 route for <here>" shows it.
  void (*describe_unrouted)(const ProgramRequest &req, char *buf, size_t size);
};

// The program a call runs. route is nullptr when the program was forced by name.
struct ProgramChoice {
  int program;
  const cake_route_desc *route;
};

// Resolves req.forced by name (CAKE_STATUS_PROGRAM_NOT_FOUND when the table lacks it or it is
// of another family or op, or does not serve req.d), else takes the route find_route() gives
// (CAKE_STATUS_UNSUPPORTED_SHAPE when none does).
cake_status_t resolve_program(const ArchTable &table, const FamilyRouting &routing,
                              const ProgramRequest &req, ProgramChoice *out);

}  // namespace cake
