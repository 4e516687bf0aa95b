// The measurement method, in one place: a cold L2 before every timed launch (a flush kernel
// overwrites a buffer of at least twice the L2), kernel time from CUPTI records for eager
// launches (CUDA events where CUPTI is missing), event time around CUDA-graph replays, and the
// median of per-round medians. Several items measured together are interleaved launch by
// launch, their order alternating, which is how the A/B comparisons run.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "cupti.h"

namespace cake_bench {

// One enqueue of the work to time on `stream`; returns "" or what went wrong.
using Call = std::function<std::string(cudaStream_t)>;

// What one measurement does.
struct Method {
  int rounds = 10;  // rounds; each gives one median
  int iters = 30;   // timed launches per round (each after a flush)
  int warmup = 3;   // untimed launches first
};

// A median of round medians and its spread.
struct Stat {
  double median_us = -1;                 // < 0: not measured
  double lo_us = -1, hi_us = -1;         // smallest and largest round median
  std::vector<double> round_medians_us;  // one per round
  std::string timer;                     // "cupti" (kernel time) or "events"
  bool ok() const { return median_us > 0; }
  double spread_pct() const { return ok() ? 100.0 * (hi_us - lo_us) / median_us : 0.0; }
};

// A thing to launch: an eager call (timed as kernel time) or a graph (timed as replay time).
struct Launchable {
  Call call;                          // eager, when graph is null
  cudaGraphExec_t graph = nullptr;    // replayed with cudaGraphLaunch
};

class Timer {
 public:
  // `flush_bytes` is rounded up to 16; `cupti` may be unloaded (events are used instead).
  bool init(int device, size_t flush_bytes, Cupti *cupti, bool force_events, std::string *why);
  ~Timer();

  cudaStream_t stream() const { return stream_; }
  int sm_count() const { return sm_count_; }
  size_t flush_bytes() const { return flush_bytes_; }
  size_t l2_bytes() const { return l2_bytes_; }
  bool uses_cupti() const { return use_cupti_; }
  std::string timer_note() const { return timer_note_; }

  // Measures every item, interleaved: in launch i of a round the items run in order when i is
  // even and in reverse order when i is odd, each after its own flush. Returns one Stat per
  // item, or an empty vector with `err` set.
  std::vector<Stat> measure(const std::vector<Launchable> &items, const Method &m,
                            std::string *err);

  // Captures `calls` on the timer's stream into an instantiated graph.
  std::string capture(const std::vector<Call> &calls, cudaGraphExec_t *out);

  void flush();  // one L2 flush on the stream

 private:
  std::string launch(const Launchable &l);

  int device_ = 0;
  int sm_count_ = 0;
  size_t l2_bytes_ = 0;
  cudaStream_t stream_ = nullptr;
  void *flush_buf_ = nullptr;
  size_t flush_bytes_ = 0;
  uint32_t flush_count_ = 0;
  Cupti *cupti_ = nullptr;
  bool use_cupti_ = false;
  std::string timer_note_;
  std::vector<cudaEvent_t> events_;
};

// Median of a vector (copy); -1 for an empty one.
double median_of(std::vector<double> v);

}  // namespace cake_bench
