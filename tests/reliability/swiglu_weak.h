// Entry points that may not be in this build of the library yet (SwiGLU + MXFP8, the public
// program tables): declared weak, so a test binary links either way and asks at run time.
// Tests print why they skip when a symbol is absent, and start running the day it lands,
// without a change here. (Weak references resolve against libcake.so at load time, and against
// the host objects when a test links them directly, as every reliability target does.)
#pragma once
#ifndef CAKE_EXPERIMENTAL_API
#define CAKE_EXPERIMENTAL_API  // the program tables are cake.h's experimental section
#endif
#include "cake.h"

#pragma weak cake_swiglu_mxfp8_desc_init
#pragma weak cake_swiglu_mxfp8_sizes_init
#pragma weak cake_swiglu_mxfp8_buffer_sizes
#pragma weak cake_swiglu_mxfp8_forward
#pragma weak cake_swiglu_mxfp8_backward
#pragma weak cake_swiglu_mxfp8_query
#pragma weak cake_table_program_init
#pragma weak cake_table_route_init
#pragma weak cake_table_counts
#pragma weak cake_table_program_get

namespace rel {

// True when every SwiGLU + MXFP8 entry point is in the library this binary runs with.
inline bool have_swiglu() {
  return &cake_swiglu_mxfp8_desc_init != nullptr && &cake_swiglu_mxfp8_sizes_init != nullptr &&
         &cake_swiglu_mxfp8_buffer_sizes != nullptr && &cake_swiglu_mxfp8_forward != nullptr &&
         &cake_swiglu_mxfp8_backward != nullptr && &cake_swiglu_mxfp8_query != nullptr;
}

inline bool have_tables() {
  return &cake_table_program_init != nullptr && &cake_table_route_init != nullptr &&
         &cake_table_counts != nullptr && &cake_table_program_get != nullptr;
}

#define REL_SWIGLU_ABSENT "SwiGLU + MXFP8 entry points (cake_swiglu_mxfp8_*) are not in this libcake yet"

}  // namespace rel
