// cake-bench's command line: the shapes, ops, forms and packages to time, the method, and the
// A/B and routing modes. `parse_options` fills `Options` with every default resolved, so the
// suites read one plain struct; `print_usage` is the --help text.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

#include "timing.h"
#include "workloads.h"

namespace cake_bench {

// A norm-gate shape: T tokens x H heads of D (128 unless given) BF16 values, as packed rows.
struct NgShape {
  int64_t t = 0, h = 0;
  int d = 128;
  // The variant (cake_normgate_desc's gate, placement, group_size; BF16 tensors): written
  // TxH[:D][/G<n>][/before][/sigmoid|/nogate], e.g. 16384x1:8192/G1024/before.
  int group = 0, placement = 0, gate = 0;
  std::string name() const {
    std::string s = std::to_string(t) + "x" + std::to_string(h);
    if (d != 128) s += ":" + std::to_string(d);
    if (group != 0) s += "/G" + std::to_string(group);
    if (placement != 0) s += "/before";
    if (gate == 1) s += "/sigmoid";
    if (gate == 2) s += "/nogate";
    return s;
  }
  int64_t rows() const { return t * h; }
};

// A SwiGLU shape: M rows of 2K BF16 inputs (gate | up), K outputs a row. With experts > 0 a
// grouped call (MoE): the M rows split unevenly into that many experts, in whole 32-row units
// (the grouped MXFP8 GEMMs' token alignment), or any rows an expert when ragged. Written MxK,
// or MxK/E<n> and MxK/E<n>r.
struct SwShape {
  int64_t m = 0, k = 0;
  int experts = 0;
  bool ragged = false;
  std::string name() const {
    std::string s = std::to_string(m) + "x" + std::to_string(k);
    if (experts > 0) s += "/E" + std::to_string(experts) + (ragged ? "r" : "");
    return s;
  }
};

// A quantized output of the norm-gate forward (cake_normgate_forward_quantized): the format
// (cake_normgate_quant_format_t), the FP8 blockwise scale rule, and whether the BF16 y is
// written too. Written fp8b, fp8b_pow2 or mxfp8, then +y for the BF16 y.
struct NgQuantForm {
  int format = 1;  // CAKE_NORMGATE_QUANT_FP8_BLOCKWISE (1) or CAKE_NORMGATE_QUANT_MXFP8 (2)
  int rule = 0;    // CAKE_FP8_SCALE_EXACT (0) or CAKE_FP8_SCALE_POW2 (1); 0 for MXFP8
  bool with_y = false;
  std::string name() const {
    std::string s = format == 2 ? "mxfp8" : rule == 1 ? "fp8b_pow2" : "fp8b";
    return with_y ? s + "+y" : s;
  }
};

// The norm-gate ops, in the order they are timed and reported ("fwd+bwd" is derived from
// fwdg and bwdg, not launched).
extern const char *const kNgOps[6];

struct Options {
  bool quick = false, list = false, routing = false, limit = true, force_events = false;
  bool run_normgate = true, run_swiglu = true;
  // The SwiGLU + FP8 blockwise forms: only with --family swiglu_fp8 (the default "all" keeps
  // the runs it had).
  bool run_swiglu_fp8 = false;
  // The quantized norm-gate forward beside the plain one: with --family normgate_quant, or
  // --ng-quant (which alone, without --family, runs only it).
  bool run_ng_quant = false;
  std::vector<NgQuantForm> ng_quant;
  std::vector<NgShape> ngq_shapes;  // its shapes: --ng-shapes, else the D = 128 set and wide rows
  bool dw_skip = false;   // normgate backward: CAKE_NORMGATE_DW_SKIP (dx, dz only)
  bool sw_eager = false;  // swiglu: eager launches with kernel time instead of graph replays
  std::vector<std::string> ng_ops;
  std::vector<SwigluForm> sw_forms;
  std::vector<NgShape> ng_shapes;
  std::vector<SwShape> sw_shapes;
  std::vector<int> packages = {0, 1};
  std::string program;           // forced program for every call it serves
  std::string ab_program[2];     // --ab-programs A,B
  // A's program: --ab-programs' first, else the forced --program (or routed when empty).
  const std::string &program_a() const {
    return ab_program[0].empty() ? program : ab_program[0];
  }
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

// The --help text, on stdout.
void print_usage();

// Parses argv into `o`. On a bad option prints why on stderr and returns false; --help prints
// the usage and exits 0.
bool parse_options(int argc, char **argv, Options *o);

}  // namespace cake_bench
