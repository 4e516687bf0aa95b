#include "workloads.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <random>
#include <type_traits>

namespace cake_bench {

static std::string cuda_error(const char *what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

std::string DeviceMem::alloc(size_t n) {
  release();
  n = (std::max<size_t>(n, 16) + 255) / 256 * 256;
  const cudaError_t e = cudaMalloc(&ptr, n);
  if (e != cudaSuccess) {
    ptr = nullptr;
    return cuda_error("cudaMalloc", e) + " of " + std::to_string(n) + " bytes";
  }
  bytes = n;
  return "";
}

// A SwiGLU descriptor of one shape, for every family: each has k, orientation and program; an
// ungrouped one m rows, a grouped one T tokens over E experts.
template <class D, class = void> struct IsGroupedDesc : std::false_type {};
template <class D>
struct IsGroupedDesc<D, std::void_t<decltype(D::experts)>> : std::true_type {};

template <class D, class Init>
static D swiglu_desc(Init init, int64_t m, int64_t k, int experts, int orientation,
                     const char *program) {
  D d;
  std::memset(&d, 0, sizeof d);
  if (init) init(&d);
  if constexpr (IsGroupedDesc<D>::value) {
    d.tokens = m;
    d.experts = experts;
  } else {
    d.m = m;
  }
  d.k = k;
  d.orientation = cake_mxfp8_orientation_t(orientation);
  d.program = program;
  return d;
}

// The program a query answered with, or "" and *err where it did not serve.
static std::string queried_name(CakeLib &lib, cake_status_t st, const cake_program_info &info,
                                std::string *err) {
  if (st != CAKE_STATUS_SUCCESS) {
    *err = lib.error(st);
    return "";
  }
  return info.name;
}

void DeviceMem::release() {
  if (ptr) cudaFree(ptr);
  ptr = nullptr;
  bytes = 0;
}

// ---------------------------------------------------------------------------------------------

uint64_t NormgateWorkload::device_bytes() const {
  const uint64_t t = uint64_t(rows_) * d_ * 2;
  return 7 * t + uint64_t(d_) * 8 + (64ull << 20);
}

std::string NormgateWorkload::alloc(const std::vector<CakeLib *> &libs) {
  const size_t t = size_t(rows_) * d_ * 2;
  std::string e;
  for (DeviceMem *m : {&x_, &z_, &y_, &dy_, &dx_, &dz_}) {
    if (!(e = m->alloc(t)).empty()) return e;
  }
  if (!(e = w_.alloc(size_t(d_) * 2)).empty()) return e;
  if (!(e = dw_.alloc(size_t(d_) * 4)).empty()) return e;
  // The largest workspace any call may ask for: routed or forced (each program of the table
  // that serves the backward may need its own size), either package, either dw dtype.
  size_t ws = 0;
  for (CakeLib *lib : libs) {
    if (!lib->has_normgate_backward()) continue;
    std::vector<const char *> programs = {nullptr};
    for (int i = 0; i < lib->program_count(lib->handle); ++i) {
      programs.push_back(lib->program_name(lib->handle, i));
    }
    for (const char *prog : programs) {
      for (int pkg : {0, 1}) {
        for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
          cake_normgate_desc dsc = desc(*lib, pkg, dt, prog);
          size_t b = 0;
          if (lib->normgate_workspace_size(lib->handle, &dsc, &b) == CAKE_STATUS_SUCCESS) {
            ws = std::max(ws, b);
          }
        }
      }
    }
  }
  if (!(e = ws_.alloc(ws)).empty()) return e;
  const cudaError_t ce = cudaMemset(ws_.ptr, 0, ws_.bytes);
  if (ce != cudaSuccess) return cuda_error("cudaMemset(workspace)", ce);
  return "";
}

std::string fill_normgate_inputs(void *x, void *z, void *w, void *dy, size_t n, int d,
                                 uint64_t seed, cudaStream_t stream) {
  cudaError_t e = launch_fill_bf16(x, n, seed * 4 + 0, 1.0f, 0.0f, 0, stream);
  if (e == cudaSuccess) e = launch_fill_bf16(z, n, seed * 4 + 1, 2.0f, 0.0f, 0, stream);
  if (e == cudaSuccess) e = launch_fill_bf16(w, size_t(d), seed * 4 + 2, 0.5f, 1.0f, 0, stream);
  if (e == cudaSuccess && dy) e = launch_fill_bf16(dy, n, seed * 4 + 3, 1.0f, 0.0f, 0, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return e == cudaSuccess ? "" : cuda_error("random inputs", e);
}

std::string NormgateWorkload::fresh_inputs(uint64_t seed, cudaStream_t stream) {
  return fill_normgate_inputs(x_.ptr, z_.ptr, w_.ptr, dy_.ptr, size_t(rows_) * d_, d_, seed,
                              stream);
}

cake_normgate_desc NormgateWorkload::desc(CakeLib &lib, int package, cake_dtype_t dw,
                                          const char *program) const {
  cake_normgate_desc dsc;
  std::memset(&dsc, 0, sizeof dsc);
  if (lib.normgate_desc_init) lib.normgate_desc_init(&dsc);
  dsc.rows = rows_;
  dsc.d = d_;
  dsc.eps = 1e-6f;
  dsc.package = cake_normgate_package_t(package);
  dsc.dw_dtype = dw;
  dsc.program = program;
  dsc.gate = cake_normgate_gate_t(gate_);
  dsc.placement = cake_normgate_placement_t(placement_);
  dsc.group_size = group_;
  return dsc;
}

std::string NormgateWorkload::variant_error(const cake_normgate_desc &dsc) const {
  if (variant() && dsc.struct_size < offsetof(cake_normgate_desc, group_size) + sizeof(int32_t)) {
    return "this library's normgate descriptor has no variant fields";
  }
  return "";
}

Call NormgateWorkload::call(CakeLib &lib, NgCall kind, int package, cake_dtype_t dw,
                            const char *program) const {
  cake_normgate_desc dsc = desc(lib, package, dw, program);
  if (kind == NgCall::kBwd) dsc.flags = bwd_flags_;
  CakeLib *l = &lib;
  const std::string unavailable = variant_error(dsc);
  if (!unavailable.empty()) {
    return [unavailable](cudaStream_t) -> std::string { return unavailable; };
  }
  if (kind == NgCall::kFwd) {
    void *x = x_.ptr, *z = z_.ptr, *w = w_.ptr, *y = y_.ptr;
    return [l, dsc, x, z, w, y](cudaStream_t s) -> std::string {
      if (!l->normgate_forward) return "cake_normgate_forward is not in this build";
      const cake_status_t st = l->normgate_forward(l->handle, &dsc, x, z, w, y, nullptr, s);
      return st == CAKE_STATUS_SUCCESS ? "" : "cake_normgate_forward: " + l->error(st);
    };
  }
  void *dy = dy_.ptr, *x = x_.ptr, *z = z_.ptr, *w = w_.ptr, *dx = dx_.ptr, *dz = dz_.ptr;
  void *dwp = dw_.ptr, *ws = ws_.ptr;
  const size_t ws_bytes = ws_.bytes;
  return [l, dsc, dy, x, z, w, dx, dz, dwp, ws, ws_bytes](cudaStream_t s) -> std::string {
    if (!l->normgate_backward) return "cake_normgate_backward is not in this build";
    const cake_status_t st =
        l->normgate_backward(l->handle, &dsc, dy, x, z, w, dx, dz, dwp, ws, ws_bytes, s);
    return st == CAKE_STATUS_SUCCESS ? "" : "cake_normgate_backward: " + l->error(st);
  };
}

std::string NormgateWorkload::query(CakeLib &lib, NgCall kind, int package, cake_dtype_t dw,
                                    const char *program, std::string *err) const {
  cake_normgate_desc dsc = desc(lib, package, dw, program);
  if (kind == NgCall::kBwd) dsc.flags = bwd_flags_;
  *err = variant_error(dsc);
  if (!err->empty()) return "";
  auto q = kind == NgCall::kFwd ? lib.normgate_forward_query : lib.normgate_backward_query;
  if (!q || !lib.program_info_init) {
    *err = kind == NgCall::kFwd ? "cake_normgate_forward_query is not in this build"
                                : "cake_normgate_backward_query is not in this build";
    return "";
  }
  cake_program_info info;
  lib.program_info_init(&info);
  return queried_name(lib, q(lib.handle, &dsc, &info), info, err);
}

std::vector<const char *> NormgateWorkload::serving_programs(CakeLib &lib, NgCall kind,
                                                             int package, cake_dtype_t dw) const {
  std::vector<const char *> out;
  const int n = lib.program_count(lib.handle);
  for (int i = 0; i < n; ++i) {
    const char *name = lib.program_name(lib.handle, i);
    if (!name) continue;
    std::string err;
    if (!query(lib, kind, package, dw, name, &err).empty()) out.push_back(name);
  }
  return out;
}

StreamPlan NormgateWorkload::plan(NgCall kind, cake_dtype_t dw) const {
  const uint64_t t = uint64_t(rows_) * d_ * 2;
  StreamPlan p;
  if (kind == NgCall::kFwd) {
    p.tensors = {{x_.ptr, t, false, "x"},
                 {z_.ptr, t, false, "z"},
                 {w_.ptr, uint64_t(d_) * 2, false, "w"},
                 {y_.ptr, t, true, "y"}};
  } else {
    p.tensors = {{dy_.ptr, t, false, "dy"},
                 {x_.ptr, t, false, "x"},
                 {z_.ptr, t, false, "z"},
                 {w_.ptr, uint64_t(d_) * 2, false, "w"},
                 {dx_.ptr, t, true, "dx"},
                 {dz_.ptr, t, true, "dz"},
                 {dw_.ptr, uint64_t(d_) * (dw == CAKE_DTYPE_F32 ? 4 : 2), true, "dw"}};
  }
  if (gate_ == CAKE_NORMGATE_GATE_NONE) {  // without a gate z is not read, dz not written
    std::vector<StreamTensor> kept;
    for (const StreamTensor &s : p.tensors) {
      if (s.ptr != z_.ptr && s.ptr != dz_.ptr) kept.push_back(s);
    }
    p.tensors = kept;
  }
  for (const StreamTensor &s : p.tensors) (s.write ? p.write_bytes : p.read_bytes) += s.bytes;
  return p;
}

// ---------------------------------------------------------------------------------------------

std::string SwigluForm::name() const {
  const char *o = orientation == 1 ? "row" : orientation == 2 ? "col" : "both";
  return std::string(backward ? "bwd_" : "fwd_") + o;
}

std::vector<SwigluForm> all_swiglu_forms() {
  std::vector<SwigluForm> out;
  for (bool b : {false, true}) {
    for (int o : {1, 2, 3}) {
      SwigluForm f;
      f.backward = b;
      f.orientation = o;
      out.push_back(f);
    }
  }
  return out;
}

bool parse_swiglu_form(const std::string &s, SwigluForm *out) {
  for (const SwigluForm &f : all_swiglu_forms()) {
    if (f.name() == s) {
      *out = f;
      return true;
    }
  }
  return false;
}

uint64_t SwigluWorkload::device_bytes(bool need_backward) const {
  const int64_t o = need_backward ? 2 * k_ : k_;
  return uint64_t(m_) * 2 * k_ * 2 + (need_backward ? uint64_t(m_) * k_ * 2 : 0) +
         2 * q_bytes(m_, o) + row_s_bytes(o) + col_s_bytes(o) + (64ull << 20);
}

std::vector<int32_t> uneven_offsets(int64_t rows, int experts, int unit, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> share(static_cast<size_t>(experts));
  double total = 0;
  for (double &w : share) total += (w = u(rng) * u(rng) * u(rng));  // skewed: a few large
  const int64_t units = rows / unit;
  std::vector<int32_t> out;
  int64_t given = 0, end = 0;
  for (int e = 0; e < experts; ++e) {
    int64_t n = e + 1 == experts ? units - given : int64_t(share[size_t(e)] / total * double(units));
    n = std::min(n, units - given);
    given += n;
    end += n * unit;
    if (e + 1 == experts) end = rows;  // the ragged remainder to the last expert
    out.push_back(int32_t(end));
  }
  return out;
}

std::string SwigluWorkload::grouped_sizes(CakeLib &lib, bool need_backward,
                                          cake_swiglu_grouped_sizes *s) const {
  if (!lib.has_swiglu_grouped(fp8_)) return "the grouped SwiGLU calls are not in this build";
  lib.grouped_sizes_init(s);
  const SwigluForm f{need_backward, 3};
  cake_status_t st;
  if (fp8_) {
    const cake_swiglu_fp8_grouped_desc d = f8g_desc(lib, f, nullptr);
    st = lib.f8g_buffer_sizes(&d, need_backward ? 1 : 0, s);
  } else {
    const cake_swiglu_mxfp8_grouped_desc d = mxg_desc(lib, f, nullptr);
    st = lib.mxg_buffer_sizes(&d, need_backward ? 1 : 0, s);
  }
  return st == CAKE_STATUS_SUCCESS ? "" : "grouped buffer sizes: " + lib.error(st);
}

std::string SwigluWorkload::alloc(bool need_backward, CakeLib *lib) {
  const int64_t o = need_backward ? 2 * k_ : k_;
  uint64_t qb = q_bytes(m_, o), rsb = row_s_bytes(o), csb = col_s_bytes(o);
  if (experts_ > 0) {
    // The grouped scales are sized for every split (P padded rows): the library's sizes.
    if (!lib) return "no library for the grouped sizes";
    cake_swiglu_grouped_sizes sz;
    const std::string e = grouped_sizes(*lib, need_backward, &sz);
    if (!e.empty()) return e;
    qb = std::max<uint64_t>(qb, sz.q_bytes);
    rsb = std::max<uint64_t>(rsb, sz.row_s_bytes);
    csb = std::max<uint64_t>(csb, sz.col_s_bytes);
    const std::string oe = offsets_.alloc(size_t(experts_) * 4);
    if (!oe.empty()) return oe;
    host_offsets_ = uneven_offsets(m_, experts_, ragged_ ? 1 : 32,
                                   uint64_t(m_) * 1000003u + uint64_t(k_) * 131u + experts_);
    const cudaError_t ce = cudaMemcpy(offsets_.ptr, host_offsets_.data(),
                                      host_offsets_.size() * 4, cudaMemcpyHostToDevice);
    if (ce != cudaSuccess) return cuda_error("offsets upload", ce);
  } else if (!fp8_ && lib && lib->swiglu_buffer_sizes && lib->swiglu_desc_init &&
             lib->swiglu_sizes_init) {
    // Trust the library where it is larger (it may pad more than the spec says).
    cake_swiglu_mxfp8_desc dsc = desc(*lib, SwigluForm{need_backward, 3}, nullptr);
    cake_swiglu_mxfp8_sizes sz;
    lib->swiglu_sizes_init(&sz);
    if (lib->swiglu_buffer_sizes(&dsc, need_backward ? 1 : 0, &sz) == CAKE_STATUS_SUCCESS) {
      qb = std::max<uint64_t>(qb, sz.q_bytes);
      rsb = std::max<uint64_t>(rsb, sz.row_s_bytes);
      csb = std::max<uint64_t>(csb, sz.col_s_bytes);
    }
  }
  std::string e;
  if (!(e = in_.alloc(size_t(m_) * 2 * k_ * 2)).empty()) return e;
  if (need_backward && !(e = grad_.alloc(size_t(m_) * k_ * 2)).empty()) return e;
  if (!(e = row_q_.alloc(qb)).empty()) return e;
  if (!(e = col_q_.alloc(qb)).empty()) return e;
  if (!(e = row_s_.alloc(rsb)).empty()) return e;
  if (!(e = col_s_.alloc(csb)).empty()) return e;
  return "";
}

std::string SwigluWorkload::fresh_inputs(uint64_t seed, int block_exponent_range,
                                         cudaStream_t stream) {
  cudaError_t e = launch_fill_bf16(in_.ptr, size_t(m_) * 2 * k_, seed * 2, 1.0f, 0.0f,
                                   block_exponent_range, stream);
  if (e == cudaSuccess && grad_.ptr) {
    e = launch_fill_bf16(grad_.ptr, size_t(m_) * k_, seed * 2 + 1, 1.0f, 0.0f,
                         block_exponent_range, stream);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  return e == cudaSuccess ? "" : cuda_error("random inputs", e);
}

cake_swiglu_mxfp8_grouped_desc SwigluWorkload::mxg_desc(CakeLib &lib, const SwigluForm &f,
                                                        const char *program) const {
  return swiglu_desc<cake_swiglu_mxfp8_grouped_desc>(lib.mxg_desc_init, m_, k_, experts_,
                                                     f.orientation, program);
}

cake_swiglu_fp8_grouped_desc SwigluWorkload::f8g_desc(CakeLib &lib, const SwigluForm &f,
                                                      const char *program) const {
  return swiglu_desc<cake_swiglu_fp8_grouped_desc>(lib.f8g_desc_init, m_, k_, experts_,
                                                   f.orientation, program);
}

Call SwigluWorkload::grouped_call(CakeLib &lib, const SwigluForm &f, const char *program) const {
  CakeLib *l = &lib;
  const bool row = f.orientation & 1, col = f.orientation & 2, bwd = f.backward, fp8 = fp8_;
  const void *in = in_.ptr, *grad = grad_.ptr;
  const int32_t *offs = static_cast<const int32_t *>(offsets_.ptr);
  void *rq = row ? row_q_.ptr : nullptr, *rs = row ? row_s_.ptr : nullptr;
  void *cq = col ? col_q_.ptr : nullptr, *cs = col ? col_s_.ptr : nullptr;
  const cake_swiglu_mxfp8_grouped_desc dm = mxg_desc(lib, f, program);
  const cake_swiglu_fp8_grouped_desc d8 = f8g_desc(lib, f, program);
  return [l, dm, d8, fp8, bwd, in, grad, offs, rq, rs, cq, cs](cudaStream_t s) -> std::string {
    if (!l->has_swiglu_grouped(fp8)) return "the grouped SwiGLU calls are not in this build";
    cake_status_t st;
    if (fp8) {
      st = bwd ? l->f8g_backward(l->handle, &d8, in, grad, offs, rq, rs, cq, cs, nullptr, s)
               : l->f8g_forward(l->handle, &d8, in, offs, rq, rs, cq, cs, nullptr, s);
    } else {
      st = bwd ? l->mxg_backward(l->handle, &dm, in, grad, offs, rq, rs, cq, cs, nullptr, s)
               : l->mxg_forward(l->handle, &dm, in, offs, rq, rs, cq, cs, nullptr, s);
    }
    return st == CAKE_STATUS_SUCCESS ? "" : "grouped swiglu: " + l->error(st);
  };
}

Call SwigluWorkload::per_expert_call(CakeLib &lib, const SwigluForm &f) const {
  struct Launch {
    int64_t n;
    const void *in, *grad;
    void *rq, *rs, *cq, *cs;
  };
  const bool row = f.orientation & 1, col = f.orientation & 2, bwd = f.backward, fp8 = fp8_;
  const int64_t o = bwd ? 2 * k_ : k_;
  std::vector<Launch> launches;
  std::string why;
  int64_t c = 0, p = 0;
  auto at = [](const DeviceMem &m, int64_t bytes) -> void * {
    return static_cast<uint8_t *>(m.ptr) + bytes;
  };
  for (int32_t end : host_offsets_) {
    const int64_t n = end - c;
    if (n > 0) {
      if (!fp8 && n % 32 != 0) why = "per-expert MXFP8 calls need experts of whole 32 rows";
      // Each expert's outputs where the grouped call writes them (col_q as the ungrouped
      // call's [O, n] block at the expert's bytes).
      const int64_t rs = fp8 ? 4 * p * (o / 128) : p * ((o / 32 + 3) / 4 * 4);
      const int64_t cs = fp8 ? 4 * (p / 128) * o : (o + 127) / 128 * 128 * p / 32;
      launches.push_back({n, at(in_, c * 2 * k_ * 2), grad_.ptr ? at(grad_, c * k_ * 2) : nullptr,
                          row ? at(row_q_, c * o) : nullptr, row ? at(row_s_, rs) : nullptr,
                          col ? at(col_q_, c * o) : nullptr, col ? at(col_s_, cs) : nullptr});
    }
    c = end;
    p += (n + 127) / 128 * 128;
  }
  CakeLib *l = &lib;
  const int64_t k = k_;
  const int orient = f.orientation;
  return [l, launches, why, fp8, bwd, k, orient](cudaStream_t s) -> std::string {
    if (!why.empty()) return why;
    for (const Launch &x : launches) {
      cake_status_t st;
      if (fp8) {
        const auto d =
            swiglu_desc<cake_swiglu_fp8_desc>(l->fp8_desc_init, x.n, k, 0, orient, nullptr);
        st = bwd ? l->fp8_backward(l->handle, &d, x.in, x.grad, x.rq, x.rs, x.cq, x.cs, s)
                 : l->fp8_forward(l->handle, &d, x.in, x.rq, x.rs, x.cq, x.cs, s);
      } else {
        const auto d =
            swiglu_desc<cake_swiglu_mxfp8_desc>(l->swiglu_desc_init, x.n, k, 0, orient, nullptr);
        st = bwd ? l->swiglu_backward(l->handle, &d, x.in, x.grad, x.rq, x.rs, x.cq, x.cs, s)
                 : l->swiglu_forward(l->handle, &d, x.in, x.rq, x.rs, x.cq, x.cs, s);
      }
      if (st != CAKE_STATUS_SUCCESS) return "per-expert swiglu: " + l->error(st);
    }
    return "";
  };
}

std::string SwigluWorkload::grouped_query(CakeLib &lib, const SwigluForm &f, const char *program,
                                          std::string *err) const {
  if (!lib.has_swiglu_grouped(fp8_) || !lib.program_info_init) {
    *err = "the grouped SwiGLU calls are not in this build";
    return "";
  }
  cake_program_info info;
  lib.program_info_init(&info);
  cake_status_t st;
  if (fp8_) {
    const cake_swiglu_fp8_grouped_desc d = f8g_desc(lib, f, program);
    st = lib.f8g_query(lib.handle, &d, f.backward ? 1 : 0, &info);
  } else {
    const cake_swiglu_mxfp8_grouped_desc d = mxg_desc(lib, f, program);
    st = lib.mxg_query(lib.handle, &d, f.backward ? 1 : 0, &info);
  }
  return queried_name(lib, st, info, err);
}

cake_swiglu_mxfp8_desc SwigluWorkload::desc(CakeLib &lib, const SwigluForm &f,
                                            const char *program) const {
  return swiglu_desc<cake_swiglu_mxfp8_desc>(lib.swiglu_desc_init, m_, k_, 0, f.orientation,
                                             program);
}

cake_swiglu_fp8_desc SwigluWorkload::fp8_desc(CakeLib &lib, const SwigluForm &f,
                                               const char *program) const {
  return swiglu_desc<cake_swiglu_fp8_desc>(lib.fp8_desc_init, m_, k_, 0, f.orientation,
                                           program);
}

Call SwigluWorkload::call(CakeLib &lib, const SwigluForm &f, const char *program) const {
  if (experts_ > 0) return grouped_call(lib, f, program);
  const cake_swiglu_mxfp8_desc dsc = desc(lib, f, program);
  CakeLib *l = &lib;
  const bool row = f.orientation & 1, col = f.orientation & 2;
  void *in = in_.ptr, *grad = grad_.ptr;
  void *rq = row ? row_q_.ptr : nullptr, *rs = row ? row_s_.ptr : nullptr;
  void *cq = col ? col_q_.ptr : nullptr, *cs = col ? col_s_.ptr : nullptr;
  if (fp8_) {
    const cake_swiglu_fp8_desc d8 = fp8_desc(lib, f, program);
    const bool bwd = f.backward;
    return [l, d8, bwd, in, grad, rq, rs, cq, cs](cudaStream_t s) -> std::string {
      if (!l->has_swiglu_fp8()) return "cake_swiglu_fp8_* is not in this build";
      const cake_status_t st =
          bwd ? l->fp8_backward(l->handle, &d8, in, grad, rq, rs, cq, cs, s)
              : l->fp8_forward(l->handle, &d8, in, rq, rs, cq, cs, s);
      return st == CAKE_STATUS_SUCCESS ? "" : "cake_swiglu_fp8: " + l->error(st);
    };
  }
  if (!f.backward) {
    return [l, dsc, in, rq, rs, cq, cs](cudaStream_t s) -> std::string {
      if (!l->swiglu_forward) return "cake_swiglu_mxfp8_forward is not in this build";
      const cake_status_t st = l->swiglu_forward(l->handle, &dsc, in, rq, rs, cq, cs, s);
      return st == CAKE_STATUS_SUCCESS ? "" : "cake_swiglu_mxfp8_forward: " + l->error(st);
    };
  }
  return [l, dsc, in, grad, rq, rs, cq, cs](cudaStream_t s) -> std::string {
    if (!l->swiglu_backward) return "cake_swiglu_mxfp8_backward is not in this build";
    if (!grad) return "no grad buffer (internal)";
    const cake_status_t st = l->swiglu_backward(l->handle, &dsc, in, grad, rq, rs, cq, cs, s);
    return st == CAKE_STATUS_SUCCESS ? "" : "cake_swiglu_mxfp8_backward: " + l->error(st);
  };
}

std::string SwigluWorkload::query(CakeLib &lib, const SwigluForm &f, const char *program,
                                  std::string *err) const {
  if (experts_ > 0) return grouped_query(lib, f, program, err);
  if (fp8_) {
    if (!lib.fp8_query || !lib.program_info_init) {
      *err = "cake_swiglu_fp8_query is not in this build";
      return "";
    }
    const cake_swiglu_fp8_desc d8 = fp8_desc(lib, f, program);
    cake_program_info info;
    lib.program_info_init(&info);
    return queried_name(lib, lib.fp8_query(lib.handle, &d8, f.backward ? 1 : 0, &info), info,
                        err);
  }
  if (!lib.swiglu_query || !lib.program_info_init) {
    *err = "cake_swiglu_mxfp8_query is not in this build";
    return "";
  }
  const cake_swiglu_mxfp8_desc dsc = desc(lib, f, program);
  cake_program_info info;
  lib.program_info_init(&info);
  return queried_name(lib, lib.swiglu_query(lib.handle, &dsc, f.backward ? 1 : 0, &info), info,
                      err);
}

std::vector<const char *> SwigluWorkload::serving_programs(CakeLib &lib,
                                                           const SwigluForm &f) const {
  std::vector<const char *> out;
  const int n = lib.program_count(lib.handle);
  for (int i = 0; i < n; ++i) {
    const char *name = lib.program_name(lib.handle, i);
    if (!name) continue;
    std::string err;
    if (!query(lib, f, name, &err).empty()) out.push_back(name);
  }
  return out;
}

// The limit line: the op's bytes as streaming tensors. A grouped call streams the whole
// tensor's (the ungrouped call's of all m rows): its scale padding is not counted.
StreamPlan SwigluWorkload::plan(const SwigluForm &f) const {
  const int64_t o = f.backward ? 2 * k_ : k_;
  StreamPlan p;
  p.tensors.push_back({in_.ptr, uint64_t(m_) * 2 * k_ * 2, false, "in"});
  if (f.backward) p.tensors.push_back({grad_.ptr, uint64_t(m_) * k_ * 2, false, "grad"});
  if (f.orientation & 1) {
    p.tensors.push_back({row_q_.ptr, q_bytes(m_, o), true, "row_q"});
    p.tensors.push_back({row_s_.ptr, row_s_bytes(o), true, "row_s"});
  }
  if (f.orientation & 2) {
    p.tensors.push_back({col_q_.ptr, q_bytes(m_, o), true, "col_q"});
    p.tensors.push_back({col_s_.ptr, col_s_bytes(o), true, "col_s"});
  }
  for (const StreamTensor &s : p.tensors) (s.write ? p.write_bytes : p.read_bytes) += s.bytes;
  return p;
}

}  // namespace cake_bench
