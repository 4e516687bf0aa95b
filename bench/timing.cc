#include "timing.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "bench_kernels.h"

namespace cake_bench {

double median_of(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static std::string cuda_error(const char *what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

bool Timer::init(int device, size_t flush_bytes, Cupti *cupti, bool force_events,
                 std::string *why) {
  device_ = device;
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) {
    *why = cuda_error("cudaSetDevice", e);
    return false;
  }
  cudaDeviceProp prop;
  e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) {
    *why = cuda_error("cudaGetDeviceProperties", e);
    return false;
  }
  sm_count_ = prop.multiProcessorCount;
  l2_bytes_ = size_t(prop.l2CacheSize);
  flush_bytes_ = std::max(flush_bytes, 2 * l2_bytes_);
  flush_bytes_ = (flush_bytes_ + 15) / 16 * 16;
  e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    *why = cuda_error("cudaStreamCreate", e);
    return false;
  }
  e = cudaMalloc(&flush_buf_, flush_bytes_);
  if (e != cudaSuccess) {
    *why = cuda_error("cudaMalloc(flush buffer)", e);
    return false;
  }
  cupti_ = cupti;
  if (force_events) {
    timer_note_ = "CUDA events (asked for with --events)";
  } else if (cupti && cupti->loaded()) {
    std::string w;
    if (cupti->enable(&w)) {
      cupti->disable();
      use_cupti_ = true;
      timer_note_ = "CUPTI kernel records (" + cupti->path() + ")";
    } else {
      timer_note_ = "CUDA events: CUPTI did not start: " + w;
    }
  } else {
    timer_note_ = "CUDA events: CUPTI not loaded";
  }
  return true;
}

Timer::~Timer() {
  for (cudaEvent_t ev : events_) cudaEventDestroy(ev);
  if (flush_buf_) cudaFree(flush_buf_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Timer::flush() {
  launch_l2_flush(flush_buf_, flush_bytes_, ++flush_count_, sm_count_, stream_);
}

std::string Timer::launch(const Launchable &l) {
  if (l.graph) {
    const cudaError_t e = cudaGraphLaunch(l.graph, stream_);
    return e == cudaSuccess ? "" : cuda_error("cudaGraphLaunch", e);
  }
  return l.call(stream_);
}

std::string Timer::capture(const std::vector<Call> &calls, cudaGraphExec_t *out) {
  *out = nullptr;
  cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) return cuda_error("cudaStreamBeginCapture", e);
  std::string err;
  for (const Call &c : calls) {
    err = c(stream_);
    if (!err.empty()) break;
  }
  cudaGraph_t graph = nullptr;
  e = cudaStreamEndCapture(stream_, &graph);
  if (!err.empty()) {
    if (graph) cudaGraphDestroy(graph);
    return "during capture: " + err;
  }
  if (e != cudaSuccess) return cuda_error("cudaStreamEndCapture", e);
  e = cudaGraphInstantiate(out, graph, 0);
  cudaGraphDestroy(graph);
  if (e != cudaSuccess) return cuda_error("cudaGraphInstantiate", e);
  e = cudaGraphUpload(*out, stream_);
  if (e != cudaSuccess) return cuda_error("cudaGraphUpload", e);
  return "";
}

std::vector<Stat> Timer::measure(const std::vector<Launchable> &items, const Method &m,
                                 std::string *err) {
  const size_t n = items.size();
  bool any_eager = false;
  for (const Launchable &l : items) any_eager |= (l.graph == nullptr);
  const bool cupti = use_cupti_ && any_eager;
  const size_t per_round = n * size_t(m.iters);
  while (events_.size() < 2 * per_round) {
    cudaEvent_t ev;
    const cudaError_t e = cudaEventCreate(&ev);
    if (e != cudaSuccess) {
      *err = cuda_error("cudaEventCreate", e);
      return {};
    }
    events_.push_back(ev);
  }
  // Warm-up: module loads, first-launch costs and clocks stay out of the numbers.
  for (int w = 0; w < m.warmup; ++w) {
    for (const Launchable &l : items) {
      flush();
      const std::string e = launch(l);
      if (!e.empty()) {
        *err = e;
        return {};
      }
    }
  }
  cudaError_t ce = cudaStreamSynchronize(stream_);
  if (ce != cudaSuccess) {
    *err = cuda_error("warm-up", ce);
    return {};
  }
  if (cupti) {
    std::string why;
    if (!cupti_->enable(&why)) {
      *err = why;
      return {};
    }
    cupti_->take();
  }
  std::vector<std::vector<double>> round_medians(n);
  std::vector<size_t> seq;  // item index of each launch of a round, in order
  for (int r = 0; r < m.rounds; ++r) {
    seq.clear();
    for (int i = 0; i < m.iters; ++i) {
      for (size_t j = 0; j < n; ++j) {
        const size_t k = (i % 2 == 0) ? j : n - 1 - j;
        const size_t slot = seq.size();
        flush();
        cudaEventRecord(events_[2 * slot], stream_);
        const std::string e = launch(items[k]);
        cudaEventRecord(events_[2 * slot + 1], stream_);
        if (!e.empty()) {
          cudaStreamSynchronize(stream_);
          if (cupti) cupti_->disable();
          *err = e;
          return {};
        }
        seq.push_back(k);
      }
    }
    ce = cudaStreamSynchronize(stream_);
    if (ce != cudaSuccess) {
      if (cupti) cupti_->disable();
      *err = cuda_error("timed launches", ce);
      return {};
    }
    std::vector<std::vector<double>> times(n);
    std::vector<double> kernel_us;  // per launch, from CUPTI
    if (cupti) {
      // Every launch follows one flush kernel: the records between two flushes are one launch.
      // Records can arrive a little after the synchronisation: collect until every launch has
      // its group and every group a kernel, or give up after about 100 ms.
      std::vector<KernelRecord> recs;
      for (int attempt = 0; attempt < 50; ++attempt) {
        std::vector<KernelRecord> more = cupti_->take();
        recs.insert(recs.end(), more.begin(), more.end());
        std::sort(recs.begin(), recs.end(), [](const KernelRecord &a, const KernelRecord &b) {
          return a.start_ns < b.start_ns;
        });
        kernel_us.clear();
        bool open = false;
        for (const KernelRecord &rec : recs) {
          if (rec.name.find(kFlushKernelPrefix) != std::string::npos) {
            kernel_us.push_back(0.0);
            open = true;
          } else if (open) {
            kernel_us.back() += double(rec.end_ns - rec.start_ns) * 1e-3;
          }
        }
        bool complete = kernel_us.size() >= seq.size();
        for (double us : kernel_us) complete = complete && us > 0;
        if (complete) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    for (size_t s = 0; s < seq.size(); ++s) {
      const size_t k = seq[s];
      double us;
      if (cupti && items[k].graph == nullptr) {
        if (kernel_us.size() != seq.size()) {
          cupti_->disable();
          *err = "CUPTI returned " + std::to_string(kernel_us.size()) + " launch groups for " +
                 std::to_string(seq.size()) + " launches";
          return {};
        }
        us = kernel_us[s];
        if (us <= 0) {
          cupti_->disable();
          *err = "a timed launch ran no kernel";
          return {};
        }
      } else {
        float ms = 0;
        cudaEventElapsedTime(&ms, events_[2 * s], events_[2 * s + 1]);
        us = double(ms) * 1e3;
      }
      times[k].push_back(us);
    }
    for (size_t k = 0; k < n; ++k) round_medians[k].push_back(median_of(times[k]));
  }
  if (cupti) cupti_->disable();
  std::vector<Stat> out(n);
  for (size_t k = 0; k < n; ++k) {
    Stat &s = out[k];
    s.round_medians_us = round_medians[k];
    s.median_us = median_of(round_medians[k]);
    s.lo_us = *std::min_element(round_medians[k].begin(), round_medians[k].end());
    s.hi_us = *std::max_element(round_medians[k].begin(), round_medians[k].end());
    s.timer = (cupti && items[k].graph == nullptr) ? "cupti" : "events";
  }
  return out;
}

}  // namespace cake_bench
