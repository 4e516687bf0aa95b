// The command line: the usage text, the flag loop, then the defaults that depend on other flags
// (--quick's method and shapes, every family's shape list, ops and forms), in that order, so an
// error names the first bad option.
#include "options.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace cake_bench {

const char *const kNgOps[6] = {"fwd", "fwdg", "bwdg", "ckptg", "stepg_f32", "fwd+bwd"};

namespace {

// The flags kept as text until every flag is read: what they mean depends on --quick.
struct RawFlags {
  std::string family = "all", ng_shapes, sw_shapes, ops, forms, package = "both", ng_quant;
  bool rounds_set = false, iters_set = false, family_set = false;
};

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
  const std::vector<std::string> parts = split(s, '/');
  if (parts.empty()) return false;
  const int n = std::sscanf(parts[0].c_str(), "%lldx%lld:%d", &t, &h, &d);
  if (n < 2 || t <= 0 || h <= 0 || d <= 0) return false;
  out->t = t;
  out->h = h;
  out->d = d;
  for (size_t i = 1; i < parts.size(); ++i) {  // the variant
    const std::string &v = parts[i];
    if (v.size() > 1 && v[0] == 'G') {
      out->group = std::atoi(v.c_str() + 1);
      if (out->group <= 0) return false;
    } else if (v == "before") {
      out->placement = CAKE_NORMGATE_GATE_BEFORE_NORM;
    } else if (v == "sigmoid") {
      out->gate = CAKE_NORMGATE_GATE_SIGMOID;
    } else if (v == "nogate") {
      out->gate = CAKE_NORMGATE_GATE_NONE;
    } else {
      return false;
    }
  }
  return true;
}

bool parse_ng_quant_form(const std::string &s, NgQuantForm *out) {
  const size_t plus = s.find('+');
  const std::string base = s.substr(0, plus);
  if (plus != std::string::npos && s.substr(plus) != "+y") return false;
  out->with_y = plus != std::string::npos;
  if (base == "fp8b" || base == "fp8b_pow2") {
    out->format = CAKE_NORMGATE_QUANT_FP8_BLOCKWISE;
    out->rule = base == "fp8b" ? CAKE_FP8_SCALE_EXACT : CAKE_FP8_SCALE_POW2;
  } else if (base == "mxfp8") {
    out->format = CAKE_NORMGATE_QUANT_MXFP8;
    out->rule = 0;
  } else {
    return false;
  }
  return true;
}

bool parse_sw_shape(const std::string &s, SwShape *out) {
  long long m = 0, k = 0;
  int e = 0, used = 0;
  const size_t slash = s.find('/');
  const std::string base = s.substr(0, slash);
  if (std::sscanf(base.c_str(), "%lldx%lld%n", &m, &k, &used) != 2 || m <= 0 || k <= 0 ||
      used != (int)base.size()) {
    return false;
  }
  out->m = m;
  out->k = k;
  out->experts = 0;
  out->ragged = false;
  if (slash == std::string::npos) return true;
  const std::string g = s.substr(slash + 1);
  if (std::sscanf(g.c_str(), "E%d%n", &e, &used) != 1 || e <= 0) return false;
  const std::string rest = g.substr(used);
  if (!rest.empty() && rest != "r") return false;
  out->experts = e;
  out->ragged = rest == "r";
  return true;
}

// Every flag in argv order: the booleans and the method into `o`, the lists into `raw`.
bool parse_flags(int argc, char **argv, Options *o, RawFlags *raw) {
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
      print_usage();
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
      if (!next(&raw->family)) return false;
      raw->family_set = true;
    } else if (a == "--ng-quant") {
      if (!next(&raw->ng_quant)) return false;
    } else if (a == "--ops") {
      if (!next(&raw->ops)) return false;
    } else if (a == "--forms") {
      if (!next(&raw->forms)) return false;
    } else if (a == "--ng-shapes") {
      if (!next(&raw->ng_shapes)) return false;
    } else if (a == "--sw-shapes") {
      if (!next(&raw->sw_shapes)) return false;
    } else if (a == "--package") {
      if (!next(&raw->package)) return false;
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
      raw->rounds_set = true;
    } else if (a == "--iters") {
      if (!next(&v)) return false;
      o->method.iters = std::max(1, std::atoi(v.c_str()));
      raw->iters_set = true;
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
  return true;
}

// --family, --package and --quick's smaller method.
bool resolve_scope(const RawFlags &raw, Options *o) {
  if (raw.family == "normgate") {
    o->run_swiglu = false;
    o->run_swiglu_fp8 = false;
  } else if (raw.family == "swiglu") {
    o->run_normgate = false;
    o->run_swiglu_fp8 = false;
  } else if (raw.family == "swiglu_fp8") {
    o->run_normgate = false;
    o->run_swiglu = false;
    o->run_swiglu_fp8 = true;
  } else if (raw.family == "normgate_quant" || (!raw.family_set && !raw.ng_quant.empty())) {
    o->run_normgate = false;
    o->run_swiglu = false;
    o->run_ng_quant = true;
  } else if (raw.family != "all") {
    std::fprintf(stderr, "cake-bench: --family normgate|swiglu|swiglu_fp8|normgate_quant|all\n");
    return false;
  }
  // --ng-quant with another --family: that family's runs, then the quantized forward's.
  if (!raw.ng_quant.empty()) o->run_ng_quant = true;
  if (raw.package == "det") {
    o->packages = {0};
  } else if (raw.package == "nondet") {
    o->packages = {1};
  } else if (raw.package != "both") {
    std::fprintf(stderr, "cake-bench: --package det|nondet|both\n");
    return false;
  }
  if (o->quick) {
    if (!raw.rounds_set) o->method.rounds = 3;
    if (!raw.iters_set) o->method.iters = 10;
    o->method.warmup = std::min(o->method.warmup, 2);
    o->screen = {1, 3, 1};
    o->routing_method = {3, 5, 1};
    o->limit_finalists = 2;
  }
  return true;
}

// The shapes of both families, the norm-gate ops and the SwiGLU forms, given or default.
bool resolve_lists(const RawFlags &raw, Options *o) {
  // Shapes: the default benchmark set, or the quick one.
  const char *ng_default = o->quick ? "3534x48,260x48"
                                    : "3534x48,4097x48,8192x32,6000x48,7684x48,1031x48,"
                                      "16384x48,260x48";
  const char *sw_default =
      o->quick ? "128x128,4096x2048" : "128x128,4096x2048,4096x7168,16384x7168,131072x8192";
  // "variants": the variant shapes (wide rows with groups, the gate before the norm at the
  // default set's D = 128 shapes, the other gates), each against its own limit line.
  const char *ng_variants =
      "16384x1:8192/G1024/before,16384x1:8192/G1024,8192x1:5120/before,8192x1:5120/G1024,"
      "65536x1:1024/before,65536x1:1024/sigmoid,65536x1:1024/nogate,3534x48/before,"
      "4097x48/before,8192x32/before,6000x48/before,7684x48/before,1031x48/before,"
      "16384x48/before,260x48/before,3534x48/G64,3534x48/sigmoid/before";
  std::string ng_list = raw.ng_shapes.empty() ? ng_default : raw.ng_shapes;
  if (ng_list == "variants") ng_list = ng_variants;
  for (const std::string &s : split(ng_list, ',')) {
    NgShape sh;
    if (!parse_ng_shape(s, &sh)) {
      std::fprintf(stderr,
                   "cake-bench: bad normgate shape '%s' (TxH or TxH:D, then /G<n>, /before, "
                   "/sigmoid or /nogate)\n",
                   s.c_str());
      return false;
    }
    o->ng_shapes.push_back(sh);
  }
  // The quantized forward: the norm-gate shapes (the D = 128 set by default: heads H, the
  // [T, H * 128] matrix o_proj reads), default form only, then, unless shapes were given, wide
  // rows of one head.
  for (const NgShape &sh : o->ng_shapes) {
    if (sh.group == 0 && sh.placement == 0 && sh.gate == 0) {
      o->ngq_shapes.push_back(sh);
    } else if (o->run_ng_quant) {
      std::fprintf(stderr,
                   "cake-bench: the quantized norm-gate forward serves the default form only; "
                   "shape '%s' is a variant\n",
                   sh.name().c_str());
      return false;
    }
  }
  if (raw.ng_shapes.empty()) {
    const char *wide =
        o->quick ? "16384x1:2048" : "65536x1:1024,16384x1:2048,8192x1:5120,16384x1:8192";
    for (const std::string &s : split(wide, ',')) {
      NgShape sh;
      parse_ng_shape(s, &sh);
      o->ngq_shapes.push_back(sh);
    }
  }
  std::string forms;  // "all" (also the default): the three outputs without y
  for (const std::string &f : split(raw.ng_quant.empty() ? "all" : raw.ng_quant, ',')) {
    forms += (forms.empty() ? "" : ",") + (f == "all" ? std::string("fp8b,fp8b_pow2,mxfp8") : f);
  }
  for (const std::string &f : split(forms, ',')) {
    NgQuantForm qf;
    if (!parse_ng_quant_form(f, &qf)) {
      std::fprintf(stderr,
                   "cake-bench: unknown quantized normgate output '%s' (fp8b, fp8b_pow2 or mxfp8, "
                   "then +y for the BF16 y too; or all)\n",
                   f.c_str());
      return false;
    }
    o->ng_quant.push_back(qf);
  }
  // "grouped": the MoE set, T = 16384 and 65536 tokens, K = 2048 and 7168, 8, 64 and 256
  // experts of uneven sizes, each against the limit line of the whole tensor.
  std::string sw_list = raw.sw_shapes.empty() ? sw_default : raw.sw_shapes;
  if (sw_list == "grouped") {
    sw_list.clear();
    for (const char *t : {"16384", "65536"}) {
      for (const char *k : {"2048", "7168"}) {
        for (const char *e : {"8", "64", "256"}) {
          sw_list += std::string(sw_list.empty() ? "" : ",") + t + "x" + k + "/E" + e;
        }
      }
    }
  }
  for (const std::string &s : split(sw_list, ',')) {
    SwShape sh;
    if (!parse_sw_shape(s, &sh)) {
      std::fprintf(stderr, "cake-bench: bad swiglu shape '%s' (MxK, MxK/E<n>, MxK/E<n>r)\n",
                   s.c_str());
      return false;
    }
    o->sw_shapes.push_back(sh);
  }
  if (raw.ops.empty()) {
    for (const char *op : kNgOps) o->ng_ops.push_back(op);
  } else {
    for (const std::string &op : split(raw.ops, ',')) {
      if (std::find_if(std::begin(kNgOps), std::end(kNgOps),
                       [&](const char *k) { return op == k; }) == std::end(kNgOps)) {
        std::fprintf(stderr, "cake-bench: unknown normgate op '%s'\n", op.c_str());
        return false;
      }
      o->ng_ops.push_back(op);
    }
  }
  if (raw.forms.empty()) {
    o->sw_forms = all_swiglu_forms();
  } else {
    for (const std::string &f : split(raw.forms, ',')) {
      SwigluForm sf;
      if (!parse_swiglu_form(f, &sf)) {
        std::fprintf(stderr, "cake-bench: unknown swiglu form '%s'\n", f.c_str());
        return false;
      }
      o->sw_forms.push_back(sf);
    }
  }
  return true;
}

}  // namespace

void print_usage() {
  std::printf(
      "cake-bench: Cake's ops through the C ABI, cold L2, against the limit line.\n"
      "\n"
      "  --quick                 smoke test: 2 shapes per family, 3 rounds x 10 launches\n"
      "  --family F              normgate | swiglu | swiglu_fp8 | normgate_quant | all (default\n"
      "                          all: normgate and swiglu; the others run only when named)\n"
      "  --ng-quant LIST         the quantized norm-gate forward beside the plain one, graph\n"
      "                          replays interleaved: fp8b, fp8b_pow2, mxfp8, each +y for the\n"
      "                          BF16 y too, or all (fp8b,fp8b_pow2,mxfp8); alone it runs only\n"
      "                          this (= --family normgate_quant), on the D = 128 shapes and\n"
      "                          65536x1:1024,16384x1:2048,8192x1:5120,16384x1:8192\n"
      "  --ops LIST              normgate ops: fwd,fwdg,bwdg,ckptg,stepg_f32,fwd+bwd (default all)\n"
      "  --forms LIST            swiglu forms: fwd_row,fwd_col,fwd_both,bwd_row,bwd_col,bwd_both\n"
      "  --ng-shapes LIST        T x H (D = 128) or TxH:D, e.g. 3534x48,260x48:256; a variant\n"
      "                          after /: G<n> (group size), before, sigmoid, nogate\n"
      "                          (16384x1:8192/G1024/before); 'variants' for the variant set\n"
      "  --sw-shapes LIST        M x K, e.g. 4096x7168; MxK/E<n>: the grouped (MoE) call, M\n"
      "                          rows split unevenly into n experts of whole 32-row units\n"
      "                          (MxK/E<n>r: any rows an expert), against the limit line of\n"
      "                          the whole tensor and the per-expert launches of the\n"
      "                          ungrouped call (ratio); 'grouped' for T 16384, 65536 x K\n"
      "                          2048, 7168 x E 8, 64, 256\n"
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

bool parse_options(int argc, char **argv, Options *o) {
  RawFlags raw;
  if (!parse_flags(argc, argv, o, &raw)) return false;
  if (!resolve_scope(raw, o) || !resolve_lists(raw, o)) return false;
  if (!o->ab_program[0].empty() && !o->ab_lib[0].empty()) {
    std::fprintf(stderr, "cake-bench: --ab-programs and --ab-libs are exclusive\n");
    return false;
  }
  return true;
}

}  // namespace cake_bench
