// CUPTI kernel activity records, loaded lazily with dlopen: the benchmark runs (with CUDA
// events instead) where no libcupti is found. The only place that knows CUPTI.
#pragma once
#include <stdint.h>

#include <string>
#include <vector>

namespace cake_bench {

struct KernelRecord {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  std::string name;
};

class Cupti {
 public:
  // Searches for libcupti (CAKE_BENCH_CUPTI, the loader's path, the CUDA toolkit, Python
  // site-packages of the nvidia-cuda-cupti wheel) and resolves its entry points. Returns false
  // with the reason in `why` when none loads.
  bool load(std::string *why);
  bool loaded() const { return lib_ != nullptr; }
  const std::string &path() const { return path_; }

  // Starts / stops collecting concurrent-kernel records.
  bool enable(std::string *why);
  void disable();
  // Flushes CUPTI's buffers (after the work was synchronised) and returns every kernel record
  // collected since the last call, in start order.
  std::vector<KernelRecord> take();

 private:
  void *lib_ = nullptr;
  std::string path_;
  bool enabled_ = false;
};

}  // namespace cake_bench
