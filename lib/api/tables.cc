// The program tables as public data: what each architecture ships and how it routes. These are
// the functions of cake.h's experimental section.
#ifndef CAKE_EXPERIMENTAL_API
#define CAKE_EXPERIMENTAL_API
#endif
#include <cstdio>
#include <cstring>

#include "api/struct_size.h"
#include "api/validate.h"
#include "error/error.h"
#include "router/tables.h"

namespace cake {
namespace {

cake_status_t find_table(const cake_arch_t &arch, const ArchTable **out) {
  const int32_t value = enum_bits(arch);
  *out = arch_table(value);
  if (*out == nullptr) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT,
                "table = %d: not an architecture table (90, 100, 103 or 107)", value);
  }
  return CAKE_STATUS_SUCCESS;
}

cake_status_t check_index(int32_t index, int count, const char *what, const char *tag) {
  if (index < 0 || index >= count) {
    return fail(CAKE_STATUS_INVALID_ARGUMENT, "index = %d: the %s table has %d %s", index, tag,
                count, what);
  }
  return CAKE_STATUS_SUCCESS;
}

// The public enums and the manifests' short names are one set of numbers.
static_assert(CAKE_NG_OP_BWD_NONDET == 2 && CAKE_SW_BWD_BOTH == 5, "op numbering");

}  // namespace
}  // namespace cake

using namespace cake;

extern "C" {

CAKE_API cake_status_t cake_table_program_init(cake_table_program *program) { return init_struct(program, "program"); }

CAKE_API cake_status_t cake_table_route_init(cake_table_route *route) { return init_struct(route, "route"); }

CAKE_API cake_status_t cake_table_counts(cake_arch_t table, int32_t *programs, int32_t *routes) {
  clear_error();
  const ArchTable *t = nullptr;
  CAKE_TRY(find_table(table, &t));
  if (programs != nullptr) *programs = t->program_count;
  if (routes != nullptr) *routes = t->route_count;
  return CAKE_STATUS_SUCCESS;
}

CAKE_API cake_status_t cake_table_program_get(cake_arch_t table, int32_t index,
                                              cake_table_program *program) {
  clear_error();
  const ArchTable *t = nullptr;
  CAKE_TRY(find_table(table, &t));
  CAKE_TRY(check_index(index, t->program_count, "programs", t->tag));
  if (program == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "program: must not be NULL");
  const cake_program_desc &p = t->programs[index];
  cake_table_program out;
  cake_table_program_init(&out);
  std::snprintf(out.name, sizeof out.name, "%s", p.name);
  std::snprintf(out.kernel, sizeof out.kernel, "%s", p.kernel);
  out.family = static_cast<cake_family_t>(p.family);
  out.op = static_cast<cake_op_t>(p.op);
  out.threads = static_cast<int32_t>(p.threads);
  out.min_ctas_per_sm = static_cast<int32_t>(p.min_ctas_per_sm);
  static_assert(sizeof out.knobs + sizeof out.knobs_ext == sizeof p.knobs, "knob count");
  for (int i = 0; i < 8; ++i) out.knobs[i] = p.knobs[i];
  for (int i = 0; i < 8; ++i) out.knobs_ext[i] = p.knobs[8 + i];
  return write_struct("program", program, &out, sizeof out);
}

CAKE_API cake_status_t cake_table_route_get(cake_arch_t table, int32_t index,
                                            cake_table_route *route) {
  clear_error();
  const ArchTable *t = nullptr;
  CAKE_TRY(find_table(table, &t));
  CAKE_TRY(check_index(index, t->route_count, "routes", t->tag));
  if (route == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "route: must not be NULL");
  const cake_route_desc &r = t->routes[index];
  cake_table_route out;
  cake_table_route_init(&out);
  out.family = static_cast<cake_family_t>(r.family);
  out.op = static_cast<cake_op_t>(r.op);
  out.d = r.d;
  out.metric_lo = r.metric_lo;
  out.metric_hi = r.metric_hi == INT64_MAX ? -1 : r.metric_hi;
  std::snprintf(out.program, sizeof out.program, "%s", t->programs[r.program].name);
  out.wave_rows = r.wave_rows;
  out.waves_lo = r.waves_lo;
  out.waves_hi = r.waves_hi;
  out.frac_lo = r.frac_lo;
  out.frac_hi = r.frac_hi;
  return write_struct("route", route, &out, sizeof out);
}

}  // extern "C"
