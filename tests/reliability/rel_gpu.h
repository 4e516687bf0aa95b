// GPU side of the reliability suite: one "task" is one Cake call with its own device buffers
// (normgate forward, backward in either package, SwiGLU + MXFP8 forward or backward), able to
// refill its inputs in place (for graph replays), launch on a stream and read its outputs back.
// Nothing here calls CMocka, so worker threads can use it; errors are returned as text.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "cake.h"
#include "swiglu_weak.h"

namespace relg {

// A device allocation; an error is kept, not thrown.
struct DevBuf {
  void *ptr = nullptr;
  size_t bytes = 0;
  DevBuf() = default;
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  DevBuf(DevBuf &&o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
  DevBuf &operator=(DevBuf &&o) noexcept {
    std::swap(ptr, o.ptr);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~DevBuf() { cudaFree(ptr); }
  bool alloc(size_t n, std::string *err) {
    bytes = n;
    const cudaError_t e = cudaMalloc(&ptr, n ? n : 16);
    if (e != cudaSuccess) {
      *err = std::string("cudaMalloc: ") + cudaGetErrorString(e);
      ptr = nullptr;
      return false;
    }
    return true;
  }
};

// Finite random BF16 values, cheap: windows of one pool per (scale, offset) at a seed-chosen
// position, so every seed gives other inputs.
inline const std::vector<uint16_t> &bf16_pool(int variant) {
  static std::vector<uint16_t> pools[3];
  static std::once_flag once;
  std::call_once(once, [] {
    const float scale[3] = {1.0f, 2.0f, 0.5f}, offset[3] = {0.0f, 0.0f, 1.0f};
    for (int p = 0; p < 3; ++p) {
      std::mt19937_64 rng(1234 + p);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      pools[p].resize(size_t(1) << 22);
      for (auto &e : pools[p]) {
        const float f = offset[p] + scale[p] * dist(rng);
        uint32_t b;
        std::memcpy(&b, &f, 4);
        e = static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);
      }
    }
  });
  return pools[variant];
}

inline void fill_bf16(std::vector<uint16_t> *out, size_t n, int variant, uint64_t seed) {
  const std::vector<uint16_t> &pool = bf16_pool(variant);
  out->resize(n);
  size_t at = size_t((seed * 0x9E3779B97F4A7C15ull) >> 40) % pool.size();
  for (size_t i = 0; i < n;) {
    const size_t take = std::min(n - i, pool.size() - at);
    std::memcpy(out->data() + i, pool.data() + at, take * 2);
    i += take;
    at = (at + take) % pool.size();
  }
}

enum class Op { kFwd, kBwdDet, kBwdNondet, kSwFwd, kSwBwd };

inline const char *op_name(Op op) {
  switch (op) {
    case Op::kFwd: return "normgate forward";
    case Op::kBwdDet: return "normgate backward (deterministic)";
    case Op::kBwdNondet: return "normgate backward (non-deterministic)";
    case Op::kSwFwd: return "swiglu_mxfp8 forward";
    default: return "swiglu_mxfp8 backward";
  }
}

struct Task {
  Op op = Op::kFwd;
  // normgate
  int64_t rows = 0;
  int32_t d = 128;
  int64_t pad = 0;
  cake_dtype_t dw_dtype = CAKE_DTYPE_BF16;
  const char *program = nullptr;
  // swiglu
  int64_t m = 0, k = 0;
  int orientation = CAKE_MXFP8_BOTH;

  std::vector<DevBuf> in, out;  // inputs; outputs (the last of a backward is dw)
  DevBuf ws;
  std::vector<std::vector<uint16_t>> host_in;

  bool is_swiglu() const { return op == Op::kSwFwd || op == Op::kSwBwd; }
  int64_t s_in() const { return d + pad; }
  int64_t s_out() const { return d + 2 * pad; }

  std::string label() const {
    char b[160];
    if (is_swiglu()) {
      std::snprintf(b, sizeof b, "%s m %lld k %lld orientation %d", op_name(op), (long long)m, (long long)k, orientation);
    } else {
      std::snprintf(b, sizeof b, "%s rows %lld d %d pad %lld dw %d%s%s", op_name(op), (long long)rows, d,
                    (long long)pad, (int)dw_dtype, program ? " program " : "", program ? program : "");
    }
    return b;
  }

  cake_normgate_desc ng_desc() const {
    cake_normgate_desc desc;
    cake_normgate_desc_init(&desc);
    desc.rows = rows;
    desc.d = d;
    desc.x_stride = desc.z_stride = desc.dy_stride = s_in();
    desc.y_stride = desc.dx_stride = desc.dz_stride = s_out();
    desc.package = op == Op::kBwdNondet ? CAKE_NORMGATE_NONDETERMINISTIC : CAKE_NORMGATE_DETERMINISTIC;
    desc.dw_dtype = dw_dtype;
    desc.program = program;
    return desc;
  }
  cake_swiglu_mxfp8_desc sw_desc() const {
    cake_swiglu_mxfp8_desc desc;
    cake_swiglu_mxfp8_desc_init(&desc);
    desc.m = m;
    desc.k = k;
    desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
    desc.program = program;
    return desc;
  }

  // Allocates every buffer (before any capture); the workspace zero-filled once.
  bool setup(cake_handle_t h, std::string *err) {
    std::vector<size_t> in_bytes, out_bytes;
    if (is_swiglu()) {
      const bool bwd = op == Op::kSwBwd;
      const cake_swiglu_mxfp8_desc desc = sw_desc();
      cake_swiglu_mxfp8_sizes s;
      cake_swiglu_mxfp8_sizes_init(&s);
      if (cake_swiglu_mxfp8_buffer_sizes(&desc, bwd, &s) != CAKE_STATUS_SUCCESS) {
        *err = std::string("buffer sizes: ") + cake_last_error_message();
        return false;
      }
      in_bytes = {size_t(m * 2 * k * 2)};
      if (bwd) in_bytes.push_back(size_t(m * k * 2));
      out_bytes = {s.q_bytes, s.row_s_bytes, s.q_bytes, s.col_s_bytes};
    } else {
      const size_t bin = size_t(rows * s_in() * 2), bout = size_t(rows * s_out() * 2);
      in_bytes = {bin, bin, size_t(d) * 2};  // x, z, w
      if (op == Op::kFwd) {
        out_bytes = {bout, size_t(rows) * 4};  // y, rstd
      } else {
        in_bytes.push_back(bin);  // dy
        out_bytes = {bout, bout, size_t(d) * (dw_dtype == CAKE_DTYPE_F32 ? 4 : 2)};  // dx, dz, dw
        const cake_normgate_desc desc = ng_desc();
        size_t need = 0;
        if (cake_normgate_workspace_size(h, &desc, &need) != CAKE_STATUS_SUCCESS) {
          *err = std::string("workspace size: ") + cake_last_error_message();
          return false;
        }
        if (need > 0) {
          if (!ws.alloc(need, err)) return false;
          cudaMemset(ws.ptr, 0, need);
        }
      }
    }
    in = std::vector<DevBuf>(in_bytes.size());
    out = std::vector<DevBuf>(out_bytes.size());
    for (size_t i = 0; i < in_bytes.size(); ++i) {
      if (!in[i].alloc(in_bytes[i], err)) return false;
    }
    for (size_t i = 0; i < out_bytes.size(); ++i) {
      if (!out[i].alloc(out_bytes[i], err)) return false;
      cudaMemset(out[i].ptr, 0xFF, out_bytes[i]);
    }
    host_in.resize(in.size());
    return cudaDeviceSynchronize() == cudaSuccess;
  }

  // New inputs (a function of `seed`), copied into the same buffers on `stream`. The host copies
  // are kept until the next call so the asynchronous copies read live memory.
  void fill(uint64_t seed, cudaStream_t stream) {
    for (size_t i = 0; i < in.size(); ++i) {
      const int variant = is_swiglu() ? (i == 0 ? 1 : 0) : (i == 2 ? 2 : (i == 1 ? 1 : 0));
      fill_bf16(&host_in[i], in[i].bytes / 2, variant, seed * 16 + i);
      cudaMemcpyAsync(in[i].ptr, host_in[i].data(), in[i].bytes, cudaMemcpyHostToDevice, stream);
    }
  }

  cake_status_t launch(cake_handle_t h, cudaStream_t stream) {
    const cake_stream_t s = reinterpret_cast<cake_stream_t>(stream);
    if (is_swiglu()) {
      const cake_swiglu_mxfp8_desc desc = sw_desc();
      const bool row = orientation & 1, col = orientation & 2;
      void *rq = row ? out[0].ptr : nullptr, *rs = row ? out[1].ptr : nullptr;
      void *cq = col ? out[2].ptr : nullptr, *cs = col ? out[3].ptr : nullptr;
      return op == Op::kSwFwd ? cake_swiglu_mxfp8_forward(h, &desc, in[0].ptr, rq, rs, cq, cs, s)
                              : cake_swiglu_mxfp8_backward(h, &desc, in[0].ptr, in[1].ptr, rq, rs, cq, cs, s);
    }
    const cake_normgate_desc desc = ng_desc();
    if (op == Op::kFwd) {
      return cake_normgate_forward(h, &desc, in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr,
                                   static_cast<float *>(out[1].ptr), s);
    }
    return cake_normgate_backward(h, &desc, in[3].ptr, in[0].ptr, in[1].ptr, in[2].ptr, out[0].ptr, out[1].ptr,
                                  out[2].ptr, ws.ptr, ws.bytes, s);
  }

  // Outputs after `stream` finishes; disabled orientations come back empty.
  std::vector<std::vector<uint8_t>> read(cudaStream_t stream, std::string *err) {
    std::vector<std::vector<uint8_t>> r(out.size());
    cudaError_t e = cudaStreamSynchronize(stream);
    for (size_t i = 0; i < out.size() && e == cudaSuccess; ++i) {
      if (is_swiglu() && !((i < 2 ? 1 : 2) & orientation)) continue;
      r[i].resize(out[i].bytes);
      e = cudaMemcpy(r[i].data(), out[i].ptr, out[i].bytes, cudaMemcpyDeviceToHost);
    }
    if (e != cudaSuccess) *err = std::string("read: ") + cudaGetErrorString(e);
    return r;
  }

  // The non-deterministic workspace is zero after every call (spec: left ready for reuse).
  bool workspace_zero() const {
    if (op != Op::kBwdNondet || ws.ptr == nullptr) return true;
    std::vector<uint8_t> h(ws.bytes);
    cudaMemcpy(h.data(), ws.ptr, ws.bytes, cudaMemcpyDeviceToHost);
    for (uint8_t b : h) {
      if (b != 0) return false;
    }
    return true;
  }
};

inline int64_t ordinal_f32(const uint8_t *p) {
  int32_t i;
  std::memcpy(&i, p, 4);
  return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
}
inline int64_t ordinal_bf16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return (v & 0x8000) ? -int64_t(v & 0x7fff) : int64_t(v);
}

// Outputs of two runs of the same task on the same inputs: byte-identical, except the
// non-deterministic package's dw (within 1 ulp: spec). "" when equal.
inline std::string compare(const Task &t, const std::vector<std::vector<uint8_t>> &a,
                           const std::vector<std::vector<uint8_t>> &b) {
  for (size_t i = 0; i < a.size(); ++i) {
    const bool nondet_dw = t.op == Op::kBwdNondet && i == 2;
    if (a[i].size() != b[i].size()) return "output " + std::to_string(i) + " sizes differ";
    if (!nondet_dw) {
      if (a[i] != b[i]) {
        size_t at = 0;
        while (a[i][at] == b[i][at]) ++at;
        char m[160];
        std::snprintf(m, sizeof m, "output %zu differs first at byte %zu (0x%02x vs 0x%02x)", i, at, a[i][at], b[i][at]);
        return m;
      }
      continue;
    }
    const size_t w = t.dw_dtype == CAKE_DTYPE_F32 ? 4 : 2;
    for (size_t c = 0; c * w < a[i].size(); ++c) {
      const int64_t da = w == 4 ? ordinal_f32(&a[i][c * w]) : ordinal_bf16(&a[i][c * w]);
      const int64_t db = w == 4 ? ordinal_f32(&b[i][c * w]) : ordinal_bf16(&b[i][c * w]);
      if (da - db > 1 || db - da > 1) return "non-deterministic dw[" + std::to_string(c) + "] differs by more than 1 ulp";
    }
  }
  return "";
}

}  // namespace relg
