#include "router/router.h"

#include <cstring>

#include "error/error.h"

namespace cake {
namespace {

// Whether `rows` on `sms` SMs fall in route `r`'s wave band (true for a plain route).
bool route_waves_hold(const cake_route_desc &r, int64_t rows, int32_t sms) {
  if (r.wave_rows == 0) return true;
  if (sms <= 0 || rows <= 0) return false;
  const int64_t units = (rows + r.wave_rows - 1) / r.wave_rows;
  const int64_t w100 = units * 100 / sms;  // waves in hundredths, rounded down
  const int64_t frac = w100 % 100;
  return w100 >= r.waves_lo && w100 < r.waves_hi && frac >= r.frac_lo && frac <= r.frac_hi;
}

bool program_serves(const cake_program_desc &prog, const FamilyRouting &routing,
                    const ProgramRequest &req) {
  return prog.family == req.family && prog.op == req.op &&
         (routing.serves == nullptr || routing.serves(prog, req.d, req.variant));
}

}  // namespace

const cake_route_desc *find_route(const ArchTable &table, uint16_t family, uint16_t op, int32_t d,
                                  int64_t metric, RouteServes serves, int64_t rows, int32_t sms,
                                  int32_t variant) {
  const cake_route_desc *general = nullptr;
  for (int i = 0; i < table.route_count; ++i) {
    const cake_route_desc &r = table.routes[i];
    if (r.family != family || r.op != op) continue;
    if (metric < r.metric_lo || metric >= r.metric_hi) continue;
    if (!route_waves_hold(r, rows, sms)) continue;
    const bool serves_call = serves == nullptr || serves(table.programs[r.program], d, variant);
    if (r.d == d && serves_call) return &r;
    if (r.d == 0 && general == nullptr && serves_call) {
      general = &r;
    }
  }
  return general;
}

int find_program(const ArchTable &table, const char *name) {
  for (int i = 0; i < table.program_count; ++i) {
    if (std::strcmp(table.programs[i].name, name) == 0) return i;
  }
  return -1;
}

cake_status_t resolve_program(const ArchTable &table, const FamilyRouting &routing,
                              const ProgramRequest &req, ProgramChoice *out) {
  char call[160];
  out->route = nullptr;
  if (req.forced != nullptr) {
    out->program = find_program(table, req.forced);
    if (out->program < 0) {
      return fail(CAKE_STATUS_PROGRAM_NOT_FOUND,
                  "desc->program = \"%s\": no such program in the %s table", req.forced,
                  table.tag);
    }
    if (!program_serves(table.programs[out->program], routing, req)) {
      routing.describe_forced(req, call, sizeof call);
      return fail(CAKE_STATUS_PROGRAM_NOT_FOUND,
                  "desc->program = \"%s\": it does not serve this call (%s)", req.forced, call);
    }
    return CAKE_STATUS_SUCCESS;
  }
  out->route = find_route(table, req.family, req.op, req.d, req.metric, routing.serves, req.rows,
                          req.sms, req.variant);
  if (out->route == nullptr) {
    routing.describe_unrouted(req, call, sizeof call);
    return fail(CAKE_STATUS_UNSUPPORTED_SHAPE, "no %s route for %s", table.tag, call);
  }
  out->program = out->route->program;
  return CAKE_STATUS_SUCCESS;
}

}  // namespace cake
