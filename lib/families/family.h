// What code common to every kernel family needs of each one, in one table: loading a handle's
// programs and resolving a call's program read it instead of branching on the family.
#pragma once
#include <stdint.h>

#include "program_desc.h"
#include "router/router.h"

namespace cake {

struct FamilyOps {
  uint16_t family;  // cake_family_t
  // Dynamic shared memory a program of the family launches with (0 for none). The handle opts
  // every program that has some in to it once, when it loads them.
  uint32_t (*dynamic_smem_bytes)(const cake_program_desc &prog);
  // Which programs serve a call, and how its calls read in error messages.
  FamilyRouting routing;
};

// The operations of `family`, or nullptr for a family this library does not know.
const FamilyOps *family_ops(uint16_t family);

}  // namespace cake
