// The program images embedded in libcake.so: one fatbin per architecture table, plus, for
// tests and A/B on the only GPU we have, the other tables' manifests compiled for sm_90
// ("cross-check" images). fatbins/ builds them; images.cc lists what the build embedded.
#pragma once
#include <stddef.h>

#include "cake.h"

namespace cake {

struct Image {
  cake_arch_t table;     // whose manifest it holds
  bool cross_check;      // compiled for sm_90 from another table's manifest
  const unsigned char *data;
  size_t size;
  const char *targets;   // what nvcc was asked for, e.g. "sm_90a+compute_90"
  int sass_cc;           // SASS target as major*10+minor (90, 100, 103, 107), 0 if none
  bool sass_family;      // SASS is family-portable (sm_100f): runs on any cc 10.x >= 10.0
  int ptx_cc;            // PTX embedded for JIT (90, 100), 0 if none
};

const Image *embedded_images(int *count);

// The image a device of compute capability cc_major.cc_minor runs for `table` (CAKE_ARCH_NONE:
// its own table, or for an unknown newer device the newest table whose PTX its driver can JIT).
// Returns CAKE_STATUS_ARCH_UNSUPPORTED with a message when none fits.
cake_status_t select_image(int cc_major, int cc_minor, cake_arch_t table, const Image **out,
                           bool *jit);

}  // namespace cake
