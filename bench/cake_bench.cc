// cake-bench: times Cake's ops through the public C ABI with a cold L2, against the limit line
// (streaming kernels that move exactly the op's bytes) and a large device copy, all in one run.
// Also: interleaved A/B of two forced programs or two builds of libcake.so, and the routing
// check (every program that serves a form, against the routed one). docs/benchmarking.md
// explains the method and every column; `cake-bench --help` lists the options.
#include <cuda_runtime.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_kernels.h"
#include "cake_lib.h"
#include "cupti.h"
#include "json_out.h"
#include "timing.h"
#include "workloads.h"

namespace cake_bench {
namespace {

// ---------------------------------------------------------------------------------------------
// Options

struct NgShape {
  int64_t t = 0, h = 0;
  int d = 128;
  std::string name() const {
    std::string s = std::to_string(t) + "x" + std::to_string(h);
    if (d != 128) s += ":" + std::to_string(d);
    return s;
  }
  int64_t rows() const { return t * h; }
};

struct SwShape {
  int64_t m = 0, k = 0;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(k); }
};

const char *kNgOps[] = {"fwd", "fwdg", "bwdg", "ckptg", "stepg_f32", "fwd+bwd"};

struct Options {
  bool quick = false, list = false, routing = false, limit = true, force_events = false;
  bool run_normgate = true, run_swiglu = true;
  bool dw_skip = false;   // normgate backward: CAKE_NORMGATE_DW_SKIP (dx, dz only)
  bool sw_eager = false;  // swiglu: eager launches with kernel time instead of graph replays
  std::vector<std::string> ng_ops;
  std::vector<SwigluForm> sw_forms;
  std::vector<NgShape> ng_shapes;
  std::vector<SwShape> sw_shapes;
  std::vector<int> packages = {0, 1};
  std::string program;           // forced program for every call it serves
  std::string ab_program[2];     // --ab-programs A,B
  // B's program: --ab-programs' second, or with --ab-libs the forced --program (one program,
  // two builds).
  const std::string &program_b() const { return ab_program[0].empty() ? program : ab_program[1]; }
  std::string ab_lib[2];         // --ab-libs A,B
  std::string lib;               // libcake.so to load
  std::string json;              // --json FILE
  int device = 0;
  double flush_mult = 2.0;
  size_t copy_bytes = size_t(1) << 30;
  uint64_t seed = 0;
  bool seed_given = false;
  int block_exp = 0;  // swiglu inputs: 0 unit normals; >0 block-scaled, 2^[-r, r] per 32
  Method method;
  Method screen{1, 6, 1};
  Method routing_method{5, 10, 2};
  int limit_finalists = 3;
  bool ab_mode() const { return !ab_program[0].empty() || !ab_lib[0].empty(); }
};

void usage() {
  std::printf(
      "cake-bench: Cake's ops through the C ABI, cold L2, against the limit line.\n"
      "\n"
      "  --quick                 smoke test: 2 shapes per family, 3 rounds x 10 launches\n"
      "  --family F              normgate | swiglu | all (default all)\n"
      "  --ops LIST              normgate ops: fwd,fwdg,bwdg,ckptg,stepg_f32,fwd+bwd (default all)\n"
      "  --forms LIST            swiglu forms: fwd_row,fwd_col,fwd_both,bwd_row,bwd_col,bwd_both\n"
      "  --ng-shapes LIST        T x H (D = 128) or TxH:D, e.g. 3534x48,260x48:256\n"
      "  --sw-shapes LIST        M x K, e.g. 4096x7168\n"
      "  --package P             det | nondet | both (default both)\n"
      "  --program NAME          force NAME for every call of an op that it serves\n"
      "  --ab-programs A,B       interleaved A/B of two forced programs (ratio = A us / B us)\n"
      "  --ab-libs PATH_A,PATH_B interleaved A/B of two builds of libcake.so (with --program:\n"
      "                          that program in both)\n"
      "  --routing               routing check: every serving program vs the routed one\n"
      "  --sw-eager              swiglu: time eager launches (CUPTI kernel time), not graphs\n"
      "  --dw-skip               normgate backward without dw (CAKE_NORMGATE_DW_SKIP): dx, dz only\n"
      "  --no-limit              skip the streaming limit line\n"
      "  --rounds N --iters N --warmup N   measurement (default 10 x 30, warm-up 3)\n"
      "  --inputs normal|blockscaled[:R]   swiglu inputs (block-scaled: 2^[-R,R] per 32, R=100)\n"
      "  --events                time eager launches with CUDA events, not CUPTI\n"
      "  --flush-mult X          L2 flush buffer = max(X, 2) x L2 size (default 2)\n"
      "  --copy-mib N            device-copy reference size (default 1024)\n"
      "  --lib PATH              libcake.so (default ../lib/libcake.so beside this binary)\n"
      "  --device N              CUDA device (default 0)\n"
      "  --seed N                input seed (default: from the clock, printed)\n"
      "  --json FILE             write every number to FILE (bench/plot.py draws it)\n"
      "  --list                  print the plan (shapes, ops, bytes) and exit; needs no GPU\n");
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool parse_ng_shape(const std::string &s, NgShape *out) {
  long long t = 0, h = 0;
  int d = 128;
  const int n = std::sscanf(s.c_str(), "%lldx%lld:%d", &t, &h, &d);
  if (n < 2 || t <= 0 || h <= 0 || d <= 0) return false;
  out->t = t;
  out->h = h;
  out->d = d;
  return true;
}

bool parse_sw_shape(const std::string &s, SwShape *out) {
  long long m = 0, k = 0;
  if (std::sscanf(s.c_str(), "%lldx%lld", &m, &k) != 2 || m <= 0 || k <= 0) return false;
  out->m = m;
  out->k = k;
  return true;
}

bool parse(int argc, char **argv, Options *o) {
  std::string family = "all", ng_shapes, sw_shapes, ops, forms, package = "both";
  bool rounds_set = false, iters_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](std::string *v) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cake-bench: %s needs a value\n", a.c_str());
        return false;
      }
      *v = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else if (a == "--quick") {
      o->quick = true;
    } else if (a == "--list") {
      o->list = true;
    } else if (a == "--routing") {
      o->routing = true;
    } else if (a == "--no-limit") {
      o->limit = false;
    } else if (a == "--events") {
      o->force_events = true;
    } else if (a == "--sw-eager") {
      o->sw_eager = true;
    } else if (a == "--dw-skip") {
      o->dw_skip = true;
    } else if (a == "--family") {
      if (!next(&family)) return false;
    } else if (a == "--ops") {
      if (!next(&ops)) return false;
    } else if (a == "--forms") {
      if (!next(&forms)) return false;
    } else if (a == "--ng-shapes") {
      if (!next(&ng_shapes)) return false;
    } else if (a == "--sw-shapes") {
      if (!next(&sw_shapes)) return false;
    } else if (a == "--package") {
      if (!next(&package)) return false;
    } else if (a == "--program") {
      if (!next(&o->program)) return false;
    } else if (a == "--ab-programs" || a == "--ab-libs") {
      if (!next(&v)) return false;
      const std::vector<std::string> p = split(v, ',');
      if (p.size() != 2) {
        std::fprintf(stderr, "cake-bench: %s takes two comma-separated values\n", a.c_str());
        return false;
      }
      std::string *dst = a == "--ab-programs" ? o->ab_program : o->ab_lib;
      dst[0] = p[0];
      dst[1] = p[1];
    } else if (a == "--rounds") {
      if (!next(&v)) return false;
      o->method.rounds = std::max(1, std::atoi(v.c_str()));
      rounds_set = true;
    } else if (a == "--iters") {
      if (!next(&v)) return false;
      o->method.iters = std::max(1, std::atoi(v.c_str()));
      iters_set = true;
    } else if (a == "--warmup") {
      if (!next(&v)) return false;
      o->method.warmup = std::max(0, std::atoi(v.c_str()));
    } else if (a == "--inputs") {
      if (!next(&v)) return false;
      if (v == "normal") {
        o->block_exp = 0;
      } else if (v.rfind("blockscaled", 0) == 0) {
        o->block_exp = v.size() > 12 ? std::atoi(v.c_str() + 12) : 100;
      } else {
        std::fprintf(stderr, "cake-bench: --inputs normal|blockscaled[:R]\n");
        return false;
      }
    } else if (a == "--flush-mult") {
      if (!next(&v)) return false;
      o->flush_mult = std::max(2.0, std::atof(v.c_str()));
    } else if (a == "--copy-mib") {
      if (!next(&v)) return false;
      o->copy_bytes = size_t(std::max(16, std::atoi(v.c_str()))) << 20;
    } else if (a == "--lib") {
      if (!next(&o->lib)) return false;
    } else if (a == "--device") {
      if (!next(&v)) return false;
      o->device = std::atoi(v.c_str());
    } else if (a == "--seed") {
      if (!next(&v)) return false;
      o->seed = std::strtoull(v.c_str(), nullptr, 0);
      o->seed_given = true;
    } else if (a == "--json") {
      if (!next(&o->json)) return false;
    } else {
      std::fprintf(stderr, "cake-bench: unknown option %s (--help lists them)\n", a.c_str());
      return false;
    }
  }
  if (family == "normgate") {
    o->run_swiglu = false;
  } else if (family == "swiglu") {
    o->run_normgate = false;
  } else if (family != "all") {
    std::fprintf(stderr, "cake-bench: --family normgate|swiglu|all\n");
    return false;
  }
  if (package == "det") {
    o->packages = {0};
  } else if (package == "nondet") {
    o->packages = {1};
  } else if (package != "both") {
    std::fprintf(stderr, "cake-bench: --package det|nondet|both\n");
    return false;
  }
  if (o->quick) {
    if (!rounds_set) o->method.rounds = 3;
    if (!iters_set) o->method.iters = 10;
    o->method.warmup = std::min(o->method.warmup, 2);
    o->screen = {1, 3, 1};
    o->routing_method = {3, 5, 1};
    o->limit_finalists = 2;
  }
  // Shapes: the default benchmark set, or the quick one.
  const char *ng_default = o->quick ? "3534x48,260x48"
                                    : "3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,"
                                      "16384x48,260x48";
  const char *sw_default =
      o->quick ? "128x128,4096x2048" : "128x128,4096x2048,4096x7168,16384x7168,131072x8192";
  for (const std::string &s : split(ng_shapes.empty() ? ng_default : ng_shapes, ',')) {
    NgShape sh;
    if (!parse_ng_shape(s, &sh)) {
      std::fprintf(stderr, "cake-bench: bad normgate shape '%s' (TxH or TxH:D)\n", s.c_str());
      return false;
    }
    o->ng_shapes.push_back(sh);
  }
  for (const std::string &s : split(sw_shapes.empty() ? sw_default : sw_shapes, ',')) {
    SwShape sh;
    if (!parse_sw_shape(s, &sh)) {
      std::fprintf(stderr, "cake-bench: bad swiglu shape '%s' (MxK)\n", s.c_str());
      return false;
    }
    o->sw_shapes.push_back(sh);
  }
  if (ops.empty()) {
    for (const char *op : kNgOps) o->ng_ops.push_back(op);
  } else {
    for (const std::string &op : split(ops, ',')) {
      if (std::find_if(std::begin(kNgOps), std::end(kNgOps),
                       [&](const char *k) { return op == k; }) == std::end(kNgOps)) {
        std::fprintf(stderr, "cake-bench: unknown normgate op '%s'\n", op.c_str());
        return false;
      }
      o->ng_ops.push_back(op);
    }
  }
  if (forms.empty()) {
    o->sw_forms = all_swiglu_forms();
  } else {
    for (const std::string &f : split(forms, ',')) {
      SwigluForm sf;
      if (!parse_swiglu_form(f, &sf)) {
        std::fprintf(stderr, "cake-bench: unknown swiglu form '%s'\n", f.c_str());
        return false;
      }
      o->sw_forms.push_back(sf);
    }
  }
  if (!o->ab_program[0].empty() && !o->ab_lib[0].empty()) {
    std::fprintf(stderr, "cake-bench: --ab-programs and --ab-libs are exclusive\n");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Results

struct Row {
  std::string family, op, shape, package, program, status = "ok", note;
  int64_t rows = 0, d = 0, m = 0, k = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  Stat time, limit;
  // SwiGLU graph replays at small shapes: the empty-kernel graph timed in the same rounds,
  // launch by launch with the op (the 128x128 target is a ratio to it).
  Stat floor;
  std::string limit_variant;
  uint64_t bytes() const { return read_bytes + write_bytes; }
  double frac_limit() const {
    return time.ok() && limit.ok() ? limit.median_us / time.median_us : -1;
  }
  double gbps() const { return time.ok() ? double(bytes()) / (time.median_us * 1e3) : -1; }
};

// Below this graph-replay time an interleaved A/B is flagged (record_ab).
constexpr double kShortGraphUs = 10.0;

struct AbRow {
  std::string family, op, shape, package, a, b, status = "ok", note;
  Stat ta, tb;
  double ratio = -1, ratio_lo = -1, ratio_hi = -1;  // A us / B us: > 1 means B is faster
};

struct RouteRow {
  std::string family, form, shape, routed, fastest, status = "ok", note;
  double routed_us = -1, fastest_us = -1;
  std::vector<std::pair<std::string, Stat>> programs;
  // The routed call is timed through the public API besides each forced program; when the
  // fastest forced program is the routed one, the two timings are the same kernel and their
  // ratio is noise, not a routing choice.
  bool flagged() const {
    return routed_us > 0 && fastest_us > 0 && fastest != routed && routed_us > 1.03 * fastest_us;
  }
};

std::string fmt(double v, const char *f) {
  if (!(v > 0) && v != 0) return "-";
  if (v < 0) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / double(1ull << 30));
  return buf;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// The run

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}
  int run();

 private:
  bool setup();
  void measure_copy();
  void measure_floor();
  StreamVariant best_variant(const std::string &key, const StreamPlan &plan);
  Call stream_call(const StreamPlan &plan, const StreamVariant &v);
  bool shape_fits(uint64_t need, std::string *why);
  void normgate_shape(const NgShape &s);
  void swiglu_shape(const SwShape &s);
  void routing_normgate(const NgShape &s);
  void routing_swiglu(const SwShape &s);
  uint64_t next_seed() { return seed_ + (++seed_counter_) * 0x9e3779b97f4a7c15ull; }
  void print_header();
  void print_tables();
  void write_json(bool final);

  Options o_;
  Cupti cupti_;
  std::string cupti_why_;
  Timer timer_;
  CakeLib lib_a_, lib_b_;
  bool two_libs_ = false;
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

  // One interleaved A/B row: the ratio of round medians A/B, its median and range.
  void record_ab(const std::string &family, const std::string &op, const std::string &shape,
                 const std::string &package, const std::string &label_a,
                 const std::string &label_b, const std::vector<Stat> &st) {
    AbRow ab;
    ab.family = family;
    ab.op = op;
    ab.shape = shape;
    ab.package = package;
    ab.a = two_libs_ ? lib_a_.path + " (" + label_a + ")" : label_a;
    ab.b = two_libs_ ? lib_b_.path + " (" + label_b + ")" : label_b;
    ab.ta = st[0];
    ab.tb = st[1];
    std::vector<double> ratios;
    for (size_t i = 0; i < st[0].round_medians_us.size(); ++i) {
      ratios.push_back(st[0].round_medians_us[i] / st[1].round_medians_us[i]);
    }
    ab.ratio = median_of(ratios);
    ab.ratio_lo = *std::min_element(ratios.begin(), ratios.end());
    ab.ratio_hi = *std::max_element(ratios.begin(), ratios.end());
    // Graph replays this short carry a systematic difference between two launchables that the
    // kernels do not have: one program against itself measured 0.95-1.05x in graph replays at
    // 128x128 and 512x512 on the H200, stable for a form within a run, its sign changing with
    // the run, and 1.000x in CUPTI kernel time (session 16 run 6, docs/performance.md).
    if (st[0].timer == "events" && std::min(st[0].median_us, st[1].median_us) < kShortGraphUs) {
      ab.note = "graph replays under " + std::to_string(int(kShortGraphUs)) +
                " us: +-5% between any two launchables; compare kernel time (eager)";
    }
    std::printf("A %.3f us  B %.3f us  A/B %.4f [%.4f, %.4f]%s\n", st[0].median_us,
                st[1].median_us, ab.ratio, ab.ratio_lo, ab.ratio_hi, ab.note.empty() ? "" : " *");
    ab_rows_.push_back(ab);
  }

  // One routing-check row from the timings of every serving program, the routed one last.
  void record_route(RouteRow rr, const std::vector<const char *> &progs,
                    const std::vector<Stat> &st, const std::string &err) {
    if (st.empty()) {
      rr.status = "error";
      rr.note = err;
      std::printf("error: %s\n", err.c_str());
      route_rows_.push_back(rr);
      return;
    }
    for (size_t i = 0; i < progs.size(); ++i) {
      rr.programs.push_back({progs[i], st[i]});
      if (rr.fastest_us < 0 || st[i].median_us < rr.fastest_us) {
        rr.fastest_us = st[i].median_us;
        rr.fastest = progs[i];
      }
    }
    rr.routed_us = st.back().median_us;
    std::printf("routed %s %.3f us, fastest %s %.3f us%s\n", rr.routed.c_str(), rr.routed_us,
                rr.fastest.c_str(), rr.fastest_us, rr.flagged() ? "  <-- ROUTING >3% SLOWER" : "");
    route_rows_.push_back(rr);
  }
};

bool Bench::setup() {
  date_ = now_utc();
  seed_ = o_.seed_given ? o_.seed
                        : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    std::fprintf(stderr, "cake-bench: no usable CUDA device (%s)\n",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return false;
  }
  cudaGetDeviceProperties(&prop_, o_.device);
  cudaDriverGetVersion(&driver_version_);
  cudaRuntimeGetVersion(&runtime_version_);
  if (!o_.force_events && !cupti_.load(&cupti_why_)) {
    std::fprintf(stderr, "cake-bench: %s\n", cupti_why_.c_str());
  }
  std::string why;
  const size_t flush = size_t(o_.flush_mult * double(prop_.l2CacheSize));
  if (!timer_.init(o_.device, flush, &cupti_, o_.force_events, &why)) {
    std::fprintf(stderr, "cake-bench: %s\n", why.c_str());
    return false;
  }
  if (!timer_.uses_cupti()) {
    std::printf("NOTE: eager launches are timed with CUDA events (%s)\n",
                timer_.timer_note().c_str());
  }
  std::string path_a = !o_.ab_lib[0].empty() ? o_.ab_lib[0]
                       : !o_.lib.empty()     ? o_.lib
                                             : default_lib_path();
  if (!lib_a_.open(path_a, o_.device, &why)) {
    std::fprintf(stderr, "cake-bench: %s\n", why.c_str());
    return false;
  }
  lib_a_.label = o_.ab_lib[0].empty() ? "" : "A";
  if (!o_.ab_lib[1].empty()) {
    std::string path_b = o_.ab_lib[1];
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(path_a.c_str(), ra) && realpath(path_b.c_str(), rb) && std::strcmp(ra, rb) == 0) {
      // The same file twice would be one mapping: load a copy so that A and B are separate.
      char tmpl[] = "/tmp/cake-bench-b-XXXXXX";
      const int fd = mkstemp(tmpl);
      if (fd >= 0) {
        close(fd);
        std::ifstream src(rb, std::ios::binary);
        std::ofstream dst(tmpl, std::ios::binary);
        dst << src.rdbuf();
        dst.close();
        tmp_copy_ = tmpl;
        path_b = tmpl;
      }
    }
    if (!lib_b_.open(path_b, o_.device, &why)) {
      std::fprintf(stderr, "cake-bench: %s\n", why.c_str());
      return false;
    }
    lib_b_.label = "B";
    two_libs_ = true;
  }
  std::string e2 = sink_.alloc(256);
  if (!e2.empty()) {
    std::fprintf(stderr, "cake-bench: %s\n", e2.c_str());
    return false;
  }
  return true;
}

// The copy reference: 1 GiB device to device, as cudaMemcpyAsync (timed as a graph replay
// and as an eager call) and as a 16-byte SM copy kernel (the best streaming variant of one
// read and one write); the fastest is the reference (copy engines can be slower than the SMs).
void Bench::measure_copy() {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  size_t bytes = std::min(o_.copy_bytes, free_b / 4);
  bytes = bytes / 4096 * 4096;
  DeviceMem src, dst;
  if (!src.alloc(bytes).empty() || !dst.alloc(bytes).empty()) return;
  launch_fill_bf16(src.ptr, bytes / 2, next_seed(), 1.0f, 0.0f, 0, timer_.stream());
  o_.copy_bytes = bytes;
  void *s = src.ptr, *d = dst.ptr;
  Call copy = [s, d, bytes](cudaStream_t st) -> std::string {
    const cudaError_t e = cudaMemcpyAsync(d, s, bytes, cudaMemcpyDeviceToDevice, st);
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
  };
  Method m{std::min(o_.method.rounds, 5), std::min(o_.method.iters, 10), 2};
  auto record = [&](const std::string &how, const Stat &st) {
    const double gbps = 2.0 * double(bytes) / (st.median_us * 1e3);
    copy_all_.push_back({how, st});
    std::printf("copy        %-28s %9.3f us  %7.1f GB/s\n", how.c_str(), st.median_us, gbps);
    if (gbps > copy_gbps_) {
      copy_gbps_ = gbps;
      copy_stat_ = st;
      copy_how_ = how;
    }
  };
  std::string err;
  cudaGraphExec_t g = nullptr;
  err = timer_.capture({copy}, &g);
  if (err.empty()) {
    Launchable l;
    l.graph = g;
    const std::vector<Stat> st = timer_.measure({l}, m, &err);
    if (!st.empty()) record("cudaMemcpyAsync, graph", st[0]);
  }
  if (g) cudaGraphExecDestroy(g);
  // Eager, with events (a copy-engine copy leaves no kernel record).
  {
    std::vector<cudaEvent_t> ev(2 * size_t(m.iters));
    for (cudaEvent_t &e : ev) cudaEventCreate(&e);
    std::vector<double> rounds;
    for (int r = 0; r < m.rounds; ++r) {
      std::vector<double> t;
      for (int i = 0; i < m.iters; ++i) {
        timer_.flush();
        cudaEventRecord(ev[2 * i], timer_.stream());
        copy(timer_.stream());
        cudaEventRecord(ev[2 * i + 1], timer_.stream());
      }
      cudaStreamSynchronize(timer_.stream());
      for (int i = 0; i < m.iters; ++i) {
        float ms = 0;
        cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]);
        t.push_back(double(ms) * 1e3);
      }
      rounds.push_back(median_of(t));
    }
    for (cudaEvent_t &e : ev) cudaEventDestroy(e);
    Stat st;
    st.round_medians_us = rounds;
    st.median_us = median_of(rounds);
    st.lo_us = *std::min_element(rounds.begin(), rounds.end());
    st.hi_us = *std::max_element(rounds.begin(), rounds.end());
    st.timer = "events";
    if (st.ok()) record("cudaMemcpyAsync, eager", st);
  }
  StreamPlan pl;
  pl.tensors = {{src.ptr, bytes, false, "src"}, {dst.ptr, bytes, true, "dst"}};
  pl.read_bytes = pl.write_bytes = bytes;
  const StreamVariant v = best_variant("copy", pl);
  Launchable l;
  l.call = stream_call(pl, v);
  const std::vector<Stat> st = timer_.measure({l}, m, &err);
  if (!st.empty()) record("SM copy kernel " + v.name(), st[0]);
}

// One empty kernel: the launch floor's call (alone in measure_floor, or in an op's rounds).
Call empty_call() {
  return [](cudaStream_t st) -> std::string {
    const cudaError_t e = launch_empty(st);
    return e == cudaSuccess ? "" : cudaGetErrorString(e);
  };
}

// The launch floor: a graph of one empty kernel, replayed and timed like the ops.
void Bench::measure_floor() {
  cudaGraphExec_t g = nullptr;
  std::string err = timer_.capture({empty_call()}, &g);
  if (err.empty()) {
    Launchable l;
    l.graph = g;
    const std::vector<Stat> st = timer_.measure({l}, o_.method, &err);
    if (!st.empty()) floor_stat_ = st[0];
  }
  if (g) cudaGraphExecDestroy(g);
  if (!err.empty()) std::fprintf(stderr, "cake-bench: empty-kernel floor: %s\n", err.c_str());
}

Call Bench::stream_call(const StreamPlan &plan, const StreamVariant &v) {
  const int sms = timer_.sm_count();
  void *sink = sink_.ptr;
  return [plan, v, sms, sink](cudaStream_t s) -> std::string {
    const cudaError_t e = launch_stream(plan, v, sms, sink, s);
    return e == cudaSuccess ? "" : std::string("streaming kernel: ") + cudaGetErrorString(e);
  };
}

// The limit line of one plan: screen every variant briefly, then measure the best few
// interleaved with the full method; the fastest is kept for this plan key.
StreamVariant Bench::best_variant(const std::string &key, const StreamPlan &plan) {
  auto it = best_.find(key);
  if (it != best_.end()) return it->second.first;
  const std::vector<StreamVariant> all = all_stream_variants();
  std::vector<std::pair<double, size_t>> screened;
  for (size_t i = 0; i < all.size(); ++i) {
    Launchable l;
    l.call = stream_call(plan, all[i]);
    std::string err;
    const std::vector<Stat> st = timer_.measure({l}, o_.screen, &err);
    if (!st.empty()) screened.push_back({st[0].median_us, i});
  }
  std::sort(screened.begin(), screened.end());
  const size_t nf = std::min<size_t>(size_t(o_.limit_finalists), screened.size());
  std::vector<Launchable> finalists;
  for (size_t i = 0; i < nf; ++i) {
    Launchable l;
    l.call = stream_call(plan, all[screened[i].second]);
    finalists.push_back(l);
  }
  StreamVariant best = screened.empty() ? StreamVariant{} : all[screened[0].second];
  double best_us = screened.empty() ? -1 : screened[0].first;
  std::string err;
  Method m = o_.method;
  m.rounds = std::max(1, m.rounds / 2);
  const std::vector<Stat> st = nf > 1 ? timer_.measure(finalists, m, &err) : std::vector<Stat>{};
  for (size_t i = 0; i < st.size(); ++i) {
    if (st[i].ok() && (i == 0 || st[i].median_us < best_us)) {
      best_us = st[i].median_us;
      best = all[screened[i].second];
    }
  }
  best_[key] = {best, best_us};
  return best;
}

bool Bench::shape_fits(uint64_t need, std::string *why) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  if (double(need) > 0.92 * double(free_b)) {
    *why = "needs " + gib(need) + ", " + gib(free_b) + " free";
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Normgate

struct NgOpDef {
  std::string name;
  bool graph;
  std::vector<NgCall> calls;
  cake_dtype_t dw;
  bool per_package;
};

NgOpDef ng_op(const std::string &name) {
  if (name == "fwd") return {name, false, {NgCall::kFwd}, CAKE_DTYPE_BF16, false};
  if (name == "fwdg") return {name, true, {NgCall::kFwd}, CAKE_DTYPE_BF16, false};
  if (name == "bwdg") return {name, true, {NgCall::kBwd}, CAKE_DTYPE_BF16, true};
  if (name == "ckptg") {
    return {name, true, {NgCall::kFwd, NgCall::kFwd, NgCall::kBwd}, CAKE_DTYPE_BF16, true};
  }
  return {name, true, {NgCall::kFwd, NgCall::kFwd, NgCall::kBwd}, CAKE_DTYPE_F32, true};
}

const char *pkg_name(int p) { return p == 0 ? "det" : "nondet"; }

void Bench::normgate_shape(const NgShape &s) {
  NormgateWorkload wl(s.rows(), s.d);
  if (o_.dw_skip) wl.set_backward_flags(CAKE_NORMGATE_DW_SKIP);
  std::string why;
  const bool fits = shape_fits(wl.device_bytes(), &why);
  std::vector<CakeLib *> libs = {&lib_a_};
  if (two_libs_) libs.push_back(&lib_b_);
  if (fits) {
    const std::string e = wl.alloc(libs);
    if (!e.empty()) why = e;
  }
  const bool ready = fits && why.empty();
  auto base_row = [&](const std::string &op, const std::string &pkg) {
    Row r;
    r.family = "normgate";
    r.op = op;
    r.shape = s.name();
    r.package = pkg;
    r.rows = s.rows();
    r.d = s.d;
    return r;
  };
  std::map<std::string, Row> done;  // op/pkg -> row, for the derived fwd+bwd
  for (const std::string &opname : o_.ng_ops) {
    if (opname == "fwd+bwd") continue;
    const NgOpDef def = ng_op(opname);
    std::vector<int> pkgs = def.per_package ? o_.packages : std::vector<int>{-1};
    for (int pkg : pkgs) {
      const int p = pkg < 0 ? 0 : pkg;
      Row r = base_row(opname, pkg < 0 ? "-" : pkg_name(pkg));
      for (NgCall c : def.calls) {
        const StreamPlan pl = wl.plan(c, def.dw);
        r.read_bytes += pl.read_bytes;
        r.write_bytes += pl.write_bytes;
      }
      std::printf("  normgate %-9s %-10s %-6s ", opname.c_str(), s.name().c_str(),
                  r.package.c_str());
      std::fflush(stdout);
      if (!ready) {
        r.status = "skipped";
        r.note = why;
        std::printf("skipped: %s\n", why.c_str());
        rows_.push_back(r);
        continue;
      }
      // The A side (and, for A/B, the B side): calls, each with its program where forced.
      auto build = [&](CakeLib &lib, const std::string &forced, std::vector<Call> *calls,
                       std::string *label, std::string *err) {
        bool any_forced = forced.empty();
        std::string fwd_name, bwd_name;
        for (NgCall c : def.calls) {
          const char *prog = nullptr;
          std::string qerr;
          if (!forced.empty() &&
              !wl.query(lib, c, p, def.dw, forced.c_str(), &qerr).empty()) {
            prog = forced.c_str();
            any_forced = true;
          }
          const std::string name = wl.query(lib, c, p, def.dw, prog, &qerr);
          if (name.empty()) {
            *err = qerr;
            return false;
          }
          (c == NgCall::kFwd ? fwd_name : bwd_name) = name;
          calls->push_back(wl.call(lib, c, p, def.dw, prog));
        }
        if (!any_forced) {
          *err = "program " + forced + " serves no call of this op";
          return false;
        }
        *label = !fwd_name.empty() && !bwd_name.empty() ? fwd_name + " + " + bwd_name
                                                        : fwd_name + bwd_name;
        return true;
      };
      std::vector<Call> calls_a, calls_b;
      std::string label_a, label_b, err;
      const bool has = def.calls.back() == NgCall::kBwd ? lib_a_.has_normgate_backward()
                                                         : lib_a_.has_normgate_forward();
      CakeLib &lib_b = two_libs_ ? lib_b_ : lib_a_;
      const std::string &prog_a = o_.ab_program[0].empty() ? o_.program : o_.ab_program[0];
      bool ok = has && build(lib_a_, prog_a, &calls_a, &label_a, &err);
      if (!has) err = "not in this build (" + lib_a_.missing() + ")";
      if (ok && o_.ab_mode()) ok = build(lib_b, o_.program_b(), &calls_b, &label_b, &err);
      // Probe: one eager run of every call, checked, before anything is timed.
      if (ok) err = wl.fresh_inputs(next_seed(), timer_.stream());
      if (ok && err.empty()) {
        for (const std::vector<Call> *cs : {&calls_a, &calls_b}) {
          for (const Call &c : *cs) {
            if (err.empty()) err = c(timer_.stream());
          }
        }
        const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
        if (err.empty() && ce != cudaSuccess) err = cudaGetErrorString(ce);
      }
      ok = ok && err.empty();
      r.program = label_a;
      if (!ok) {
        r.status = "not available";
        r.note = err;
        std::printf("not available: %s\n", err.c_str());
        rows_.push_back(r);
        continue;
      }
      // Cake side as launchables.
      std::vector<cudaGraphExec_t> graphs;
      auto to_launchable = [&](const std::vector<Call> &calls, Launchable *l) {
        if (!def.graph) {
          l->call = calls[0];
          return std::string();
        }
        cudaGraphExec_t g = nullptr;
        const std::string e = timer_.capture(calls, &g);
        if (g) graphs.push_back(g);
        l->graph = g;
        return e;
      };
      Launchable la, lb, llim;
      err = to_launchable(calls_a, &la);
      if (err.empty() && o_.ab_mode()) err = to_launchable(calls_b, &lb);
      // Limit side: the best streaming variant of each call's plan, in the same form.
      bool with_limit = o_.limit && !o_.ab_mode() && err.empty();
      if (with_limit) {
        std::vector<Call> lim_calls;
        std::string vname;
        for (NgCall c : def.calls) {
          const StreamPlan pl = wl.plan(c, def.dw);
          const std::string key = "ng/" + s.name() + (c == NgCall::kFwd ? "/fwd" : "/bwd") +
                                  (c == NgCall::kBwd && def.dw == CAKE_DTYPE_F32 ? "f32" : "");
          const StreamVariant v = best_variant(key, pl);
          lim_calls.push_back(stream_call(pl, v));
          if (vname.find(v.name()) == std::string::npos) {
            vname += (vname.empty() ? "" : " + ") + v.name();
          }
        }
        r.limit_variant = vname;
        err = to_launchable(lim_calls, &llim);
      }
      std::vector<Stat> st;
      if (err.empty()) {
        wl.fresh_inputs(next_seed(), timer_.stream());
        std::vector<Launchable> items = {la};
        if (o_.ab_mode()) items.push_back(lb);
        if (with_limit) items.push_back(llim);
        st = timer_.measure(items, o_.method, &err);
      }
      for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
      if (st.empty()) {
        r.status = "error";
        r.note = err;
        std::printf("error: %s\n", err.c_str());
        rows_.push_back(r);
        continue;
      }
      if (o_.ab_mode()) {
        record_ab("normgate", opname, s.name(), r.package, label_a, label_b, st);
        r.time = st[0];
      } else {
        r.time = st[0];
        if (with_limit) r.limit = st[1];
        std::printf("%9.3f us (%s, spread %.1f%%)  limit %s us  %s of limit\n", r.time.median_us,
                    r.time.timer.c_str(), r.time.spread_pct(),
                    fmt(r.limit.median_us, "%.3f").c_str(),
                    fmt(r.frac_limit() * 100, "%.1f%%").c_str());
      }
      done[opname + "/" + r.package] = r;
      rows_.push_back(r);
    }
  }
  // fwd + bwd = fwdg + bwdg, derived.
  if (std::find(o_.ng_ops.begin(), o_.ng_ops.end(), "fwd+bwd") != o_.ng_ops.end() &&
      !o_.ab_mode()) {
    for (int pkg : o_.packages) {
      Row r = base_row("fwd+bwd", pkg_name(pkg));
      auto f = done.find("fwdg/-");
      auto b = done.find(std::string("bwdg/") + pkg_name(pkg));
      if (f == done.end() || b == done.end() || !f->second.time.ok() || !b->second.time.ok()) {
        r.status = "not available";
        r.note = "needs fwdg and bwdg at this shape";
        if (!ready) {
          r.status = "skipped";
          r.note = why;
        }
        rows_.push_back(r);
        continue;
      }
      const Row &fr = f->second, &br = b->second;
      r.program = fr.program + " + " + br.program;
      r.read_bytes = fr.read_bytes + br.read_bytes;
      r.write_bytes = fr.write_bytes + br.write_bytes;
      r.time.median_us = fr.time.median_us + br.time.median_us;
      r.time.lo_us = fr.time.lo_us + br.time.lo_us;
      r.time.hi_us = fr.time.hi_us + br.time.hi_us;
      r.time.timer = "derived";
      if (fr.limit.ok() && br.limit.ok()) {
        r.limit.median_us = fr.limit.median_us + br.limit.median_us;
        r.limit.lo_us = fr.limit.lo_us + br.limit.lo_us;
        r.limit.hi_us = fr.limit.hi_us + br.limit.hi_us;
        r.limit_variant = fr.limit_variant + " + " + br.limit_variant;
      }
      std::printf("  normgate %-9s %-10s %-6s %9.3f us (fwdg + bwdg)  %s of limit\n", "fwd+bwd",
                  s.name().c_str(), r.package.c_str(), r.time.median_us,
                  fmt(r.frac_limit() * 100, "%.1f%%").c_str());
      rows_.push_back(r);
    }
  }
}

void Bench::routing_normgate(const NgShape &s) {
  NormgateWorkload wl(s.rows(), s.d);
  if (o_.dw_skip) wl.set_backward_flags(CAKE_NORMGATE_DW_SKIP);
  std::string why;
  if (!shape_fits(wl.device_bytes(), &why) || !(why = wl.alloc({&lib_a_})).empty()) {
    RouteRow rr;
    rr.family = "normgate";
    rr.shape = s.name();
    rr.status = "skipped";
    rr.note = why;
    route_rows_.push_back(rr);
    return;
  }
  struct Form {
    std::string name;
    NgCall kind;
    int pkg;
    cake_dtype_t dw;
  };
  std::vector<Form> forms = {{"fwd", NgCall::kFwd, 0, CAKE_DTYPE_BF16}};
  for (int p : o_.packages) {
    for (cake_dtype_t dt : {CAKE_DTYPE_BF16, CAKE_DTYPE_F32}) {
      forms.push_back({std::string("bwd_") + pkg_name(p) + (dt == CAKE_DTYPE_F32 ? "_f32" : "_bf16"),
                       NgCall::kBwd, p, dt});
    }
  }
  for (const Form &f : forms) {
    RouteRow rr;
    rr.family = "normgate";
    rr.form = f.name;
    rr.shape = s.name();
    std::printf("  routing normgate %-16s %-10s ", f.name.c_str(), s.name().c_str());
    std::string err;
    const bool has = f.kind == NgCall::kFwd ? lib_a_.has_normgate_forward()
                                            : lib_a_.has_normgate_backward();
    if (has) rr.routed = wl.query(lib_a_, f.kind, f.pkg, f.dw, nullptr, &err);
    if (!has || rr.routed.empty()) {
      rr.status = "not available";
      rr.note = has ? err : "not in this build (" + lib_a_.missing() + ")";
      std::printf("not available: %s\n", rr.note.c_str());
      route_rows_.push_back(rr);
      continue;
    }
    const std::vector<const char *> progs = wl.serving_programs(lib_a_, f.kind, f.pkg, f.dw);
    std::vector<Launchable> items;
    for (const char *p : progs) {
      Launchable l;
      l.call = wl.call(lib_a_, f.kind, f.pkg, f.dw, p);
      items.push_back(l);
    }
    Launchable routed;
    routed.call = wl.call(lib_a_, f.kind, f.pkg, f.dw, nullptr);
    items.push_back(routed);
    wl.fresh_inputs(next_seed(), timer_.stream());
    const std::vector<Stat> st = timer_.measure(items, o_.routing_method, &err);
    record_route(rr, progs, st, err);
  }
}

// ---------------------------------------------------------------------------------------------
// SwiGLU + MXFP8

void Bench::swiglu_shape(const SwShape &s) {
  SwigluWorkload wl(s.m, s.k);
  bool need_bwd = false;
  for (const SwigluForm &f : o_.sw_forms) need_bwd |= f.backward;
  std::string why;
  const bool fits = shape_fits(wl.device_bytes(need_bwd), &why);
  if (fits) {
    const std::string e = wl.alloc(need_bwd, &lib_a_);
    if (!e.empty()) why = e;
  }
  const bool ready = fits && why.empty();
  for (const SwigluForm &f : o_.sw_forms) {
    Row r;
    r.family = "swiglu";
    r.op = f.name();
    r.shape = s.name();
    r.package = "-";
    r.m = s.m;
    r.k = s.k;
    const StreamPlan pl = wl.plan(f);
    r.read_bytes = pl.read_bytes;
    r.write_bytes = pl.write_bytes;
    std::printf("  swiglu   %-9s %-12s ", r.op.c_str(), r.shape.c_str());
    std::fflush(stdout);
    if (!ready) {
      r.status = "skipped";
      r.note = why;
      std::printf("skipped: %s\n", why.c_str());
      rows_.push_back(r);
      continue;
    }
    std::string err;
    CakeLib &lib_b = two_libs_ ? lib_b_ : lib_a_;
    const std::string &prog_a = o_.ab_program[0].empty() ? o_.program : o_.ab_program[0];
    Launchable la, lb, llim;
    std::string label_a, label_b;
    bool ok = lib_a_.has_swiglu();
    if (!ok) err = "not in this build (" + lib_a_.missing() + ")";
    if (ok) {
      label_a = wl.query(lib_a_, f, prog_a.empty() ? nullptr : prog_a.c_str(), &err);
      ok = !label_a.empty();
      la.call = wl.call(lib_a_, f, prog_a.empty() ? nullptr : prog_a.c_str());
    }
    if (ok && o_.ab_mode()) {
      const std::string &pb = o_.program_b();
      label_b = wl.query(lib_b, f, pb.empty() ? nullptr : pb.c_str(), &err);
      ok = !label_b.empty();
      lb.call = wl.call(lib_b, f, pb.empty() ? nullptr : pb.c_str());
    }
    if (ok) {
      err = wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
      if (err.empty()) err = la.call(timer_.stream());
      if (err.empty() && o_.ab_mode()) err = lb.call(timer_.stream());
      const cudaError_t ce = cudaStreamSynchronize(timer_.stream());
      if (err.empty() && ce != cudaSuccess) err = cudaGetErrorString(ce);
      ok = err.empty();
    }
    r.program = label_a;
    if (!ok) {
      r.status = "not available";
      r.note = err;
      std::printf("not available: %s\n", err.c_str());
      // The limit line is still worth having before the op exists.
      if (o_.limit && !o_.ab_mode()) {
        const StreamVariant v = best_variant("sw/" + s.name() + "/" + f.name(), pl);
        llim.call = stream_call(pl, v);
        std::string e2;
        cudaGraphExec_t g = nullptr;
        if (!o_.sw_eager) {
          e2 = timer_.capture({llim.call}, &g);
          llim.graph = g;
        }
        std::vector<Stat> st;
        if (e2.empty()) st = timer_.measure({llim}, o_.method, &e2);
        if (g) cudaGraphExecDestroy(g);
        if (!st.empty()) {
          r.limit = st[0];
          r.limit_variant = v.name();
          std::printf("  %*s limit %.3f us (%s)\n", 24, "", r.limit.median_us,
                      r.limit_variant.c_str());
        }
      }
      rows_.push_back(r);
      continue;
    }
    const bool with_limit = o_.limit && !o_.ab_mode();
    if (with_limit) {
      const StreamVariant v = best_variant("sw/" + s.name() + "/" + f.name(), pl);
      llim.call = stream_call(pl, v);
      r.limit_variant = v.name();
    }
    // Graph replays (the default, as the peers are timed) or eager kernel time. Up to 2^20
    // elements the empty-kernel floor is a third item of the same rounds: a machine's state
    // moves a 5 us replay by several percent, a floor timed apart from the op with it.
    Launchable lfloor;
    const bool with_floor = !o_.sw_eager && !o_.ab_mode() && s.m * s.k <= (int64_t(1) << 20);
    if (with_floor) lfloor.call = empty_call();
    std::vector<cudaGraphExec_t> graphs;
    if (!o_.sw_eager) {
      for (Launchable *l : {&la, &lb, &llim, &lfloor}) {
        if (!l->call || !err.empty()) continue;
        cudaGraphExec_t g = nullptr;
        err = timer_.capture({l->call}, &g);
        if (g) graphs.push_back(g);
        l->graph = g;
      }
    }
    std::vector<Stat> st;
    if (err.empty()) {
      wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
      std::vector<Launchable> items = {la};
      if (o_.ab_mode()) items.push_back(lb);
      if (with_limit) items.push_back(llim);
      if (with_floor && lfloor.graph) items.push_back(lfloor);
      st = timer_.measure(items, o_.method, &err);
    }
    for (cudaGraphExec_t g : graphs) cudaGraphExecDestroy(g);
    if (st.empty()) {
      r.status = "error";
      r.note = err;
      std::printf("error: %s\n", err.c_str());
      rows_.push_back(r);
      continue;
    }
    r.time = st[0];
    if (o_.ab_mode()) {
      record_ab("swiglu", f.name(), s.name(), "-", label_a, label_b, st);
    } else {
      if (with_limit) r.limit = st[1];
      if (with_floor && lfloor.graph) r.floor = st[with_limit ? 2 : 1];
      std::printf("%9.3f us (%s, spread %.1f%%)  limit %s us  %s of limit", r.time.median_us,
                  r.time.timer.c_str(), r.time.spread_pct(),
                  fmt(r.limit.median_us, "%.3f").c_str(),
                  fmt(r.frac_limit() * 100, "%.1f%%").c_str());
      if (r.floor.ok()) {
        std::printf("  floor %.3f us (%.2fx)", r.floor.median_us,
                    r.time.median_us / r.floor.median_us);
      }
      std::printf("\n");
    }
    rows_.push_back(r);
  }
}

void Bench::routing_swiglu(const SwShape &s) {
  SwigluWorkload wl(s.m, s.k);
  bool need_bwd = false;
  for (const SwigluForm &f : o_.sw_forms) need_bwd |= f.backward;
  std::string why;
  if (!shape_fits(wl.device_bytes(need_bwd), &why) ||
      !(why = wl.alloc(need_bwd, &lib_a_)).empty()) {
    RouteRow rr;
    rr.family = "swiglu";
    rr.shape = s.name();
    rr.status = "skipped";
    rr.note = why;
    route_rows_.push_back(rr);
    return;
  }
  for (const SwigluForm &f : o_.sw_forms) {
    RouteRow rr;
    rr.family = "swiglu";
    rr.form = f.name();
    rr.shape = s.name();
    std::printf("  routing swiglu   %-16s %-12s ", f.name().c_str(), s.name().c_str());
    std::string err;
    if (lib_a_.has_swiglu()) rr.routed = wl.query(lib_a_, f, nullptr, &err);
    if (rr.routed.empty()) {
      rr.status = "not available";
      rr.note = lib_a_.has_swiglu() ? err : "not in this build (" + lib_a_.missing() + ")";
      std::printf("not available: %s\n", rr.note.c_str());
      route_rows_.push_back(rr);
      continue;
    }
    const std::vector<const char *> progs = wl.serving_programs(lib_a_, f);
    std::vector<Launchable> items;
    for (const char *p : progs) {
      Launchable l;
      l.call = wl.call(lib_a_, f, p);
      items.push_back(l);
    }
    Launchable routed;
    routed.call = wl.call(lib_a_, f, nullptr);
    items.push_back(routed);
    wl.fresh_inputs(next_seed(), o_.block_exp, timer_.stream());
    const std::vector<Stat> st = timer_.measure(items, o_.routing_method, &err);
    record_route(rr, progs, st, err);
  }
}

// ---------------------------------------------------------------------------------------------
// Reports

void Bench::print_header() {
  std::printf("cake-bench  %s\n", date_.c_str());
  std::printf("device      %s (cc %d.%d, %d SMs, L2 %.1f MiB, %.1f GiB), driver %d, runtime %d\n",
              prop_.name, prop_.major, prop_.minor, prop_.multiProcessorCount,
              double(prop_.l2CacheSize) / (1 << 20), double(prop_.totalGlobalMem) / (1 << 30),
              driver_version_, runtime_version_);
  std::printf("cake        %s: version %d, table sm%d, image %s, %d programs\n",
              lib_a_.path.c_str(), lib_a_.version(), int(lib_a_.info.table), lib_a_.info.image,
              lib_a_.info.program_count);
  if (!lib_a_.missing().empty()) std::printf("            not in this build: %s\n", lib_a_.missing().c_str());
  if (two_libs_) {
    std::printf("cake B      %s: version %d, table sm%d, image %s\n", lib_b_.path.c_str(),
                lib_b_.version(), int(lib_b_.info.table), lib_b_.info.image);
  }
  std::printf("timer       eager: %s; graphs: CUDA events around each replay\n",
              timer_.timer_note().c_str());
  std::printf("cold L2     %.1f MiB flush written before every timed launch\n",
              double(timer_.flush_bytes()) / (1 << 20));
  std::printf("method      %d rounds x %d launches (warm-up %d); median of round medians\n",
              o_.method.rounds, o_.method.iters, o_.method.warmup);
  std::printf("seed        %llu\n", static_cast<unsigned long long>(seed_));
}

void Bench::print_tables() {
  std::printf("\n== results (us: median of round medians; spread: (max - min) / median of "
              "round medians; of limit: limit us / op us; of copy: op GB/s / copy GB/s)\n");
  std::printf("copy reference: %.1f GB/s (%s, %s, read + write counted); "
              "empty-kernel graph replay: %s us\n",
              copy_gbps_, copy_how_.c_str(), gib(o_.copy_bytes).c_str(),
              fmt(floor_stat_.median_us, "%.3f").c_str());
  std::printf("%-8s %-9s %-12s %-6s %10s %7s %10s %8s %8s %8s  %-6s %s\n", "family", "op",
              "shape", "pkg", "us", "spread", "limit_us", "of_limit", "GB/s", "of_copy", "timer",
              "program / note");
  for (const Row &r : rows_) {
    const double gbps = r.gbps();
    std::string tail = r.status == "ok" ? r.program : r.status + ": " + r.note;
    std::printf("%-8s %-9s %-12s %-6s %10s %7s %10s %8s %8s %8s  %-6s %s\n", r.family.c_str(),
                r.op.c_str(), r.shape.c_str(), r.package.c_str(),
                fmt(r.time.median_us, "%.3f").c_str(),
                r.time.ok() ? fmt(r.time.spread_pct(), "%.1f%%").c_str() : "-",
                fmt(r.limit.median_us, "%.3f").c_str(),
                fmt(r.frac_limit() * 100, "%.1f%%").c_str(), fmt(gbps, "%.0f").c_str(),
                fmt(gbps > 0 && copy_gbps_ > 0 ? 100 * gbps / copy_gbps_ : -1, "%.1f%%").c_str(),
                r.time.ok() ? r.time.timer.c_str() : "-", tail.c_str());
  }
  if (!ab_rows_.empty()) {
    std::printf("\n== interleaved A/B (ratio = A us / B us per round; > 1: B faster)\n");
    std::printf("%-8s %-9s %-12s %-6s %10s %10s %8s %19s\n", "family", "op", "shape", "pkg",
                "A_us", "B_us", "A/B", "[min, max]");
    for (const AbRow &a : ab_rows_) {
      std::printf("%-8s %-9s %-12s %-6s %10.3f %10.3f %8.4f [%8.4f, %8.4f]%s\n",
                  a.family.c_str(), a.op.c_str(), a.shape.c_str(), a.package.c_str(),
                  a.ta.median_us, a.tb.median_us, a.ratio, a.ratio_lo, a.ratio_hi,
                  a.note.empty() ? "" : " *");
    }
    if (!ab_rows_.empty()) {
      std::printf("A = %s\nB = %s\n", ab_rows_[0].a.c_str(), ab_rows_[0].b.c_str());
    }
    for (const AbRow &a : ab_rows_) {
      if (a.note.empty()) continue;
      std::printf("* %s\n", a.note.c_str());
      break;
    }
  }
  if (!route_rows_.empty()) {
    int flagged = 0;
    std::printf("\n== routing check (kernel time of every program that serves the form; flag: "
                "routed > 1.03 x fastest)\n");
    std::printf("%-8s %-16s %-12s %-34s %10s %-34s %10s %7s\n", "family", "form", "shape",
                "routed", "us", "fastest", "us", "ratio");
    for (const RouteRow &r : route_rows_) {
      if (r.status != "ok") {
        std::printf("%-8s %-16s %-12s %s: %s\n", r.family.c_str(), r.form.c_str(),
                    r.shape.c_str(), r.status.c_str(), r.note.c_str());
        continue;
      }
      flagged += r.flagged();
      std::printf("%-8s %-16s %-12s %-34s %10.3f %-34s %10.3f %7.4f%s\n", r.family.c_str(),
                  r.form.c_str(), r.shape.c_str(), r.routed.c_str(), r.routed_us,
                  r.fastest.c_str(), r.fastest_us, r.routed_us / r.fastest_us,
                  r.flagged() ? "  FLAG" : "");
    }
    std::printf("routing: %d flagged\n", flagged);
  }
}

void json_stat(JsonOut &j, const std::string &k, const Stat &s) {
  j.key(k).obj();
  j.kn("median_us", s.median_us).kn("lo_us", s.lo_us).kn("hi_us", s.hi_us);
  j.kn("spread_pct", s.ok() ? s.spread_pct() : -1).kv("timer", s.timer);
  j.key("round_medians_us").arr();
  for (double v : s.round_medians_us) j.num(v);
  j.end().end();
}

void Bench::write_json(bool final) {
  if (o_.json.empty()) return;
  std::string out;
  JsonOut j(&out);
  j.obj();
  j.kv("tool", "cake-bench").kv("date", date_);
  j.key("device").obj();
  j.kv("name", prop_.name).ki("cc_major", prop_.major).ki("cc_minor", prop_.minor);
  j.ki("sm_count", prop_.multiProcessorCount).ki("l2_bytes", prop_.l2CacheSize);
  j.ki("memory_bytes", (long long)prop_.totalGlobalMem);
  j.ki("driver_version", driver_version_).ki("runtime_version", runtime_version_);
  j.end();
  j.key("cake").obj();
  j.kv("lib", lib_a_.path).ki("version", lib_a_.version()).ki("table", int(lib_a_.info.table));
  j.kv("image", lib_a_.info.image).ki("program_count", lib_a_.info.program_count);
  j.kv("missing", lib_a_.missing());
  if (two_libs_) j.kv("lib_b", lib_b_.path);
  j.end();
  j.key("method").obj();
  j.kv("eager_timer", timer_.timer_note()).kv("graph_timer", "CUDA events around each replay");
  j.ki("flush_bytes", (long long)timer_.flush_bytes()).ki("rounds", o_.method.rounds);
  j.ki("iters", o_.method.iters).ki("warmup", o_.method.warmup);
  j.ki("seed", (long long)seed_).kb("quick", o_.quick);
  j.kv("swiglu_inputs", o_.block_exp ? "blockscaled:" + std::to_string(o_.block_exp) : "normal");
  j.kv("swiglu_timing", o_.sw_eager ? "eager" : "graph");
  j.kv("normgate_backward_dw", o_.dw_skip ? "skipped" : "computed");
  j.end();
  j.key("copy").obj();
  j.ki("bytes", (long long)o_.copy_bytes).kn("gbps", copy_gbps_).kv("reference", copy_how_);
  json_stat(j, "time", copy_stat_);
  j.key("all").arr();
  for (const auto &c : copy_all_) {
    j.obj().kv("how", c.first).kn("gbps", 2.0 * double(o_.copy_bytes) / (c.second.median_us * 1e3));
    json_stat(j, "time", c.second);
    j.end();
  }
  j.end().end();
  json_stat(j, "empty_kernel_graph", floor_stat_);
  j.key("results").arr();
  for (const Row &r : rows_) {
    j.obj();
    j.kv("family", r.family).kv("op", r.op).kv("shape", r.shape).kv("package", r.package);
    if (r.family == "normgate") {
      j.ki("rows", r.rows).ki("d", r.d);
    } else {
      j.ki("m", r.m).ki("k", r.k);
    }
    j.kv("program", r.program).kv("status", r.status).kv("note", r.note);
    j.ki("read_bytes", (long long)r.read_bytes).ki("write_bytes", (long long)r.write_bytes);
    json_stat(j, "time", r.time);
    json_stat(j, "limit", r.limit);
    if (r.floor.ok()) json_stat(j, "floor", r.floor);
    j.kv("limit_variant", r.limit_variant);
    j.kn("frac_limit", r.frac_limit()).kn("gbps", r.gbps());
    j.kn("frac_copy", r.gbps() > 0 && copy_gbps_ > 0 ? r.gbps() / copy_gbps_ : -1);
    j.end();
  }
  j.end();
  j.key("ab").arr();
  for (const AbRow &a : ab_rows_) {
    j.obj();
    j.kv("family", a.family).kv("op", a.op).kv("shape", a.shape).kv("package", a.package);
    j.kv("a", a.a).kv("b", a.b);
    json_stat(j, "a_time", a.ta);
    json_stat(j, "b_time", a.tb);
    j.kn("ratio_a_over_b", a.ratio).kn("ratio_lo", a.ratio_lo).kn("ratio_hi", a.ratio_hi);
    j.kv("note", a.note);
    j.end();
  }
  j.end();
  j.key("routing").arr();
  for (const RouteRow &r : route_rows_) {
    j.obj();
    j.kv("family", r.family).kv("form", r.form).kv("shape", r.shape).kv("status", r.status);
    j.kv("note", r.note).kv("routed", r.routed).kn("routed_us", r.routed_us);
    j.kv("fastest", r.fastest).kn("fastest_us", r.fastest_us).kb("flagged", r.flagged());
    j.key("programs").arr();
    for (const auto &p : r.programs) {
      j.obj().kv("name", p.first);
      json_stat(j, "time", p.second);
      j.end();
    }
    j.end().end();
  }
  j.end();
  j.end();
  out += "\n";
  // Written to a temporary name and renamed: a run stopped half-way leaves the last whole file.
  const std::string tmp = o_.json + ".tmp";
  std::ofstream f(tmp);
  f << out;
  f.close();
  if (!f || std::rename(tmp.c_str(), o_.json.c_str()) != 0) {
    std::fprintf(stderr, "cake-bench: could not write %s\n", o_.json.c_str());
  } else if (final) {
    std::printf("wrote %s\n", o_.json.c_str());
  }
}

int Bench::run() {
  if (o_.list) {
    std::printf("plan (no GPU needed):\n");
    if (o_.run_normgate) {
      for (const NgShape &s : o_.ng_shapes) {
        const uint64_t t = uint64_t(s.rows()) * s.d * 2;
        std::printf("  normgate %-12s rows %-8lld d %-5d fwd: read %llu, write %llu bytes; "
                    "bwd: read %llu, write %llu (+dw)\n",
                    s.name().c_str(), (long long)s.rows(), s.d,
                    (unsigned long long)(2 * t + s.d * 2), (unsigned long long)t,
                    (unsigned long long)(3 * t + s.d * 2), (unsigned long long)(2 * t));
      }
      std::printf("  ops:");
      for (const std::string &op : o_.ng_ops) std::printf(" %s", op.c_str());
      std::printf("\n");
    }
    if (o_.run_swiglu) {
      for (const SwShape &s : o_.sw_shapes) {
        for (const SwigluForm &f : o_.sw_forms) {
          const int64_t o = f.backward ? 2 * s.k : s.k;
          uint64_t rd = uint64_t(s.m) * 2 * s.k * 2 + (f.backward ? uint64_t(s.m) * s.k * 2 : 0);
          uint64_t wr = 0;
          if (f.orientation & 1)
            wr += SwigluWorkload::q_bytes(s.m, o) + SwigluWorkload::s_bytes(s.m, o / 32);
          if (f.orientation & 2)
            wr += SwigluWorkload::q_bytes(s.m, o) + SwigluWorkload::s_bytes(o, s.m / 32);
          std::printf("  swiglu   %-12s %-9s read %llu, write %llu bytes\n", s.name().c_str(),
                      f.name().c_str(), (unsigned long long)rd, (unsigned long long)wr);
        }
      }
    }
    std::printf("  streaming variants: %zu\n", all_stream_variants().size());
    return 0;
  }
  if (!setup()) return 2;
  print_header();
  measure_copy();
  std::printf("copy        reference %.1f GB/s (%s, %s, read + write counted)\n", copy_gbps_,
              copy_how_.c_str(), gib(o_.copy_bytes).c_str());
  measure_floor();
  std::printf("floor       %s us: graph replay of one empty kernel, cold L2, events\n",
              fmt(floor_stat_.median_us, "%.3f").c_str());
  if (o_.dw_skip) std::printf("normgate    backward with CAKE_NORMGATE_DW_SKIP (no dw)\n");
  std::printf("swiglu      %s\n", o_.sw_eager ? "eager launches, kernel time"
                                                : "graph replays, event time (as the peers)");
  if (o_.run_normgate) {
    std::printf("\nnormgate\n");
    for (const NgShape &s : o_.ng_shapes) {
      normgate_shape(s);
      write_json(false);
    }
  }
  if (o_.run_swiglu) {
    std::printf("\nswiglu-mxfp8\n");
    for (const SwShape &s : o_.sw_shapes) {
      swiglu_shape(s);
      write_json(false);
    }
  }
  if (o_.routing) {
    std::printf("\nrouting check\n");
    if (o_.run_normgate) {
      for (const NgShape &s : o_.ng_shapes) routing_normgate(s);
    }
    if (o_.run_swiglu) {
      for (const SwShape &s : o_.sw_shapes) routing_swiglu(s);
    }
  }
  print_tables();
  write_json(true);
  lib_a_.close();
  if (two_libs_) lib_b_.close();
  if (!tmp_copy_.empty()) unlink(tmp_copy_.c_str());
  return 0;
}

}  // namespace
}  // namespace cake_bench

int main(int argc, char **argv) {
  cake_bench::Options o;
  if (!cake_bench::parse(argc, argv, &o)) return 2;
  cake_bench::Bench b(std::move(o));
  return b.run();
}
