// The host paths under ThreadSanitizer (built with -fsanitize=thread from the library's own
// sources): 32 threads start together (the first cake_create_ex of the process, which loads the
// driver once, is among the racing calls) and each runs a mixed workload many times over:
// program queries and workspace sizes on shared device-less handles, launching calls on a
// shared handle with the recording stub driver, rejections whose thread-local messages must
// carry the thread's own values, struct_size paths, handle options, program listing, and the
// SwiGLU + MXFP8 queries when the library has them. Every thread's results must equal the same
// workload run serially first. Exit status 0 on success; TSan reports fail the test by itself.
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rel_fake.h"

namespace {

constexpr int kThreads = 32;
constexpr int kIterations = 400;

cake_handle_t g_query[4];   // device-less, no driver: queries only
cake_handle_t g_record[4];  // stub driver that records launches (thread-local records)
const cake_arch_t kArchs[] = {CAKE_ARCH_SM90, CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107};

void add(std::string &out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string &out, const char *fmt, ...) {
  char buf[512];
  va_list a;
  va_start(a, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, a);
  va_end(a);
  out += buf;
  out += '\n';
}

// One thread's mixed workload; everything it observes goes into the digest.
std::string workload(int tid, int iter) {
  std::string out;
  const int a = (tid + iter) % 4;
  cake_handle_t q = g_query[a];
  cake_handle_t r = g_record[a];
  const int32_t widths[] = {64, 128, 256, 96, 8, 8192};
  const int32_t d = widths[(tid * 7 + iter) % 6];
  const int64_t rows = 1 + (int64_t(tid) * 7919 + iter * 104729) % 3000000;

  // Queries and the workspace size.
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = rows;
  desc.d = d;
  desc.package = (tid & 1) ? CAKE_NORMGATE_NONDETERMINISTIC : CAKE_NORMGATE_DETERMINISTIC;
  desc.dw_dtype = (tid & 2) ? CAKE_DTYPE_F32 : CAKE_DTYPE_BF16;
  cake_program_info info;
  cake_program_info_init(&info);
  cake_status_t st = cake_normgate_forward_query(q, &desc, &info);
  add(out, "fq %d %s %lld %lld [%s]", st, info.name, (long long)info.grid, (long long)info.metric,
      cake_last_error_message());
  st = cake_normgate_backward_query(q, &desc, &info);
  add(out, "bq %d %s %lld [%s]", st, info.name, (long long)info.grid, cake_last_error_message());
  size_t ws = 0;
  st = cake_normgate_workspace_size(q, &desc, &ws);
  add(out, "ws %d %zu", st, ws);

  // A launch on the recording driver: what it would launch.
  rel::reset_recording();
  const void *p16 = reinterpret_cast<const void *>(uintptr_t{0x7f0000000000} + 16 * tid);
  void *o16 = reinterpret_cast<void *>(uintptr_t{0x7f1000000000} + 16 * tid);
  st = cake_normgate_forward(r, &desc, p16, p16, p16, o16, nullptr, nullptr);
  add(out, "fwd %d launches %zu grid %u block %u", st, rel::launches().size(),
      rel::launches().empty() ? 0u : rel::launches()[0].grid[0],
      rel::launches().empty() ? 0u : rel::launches()[0].block[0]);
  rel::reset_recording();
  st = cake_normgate_backward(r, &desc, p16, p16, p16, p16, o16, o16, o16, o16, ws, nullptr);
  add(out, "bwd %d launches %zu grid %u", st, rel::launches().size(),
      rel::launches().empty() ? 0u : rel::launches()[0].grid[0]);

  // Rejections carry this thread's own values in its own message.
  cake_normgate_desc bad = desc;
  bad.rows = -1 - tid;
  st = cake_normgate_forward_query(q, &bad, &info);
  char want[64];
  std::snprintf(want, sizeof want, "desc->rows = %d", -1 - tid);
  add(out, "rej %d %d", st, std::strstr(cake_last_error_message(), want) != nullptr);
  bad = desc;
  bad.x_stride = d + 1 + tid % 7;
  st = cake_normgate_forward_query(q, &bad, &info);
  std::snprintf(want, sizeof want, "desc->x_stride = %d", d + 1 + tid % 7);
  add(out, "rej %d %d", st, std::strstr(cake_last_error_message(), want) != nullptr);
  // ... and a success clears it.
  st = cake_normgate_forward_query(q, &desc, &info);
  add(out, "clear %d [%s]", st, cake_last_error_message());

  // struct_size paths: an older (smaller) info, a newer desc with a zero and a non-zero tail.
  struct Big {
    cake_program_info info;
    unsigned char tail[16];
  } big;
  std::memset(&big, 0xA5, sizeof big);
  big.info.struct_size = 8 + (tid % 5) * 16;
  st = cake_normgate_forward_query(q, &desc, &big.info);
  add(out, "small info %d %d", st, big.tail[0]);
  struct Newer {
    cake_normgate_desc base;
    uint64_t extra;
  } newer;
  std::memset(&newer, 0, sizeof newer);
  newer.base = desc;
  newer.base.struct_size = sizeof newer;
  newer.extra = uint64_t(tid);
  st = cake_normgate_forward_query(q, &newer.base, &info);
  add(out, "newer %d [%s]", st, cake_last_error_message());

  // Handle options: validated before the driver, which this process does not have.
  cake_handle_options o;
  cake_handle_options_init(&o);
  o.table = kArchs[tid % 4];
  o.sm_count = (tid % 3 == 0) ? -tid - 1 : tid;
  cake_handle_t h = nullptr;
  st = cake_create_ex(&h, 0, &o);
  add(out, "create %d %d [%s]", st, h == nullptr, cake_last_error_message());

  // Listing.
  const int n = cake_program_count(q);
  const char *name = cake_program_name(q, (tid + iter) % (n + 1));
  add(out, "list %d %s", n, name ? name : "(null)");
  add(out, "str %s %d", cake_status_string(static_cast<cake_status_t>(tid % 14)), cake_version());

  if (rel::have_swiglu()) {
    cake_swiglu_mxfp8_desc sd;
    cake_swiglu_mxfp8_desc_init(&sd);
    sd.m = 128 * (1 + tid);
    sd.k = 128 * (1 + iter % 9);
    sd.orientation = static_cast<cake_mxfp8_orientation_t>(1 + tid % 3);
    st = cake_swiglu_mxfp8_query(q, &sd, tid & 1, &info);
    add(out, "swq %d %s %lld", st, info.name, (long long)info.grid);
    cake_swiglu_mxfp8_sizes sz;
    cake_swiglu_mxfp8_sizes_init(&sz);
    st = cake_swiglu_mxfp8_buffer_sizes(&sd, tid & 1, &sz);
    add(out, "sws %d %zu %zu %zu", st, sz.q_bytes, sz.row_s_bytes, sz.col_s_bytes);
    rel::reset_recording();
    st = cake_swiglu_mxfp8_forward(r, &sd, p16, o16, o16, o16, o16, nullptr);
    add(out, "swf %d %zu", st, rel::launches().size());
    sd.m = 100;
    st = cake_swiglu_mxfp8_query(q, &sd, 0, &info);
    add(out, "swrej %d %d", st, std::strstr(cake_last_error_message(), "desc->m = 100") != nullptr);
  }
  return out;
}

}  // namespace

int main() {
  setenv("CAKE_LIBCUDA", "/nonexistent/libcuda-for-the-tsan-test.so.1", 1);
  for (int i = 0; i < 4; ++i) {
    g_query[i] = rel::make_crashing_handle(kArchs[i], 132 + 16 * i);
    g_record[i] = rel::make_recording_handle(kArchs[i], 132 + 16 * i);
  }
  // The threads start together, so their first calls (the first driver load among them) race.
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int> failures{0};
  std::vector<std::string> first(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return go; });
      }
      for (int it = 0; it < kIterations; ++it) {
        std::string got = workload(t, it);
        if (it == 0) first[t] = got;
        // The same work on this thread again gives the same answers.
        if (it % 8 == 7 && workload(t, 0) != first[t]) {
          std::fprintf(stderr, "thread %d: iteration 0 repeated differently\n", t);
          ++failures;
        }
      }
    });
  }
  {
    std::lock_guard<std::mutex> lock(m);
    go = true;
  }
  cv.notify_all();
  for (auto &th : threads) th.join();
  // The serial run after the fact (the driver is loaded by now; the answers may not depend on
  // who loaded it).
  int compared = 0;
  for (int t = 0; t < kThreads; ++t) {
    const std::string serial = workload(t, 0);
    ++compared;
    if (serial != first[t]) {
      std::fprintf(stderr, "thread %d: concurrent results differ from serial\n--- concurrent\n%s--- serial\n%s",
                   t, first[t].c_str(), serial.c_str());
      ++failures;
    }
    if (serial.find("rej 1 1") == std::string::npos || serial.find("clear 0 []") == std::string::npos) {
      std::fprintf(stderr, "thread %d: unexpected messages:\n%s", t, serial.c_str());
      ++failures;
    }
  }
  if (std::getenv("REL_TSAN_DUMP") != nullptr) std::printf("--- thread 0's results\n%s", first[0].c_str());
  for (int i = 0; i < 4; ++i) {
    rel::free_handle(g_query[i]);
    rel::free_handle(g_record[i]);
  }
  std::printf("%d threads x %d iterations, %d workloads compared with the serial run%s: %s\n", kThreads,
              kIterations, compared, rel::have_swiglu() ? " (SwiGLU included)" : " (no SwiGLU in this build)",
              failures.load() == 0 ? "PASS" : "FAIL");
  return failures.load() == 0 ? 0 : 1;
}
