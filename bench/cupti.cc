// CUPTI through dlopen. The record layout we read is the prefix every CUpti_ActivityKernelN
// (N = 4 .. 10, CUDA 11 .. 13) shares; where the CUPTI header is present at build time a
// static_assert checks it against the real struct.
#include "cupti.h"

#include <dlfcn.h>
#include <glob.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#define CAKE_BENCH_HAVE_CUPTI_HEADER 1
#endif

namespace cake_bench {
namespace {

// The shared prefix of CUPTI's kernel activity records.
struct __attribute__((packed, aligned(8))) KernelRecordPrefix {
  uint32_t kind;
  uint8_t cache_config;
  uint8_t shared_memory_config;
  uint16_t registers_per_thread;
  uint32_t partitioned_requested;
  uint32_t partitioned_executed;
  uint64_t start;
  uint64_t end;
  uint64_t completed;
  uint32_t device_id;
  uint32_t context_id;
  uint32_t stream_id;
  int32_t grid[3];
  int32_t block[3];
  int32_t static_shared;
  int32_t dynamic_shared;
  uint32_t local_per_thread;
  uint32_t local_total;
  uint32_t correlation_id;
  int64_t grid_id;
  const char *name;
};

#ifdef CAKE_BENCH_HAVE_CUPTI_HEADER
static_assert(offsetof(KernelRecordPrefix, start) == offsetof(CUpti_ActivityKernel10, start),
              "CUPTI record layout");
static_assert(offsetof(KernelRecordPrefix, end) == offsetof(CUpti_ActivityKernel10, end),
              "CUPTI record layout");
static_assert(offsetof(KernelRecordPrefix, name) == offsetof(CUpti_ActivityKernel10, name),
              "CUPTI record layout");
#endif

constexpr uint32_t kKindKernel = 3;
constexpr uint32_t kKindConcurrentKernel = 10;
constexpr uint32_t kFlushForced = 1;
constexpr size_t kBufferBytes = 8u << 20;

using RequestFn = void (*)(uint8_t **, size_t *, size_t *);
using CompleteFn = void (*)(void *, uint32_t, uint8_t *, size_t, size_t);

struct Api {
  int (*register_callbacks)(RequestFn, CompleteFn) = nullptr;
  int (*enable)(uint32_t) = nullptr;
  int (*disable)(uint32_t) = nullptr;
  int (*flush_all)(uint32_t) = nullptr;
  int (*next_record)(uint8_t *, size_t, void **) = nullptr;
  int (*result_string)(int, const char **) = nullptr;
} g_api;

std::mutex g_mutex;
std::vector<KernelRecord> g_records;

void on_request(uint8_t **buffer, size_t *size, size_t *max_records) {
  void *p = nullptr;
  if (posix_memalign(&p, 8, kBufferBytes) != 0) p = nullptr;
  *buffer = static_cast<uint8_t *>(p);
  *size = p ? kBufferBytes : 0;
  *max_records = 0;
}

void on_complete(void *, uint32_t, uint8_t *buffer, size_t, size_t valid) {
  void *rec = nullptr;
  std::vector<KernelRecord> got;
  while (g_api.next_record(buffer, valid, &rec) == 0) {
    const auto *k = static_cast<const KernelRecordPrefix *>(rec);
    if (k->kind == kKindConcurrentKernel || k->kind == kKindKernel) {
      KernelRecord r;
      r.start_ns = k->start;
      r.end_ns = k->end;
      r.name = k->name ? k->name : "";
      got.push_back(std::move(r));
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.insert(g_records.end(), got.begin(), got.end());
}

std::string result_text(int r) {
  const char *s = nullptr;
  if (g_api.result_string && g_api.result_string(r, &s) == 0 && s) return s;
  return "CUPTI error " + std::to_string(r);
}

std::vector<std::string> candidate_paths() {
  std::vector<std::string> out;
  if (const char *env = std::getenv("CAKE_BENCH_CUPTI")) out.push_back(env);
  out.push_back("libcupti.so");
  out.push_back("libcupti.so.13");
  out.push_back("libcupti.so.12");
  const char *patterns[] = {
      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so*",
      "/usr/local/cuda/lib64/libcupti.so*",
      "/usr/local/cuda/lib/libcupti.so*",
      "/usr/local/cuda-*/extras/CUPTI/lib64/libcupti.so*",
      "/usr/local/cuda-*/lib64/libcupti.so*",
      "/usr/local/cuda-*/lib/libcupti.so*",
      "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libcupti.so*",
      "/opt/*/lib/python3*/site-packages/nvidia/*/lib/libcupti.so*",
      "/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libcupti.so*",
      "/usr/local/lib/python3*/site-packages/nvidia/*/lib/libcupti.so*",
      "/usr/lib/python3*/dist-packages/nvidia/*/lib/libcupti.so*",
      "/root/.local/lib/python3*/site-packages/nvidia/*/lib/libcupti.so*",
  };
  for (const char *pat : patterns) {
    glob_t g;
    if (glob(pat, 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    }
    globfree(&g);
  }
  // The interpreter on PATH knows where its nvidia-* wheels live.
  if (FILE *f = popen("python3 -c \"import nvidia, os; print('\\n'.join(nvidia.__path__))\" "
                      "2>/dev/null",
                      "r")) {
    char line[1024];
    while (std::fgets(line, sizeof line, f)) {
      std::string dir(line);
      while (!dir.empty() && (dir.back() == '\n' || dir.back() == '\r')) dir.pop_back();
      glob_t g;
      if (!dir.empty() && glob((dir + "/*/lib/libcupti.so*").c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
      }
      globfree(&g);
    }
    pclose(f);
  }
  return out;
}

}  // namespace

bool Cupti::load(std::string *why) {
  if (lib_) return true;
  std::string tried;
  for (const std::string &p : candidate_paths()) {
    void *h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      tried += "\n    " + p + ": " + dlerror();
      continue;
    }
    Api api;
    api.register_callbacks =
        reinterpret_cast<decltype(api.register_callbacks)>(dlsym(h, "cuptiActivityRegisterCallbacks"));
    api.enable = reinterpret_cast<decltype(api.enable)>(dlsym(h, "cuptiActivityEnable"));
    api.disable = reinterpret_cast<decltype(api.disable)>(dlsym(h, "cuptiActivityDisable"));
    api.flush_all = reinterpret_cast<decltype(api.flush_all)>(dlsym(h, "cuptiActivityFlushAll"));
    api.next_record =
        reinterpret_cast<decltype(api.next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
    api.result_string =
        reinterpret_cast<decltype(api.result_string)>(dlsym(h, "cuptiGetResultString"));
    if (!api.register_callbacks || !api.enable || !api.disable || !api.flush_all ||
        !api.next_record) {
      tried += "\n    " + p + ": missing cuptiActivity* entry points";
      dlclose(h);
      continue;
    }
    g_api = api;
    const int r = g_api.register_callbacks(on_request, on_complete);
    if (r != 0) {
      tried += "\n    " + p + ": cuptiActivityRegisterCallbacks: " + result_text(r);
      dlclose(h);
      continue;
    }
    lib_ = h;
    path_ = p;
    return true;
  }
  if (why) *why = "no usable libcupti found; tried:" + tried;
  return false;
}

bool Cupti::enable(std::string *why) {
  if (!lib_) return false;
  if (enabled_) return true;
  const int r = g_api.enable(kKindConcurrentKernel);
  if (r != 0) {
    if (why) *why = "cuptiActivityEnable(CONCURRENT_KERNEL): " + result_text(r);
    return false;
  }
  enabled_ = true;
  return true;
}

void Cupti::disable() {
  if (!lib_ || !enabled_) return;
  g_api.flush_all(kFlushForced);
  g_api.disable(kKindConcurrentKernel);
  enabled_ = false;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_records.clear();
}

std::vector<KernelRecord> Cupti::take() {
  std::vector<KernelRecord> out;
  if (!lib_) return out;
  g_api.flush_all(kFlushForced);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    out.swap(g_records);
  }
  std::sort(out.begin(), out.end(),
            [](const KernelRecord &a, const KernelRecord &b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace cake_bench
