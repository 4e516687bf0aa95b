// cake_sanitize_driver: every program of every table at small shapes, for compute-sanitizer
// (tools/sanitize-on-device.sh runs it under memcheck --leak-check full, racecheck, initcheck and
// synccheck). Programs are found through the public API only: for each name of
// cake_program_name(), the *_query functions say which calls it serves when forced.
//
//   cake_sanitize_driver [--mode exact|guard|both] [--tables default,100,103,107] [--level min|full]
//
// Two allocation modes, both by default:
//   exact  every buffer is its own allocation of exactly the bytes the call may touch, so any
//          access past it is an out-of-bounds access the sanitizer reports. Pure outputs are
//          left uninitialised (initcheck then reports a kernel that reads an output it did not
//          write, e.g. dw without CAKE_NORMGATE_DW_ACCUMULATE); inputs are initialised and the
//          workspace zeroed once, as the header asks.
//   guard  every buffer sits between two 256-byte guard zones of a pattern, outputs poisoned
//          with 0xFF; after each call: guards intact, row padding of strided outputs intact,
//          every output element written (no 0xFF left: inputs are finite), the non-deterministic
//          workspace back to zero.
// Prints one line per failing case and a closing summary; exit status 1 on any failure.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cake.h"
#include "swiglu_weak.h"

namespace {

constexpr size_t kGuard = 256;
constexpr unsigned char kGuardByte = 0xA7;
int g_failures = 0, g_cases = 0;
bool g_exact = true, g_guard = true, g_full = false;

#define REPORT(...)                    \
  do {                                 \
    std::printf("FAIL ");              \
    std::printf(__VA_ARGS__);          \
    std::printf("\n");                 \
    std::fflush(stdout);               \
    ++g_failures;                      \
  } while (0)

bool cuda_ok(cudaError_t e, const char *what, const std::string &ctx) {
  if (e == cudaSuccess) return true;
  REPORT("%s: %s: %s", ctx.c_str(), what, cudaGetErrorString(e));
  return false;
}

// One device buffer of `bytes`: exact, or inside guard zones.
struct Buf {
  unsigned char *base = nullptr;
  unsigned char *ptr = nullptr;
  size_t bytes = 0;
  bool guarded = false;
  Buf(size_t n, bool guard) : bytes(n), guarded(guard) {
    const size_t total = guard ? n + 2 * kGuard : (n ? n : 1);
    if (cudaMalloc(&base, total) != cudaSuccess) {
      REPORT("cudaMalloc(%zu) failed", total);
      base = nullptr;
      return;
    }
    ptr = guard ? base + kGuard : base;
    if (guard) {
      cudaMemset(base, kGuardByte, kGuard);
      cudaMemset(ptr + n, kGuardByte, kGuard);
    }
  }
  ~Buf() { cudaFree(base); }
  Buf(const Buf &) = delete;
  Buf &operator=(const Buf &) = delete;
  void upload(const void *h) { cudaMemcpy(ptr, h, bytes, cudaMemcpyHostToDevice); }
  void fill(int byte) { cudaMemset(ptr, byte, bytes); }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> h(bytes);
    cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost);
    return h;
  }
  bool guards_intact(const std::string &ctx, const char *name) const {
    if (!guarded) return true;
    unsigned char g[2 * kGuard];
    cudaMemcpy(g, base, kGuard, cudaMemcpyDeviceToHost);
    cudaMemcpy(g + kGuard, ptr + bytes, kGuard, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < 2 * kGuard; ++i) {
      if (g[i] != kGuardByte) {
        REPORT("%s: %s guard zone %s byte %zu overwritten (0x%02x)", ctx.c_str(), name,
               i < kGuard ? "before" : "after", i < kGuard ? kGuard - i : i - kGuard, g[i]);
        return false;
      }
    }
    return true;
  }
};

// Random finite BF16 values: slices of one pool per (scale, offset), generated once (the cases
// are many and small; fresh normals for each would dominate a native run).
std::vector<uint16_t> random_bf16(size_t n, float scale, float offset) {
  struct Pool {
    float scale, offset;
    std::vector<uint16_t> v;
  };
  static std::vector<Pool> pools;
  static size_t cursor = 0;
  constexpr size_t kPool = size_t(1) << 22;
  Pool *pool = nullptr;
  for (Pool &p : pools) {
    if (p.scale == scale && p.offset == offset) pool = &p;
  }
  if (pool == nullptr) {
    std::mt19937_64 rng(20240611 + pools.size());
    std::normal_distribution<float> dist(0.0f, 1.0f);
    pools.push_back({scale, offset, std::vector<uint16_t>(kPool)});
    pool = &pools.back();
    for (auto &e : pool->v) {
      const float f = offset + scale * dist(rng);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      e = static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
    }
  }
  std::vector<uint16_t> out(n);
  cursor = (cursor + 7919) % kPool;
  for (size_t i = 0; i < n;) {
    const size_t at = (cursor + i) % kPool, take = std::min(n - i, kPool - at);
    std::memcpy(&out[i], &pool->v[at], take * 2);
    i += take;
  }
  return out;
}

struct NgCase {
  int op;  // 0 forward, 1 backward deterministic, 2 backward non-deterministic
  int32_t d;
  int64_t rows;
  int64_t pad;  // extra elements per row of every strided tensor (0: packed)
  uint32_t flags;
  cake_dtype_t dw_dtype;
};

// Runs one normgate case with one allocation mode. Returns false on failure (reported).
void run_normgate(cake_handle_t h, const char *program, const NgCase &c, bool guard) {
  ++g_cases;
  char ctxbuf[256];
  std::snprintf(ctxbuf, sizeof ctxbuf, "%s op %d d %d rows %lld pad %lld flags %u dw %d %s", program,
                c.op, c.d, (long long)c.rows, (long long)c.pad, c.flags, (int)c.dw_dtype,
                guard ? "guard" : "exact");
  const std::string ctx = ctxbuf;
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = c.rows;
  desc.d = c.d;
  desc.program = program;
  const int64_t s_in = c.d + c.pad, s_out = c.d + 2 * c.pad;
  desc.x_stride = desc.z_stride = desc.dy_stride = c.pad ? s_in : 0;
  desc.y_stride = desc.dx_stride = desc.dz_stride = c.pad ? s_out : 0;
  desc.package = c.op == 2 ? CAKE_NORMGATE_NONDETERMINISTIC : CAKE_NORMGATE_DETERMINISTIC;
  desc.dw_dtype = c.dw_dtype;
  desc.flags = c.flags;
  // Exact bytes a call may touch: the last row ends at d, not at the stride.
  auto tensor_bytes = [&](int64_t stride) { return size_t(((c.rows - 1) * stride + c.d) * 2); };
  const size_t in_bytes = tensor_bytes(s_in), out_bytes = tensor_bytes(s_out);
  Buf x(in_bytes, guard), z(in_bytes, guard), w(size_t(c.d) * 2, guard);
  std::vector<uint16_t> hx = random_bf16(in_bytes / 2, 1.0f, 0.0f), hz = random_bf16(in_bytes / 2, 2.0f, 0.0f);
  std::vector<uint16_t> hw = random_bf16(size_t(c.d), 0.5f, 1.0f);
  x.upload(hx.data());
  z.upload(hz.data());
  w.upload(hw.data());
  cake_status_t st;
  std::vector<std::pair<const Buf *, const char *>> outs;
  if (c.op == 0) {
    Buf y(out_bytes, guard), rstd(size_t(c.rows) * 4, guard);
    if (guard) {
      y.fill(0xFF);
      rstd.fill(0xFF);
    }
    st = cake_normgate_forward(h, &desc, x.ptr, z.ptr, w.ptr, y.ptr, reinterpret_cast<float *>(rstd.ptr), nullptr);
    if (st != CAKE_STATUS_SUCCESS) {
      REPORT("%s: %s: %s", ctx.c_str(), cake_status_string(st), cake_last_error_message());
      return;
    }
    if (!cuda_ok(cudaDeviceSynchronize(), "sync", ctx)) return;
    x.guards_intact(ctx, "x");
    z.guards_intact(ctx, "z");
    w.guards_intact(ctx, "w");
    y.guards_intact(ctx, "y");
    rstd.guards_intact(ctx, "rstd");
    if (guard) {
      const std::vector<unsigned char> hy = y.download();
      for (int64_t r = 0; r < c.rows; ++r) {
        for (int64_t col = 0; col < s_out && r * s_out + col < int64_t(out_bytes / 2); ++col) {
          uint16_t v;
          std::memcpy(&v, &hy[size_t(r * s_out + col) * 2], 2);
          if (col < c.d && v == 0xFFFF) {
            REPORT("%s: y row %lld col %lld not written", ctx.c_str(), (long long)r, (long long)col);
            return;
          }
          if (col >= c.d && v != 0xFFFF) {
            REPORT("%s: y row %lld padding col %lld written", ctx.c_str(), (long long)r, (long long)col);
            return;
          }
        }
      }
    }
    return;
  }
  size_t ws_bytes = 0;
  st = cake_normgate_workspace_size(h, &desc, &ws_bytes);
  if (st != CAKE_STATUS_SUCCESS) {
    REPORT("%s: workspace size: %s", ctx.c_str(), cake_last_error_message());
    return;
  }
  Buf dy(in_bytes, guard), dx(out_bytes, guard), dz(out_bytes, guard);
  const size_t dw_bytes = size_t(c.d) * (c.dw_dtype == CAKE_DTYPE_F32 ? 4 : 2);
  const bool skip = (c.flags & CAKE_NORMGATE_DW_SKIP) != 0;
  Buf dw(dw_bytes, guard), ws(ws_bytes, guard);
  std::vector<uint16_t> hdy = random_bf16(in_bytes / 2, 1.0f, 0.0f);
  dy.upload(hdy.data());
  if (ws_bytes) ws.fill(0);  // zero-filled before its first use, as the header asks
  if (c.flags & CAKE_NORMGATE_DW_ACCUMULATE) {
    dw.fill(0);  // read by the call: initialised
  } else if (guard) {
    dw.fill(0xFF);
  }
  if (guard) {
    dx.fill(0xFF);
    dz.fill(0xFF);
  }
  st = cake_normgate_backward(h, &desc, dy.ptr, x.ptr, z.ptr, w.ptr, dx.ptr, dz.ptr, skip ? nullptr : dw.ptr,
                              ws_bytes ? ws.ptr : nullptr, ws_bytes, nullptr);
  if (st != CAKE_STATUS_SUCCESS) {
    REPORT("%s: %s: %s", ctx.c_str(), cake_status_string(st), cake_last_error_message());
    return;
  }
  if (!cuda_ok(cudaDeviceSynchronize(), "sync", ctx)) return;
  const std::pair<const Buf *, const char *> all[] = {{&x, "x"},   {&z, "z"},   {&w, "w"},   {&dy, "dy"},
                                                      {&dx, "dx"}, {&dz, "dz"}, {&dw, "dw"}, {&ws, "workspace"}};
  for (const auto &b : all) b.first->guards_intact(ctx, b.second);
  if (!guard) return;
  for (const auto &t : {std::make_pair(&dx, "dx"), std::make_pair(&dz, "dz")}) {
    const std::vector<unsigned char> hv = t.first->download();
    for (int64_t i = 0; i < int64_t(out_bytes / 2); ++i) {
      const int64_t col = i % s_out;
      uint16_t v;
      std::memcpy(&v, &hv[size_t(i) * 2], 2);
      if ((col < c.d) == (v == 0xFFFF)) {
        REPORT("%s: %s row %lld col %lld %s", ctx.c_str(), t.second, (long long)(i / s_out), (long long)col,
               col < c.d ? "not written" : "(row padding) written");
        break;
      }
    }
  }
  if (!skip) {
    const std::vector<unsigned char> hv = dw.download();
    bool all_ff = true;
    for (unsigned char b : hv) all_ff &= b == 0xFF;
    if (all_ff) REPORT("%s: dw not written", ctx.c_str());
  } else {
    for (unsigned char b : dw.download()) {
      if (b != 0xFF) {
        REPORT("%s: dw written although skipped", ctx.c_str());
        break;
      }
    }
  }
  if (c.op == 2 && ws_bytes) {
    for (unsigned char b : ws.download()) {
      if (b != 0) {
        REPORT("%s: non-deterministic workspace not left zero", ctx.c_str());
        break;
      }
    }
  }
}

void run_swiglu(cake_handle_t h, const char *program, bool bwd, int orientation, int64_t m, int64_t k,
                bool guard) {
  ++g_cases;
  char ctxbuf[256];
  std::snprintf(ctxbuf, sizeof ctxbuf, "%s %s orientation %d m %lld k %lld %s", program, bwd ? "bwd" : "fwd",
                orientation, (long long)m, (long long)k, guard ? "guard" : "exact");
  const std::string ctx = ctxbuf;
  cake_swiglu_mxfp8_desc desc;
  cake_swiglu_mxfp8_desc_init(&desc);
  desc.m = m;
  desc.k = k;
  desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  desc.program = program;
  cake_swiglu_mxfp8_sizes sizes;
  cake_swiglu_mxfp8_sizes_init(&sizes);
  if (cake_swiglu_mxfp8_buffer_sizes(&desc, bwd, &sizes) != CAKE_STATUS_SUCCESS) {
    REPORT("%s: buffer sizes: %s", ctx.c_str(), cake_last_error_message());
    return;
  }
  const bool row = orientation & 1, col = orientation & 2;
  Buf in(size_t(m * 2 * k * 2), guard), grad(bwd ? size_t(m * k * 2) : 0, guard);
  Buf row_q(row ? sizes.q_bytes : 0, guard), row_s(row ? sizes.row_s_bytes : 0, guard);
  Buf col_q(col ? sizes.q_bytes : 0, guard), col_s(col ? sizes.col_s_bytes : 0, guard);
  std::vector<uint16_t> hin = random_bf16(size_t(m * 2 * k), 2.0f, 0.0f);
  in.upload(hin.data());
  if (bwd) {
    std::vector<uint16_t> hg = random_bf16(size_t(m * k), 1.0f, 0.0f);
    grad.upload(hg.data());
  }
  if (guard) {
    for (Buf *b : {&row_q, &row_s, &col_q, &col_s}) b->fill(0xFF);
  }
  const cake_status_t st =
      bwd ? cake_swiglu_mxfp8_backward(h, &desc, in.ptr, grad.ptr, row ? row_q.ptr : nullptr, row ? row_s.ptr : nullptr,
                                       col ? col_q.ptr : nullptr, col ? col_s.ptr : nullptr, nullptr)
          : cake_swiglu_mxfp8_forward(h, &desc, in.ptr, row ? row_q.ptr : nullptr, row ? row_s.ptr : nullptr,
                                      col ? col_q.ptr : nullptr, col ? col_s.ptr : nullptr, nullptr);
  if (st != CAKE_STATUS_SUCCESS) {
    REPORT("%s: %s: %s", ctx.c_str(), cake_status_string(st), cake_last_error_message());
    return;
  }
  if (!cuda_ok(cudaDeviceSynchronize(), "sync", ctx)) return;
  const std::pair<const Buf *, const char *> all[] = {{&in, "in"},      {&grad, "grad"},   {&row_q, "row_q"},
                                                      {&row_s, "row_s"}, {&col_q, "col_q"}, {&col_s, "col_s"}};
  for (const auto &b : all) b.first->guards_intact(ctx, b.second);
  if (!guard) return;
  for (const auto &b : all) {
    if (b.first == &in || b.first == &grad || b.first->bytes == 0) continue;
    const std::vector<unsigned char> hv = b.first->download();
    for (size_t i = 0; i < hv.size(); ++i) {
      if (hv[i] == 0xFF) {  // never produced from finite inputs: unwritten
        REPORT("%s: %s byte %zu not written", ctx.c_str(), b.second, i);
        break;
      }
    }
  }
}

// Which normgate calls a program serves, found through the queries.
bool serves(cake_handle_t h, const char *name, int op, int32_t d) {
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = 64;
  desc.d = d;
  desc.program = name;
  desc.package = op == 2 ? CAKE_NORMGATE_NONDETERMINISTIC : CAKE_NORMGATE_DETERMINISTIC;
  cake_program_info info;
  cake_program_info_init(&info);
  return (op == 0 ? cake_normgate_forward_query(h, &desc, &info)
                  : cake_normgate_backward_query(h, &desc, &info)) == CAKE_STATUS_SUCCESS;
}

void normgate_cases(cake_handle_t h, const char *name, std::vector<NgCase> *out) {
  for (int op = 0; op < 3; ++op) {
    // A tuned program serves its width; a general one any multiple of 8: the smallest, one
    // that is not a power of two, and a wide one.
    std::vector<int32_t> widths;
    if (serves(h, name, op, 96)) {
      widths = {8, 96, 1000};
    } else {
      for (int32_t d : {64, 128, 256}) {
        if (serves(h, name, op, d)) widths.push_back(d);
      }
    }
    for (int32_t d : widths) {
      const cake_dtype_t dt = (out->size() & 1) ? CAKE_DTYPE_F32 : CAKE_DTYPE_BF16;
      // A few rows with padded strides; enough rows for persistent grids to loop (small widths).
      out->push_back({op, d, 37, 8, 0u, dt});
      if (d <= 256) out->push_back({op, d, 20000, 0, 0u, dt});
      if (op != 0) {
        out->push_back({op, d, 45, 0, uint32_t(CAKE_NORMGATE_DW_ACCUMULATE), CAKE_DTYPE_F32});
        if (g_full) out->push_back({op, d, 45, 16, uint32_t(CAKE_NORMGATE_DW_SKIP), dt});
      }
      if (g_full) {
        out->push_back({op, d, 1, 0, 0u, dt});
        out->push_back({op, d, 1000, 24, 0u, dt});
      }
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  std::string tables = "default,100,103,107";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mode" && i + 1 < argc) {
      const std::string m = argv[++i];
      g_exact = m != "guard";
      g_guard = m != "exact";
    } else if (a == "--tables" && i + 1 < argc) {
      tables = argv[++i];
    } else if (a == "--level" && i + 1 < argc) {
      g_full = std::string(argv[++i]) == "full";
    } else {
      std::fprintf(stderr, "usage: %s [--mode exact|guard|both] [--tables default,100,103,107] [--level min|full]\n",
                   argv[0]);
      return 2;
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("SKIP: no usable CUDA device\n");
    return 0;
  }
  cudaFree(nullptr);
  std::vector<std::pair<std::string, cake_handle_t>> handles;
  size_t pos = 0;
  while (pos <= tables.size()) {
    const size_t end = tables.find(',', pos) == std::string::npos ? tables.size() : tables.find(',', pos);
    const std::string t = tables.substr(pos, end - pos);
    pos = end + 1;
    if (t.empty()) continue;
    cake_handle_options o;
    cake_handle_options_init(&o);
    o.table = t == "default" ? CAKE_ARCH_NONE : static_cast<cake_arch_t>(std::atoi(t.c_str()));
    cake_handle_t h = nullptr;
    const cake_status_t st = cake_create_ex(&h, 0, &o);
    if (st != CAKE_STATUS_SUCCESS) {
      // Cross-check tables exist only on sm_90 devices.
      std::printf("table %s: not available here (%s: %s)\n", t.c_str(), cake_status_string(st), cake_last_error_message());
      continue;
    }
    handles.push_back({t, h});
  }
  int programs = 0, unserved = 0;
  for (auto &th : handles) {
    cake_handle_t h = th.second;
    const int count = cake_program_count(h);
    for (int i = 0; i < count; ++i) {
      const char *name = cake_program_name(h, i);
      bool served = false;
      std::vector<NgCase> ng;
      normgate_cases(h, name, &ng);
      for (const NgCase &c : ng) {
        served = true;
        if (g_exact) run_normgate(h, name, c, false);
        if (g_guard) run_normgate(h, name, c, true);
      }
      if (rel::have_swiglu()) {
        for (int bwd = 0; bwd < 2; ++bwd) {
          for (int o = 1; o <= 3; ++o) {
            cake_swiglu_mxfp8_desc desc;
            cake_swiglu_mxfp8_desc_init(&desc);
            desc.m = desc.k = 128;
            desc.orientation = static_cast<cake_mxfp8_orientation_t>(o);
            desc.program = name;
            cake_program_info info;
            cake_program_info_init(&info);
            if (cake_swiglu_mxfp8_query(h, &desc, bwd, &info) != CAKE_STATUS_SUCCESS) continue;
            served = true;
            // Partial tiles in k; then enough tiles for the grid to stride.
            for (auto mk : {std::pair<int64_t, int64_t>{256, 384}, {2048, 2048}}) {
              if (g_exact) run_swiglu(h, name, bwd, o, mk.first, mk.second, false);
              if (g_guard) run_swiglu(h, name, bwd, o, mk.first, mk.second, true);
            }
            if (g_full) {
              if (g_exact) run_swiglu(h, name, bwd, o, 128, 128, false);
              if (g_guard) run_swiglu(h, name, bwd, o, 128, 128, true);
            }
          }
        }
      }
      ++programs;
      std::printf("PROGRAM %s (table %s): %d cases so far, %d failures so far\n", name, th.first.c_str(), g_cases,
                  g_failures);
      std::fflush(stdout);
      if (!served) {
        ++unserved;
        std::printf("NOTE: %s (table %s) serves no call the queries know\n", name, th.first.c_str());
      }
    }
  }
  for (auto &th : handles) cake_destroy(th.second);
  cudaDeviceReset();  // so that memcheck's leak check sees every allocation's fate
  std::printf("SUMMARY: %zu table(s), %d programs, %d cases, %d failures%s%s\n", handles.size(), programs, g_cases,
              g_failures, rel::have_swiglu() ? "" : " (no SwiGLU in this libcake)",
              unserved ? " (some programs unserved)" : "");
  return g_failures == 0 && unserved == 0 ? 0 : 1;
}
