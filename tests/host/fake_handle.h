// A handle with a table and an SM count but no device: for host-only tests of validation and
// routing through the real entry points (which return before any CUDA call on bad input, and
// whose *_query functions never reach the driver).
#pragma once
#include "api/handle.h"

namespace cake_test {

inline cake_handle_t make_fake_handle(cake_arch_t arch, int sm_count) {
  const cake::ArchTable *table = cake::arch_table(arch);
  if (table == nullptr) return nullptr;
  auto *h = new cake_handle_st();
  h->magic = cake::kHandleMagic;
  h->drv = nullptr;
  h->table = table;
  h->sm_count = sm_count;
  h->routing_sm_count = sm_count;
  h->cc_major = static_cast<int>(arch) / 10;
  h->cc_minor = static_cast<int>(arch) % 10;
  h->functions.assign(table->program_count, nullptr);
  // Occupancy as the launch bounds promise it.
  for (int i = 0; i < table->program_count; ++i) {
    h->ctas_per_sm.push_back(static_cast<int>(table->programs[i].min_ctas_per_sm));
  }
  return h;
}

inline void free_fake_handle(cake_handle_t h) {
  h->magic = 0;
  delete h;
}

}  // namespace cake_test
