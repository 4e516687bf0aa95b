// The norm-gate forward with quantized y as a benchmark workload: one shape's buffers (x, z, w,
// y, and q, q_scale for the largest format), the plain forward and each quantized output's call
// on them, the queries naming the program each runs, and each call's bytes for its limit line.
#pragma once
#include <string>
#include <vector>

#include "cake_lib.h"
#include "options.h"
#include "timing.h"
#include "workloads.h"

namespace cake_bench {

class NgQuantWorkload {
 public:
  // rows x d BF16 rows, `heads` of them a row of the quantized matrix [rows / heads, heads * d].
  NgQuantWorkload(int64_t rows, int d, int64_t heads) : rows_(rows), d_(d), heads_(heads) {}

  // The scale bytes of `f` (docs/spec/normgate.md, "Quantized y").
  uint64_t scale_bytes(const NgQuantForm &f) const;
  uint64_t device_bytes() const;
  std::string alloc();
  std::string fresh_inputs(uint64_t seed, cudaStream_t stream);

  // The plain forward (`f` null) or the quantized one; `program` null routes.
  Call call(CakeLib &lib, const NgQuantForm *f, const char *program) const;
  // The program the call would run ("" with `err` set when it cannot run).
  std::string query(CakeLib &lib, const NgQuantForm *f, const char *program,
                    std::string *err) const;
  // The call's bytes: x, z, w read; y (plain, or +y), q and q_scale written.
  StreamPlan plan(const NgQuantForm *f) const;

 private:
  cake_normgate_desc desc(CakeLib &lib, const char *program) const;
  cake_normgate_quant_desc quant(CakeLib &lib, const NgQuantForm &f) const;

  int64_t rows_;
  int d_;
  int64_t heads_;
  DeviceMem x_, z_, w_, y_, q_, s_;
};

}  // namespace cake_bench
