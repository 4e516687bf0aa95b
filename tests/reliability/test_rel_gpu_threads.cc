// 32 host threads at once, each with its own stream and its own buffers, mixed
// operations and shapes (normgate forward, backward in both packages, SwiGLU + MXFP8 forward and
// backward when present, forced programs, cross-check tables), all on shared handles, while four
// more threads create and destroy handles of their own. Every result equals the same task run
// serially first, byte for byte (the non-deterministic dw within 1 ulp). Skips without a GPU.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_common.h"
#include "rel_gpu.h"

namespace {

constexpr int kThreads = 32;
constexpr int kRounds = 3;

std::vector<relg::Task> tasks_of(int t) {
  const bool sw = rel::have_swiglu();
  const int32_t widths[] = {64, 128, 256, 96, 1000, 128, 8};
  const int64_t rows[] = {1, 333, 5000, 70000, 17, 4096, 20000};
  std::vector<relg::Task> out(3);
  for (int i = 0; i < 3; ++i) {
    relg::Task &k = out[i];
    const int kind = (t + i) % (sw ? 5 : 3);
    k.op = kind == 0 ? relg::Op::kFwd : kind == 1 ? relg::Op::kBwdDet : kind == 2 ? relg::Op::kBwdNondet
         : kind == 3 ? relg::Op::kSwFwd : relg::Op::kSwBwd;
    k.d = widths[(t + 2 * i) % 7];
    k.rows = rows[(3 * t + i) % 7];
    if (int64_t(k.d) * k.rows > (int64_t(1) << 22)) k.rows = (int64_t(1) << 22) / k.d;
    k.pad = (t % 3) * 8;
    k.dw_dtype = (t & 1) ? CAKE_DTYPE_F32 : CAKE_DTYPE_BF16;
    k.m = 128 * (1 + (t + i) % 5);
    k.k = 128 * (1 + (2 * t + i) % 6);
    k.orientation = 1 + (t + i) % 3;
  }
  return out;
}

}  // namespace

static void test_threads_equal_serial(void **) {
  SKIP_WITHOUT_GPU();
  CUDA_OK(cudaFree(nullptr));
  cake_handle_t shared = nullptr;
  CAKE_OK(cake_create(&shared, 0));
  cake_device_info info;
  cake_device_info_init(&info);
  CAKE_OK(cake_device_query(shared, &info));
  // On sm_90 every fourth thread routes with another table (cross-check images).
  std::vector<cake_handle_t> cross;
  if (info.cc_major == 9 && info.cc_minor == 0) {
    for (cake_arch_t a : {CAKE_ARCH_SM100, CAKE_ARCH_SM103, CAKE_ARCH_SM107}) {
      cake_handle_options o;
      cake_handle_options_init(&o);
      o.table = a;
      cake_handle_t h = nullptr;
      CAKE_OK(cake_create_ex(&h, 0, &o));
      cross.push_back(h);
    }
  }
  auto handle_of = [&](int t) { return (t % 4 == 3 && !cross.empty()) ? cross[t / 4 % cross.size()] : shared; };

  // Serial results first: every thread's tasks on the legacy stream, one after another.
  std::vector<std::vector<relg::Task>> tasks(kThreads);
  std::vector<std::vector<std::vector<std::vector<uint8_t>>>> want(kThreads);
  std::string err;
  for (int t = 0; t < kThreads; ++t) {
    tasks[t] = tasks_of(t);
    for (relg::Task &k : tasks[t]) {
      if (!k.setup(handle_of(t), &err)) {
        print_error("thread %d %s: %s\n", t, k.label().c_str(), err.c_str());
        fail();
      }
      k.fill(77 + t, nullptr);
      const cake_status_t st = k.launch(handle_of(t), nullptr);
      if (st != CAKE_STATUS_SUCCESS) {
        print_error("serial %s: %s\n", k.label().c_str(), cake_last_error_message());
        fail();
      }
      want[t].push_back(k.read(nullptr, &err));
    }
  }
  // Then all at once, several rounds, with handles being created and destroyed alongside.
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::vector<std::string> first_error(kThreads);
  std::vector<std::thread> churn;
  for (int c = 0; c < 4; ++c) {
    churn.emplace_back([&] {
      while (!done.load()) {
        cake_handle_t h = nullptr;
        if (cake_create(&h, 0) != CAKE_STATUS_SUCCESS || cake_destroy(h) != CAKE_STATUS_SUCCESS) {
          ++failures;
          return;
        }
      }
    });
  }
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      cudaStream_t s;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        first_error[t] = "stream";
        ++failures;
        return;
      }
      std::string e;
      for (int r = 0; r < kRounds && e.empty(); ++r) {
        for (size_t i = 0; i < tasks[t].size() && e.empty(); ++i) {
          relg::Task &k = tasks[t][i];
          cudaMemsetAsync(k.out[0].ptr, 0xFF, k.out[0].bytes, s);  // results must be rewritten
          const cake_status_t st = k.launch(handle_of(t), s);
          if (st != CAKE_STATUS_SUCCESS) {
            e = k.label() + ": " + cake_last_error_message();
            break;
          }
          const auto got = k.read(s, &e);
          if (!e.empty()) break;
          const std::string d = relg::compare(k, got, want[t][i]);
          if (!d.empty()) e = k.label() + ": " + d;
        }
      }
      cudaStreamDestroy(s);
      if (!e.empty()) {
        first_error[t] = e;
        ++failures;
      }
    });
  }
  for (auto &w : workers) w.join();
  done = true;
  for (auto &c : churn) c.join();
  for (int t = 0; t < kThreads; ++t) {
    if (!first_error[t].empty()) print_error("thread %d: %s\n", t, first_error[t].c_str());
  }
  print_message("%d threads x %d rounds x 3 tasks on own streams%s: %d failures\n", kThreads, kRounds,
                rel::have_swiglu() ? " (SwiGLU included)" : "", failures.load());
  tasks.clear();
  for (cake_handle_t h : cross) cake_destroy(h);
  cake_destroy(shared);
  assert_int_equal(failures.load(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads_equal_serial)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
