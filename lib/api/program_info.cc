#include "api/program_info.h"

#include <cstdio>

#include "api/struct_size.h"
#include "api/validate.h"

namespace cake {

cake_status_t write_program_info(cake_handle_t handle, const ProgramChoice &choice, int64_t grid,
                                 int64_t metric, cake_program_info *info) {
  CAKE_TRY(check_not_null(info, "info"));
  const cake_program_desc &prog = handle->table->programs[choice.program];
  const cake_route_desc *route = choice.route;
  cake_program_info out;
  cake_program_info_init(&out);
  std::snprintf(out.name, sizeof out.name, "%s", prog.name);
  std::snprintf(out.kernel, sizeof out.kernel, "%s", prog.kernel);
  out.forced = route == nullptr ? 1 : 0;
  out.threads = static_cast<int32_t>(prog.threads);
  out.ctas_per_sm = handle->ctas_per_sm[choice.program];
  out.grid = grid;
  out.metric = metric;
  out.metric_lo = route ? route->metric_lo : -1;
  out.metric_hi = route && route->metric_hi != INT64_MAX ? route->metric_hi : -1;
  return write_struct("info", info, &out, sizeof out);
}

}  // namespace cake
