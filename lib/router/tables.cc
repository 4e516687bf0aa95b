#include "router/tables.h"

#include <stdint.h>

#define CAKE_OPEN INT64_MAX

namespace cake {
namespace {

#define CAKE_TABLE_NS sm90
#define CAKE_TABLE_TAG "sm90"
#define CAKE_TABLE_MANIFEST "sm90/manifest.def"
#include "router/table_from_manifest.inc"
#undef CAKE_TABLE_NS
#undef CAKE_TABLE_TAG
#undef CAKE_TABLE_MANIFEST

#define CAKE_TABLE_NS sm100
#define CAKE_TABLE_TAG "sm100"
#define CAKE_TABLE_MANIFEST "sm100/manifest.def"
#include "router/table_from_manifest.inc"
#undef CAKE_TABLE_NS
#undef CAKE_TABLE_TAG
#undef CAKE_TABLE_MANIFEST

#define CAKE_TABLE_NS sm103
#define CAKE_TABLE_TAG "sm103"
#define CAKE_TABLE_MANIFEST "sm103/manifest.def"
#include "router/table_from_manifest.inc"
#undef CAKE_TABLE_NS
#undef CAKE_TABLE_TAG
#undef CAKE_TABLE_MANIFEST

#define CAKE_TABLE_NS sm107
#define CAKE_TABLE_TAG "sm107"
#define CAKE_TABLE_MANIFEST "sm107/manifest.def"
#include "router/table_from_manifest.inc"
#undef CAKE_TABLE_NS
#undef CAKE_TABLE_TAG
#undef CAKE_TABLE_MANIFEST

#define CAKE_TABLE_ENTRY(ns, arch)                                                 \
  {arch, #ns, ns::kPrograms, static_cast<int>(sizeof(ns::kPrograms) / sizeof(ns::kPrograms[0])), \
   ns::kRoutes, static_cast<int>(sizeof(ns::kRoutes) / sizeof(ns::kRoutes[0]))}

const ArchTable kTables[] = {
    CAKE_TABLE_ENTRY(sm90, CAKE_ARCH_SM90),
    CAKE_TABLE_ENTRY(sm100, CAKE_ARCH_SM100),
    CAKE_TABLE_ENTRY(sm103, CAKE_ARCH_SM103),
    CAKE_TABLE_ENTRY(sm107, CAKE_ARCH_SM107),
};

}  // namespace

const ArchTable *arch_tables(int *count) {
  *count = static_cast<int>(sizeof(kTables) / sizeof(kTables[0]));
  return kTables;
}

const ArchTable *arch_table(int32_t arch) {
  for (const ArchTable &t : kTables) {
    if (static_cast<int32_t>(t.arch) == arch) return &t;
  }
  return nullptr;
}

}  // namespace cake
