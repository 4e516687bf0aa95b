// The CAKE_0 versions of the four SwiGLU desc_init functions (lib/cake.map). A binary built
// before the descriptors gained their `variant` member passes a struct that ends there, and
// binds these: they write the first layout's bytes and no more. Code built with the current
// header binds CAKE_0.4, the functions in swiglu_mxfp8.cc, swiglu_fp8.cc and swiglu_grouped.cc.
#include <stddef.h>
#include <string.h>

#include "api/struct_size.h"
#include "cake.h"
#include "error/error.h"

namespace cake {
namespace {

template <class Desc>
cake_status_t desc_init_first_layout(Desc *desc, cake_status_t (*init)(Desc *)) {
  clear_error();
  if (desc == nullptr) return fail(CAKE_STATUS_INVALID_ARGUMENT, "desc: must not be NULL");
  constexpr size_t kFirstSize = offsetof(Desc, variant);
  Desc full;
  CAKE_TRY(init(&full));
  full.struct_size = kFirstSize;
  memcpy(desc, &full, kFirstSize);
  return CAKE_STATUS_SUCCESS;
}

}  // namespace
}  // namespace cake

#define CAKE_DESC_INIT_V0(name, Desc)                                                 \
  extern "C" CAKE_API cake_status_t name##_v0(Desc *desc);                            \
  __asm__(".symver " #name "_v0," #name "@CAKE_0");                                   \
  CAKE_API cake_status_t name##_v0(Desc *desc) {                                      \
    return cake::desc_init_first_layout(desc, &name);                                 \
  }

CAKE_DESC_INIT_V0(cake_swiglu_mxfp8_desc_init, cake_swiglu_mxfp8_desc)
CAKE_DESC_INIT_V0(cake_swiglu_fp8_desc_init, cake_swiglu_fp8_desc)
CAKE_DESC_INIT_V0(cake_swiglu_mxfp8_grouped_desc_init, cake_swiglu_mxfp8_grouped_desc)
CAKE_DESC_INIT_V0(cake_swiglu_fp8_grouped_desc_init, cake_swiglu_fp8_grouped_desc)
