// What a run measures, one struct per table of the report: an op's time against its limit line
// (Row), an interleaved A/B (AbRow), every serving program against the routed one (RouteRow).
// The suites fill them; report.cc prints them and writes them as JSON.
#pragma once
#include <stdint.h>

#include <string>
#include <utility>
#include <vector>

#include "timing.h"

namespace cake_bench {

struct Row {
  std::string family, op, shape, package, program, status = "ok", note;
  int64_t rows = 0, d = 0, m = 0, k = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
  Stat time, limit;
  // SwiGLU graph replays at small shapes: the empty-kernel graph timed in the same rounds,
  // launch by launch with the op (the 128x128 target is a ratio to it).
  Stat floor;
  // The quantized norm-gate forward: the plain forward timed in the same rounds (base) and the
  // median [min, max] over rounds of (this round median / base round median). A grouped SwiGLU
  // call: the per-expert launches of the ungrouped call (base_label "per-expert").
  Stat base;
  double ratio = -1, ratio_lo = -1, ratio_hi = -1;
  std::string base_label = "plain";
  std::string limit_variant;
  uint64_t bytes() const { return read_bytes + write_bytes; }
  double frac_limit() const {
    return time.ok() && limit.ok() ? limit.median_us / time.median_us : -1;
  }
  double gbps() const { return time.ok() ? double(bytes()) / (time.median_us * 1e3) : -1; }
};

// Median [min, max] over rounds of a's round median over b's, into r's ratio fields.
void round_ratio(const Stat &a, const Stat &b, Row *r);

// Below this graph-replay time an interleaved A/B is flagged (Bench::record_ab).
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

// `v` printed with the printf format `f`, or "-" when it is negative or not a number (not
// measured).
std::string fmt(double v, const char *f);
// `b` bytes as "N.NN GiB".
std::string gib(uint64_t b);
// The current time, ISO 8601 in UTC.
std::string now_utc();

}  // namespace cake_bench
