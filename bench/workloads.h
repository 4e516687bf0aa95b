// The two kernel families as benchmark workloads: device buffers for one shape, the Cake calls
// of each op (bound to a library and an optional forced program), the queries that name the
// program a call runs, and the byte lists of each op for the streaming limit kernels.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "bench_kernels.h"
#include "cake_lib.h"
#include "timing.h"

namespace cake_bench {

// A device allocation, freed on destruction.
struct DeviceMem {
  void *ptr = nullptr;
  size_t bytes = 0;
  DeviceMem() = default;
  DeviceMem(const DeviceMem &) = delete;
  DeviceMem &operator=(const DeviceMem &) = delete;
  ~DeviceMem() { release(); }
  std::string alloc(size_t n);  // "" or the CUDA error
  void release();
};

// ---------------------------------------------------------------------------------------------
// Normgate: y = rmsnorm(x) * w * silu(z), rows x d BF16, packed rows.

enum class NgCall { kFwd, kBwd };

// Random norm-gate inputs on `stream` (normals, w around 1, never zeros): x, z of n values, w of
// d, and dy of n unless null; "" or the CUDA error.
std::string fill_normgate_inputs(void *x, void *z, void *w, void *dy, size_t n, int d,
                                 uint64_t seed, cudaStream_t stream);

class NormgateWorkload {
 public:
  NormgateWorkload(int64_t rows, int d) : rows_(rows), d_(d) {}
  // The variant every call asks for (cake_normgate_desc's gate, placement, group_size; BF16
  // tensors). A library whose descriptor predates these fields cannot run a variant: its calls
  // fail with a message instead of computing the default.
  void set_variant(int gate, int placement, int group) {
    gate_ = gate;
    placement_ = placement;
    group_ = group;
  }

  // Bytes of device memory this shape needs (inputs, outputs, dw, workspace estimate).
  uint64_t device_bytes() const;
  // Allocates the buffers and the largest workspace any of `libs` asks for (zeroed once).
  std::string alloc(const std::vector<CakeLib *> &libs);
  // New random inputs x, z, w, dy (never zeros).
  std::string fresh_inputs(uint64_t seed, cudaStream_t stream);

  // One Cake call. `program` NULL routes; the package and dw dtype matter for the backward.
  Call call(CakeLib &lib, NgCall kind, int package, cake_dtype_t dw, const char *program) const;
  // The program the call would run ("" with `err` set when the call cannot run).
  std::string query(CakeLib &lib, NgCall kind, int package, cake_dtype_t dw, const char *program,
                    std::string *err) const;
  // Every program of lib's table that serves this call kind (the library's static names).
  std::vector<const char *> serving_programs(CakeLib &lib, NgCall kind, int package,
                                            cake_dtype_t dw) const;

  // The op's bytes, as streaming tensors over the same buffers.
  StreamPlan plan(NgCall kind, cake_dtype_t dw) const;

  int64_t rows() const { return rows_; }
  int d() const { return d_; }
  // cake_normgate_flags_t bits for every backward call (cake-bench --dw-skip).
  void set_backward_flags(uint32_t flags) { bwd_flags_ = flags; }

 private:
  cake_normgate_desc desc(CakeLib &lib, int package, cake_dtype_t dw, const char *program) const;

  // "" when lib can run this workload's variant, else why not.
  std::string variant_error(const cake_normgate_desc &dsc) const;
  bool variant() const { return gate_ != 0 || placement_ != 0 || (group_ != 0 && group_ != d_); }

  int64_t rows_;
  int d_;
  int gate_ = 0, placement_ = 0, group_ = 0;
  uint32_t bwd_flags_ = 0;
  DeviceMem x_, z_, w_, y_, dy_, dx_, dz_, dw_, ws_;
};

// ---------------------------------------------------------------------------------------------
// SwiGLU + MXFP8: in [m, 2k] BF16 -> E4M3 + E8M0 scales, rowwise / colwise / both, fwd / bwd.

struct SwigluForm {
  bool backward = false;
  int orientation = 1;  // cake_mxfp8_orientation_t bits: 1 row, 2 col, 3 both
  std::string name() const;  // "fwd_row", "bwd_both", ...
};
std::vector<SwigluForm> all_swiglu_forms();
bool parse_swiglu_form(const std::string &s, SwigluForm *out);

// The end offsets of an uneven split of `rows` into `experts` (seeded): random shares, in whole
// units of `unit` rows (every row assigned when rows is a multiple of the unit), some experts
// with none.
std::vector<int32_t> uneven_offsets(int64_t rows, int experts, int unit, uint64_t seed);

class SwigluWorkload {
 public:
  // fp8: the SwiGLU + FP8 blockwise family (E4M3 + FP32 scales per 1x128) instead of MXFP8.
  // experts > 0: the grouped call over that many experts (docs/spec/swiglu-grouped.md), m rows
  // in all, split unevenly once (seeded by the shape, so every run times the same split): in
  // 32-row units, or any rows an expert when ragged.
  SwigluWorkload(int64_t m, int64_t k, bool fp8 = false, int experts = 0, bool ragged = false)
      : m_(m), k_(k), fp8_(fp8), experts_(experts), ragged_(ragged) {}

  // Buffer sizes from the spec (the library's size query, where present, is checked against
  // them).
  static uint64_t q_bytes(int64_t m, int64_t o) { return uint64_t(m) * uint64_t(o); }
  static uint64_t s_bytes(int64_t r, int64_t c) {
    return uint64_t((r + 127) / 128 * 128) * uint64_t((c + 3) / 4 * 4);
  }
  uint64_t device_bytes(bool need_backward) const;
  std::string alloc(bool need_backward, CakeLib *lib);
  std::string fresh_inputs(uint64_t seed, int block_exponent_range, cudaStream_t stream);

  Call call(CakeLib &lib, const SwigluForm &f, const char *program) const;
  std::string query(CakeLib &lib, const SwigluForm &f, const char *program,
                    std::string *err) const;
  std::vector<const char *> serving_programs(CakeLib &lib, const SwigluForm &f) const;
  StreamPlan plan(const SwigluForm &f) const;

  int64_t m() const { return m_; }
  int64_t k() const { return k_; }
  int experts() const { return experts_; }

 private:
  cake_swiglu_mxfp8_desc desc(CakeLib &lib, const SwigluForm &f, const char *program) const;
  cake_swiglu_mxfp8_grouped_desc mxg_desc(CakeLib &lib, const SwigluForm &f,
                                          const char *program) const;
  cake_swiglu_fp8_grouped_desc f8g_desc(CakeLib &lib, const SwigluForm &f,
                                        const char *program) const;
  Call grouped_call(CakeLib &lib, const SwigluForm &f, const char *program) const;
 public:
  // The ungrouped call once an expert with rows (routed), in one Call: the per-expert launches a
  // grouped call replaces, over the same buffers and split. MXFP8 needs experts of whole
  // 32-row units (not ragged).
  Call per_expert_call(CakeLib &lib, const SwigluForm &f) const;

 private:
  std::string grouped_query(CakeLib &lib, const SwigluForm &f, const char *program,
                            std::string *err) const;
  // The grouped buffers' sizes from the library (both orientations, the backward's when asked).
  std::string grouped_sizes(CakeLib &lib, bool need_backward, cake_swiglu_grouped_sizes *s) const;
  cake_swiglu_fp8_desc fp8_desc(CakeLib &lib, const SwigluForm &f, const char *program) const;
  // Scale bytes of the rowwise ([m, o/block]) and colwise ([o, m/block]) matrices.
  uint64_t row_s_bytes(int64_t o) const {
    return fp8_ ? uint64_t(m_) * uint64_t(o / 128) * 4 : s_bytes(m_, o / 32);
  }
  uint64_t col_s_bytes(int64_t o) const {
    return fp8_ ? uint64_t(o) * uint64_t(m_ / 128) * 4 : s_bytes(o, m_ / 32);
  }

  int64_t m_, k_;
  bool fp8_ = false;
  int experts_ = 0;
  bool ragged_ = false;
  DeviceMem in_, grad_, row_q_, row_s_, col_q_, col_s_, offsets_;
  std::vector<int32_t> host_offsets_;  // the split (fixed for the workload: one per shape)
};

}  // namespace cake_bench
