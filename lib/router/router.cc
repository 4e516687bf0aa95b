#include "router/router.h"

#include <cstring>

namespace cake {

const cake_route_desc *find_route(const ArchTable &table, uint16_t family, uint16_t op, int32_t d,
                                  int64_t metric, RouteServes serves) {
  const cake_route_desc *general = nullptr;
  for (int i = 0; i < table.route_count; ++i) {
    const cake_route_desc &r = table.routes[i];
    if (r.family != family || r.op != op) continue;
    if (metric < r.metric_lo || metric >= r.metric_hi) continue;
    if (r.d == d) return &r;
    if (r.d == 0 && general == nullptr &&
        (serves == nullptr || serves(table.programs[r.program], d))) {
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

}  // namespace cake
