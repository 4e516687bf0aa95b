#include "ngquant_workload.h"

#include <algorithm>
#include <cstring>

namespace cake_bench {

uint64_t NgQuantWorkload::scale_bytes(const NgQuantForm &f) const {
  const uint64_t t = uint64_t(rows_ / heads_), k = uint64_t(heads_) * uint64_t(d_);
  if (f.format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE) return 4 * t * (k / 128);
  return (t + 127) / 128 * 128 * ((k / 32 + 3) / 4 * 4);  // the swizzled 128x4 tiles
}

uint64_t NgQuantWorkload::device_bytes() const {
  const uint64_t t = uint64_t(rows_) * uint64_t(d_);
  uint64_t s = 0;
  for (int fmt : {CAKE_NORMGATE_QUANT_FP8_BLOCKWISE, CAKE_NORMGATE_QUANT_MXFP8}) {
    NgQuantForm f;
    f.format = fmt;
    s = std::max(s, scale_bytes(f));
  }
  return 3 * t * 2 + t + s + uint64_t(d_) * 2 + (64ull << 20);
}

std::string NgQuantWorkload::alloc() {
  const size_t t = size_t(rows_) * size_t(d_);
  NgQuantForm fp8b, mx;
  mx.format = CAKE_NORMGATE_QUANT_MXFP8;
  std::string e;
  for (DeviceMem *m : {&x_, &z_, &y_}) {
    if (!(e = m->alloc(t * 2)).empty()) return e;
  }
  if (!(e = w_.alloc(size_t(d_) * 2)).empty()) return e;
  if (!(e = q_.alloc(t)).empty()) return e;
  return s_.alloc(std::max(scale_bytes(fp8b), scale_bytes(mx)));
}

std::string NgQuantWorkload::fresh_inputs(uint64_t seed, cudaStream_t stream) {
  return fill_normgate_inputs(x_.ptr, z_.ptr, w_.ptr, nullptr, size_t(rows_) * size_t(d_), d_,
                              seed, stream);
}

cake_normgate_desc NgQuantWorkload::desc(CakeLib &lib, const char *program) const {
  cake_normgate_desc dsc;
  std::memset(&dsc, 0, sizeof dsc);
  if (lib.normgate_desc_init) lib.normgate_desc_init(&dsc);
  dsc.rows = rows_;
  dsc.d = d_;
  dsc.eps = 1e-6f;
  dsc.program = program;
  return dsc;
}

cake_normgate_quant_desc NgQuantWorkload::quant(CakeLib &lib, const NgQuantForm &f) const {
  cake_normgate_quant_desc q;
  std::memset(&q, 0, sizeof q);
  if (lib.ng_quant_desc_init) lib.ng_quant_desc_init(&q);
  q.format = cake_normgate_quant_format_t(f.format);
  q.scale_rule = cake_fp8_scale_rule_t(f.rule);
  q.heads = heads_;
  return q;
}

Call NgQuantWorkload::call(CakeLib &lib, const NgQuantForm *f, const char *program) const {
  const cake_normgate_desc dsc = desc(lib, program);
  CakeLib *l = &lib;
  void *x = x_.ptr, *z = z_.ptr, *w = w_.ptr, *y = y_.ptr;
  if (!f) {
    return [l, dsc, x, z, w, y](cudaStream_t s) -> std::string {
      if (!l->normgate_forward) return "cake_normgate_forward is not in this build";
      const cake_status_t st = l->normgate_forward(l->handle, &dsc, x, z, w, y, nullptr, s);
      return st == CAKE_STATUS_SUCCESS ? "" : "cake_normgate_forward: " + l->error(st);
    };
  }
  const cake_normgate_quant_desc qd = quant(lib, *f);
  void *yq = f->with_y ? y : nullptr, *q = q_.ptr, *qs = s_.ptr;
  return [l, dsc, qd, x, z, w, yq, q, qs](cudaStream_t s) -> std::string {
    if (!l->has_normgate_quant()) return "cake_normgate_forward_quantized is not in this build";
    const cake_status_t st =
        l->ng_forward_quantized(l->handle, &dsc, &qd, x, z, w, yq, nullptr, q, qs, s);
    return st == CAKE_STATUS_SUCCESS ? "" : "cake_normgate_forward_quantized: " + l->error(st);
  };
}

std::string NgQuantWorkload::query(CakeLib &lib, const NgQuantForm *f, const char *program,
                                   std::string *err) const {
  if (!lib.program_info_init || (f ? !lib.has_normgate_quant() : !lib.normgate_forward_query)) {
    *err = f ? "cake_normgate_forward_quantized is not in this build"
             : "cake_normgate_forward_query is not in this build";
    return "";
  }
  const cake_normgate_desc dsc = desc(lib, program);
  cake_program_info info;
  lib.program_info_init(&info);
  cake_status_t st;
  if (f) {
    const cake_normgate_quant_desc qd = quant(lib, *f);
    st = lib.ng_forward_quantized_query(lib.handle, &dsc, &qd, &info);
  } else {
    st = lib.normgate_forward_query(lib.handle, &dsc, &info);
  }
  if (st != CAKE_STATUS_SUCCESS) {
    *err = lib.error(st);
    return "";
  }
  return info.name;
}

StreamPlan NgQuantWorkload::plan(const NgQuantForm *f) const {
  const uint64_t t = uint64_t(rows_) * uint64_t(d_);
  StreamPlan p;
  p.tensors = {{x_.ptr, t * 2, false, "x"},
               {z_.ptr, t * 2, false, "z"},
               {w_.ptr, uint64_t(d_) * 2, false, "w"}};
  if (!f || f->with_y) p.tensors.push_back({y_.ptr, t * 2, true, "y"});
  if (f) {
    p.tensors.push_back({q_.ptr, t, true, "q"});
    p.tensors.push_back({s_.ptr, scale_bytes(*f), true, "q_scale"});
  }
  for (const StreamTensor &s : p.tensors) (s.write ? p.write_bytes : p.read_bytes) += s.bytes;
  return p;
}

}  // namespace cake_bench
