// The architecture tables: each one the programs and routes of one kernels/smXX/manifest.def.
#pragma once
#include <stddef.h>

#include "cake.h"
#include "program_desc.h"

namespace cake {

struct ArchTable {
  cake_arch_t arch;
  const char *tag;  // "sm90": the manifest folder and kernel-name prefix
  const cake_program_desc *programs;
  int program_count;
  const cake_route_desc *routes;
  int route_count;
};

// Every table the library ships, oldest first.
const ArchTable *arch_tables(int *count);
// `arch` as an integer: callers pass values they were given, possibly outside the enumeration.
const ArchTable *arch_table(int32_t arch);

}  // namespace cake
