// The report: the plan (--list), the header of a run, the console tables, and the JSON file
// that bench/tables.py and bench/plot.py read (rewritten after every shape, so a stopped run
// leaves its numbers so far).
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "bench.h"
#include "json_out.h"

namespace cake_bench {

void round_ratio(const Stat &a, const Stat &b, Row *r) {
  std::vector<double> q;
  for (size_t i = 0; i < a.round_medians_us.size() && i < b.round_medians_us.size(); ++i) {
    q.push_back(a.round_medians_us[i] / b.round_medians_us[i]);
  }
  if (q.empty()) return;
  r->ratio = median_of(q);
  r->ratio_lo = *std::min_element(q.begin(), q.end());
  r->ratio_hi = *std::max_element(q.begin(), q.end());
}

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

// The --list output: what a run would time and the bytes each op moves, from the shapes alone.
void print_plan(const Options &opts) {
  std::printf("plan (no GPU needed):\n");
  if (opts.run_normgate) {
    for (const NgShape &s : opts.ng_shapes) {
      const uint64_t t = uint64_t(s.rows()) * s.d * 2;
      const uint64_t zt = s.gate == CAKE_NORMGATE_GATE_NONE ? 0 : t;  // z, dz: none without a gate
      std::printf("  normgate %-12s rows %-8lld d %-5d fwd: read %llu, write %llu bytes; "
                  "bwd: read %llu, write %llu (+dw)\n",
                  s.name().c_str(), (long long)s.rows(), s.d,
                  (unsigned long long)(t + zt + s.d * 2), (unsigned long long)t,
                  (unsigned long long)(2 * t + zt + s.d * 2), (unsigned long long)(t + zt));
    }
    std::printf("  ops:");
    for (const std::string &op : opts.ng_ops) std::printf(" %s", op.c_str());
    std::printf("\n");
  }
  if (opts.run_swiglu) {
    for (const SwShape &s : opts.sw_shapes) {
      for (const SwigluForm &f : opts.sw_forms) {
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
  if (opts.run_ng_quant) {
    for (const NgShape &s : opts.ngq_shapes) {
      const uint64_t t = uint64_t(s.rows()) * s.d, k = uint64_t(s.h) * s.d;
      std::printf("  normgate_quant %-12s heads %-4lld [%lld, %llu] fwdg: read %llu, write %llu\n",
                  s.name().c_str(), (long long)s.h, (long long)s.t, (unsigned long long)k,
                  (unsigned long long)(4 * t + s.d * 2), (unsigned long long)(2 * t));
      for (const NgQuantForm &f : opts.ng_quant) {
        const uint64_t sb = f.format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE
                                ? 4 * uint64_t(s.t) * (k / 128)
                                : uint64_t(s.t + 127) / 128 * 128 * ((k / 32 + 3) / 4 * 4);
        std::printf("  normgate_quant %-12s %-10s read %llu, write %llu (q %llu, scales %llu%s)\n",
                    s.name().c_str(), f.name().c_str(), (unsigned long long)(4 * t + s.d * 2),
                    (unsigned long long)(t + sb + (f.with_y ? 2 * t : 0)), (unsigned long long)t,
                    (unsigned long long)sb, f.with_y ? ", y" : "");
      }
    }
  }
  std::printf("  streaming variants: %zu\n", all_stream_variants().size());
}

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
    if (r.ratio > 0) tail = fmt(r.ratio, "%.3fx") + " of " + r.base_label + "; " + tail;
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

namespace {

// One Stat as a JSON object under key `k`.
void json_stat(JsonOut &j, const std::string &k, const Stat &s) {
  j.key(k).obj();
  j.kn("median_us", s.median_us).kn("lo_us", s.lo_us).kn("hi_us", s.hi_us);
  j.kn("spread_pct", s.ok() ? s.spread_pct() : -1).kv("timer", s.timer);
  j.key("round_medians_us").arr();
  for (double v : s.round_medians_us) j.num(v);
  j.end().end();
}

}  // namespace

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
    if (r.family == "normgate" || r.family == "normgate_quant") {
      j.ki("rows", r.rows).ki("d", r.d);
    } else {
      j.ki("m", r.m).ki("k", r.k);
    }
    j.kv("program", r.program).kv("status", r.status).kv("note", r.note);
    j.ki("read_bytes", (long long)r.read_bytes).ki("write_bytes", (long long)r.write_bytes);
    json_stat(j, "time", r.time);
    json_stat(j, "limit", r.limit);
    if (r.floor.ok()) json_stat(j, "floor", r.floor);
    if (r.base.ok()) {
      json_stat(j, "base", r.base);
      j.kv("base_label", r.base_label);
      j.kn("ratio_to_base", r.ratio).kn("ratio_lo", r.ratio_lo).kn("ratio_hi", r.ratio_hi);
    }
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

}  // namespace cake_bench
