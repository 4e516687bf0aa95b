// One libcake.so, opened with dlopen(RTLD_LOCAL): its entry points, resolved one by one, and a
// handle on device 0. Two builds can be open side by side (interleaved A/B). An entry point the
// build does not export yet is NULL, and every op that needs it reports "not available".
#pragma once
#include <string>

#include "cake.h"

namespace cake_bench {

struct CakeLib {
  // Required (the foundation exports them).
  decltype(&cake_version) version = nullptr;
  decltype(&cake_status_string) status_string = nullptr;
  decltype(&cake_last_error_message) last_error_message = nullptr;
  decltype(&cake_create) create = nullptr;
  decltype(&cake_destroy) destroy = nullptr;
  decltype(&cake_device_info_init) device_info_init = nullptr;
  decltype(&cake_device_query) device_query = nullptr;
  decltype(&cake_program_info_init) program_info_init = nullptr;
  decltype(&cake_program_count) program_count = nullptr;
  decltype(&cake_program_name) program_name = nullptr;
  // Optional: an op whose entry point is missing is reported as not available.
  decltype(&cake_normgate_desc_init) normgate_desc_init = nullptr;
  decltype(&cake_normgate_forward) normgate_forward = nullptr;
  decltype(&cake_normgate_forward_query) normgate_forward_query = nullptr;
  decltype(&cake_normgate_workspace_size) normgate_workspace_size = nullptr;
  decltype(&cake_normgate_backward) normgate_backward = nullptr;
  decltype(&cake_normgate_backward_query) normgate_backward_query = nullptr;
  decltype(&cake_swiglu_mxfp8_desc_init) swiglu_desc_init = nullptr;
  decltype(&cake_swiglu_mxfp8_sizes_init) swiglu_sizes_init = nullptr;
  decltype(&cake_swiglu_mxfp8_buffer_sizes) swiglu_buffer_sizes = nullptr;
  decltype(&cake_swiglu_mxfp8_forward) swiglu_forward = nullptr;
  decltype(&cake_swiglu_mxfp8_backward) swiglu_backward = nullptr;
  decltype(&cake_swiglu_mxfp8_query) swiglu_query = nullptr;
  decltype(&cake_swiglu_fp8_desc_init) fp8_desc_init = nullptr;
  decltype(&cake_swiglu_fp8_forward) fp8_forward = nullptr;
  decltype(&cake_swiglu_fp8_backward) fp8_backward = nullptr;
  decltype(&cake_swiglu_fp8_query) fp8_query = nullptr;
  decltype(&cake_swiglu_mxfp8_grouped_desc_init) mxg_desc_init = nullptr;
  decltype(&cake_swiglu_mxfp8_grouped_forward) mxg_forward = nullptr;
  decltype(&cake_swiglu_mxfp8_grouped_backward) mxg_backward = nullptr;
  decltype(&cake_swiglu_mxfp8_grouped_query) mxg_query = nullptr;
  decltype(&cake_swiglu_fp8_grouped_desc_init) f8g_desc_init = nullptr;
  decltype(&cake_swiglu_fp8_grouped_forward) f8g_forward = nullptr;
  decltype(&cake_swiglu_fp8_grouped_backward) f8g_backward = nullptr;
  decltype(&cake_swiglu_fp8_grouped_query) f8g_query = nullptr;
  decltype(&cake_swiglu_grouped_sizes_init) grouped_sizes_init = nullptr;
  decltype(&cake_swiglu_mxfp8_grouped_buffer_sizes) mxg_buffer_sizes = nullptr;
  decltype(&cake_swiglu_fp8_grouped_buffer_sizes) f8g_buffer_sizes = nullptr;
  decltype(&cake_normgate_quant_desc_init) ng_quant_desc_init = nullptr;
  decltype(&cake_normgate_quant_sizes_init) ng_quant_sizes_init = nullptr;
  decltype(&cake_normgate_quant_buffer_sizes) ng_quant_buffer_sizes = nullptr;
  decltype(&cake_normgate_forward_quantized) ng_forward_quantized = nullptr;
  decltype(&cake_normgate_forward_quantized_query) ng_forward_quantized_query = nullptr;

  std::string path;       // as opened
  std::string label;      // "A", "B" or "" (for reports)
  cake_handle_t handle = nullptr;
  cake_device_info info{};

  // Opens `path` and creates a handle on `device`. On failure returns false with `why`.
  bool open(const std::string &path, int device, std::string *why);
  void close();

  // "CAKE_STATUS_X: message" for a failed call of this library.
  std::string error(cake_status_t s) const;
  // The names of the optional entry points this build lacks, comma separated ("" if none).
  std::string missing() const;

  bool has_normgate_forward() const { return normgate_desc_init && normgate_forward; }
  bool has_normgate_backward() const {
    return normgate_desc_init && normgate_backward && normgate_workspace_size;
  }
  bool has_swiglu_fp8() const { return fp8_desc_init && fp8_forward && fp8_backward; }
  bool has_normgate_quant() const {
    return has_normgate_forward() && ng_quant_desc_init && ng_quant_sizes_init &&
           ng_quant_buffer_sizes && ng_forward_quantized && ng_forward_quantized_query;
  }
  // The grouped forms of one SwiGLU family (fp8: FP8 blockwise, else MXFP8).
  bool has_swiglu_grouped(bool fp8) const {
    return grouped_sizes_init &&
           (fp8 ? f8g_desc_init && f8g_forward && f8g_backward && f8g_query && f8g_buffer_sizes
                : mxg_desc_init && mxg_forward && mxg_backward && mxg_query && mxg_buffer_sizes);
  }
  bool has_swiglu() const {
    return swiglu_desc_init && swiglu_forward && swiglu_backward;
  }

 private:
  void *so_ = nullptr;
};

// Default library: ../lib/libcake.so beside the executable (the build tree), else the loader's
// search path ("libcake.so.0").
std::string default_lib_path();

}  // namespace cake_bench
