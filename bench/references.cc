// The references every op is compared with, each timed with the same method as the ops: the
// device copy (the best of a copy-engine copy and an SM copy kernel), the launch floor (a graph
// of one empty kernel), and the limit line of an op (the fastest streaming kernel that moves
// exactly the op's bytes).
#include <algorithm>
#include <cstdio>

#include "bench.h"

namespace cake_bench {

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

}  // namespace cake_bench
