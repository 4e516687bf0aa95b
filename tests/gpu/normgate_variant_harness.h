// What the norm-gate variant GPU tests share (test_normgate_variants.cc, test_normgate_range.cc):
// a case (shape, gate, placement, group, dtypes, row padding), its host tensors and their decoded
// doubles, the forward and backward run on a handle with poisoned outputs, the float64 reference
// and the spec's contract, and every serving program of every table forced to the same bytes.
// Each test file includes it once: the handles below are that test's.
#pragma once
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_common.h"
#include "normgate_variant_ref.h"

using cake_test::DeviceBuffer;
using cake_test::VariantSpec;

namespace {

cake_handle_t g_handle = nullptr;
std::vector<cake_handle_t> g_cross;

const char *gate_name(int g) {
  return g == CAKE_NORMGATE_GATE_SILU ? "silu" : g == CAKE_NORMGATE_GATE_SIGMOID ? "sigmoid" : "none";
}

struct Case {
  int64_t rows;
  int32_t d, group;
  int gate, placement;
  int xdt, zdt, wdt;
  int64_t pad;  // extra elements per row (each tensor a different multiple): 0 packed
  std::string label() const {
    char b[160];
    std::snprintf(b, sizeof b, "%lldx%d G=%d %s %s x/z/w %s/%s/%s pad %lld", (long long)rows, d,
                  group, gate_name(gate), placement ? "before" : "after",
                  cake_test::dtype_name(xdt), cake_test::dtype_name(zdt),
                  cake_test::dtype_name(wdt), (long long)pad);
    return b;
  }
};

// A host tensor [rows, stride] of a dtype with its decoded packed [rows, d] doubles.
struct Tensor {
  int dtype;
  int64_t rows, d, stride;
  std::vector<unsigned char> bytes;
  std::vector<double> vals;  // packed
};

Tensor random_tensor(int dtype, int64_t rows, int64_t d, int64_t stride, double scale,
                     double offset) {
  Tensor t{dtype, rows, d, stride, {}, {}};
  t.bytes.assign(size_t(rows * stride) * cake_test::dtype_size(dtype), 0);
  t.vals.assign(size_t(rows * d), 0.0);
  std::normal_distribution<double> dist(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < d; ++c) {
      cake_test::store_elem(dtype, t.bytes.data(), size_t(r * stride + c), offset + scale * dist(cake_test::rng()));
      t.vals[size_t(r * d + c)] = cake_test::load_elem(dtype, t.bytes.data(), size_t(r * stride + c));
    }
  }
  return t;
}

struct Inputs {
  Case c;
  int64_t xs, zs, ys, dys, dxs, dzs;  // strides
  Tensor x, z, w, dy;
};

Inputs make_inputs(const Case &c) {
  Inputs in;
  in.c = c;
  in.xs = c.d + c.pad;
  in.zs = c.d + 2 * c.pad;
  in.ys = c.d + 3 * c.pad;
  in.dys = c.d + c.pad;
  in.dxs = c.d + 2 * c.pad;
  in.dzs = c.d;
  in.x = random_tensor(c.xdt, c.rows, c.d, in.xs, 1.0, 0.0);
  in.z = random_tensor(c.zdt, c.rows, c.d, in.zs, 2.0, 0.0);
  in.w = random_tensor(c.wdt, 1, c.d, c.d, 0.5, 1.0);
  in.dy = random_tensor(c.xdt, c.rows, c.d, in.dys, 1.0, 0.0);
  return in;
}

VariantSpec spec_of(const Case &c) {
  return {c.gate, c.placement, c.d, c.group, 1e-6};
}

cake_normgate_desc desc_of(const Inputs &in, const char *program) {
  const Case &c = in.c;
  cake_normgate_desc d;
  cake_normgate_desc_init(&d);
  d.rows = c.rows;
  d.d = c.d;
  d.eps = 1e-6f;
  d.gate = static_cast<cake_normgate_gate_t>(c.gate);
  d.placement = static_cast<cake_normgate_placement_t>(c.placement);
  d.group_size = c.group == c.d ? 0 : c.group;
  d.x_dtype = static_cast<cake_dtype_t>(c.xdt);
  d.z_dtype = static_cast<cake_dtype_t>(c.zdt);
  d.w_dtype = static_cast<cake_dtype_t>(c.wdt);
  d.x_stride = in.xs;
  d.z_stride = in.zs;
  d.y_stride = in.ys;
  d.dy_stride = in.dys;
  d.dx_stride = in.dxs;
  d.dz_stride = in.dzs;
  d.program = program;
  return d;
}

bool gated(const Case &c) { return c.gate != CAKE_NORMGATE_GATE_NONE; }

// ---- forward -----------------------------------------------------------------------------

struct FwdOut {
  std::vector<unsigned char> y;
  std::vector<float> rstd;
  std::string program;
};

FwdOut run_forward(cake_handle_t h, const Inputs &in, const char *program) {
  const Case &c = in.c;
  DeviceBuffer<unsigned char> x(in.x.bytes.size(), 0), z(in.z.bytes.size(), 0), w(in.w.bytes.size(), 0);
  DeviceBuffer<unsigned char> y(size_t(c.rows * in.ys) * cake_test::dtype_size(c.xdt));  // poisoned
  DeviceBuffer<float> rstd(size_t(c.rows) * (c.d / c.group));
  x.upload(in.x.bytes);
  z.upload(in.z.bytes);
  w.upload(in.w.bytes);
  const cake_normgate_desc desc = desc_of(in, program);
  cake_program_info info;
  cake_program_info_init(&info);
  CAKE_OK(cake_normgate_forward_query(h, &desc, &info));
  // Without a gate z is not read: pass NULL.
  CAKE_OK(cake_normgate_forward(h, &desc, x.ptr, gated(c) ? z.ptr : nullptr, w.ptr, y.ptr, rstd.ptr,
                                nullptr));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return {y.download(), rstd.download(), info.name};
}

[[maybe_unused]] void check_forward(const Inputs &in, const FwdOut &out) {
  const Case &c = in.c;
  std::vector<double> y, rstd;
  cake_test::variant_forward_ref(spec_of(c), c.rows, in.x.vals, in.z.vals, in.w.vals, &y, &rstd);
  std::string first;
  const int64_t bad = cake_test::check_row_tensor("y", c.xdt, c.rows, c.d, y, out.y.data(), in.ys,
                                                  false, true, &first);
  if (bad != 0) {
    print_error("%s forward (%s): %lld elements of y break the contract; first: %s\n",
                c.label().c_str(), out.program.c_str(), (long long)bad, first.c_str());
    fail();
  }
  for (size_t i = 0; i < rstd.size(); ++i) {
    const bool ok = std::isnan(rstd[i]) ? std::isnan(out.rstd[i])
                                        : std::fabs(out.rstd[i] - rstd[i]) <= 1e-5 * rstd[i];
    if (!ok) {
      print_error("%s forward: rstd[%zu] = %.9g, want %.9g\n", c.label().c_str(), i, out.rstd[i], rstd[i]);
      fail();
    }
  }
}

// The programs of `h`'s table that serve the call (the query accepts them forced).
std::vector<std::string> serving(cake_handle_t h, const cake_normgate_desc &base, bool backward) {
  std::vector<std::string> names;
  const int n = cake_program_count(h);
  for (int i = 0; i < n; ++i) {
    cake_normgate_desc d = base;
    d.program = cake_program_name(h, i);
    cake_program_info info;
    cake_program_info_init(&info);
    const cake_status_t s = backward ? cake_normgate_backward_query(h, &d, &info)
                                     : cake_normgate_forward_query(h, &d, &info);
    if (s == CAKE_STATUS_SUCCESS) names.push_back(d.program);
  }
  return names;
}

// Every serving program of every table, forced: y and rstd byte-identical to `want`.
int forward_every_program(const Inputs &in, const FwdOut &want) {
  int runs = 0;
  std::vector<cake_handle_t> handles = {g_handle};
  handles.insert(handles.end(), g_cross.begin(), g_cross.end());
  for (cake_handle_t h : handles) {
    for (const std::string &name : serving(h, desc_of(in, nullptr), false)) {
      const FwdOut got = run_forward(h, in, name.c_str());
      if (got.y != want.y || std::memcmp(got.rstd.data(), want.rstd.data(), want.rstd.size() * 4) != 0) {
        print_error("%s: forced %s differs from routed %s\n", in.c.label().c_str(), name.c_str(),
                    want.program.c_str());
        fail();
      }
      ++runs;
    }
  }
  return runs;
}

// ---- backward ----------------------------------------------------------------------------

struct BwdRun {
  cake_normgate_package_t package = CAKE_NORMGATE_DETERMINISTIC;
  int dw_dtype = CAKE_DTYPE_BF16;
  uint32_t flags = 0;
  const char *program = nullptr;
  const std::vector<unsigned char> *dw_init = nullptr;
};

struct BwdOut {
  std::vector<unsigned char> dx, dz, dw, workspace_after;
  std::string program;
};

BwdOut run_backward(cake_handle_t h, const Inputs &in, const BwdRun &run) {
  const Case &c = in.c;
  cake_normgate_desc desc = desc_of(in, run.program);
  desc.package = run.package;
  desc.dw_dtype = static_cast<cake_dtype_t>(run.dw_dtype);
  desc.flags = run.flags;
  size_t ws_bytes = 0;
  CAKE_OK(cake_normgate_workspace_size(h, &desc, &ws_bytes));
  DeviceBuffer<unsigned char> dy(in.dy.bytes.size(), 0), x(in.x.bytes.size(), 0),
      z(in.z.bytes.size(), 0), w(in.w.bytes.size(), 0);
  DeviceBuffer<unsigned char> dx(size_t(c.rows * in.dxs) * cake_test::dtype_size(c.xdt));
  DeviceBuffer<unsigned char> dz(size_t(c.rows * in.dzs) * cake_test::dtype_size(c.zdt));
  DeviceBuffer<unsigned char> dw(size_t(c.d) * cake_test::dtype_size(run.dw_dtype));
  DeviceBuffer<unsigned char> ws(ws_bytes > 0 ? ws_bytes : 16, 0);
  dy.upload(in.dy.bytes);
  x.upload(in.x.bytes);
  z.upload(in.z.bytes);
  w.upload(in.w.bytes);
  if (run.dw_init != nullptr) dw.upload(*run.dw_init);
  cake_program_info info;
  cake_program_info_init(&info);
  CAKE_OK(cake_normgate_backward_query(h, &desc, &info));
  const bool skip = (run.flags & CAKE_NORMGATE_DW_SKIP) != 0;
  CAKE_OK(cake_normgate_backward(h, &desc, dy.ptr, x.ptr, gated(c) ? z.ptr : nullptr, w.ptr, dx.ptr,
                                 gated(c) ? dz.ptr : nullptr, skip ? nullptr : dw.ptr,
                                 ws_bytes ? ws.ptr : nullptr, ws_bytes, nullptr));
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  return {dx.download(), dz.download(), dw.download(), ws.download(), info.name};
}

struct BwdRef {
  std::vector<double> dx, dz, dw, dw_abs;
};

BwdRef backward_ref(const Inputs &in) {
  BwdRef r;
  cake_test::variant_backward_ref(spec_of(in.c), in.c.rows, in.dy.vals, in.x.vals, in.z.vals,
                                  in.w.vals, &r.dx, &r.dz, &r.dw, &r.dw_abs);
  return r;
}

// l2: judge each tensor's relative L2 error too (the per-element contract always applies).
[[maybe_unused]] void check_backward(const Inputs &in, const BwdRef &ref, const BwdRun &run, const BwdOut &out,
                    const std::vector<unsigned char> *dw0, bool l2 = true) {
  const Case &c = in.c;
  std::string first;
  int64_t bad = cake_test::check_row_tensor("dx", c.xdt, c.rows, c.d, ref.dx, out.dx.data(), in.dxs,
                                            true, l2, &first);
  if (bad == 0 && gated(c)) {
    bad = cake_test::check_row_tensor("dz", c.zdt, c.rows, c.d, ref.dz, out.dz.data(), in.dzs, true,
                                      l2, &first);
  }
  if (!gated(c)) {  // dz is not written: still the poison
    for (unsigned char b : out.dz) {
      if (b != 0xff) {
        first = "dz written without a gate";
        ++bad;
        break;
      }
    }
  }
  if (bad == 0) {
    if (run.flags & CAKE_NORMGATE_DW_SKIP) {
      for (unsigned char b : out.dw) {
        if (b != 0xff) {
          first = "dw written with DW_SKIP";
          ++bad;
          break;
        }
      }
    } else {
      std::vector<double> want = ref.dw;
      std::vector<double> abs = ref.dw_abs;
      if (dw0 != nullptr) {
        for (int i = 0; i < c.d; ++i) {
          const double v = cake_test::load_elem(run.dw_dtype, dw0->data(), size_t(i));
          want[i] += v;
          abs[i] += std::fabs(v);
        }
      }
      bad = cake_test::check_dw(run.dw_dtype, c.d, want, abs, out.dw.data(), &first);
    }
  }
  for (unsigned char b : out.workspace_after) {
    if (b != 0) {
      first = "workspace not left zero";
      ++bad;
      break;
    }
  }
  if (bad != 0) {
    print_error("%s backward %s dw %s flags %u (%s): %lld failures; first: %s\n",
                c.label().c_str(), run.package ? "nondet" : "det",
                cake_test::dtype_name(run.dw_dtype), run.flags, out.program.c_str(),
                (long long)bad, first.c_str());
    fail();
  }
}

bool same_grads(const BwdOut &a, const BwdOut &b) { return a.dx == b.dx && a.dz == b.dz; }

// Every serving program of `desc`'s backward (its package) in each handle's table, forced on
// `run`'s call: visit(name, outputs) for each. Returns how many ran.
template <class Visit>
int backward_every_program(const std::vector<cake_handle_t> &handles, const Inputs &in,
                           const cake_normgate_desc &desc, const BwdRun &run, Visit visit) {
  int n = 0;
  for (cake_handle_t h : handles) {
    for (const std::string &name : serving(h, desc, true)) {
      BwdRun f = run;
      f.program = name.c_str();
      visit(name, run_backward(h, in, f));
      ++n;
    }
  }
  return n;
}

}  // namespace
