// One cake-bench run: the device and the libraries it opened, the references every op is
// compared with (device copy, empty-kernel floor, limit lines), the suites of both families,
// and the rows they produce. Its members are defined by job:
//   cake_bench.cc       the run's order, setup, and the A/B and routing bookkeeping
//   references.cc       the copy reference, the launch floor, the streaming limit line
//   normgate_suite.cc   the norm-gate ops and their routing check
//   swiglu_suite.cc     the SwiGLU + MXFP8 forms and their routing check
//   ngquant_suite.cc    the quantized norm-gate forward beside the plain one
//   report.cc           the plan, the header, the tables and the JSON file
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench_kernels.h"
#include "cake_lib.h"
#include "cupti.h"
#include "options.h"
#include "results.h"
#include "timing.h"
#include "workloads.h"

namespace cake_bench {

// One norm-gate op (normgate_suite.cc).
struct NgOpDef;

// One empty kernel: the launch floor's call (alone in measure_floor, or in an op's rounds).
Call empty_call();

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}
  int run();

 private:
  // cake_bench.cc
  bool setup();
  // Whether `need` bytes fit in 92% of the free device memory (the rest is left to the
  // library and the CUDA runtime); when not, `why` gives the need and the free memory.
  bool shape_fits(uint64_t need, std::string *why);
  uint64_t next_seed() { return seed_ + (++seed_counter_) * 0x9e3779b97f4a7c15ull; }
  // One interleaved A/B row: the ratio of round medians A/B, its median and range.
  void record_ab(const std::string &family, const std::string &op, const std::string &shape,
                 const std::string &package, const std::string &label_a,
                 const std::string &label_b, const std::vector<Stat> &st);
  // A row that could not run (shape too large for free memory, op not in the build): printed
  // after the row's heading and kept in the report with its reason.
  void record_skipped(Row r, const std::string &why);
  // One routing-check row from the timings of every serving program, the routed one last.
  void record_route(RouteRow rr, const std::vector<const char *> &progs,
                    const std::vector<Stat> &st, const std::string &err);

  // references.cc
  void measure_copy();
  void measure_floor();
  StreamVariant best_variant(const std::string &key, const StreamPlan &plan);
  Call stream_call(const StreamPlan &plan, const StreamVariant &v);

  // normgate_suite.cc
  void normgate_shape(const NgShape &s);
  void normgate_op(NormgateWorkload &wl, const NgShape &s, const NgOpDef &def, int pkg,
                   bool ready, const std::string &why, std::map<std::string, Row> *done);
  bool normgate_calls(NormgateWorkload &wl, const NgOpDef &def, int package, CakeLib &lib,
                      const std::string &forced, std::vector<Call> *calls, std::string *label,
                      std::string *err);
  std::string normgate_probe(NormgateWorkload &wl, const std::vector<Call> &calls_a,
                             const std::vector<Call> &calls_b);
  std::vector<Call> normgate_limit_calls(NormgateWorkload &wl, const NgShape &s,
                                         const NgOpDef &def, std::string *variants);
  bool normgate_measure(NormgateWorkload &wl, const NgShape &s, const NgOpDef &def,
                        const std::vector<Call> &calls_a, const std::vector<Call> &calls_b,
                        const std::string &label_a, const std::string &label_b, Row *r);
  void normgate_fwd_bwd(const NgShape &s, bool ready, const std::string &why,
                        const std::map<std::string, Row> &done);
  void routing_normgate(const NgShape &s);

  // swiglu_suite.cc
  void swiglu_shape(const SwShape &s);
  void swiglu_form(SwigluWorkload &wl, const SwShape &s, const SwigluForm &f, bool ready,
                   const std::string &why);
  void swiglu_limit_only(const SwShape &s, const SwigluForm &f, const StreamPlan &pl, Row *r);
  void swiglu_measure(SwigluWorkload &wl, const SwShape &s, const SwigluForm &f,
                      const StreamPlan &pl, Launchable la, Launchable lb,
                      const std::string &label_a, const std::string &label_b, Row *r);
  void routing_swiglu(const SwShape &s);

  // ngquant_suite.cc
  void ngquant_shape(const NgShape &s);

  // report.cc
  void print_header();
  void print_tables();
  void write_json(bool final);

  Options o_;
  Cupti cupti_;
  std::string cupti_why_;
  Timer timer_;
  CakeLib lib_a_, lib_b_;
  bool two_libs_ = false;
  bool sw_fp8_ = false;  // the swiglu suite runs the FP8 blockwise family
  std::string tmp_copy_;
  cudaDeviceProp prop_{};
  int driver_version_ = 0, runtime_version_ = 0;
  double copy_gbps_ = -1;
  Stat copy_stat_, floor_stat_;
  std::string copy_how_;
  std::vector<std::pair<std::string, Stat>> copy_all_;
  uint64_t seed_ = 0, seed_counter_ = 0;
  DeviceMem sink_;
  std::map<std::string, std::pair<StreamVariant, double>> best_;  // plan key -> variant, us
  std::vector<Row> rows_;
  std::vector<AbRow> ab_rows_;
  std::vector<RouteRow> route_rows_;
  std::string date_;
};

// The plan of `opts` (shapes, ops, bytes) on stdout: cake-bench --list, no GPU needed.
void print_plan(const Options &opts);

}  // namespace cake_bench
