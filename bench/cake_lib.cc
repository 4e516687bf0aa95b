#include "cake_lib.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstring>

namespace cake_bench {

template <class F>
static void resolve(void *so, const char *name, F *out, std::string *missing) {
  *out = reinterpret_cast<F>(dlsym(so, name));
  if (*out == nullptr && missing) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
}

bool CakeLib::open(const std::string &p, int device, std::string *why) {
  path = p;
  so_ = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so_) {
    *why = std::string("dlopen ") + p + ": " + dlerror();
    return false;
  }
  std::string req;
  resolve(so_, "cake_version", &version, &req);
  resolve(so_, "cake_status_string", &status_string, &req);
  resolve(so_, "cake_last_error_message", &last_error_message, &req);
  resolve(so_, "cake_create", &create, &req);
  resolve(so_, "cake_destroy", &destroy, &req);
  resolve(so_, "cake_device_info_init", &device_info_init, &req);
  resolve(so_, "cake_device_query", &device_query, &req);
  resolve(so_, "cake_program_info_init", &program_info_init, &req);
  resolve(so_, "cake_program_count", &program_count, &req);
  resolve(so_, "cake_program_name", &program_name, &req);
  if (!req.empty()) {
    *why = p + " lacks required entry points: " + req;
    return false;
  }
  resolve(so_, "cake_normgate_desc_init", &normgate_desc_init, nullptr);
  resolve(so_, "cake_normgate_forward", &normgate_forward, nullptr);
  resolve(so_, "cake_normgate_forward_query", &normgate_forward_query, nullptr);
  resolve(so_, "cake_normgate_workspace_size", &normgate_workspace_size, nullptr);
  resolve(so_, "cake_normgate_backward", &normgate_backward, nullptr);
  resolve(so_, "cake_normgate_backward_query", &normgate_backward_query, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_desc_init", &swiglu_desc_init, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_sizes_init", &swiglu_sizes_init, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_buffer_sizes", &swiglu_buffer_sizes, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_forward", &swiglu_forward, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_backward", &swiglu_backward, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_query", &swiglu_query, nullptr);
  resolve(so_, "cake_swiglu_fp8_desc_init", &fp8_desc_init, nullptr);
  resolve(so_, "cake_swiglu_fp8_forward", &fp8_forward, nullptr);
  resolve(so_, "cake_swiglu_fp8_backward", &fp8_backward, nullptr);
  resolve(so_, "cake_swiglu_fp8_query", &fp8_query, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_grouped_desc_init", &mxg_desc_init, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_grouped_forward", &mxg_forward, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_grouped_backward", &mxg_backward, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_grouped_query", &mxg_query, nullptr);
  resolve(so_, "cake_swiglu_fp8_grouped_desc_init", &f8g_desc_init, nullptr);
  resolve(so_, "cake_swiglu_fp8_grouped_forward", &f8g_forward, nullptr);
  resolve(so_, "cake_swiglu_fp8_grouped_backward", &f8g_backward, nullptr);
  resolve(so_, "cake_swiglu_fp8_grouped_query", &f8g_query, nullptr);
  resolve(so_, "cake_swiglu_grouped_sizes_init", &grouped_sizes_init, nullptr);
  resolve(so_, "cake_swiglu_mxfp8_grouped_buffer_sizes", &mxg_buffer_sizes, nullptr);
  resolve(so_, "cake_swiglu_fp8_grouped_buffer_sizes", &f8g_buffer_sizes, nullptr);
  resolve(so_, "cake_normgate_quant_desc_init", &ng_quant_desc_init, nullptr);
  resolve(so_, "cake_normgate_quant_sizes_init", &ng_quant_sizes_init, nullptr);
  resolve(so_, "cake_normgate_quant_buffer_sizes", &ng_quant_buffer_sizes, nullptr);
  resolve(so_, "cake_normgate_forward_quantized", &ng_forward_quantized, nullptr);
  resolve(so_, "cake_normgate_forward_quantized_query", &ng_forward_quantized_query, nullptr);
  const cake_status_t s = create(&handle, device);
  if (s != CAKE_STATUS_SUCCESS) {
    *why = p + ": cake_create: " + error(s);
    return false;
  }
  device_info_init(&info);
  device_query(handle, &info);
  return true;
}

void CakeLib::close() {
  if (handle && destroy) destroy(handle);
  handle = nullptr;
  // The library stays mapped: CUDA graphs made from its kernels may still be alive.
}

std::string CakeLib::error(cake_status_t s) const {
  std::string out = status_string ? status_string(s) : ("status " + std::to_string(int(s)));
  const char *m = last_error_message ? last_error_message() : "";
  if (m && *m) out += std::string(": ") + m;
  return out;
}

std::string CakeLib::missing() const {
  std::string out;
  auto add = [&](const void *f, const char *name) {
    if (f) return;
    if (!out.empty()) out += ", ";
    out += name;
  };
  add(reinterpret_cast<const void *>(normgate_forward), "cake_normgate_forward");
  add(reinterpret_cast<const void *>(normgate_forward_query), "cake_normgate_forward_query");
  add(reinterpret_cast<const void *>(normgate_workspace_size), "cake_normgate_workspace_size");
  add(reinterpret_cast<const void *>(normgate_backward), "cake_normgate_backward");
  add(reinterpret_cast<const void *>(normgate_backward_query), "cake_normgate_backward_query");
  add(reinterpret_cast<const void *>(swiglu_buffer_sizes), "cake_swiglu_mxfp8_buffer_sizes");
  add(reinterpret_cast<const void *>(swiglu_forward), "cake_swiglu_mxfp8_forward");
  add(reinterpret_cast<const void *>(swiglu_backward), "cake_swiglu_mxfp8_backward");
  add(reinterpret_cast<const void *>(swiglu_query), "cake_swiglu_mxfp8_query");
  add(reinterpret_cast<const void *>(ng_forward_quantized), "cake_normgate_forward_quantized");
  add(reinterpret_cast<const void *>(mxg_forward), "cake_swiglu_mxfp8_grouped_forward");
  add(reinterpret_cast<const void *>(f8g_forward), "cake_swiglu_fp8_grouped_forward");
  return out;
}

std::string default_lib_path() {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string dir(exe);
    dir = dir.substr(0, dir.rfind('/'));
    const std::string candidate = dir + "/../lib/libcake.so";
    if (access(candidate.c_str(), R_OK) == 0) return candidate;
  }
  return "libcake.so.0";
}

}  // namespace cake_bench
