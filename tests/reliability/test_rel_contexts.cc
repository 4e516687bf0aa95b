// Contexts and devices.
//   - No visible device: a child process with CUDA_VISIBLE_DEVICES="" gets CAKE_STATUS_NO_DEVICE
//     (or CAKE_STATUS_DRIVER_UNAVAILABLE where there is no driver at all, as in CI) from
//     cake_create, a NULL handle and a message that says why. Runs everywhere.
//   - A second context on one device (cuCtxCreate through the runtime's driver entry points):
//     Cake works in the device's primary context whatever context is current, restores the
//     caller's current context, and a stream that belongs to another context is refused by the
//     launch: CAKE_STATUS_CUDA_ERROR with the driver's error, nothing written, and the handle
//     keeps working (docs/reliability.md, "Threads, handles and contexts").
//   - Two devices (when there are two): a handle per device, each computing the same bytes; a
//     tensor on the wrong device is run in a child process, and the result recorded.
// GPU parts skip without a GPU.
#include <cuda.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/gpu_common.h"
#include "rel_gpu.h"

extern char **environ;

namespace {

std::string g_self;

// Runs this binary again with `arg` and CUDA_VISIBLE_DEVICES set as given (NULL: unchanged);
// returns its exit status.
int run_child(const char *arg, const char *visible) {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    if (visible && std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) == 0) continue;
    env.push_back(*e);
  }
  if (visible) env.push_back(std::string("CUDA_VISIBLE_DEVICES=") + visible);
  std::vector<char *> envp;
  for (auto &s : env) envp.push_back(&s[0]);
  envp.push_back(nullptr);
  char *argv[] = {&g_self[0], const_cast<char *>(arg), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, g_self.c_str(), nullptr, nullptr, argv, envp.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The child of test_no_visible_device: no CUDA runtime call before Cake's.
int child_no_device() {
  cake_handle_t h = reinterpret_cast<cake_handle_t>(uintptr_t{0x1});
  const cake_status_t st = cake_create(&h, 0);
  const char *msg = cake_last_error_message();
  std::printf("child: cake_create with CUDA_VISIBLE_DEVICES=\"\" -> %s: \"%s\"\n", cake_status_string(st), msg);
  const bool ok = (st == CAKE_STATUS_NO_DEVICE || st == CAKE_STATUS_DRIVER_UNAVAILABLE) && h == nullptr &&
                  std::strlen(msg) > 10 &&
                  (st != CAKE_STATUS_NO_DEVICE || std::strstr(msg, "device") != nullptr);
  // The library still answers what needs no device.
  cake_swiglu_mxfp8_desc d;
  const bool queries = cake_version() == CAKE_VERSION &&
                       std::strcmp(cake_status_string(st), "CAKE_STATUS_UNKNOWN") != 0 &&
                       (!rel::have_swiglu() || cake_swiglu_mxfp8_desc_init(&d) == CAKE_STATUS_SUCCESS);
  // A second attempt gives the same answer.
  const cake_status_t again = cake_create(&h, 0);
  return ok && queries && again == st ? 0 : 1;
}

typedef CUresult (*CtxCreateV2)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*CtxCreateV4)(CUcontext *, void *, unsigned, CUdevice);
typedef CUresult (*CtxDestroy)(CUcontext);
typedef CUresult (*CtxGetCurrent)(CUcontext *);
typedef CUresult (*CtxSetCurrent)(CUcontext);
typedef CUresult (*StreamCreate)(CUstream *, unsigned);
typedef CUresult (*StreamDestroy)(CUstream);

template <class F>
F driver_fn(const char *name, int version) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<F>(fn);
}

relg::Task forward_task() {
  relg::Task t;
  t.op = relg::Op::kFwd;
  t.rows = 4099;
  t.d = 128;
  return t;
}

}  // namespace

static void test_no_visible_device(void **) {
  const int rc = run_child("--child-no-device", "");
  assert_int_equal(rc, 0);
}

static void test_second_context(void **) {
  SKIP_WITHOUT_GPU();
  // cuCtxCreate: the CUDA 13 form (with creation parameters), else the CUDA 12 one.
  auto ctx_create_v4 = driver_fn<CtxCreateV4>("cuCtxCreate", 13000);
  auto ctx_create_v2 = driver_fn<CtxCreateV2>("cuCtxCreate", 12000);
  auto ctx_create = [&](CUcontext *c, unsigned flags, CUdevice dev) {
    return ctx_create_v4 ? ctx_create_v4(c, nullptr, flags, dev) : ctx_create_v2(c, flags, dev);
  };
  assert_true(ctx_create_v4 != nullptr || ctx_create_v2 != nullptr);
  auto ctx_destroy = driver_fn<CtxDestroy>("cuCtxDestroy", 12000);
  auto ctx_get = driver_fn<CtxGetCurrent>("cuCtxGetCurrent", 12000);
  auto ctx_set = driver_fn<CtxSetCurrent>("cuCtxSetCurrent", 12000);
  auto stream_create = driver_fn<StreamCreate>("cuStreamCreate", 12000);
  auto stream_destroy = driver_fn<StreamDestroy>("cuStreamDestroy", 12000);
  assert_non_null(ctx_destroy);
  assert_non_null(ctx_get);
  assert_non_null(ctx_set);
  assert_non_null(stream_create);
  assert_non_null(stream_destroy);

  CUDA_OK(cudaFree(nullptr));
  CUcontext primary = nullptr;
  assert_int_equal(ctx_get(&primary), CUDA_SUCCESS);
  cake_handle_t h = nullptr;
  CAKE_OK(cake_create(&h, 0));
  relg::Task t = forward_task();
  std::string err;
  assert_true(t.setup(h, &err));
  cudaStream_t primary_stream;
  CUDA_OK(cudaStreamCreateWithFlags(&primary_stream, cudaStreamNonBlocking));
  t.fill(5, primary_stream);  // the inputs, ordered before the launch on the same stream
  CAKE_OK(t.launch(h, primary_stream));
  const auto want = t.read(primary_stream, &err);

  CUcontext other = nullptr;
  assert_int_equal(ctx_create(&other, 0, 0), CUDA_SUCCESS);  // now current on this thread
  CUcontext cur = nullptr;
  ctx_get(&cur);
  assert_ptr_equal(cur, other);
  CUstream other_stream = nullptr;
  assert_int_equal(stream_create(&other_stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

  // (a) The other context current, the primary context's stream: works, current restored.
  ctx_set(primary);
  CUDA_OK(cudaMemset(t.out[0].ptr, 0xFF, t.out[0].bytes));
  CUDA_OK(cudaDeviceSynchronize());
  ctx_set(other);
  CAKE_OK(t.launch(h, primary_stream));
  ctx_get(&cur);
  assert_ptr_equal(cur, other);
  ctx_set(primary);
  auto got = t.read(primary_stream, &err);
  std::string diff = relg::compare(t, got, want);
  print_message("(a) other context current, primary stream: %s\n", diff.empty() ? "same bytes" : diff.c_str());
  assert_true(diff.empty());

  // (b) A handle created while the other context is current still uses the primary context.
  ctx_set(other);
  cake_handle_t h2 = nullptr;
  CAKE_OK(cake_create(&h2, 0));
  ctx_get(&cur);
  assert_ptr_equal(cur, other);
  CAKE_OK(t.launch(h2, primary_stream));
  ctx_set(primary);
  got = t.read(primary_stream, &err);
  diff = relg::compare(t, got, want);
  print_message("(b) handle created under the other context: %s\n", diff.empty() ? "same bytes" : diff.c_str());
  assert_true(diff.empty());

  // (c) A stream of the other context: refused by the launch, nothing written, handle fine.
  CUDA_OK(cudaMemset(t.out[0].ptr, 0xFF, t.out[0].bytes));
  CUDA_OK(cudaDeviceSynchronize());
  ctx_set(other);
  const cake_status_t st = t.launch(h, reinterpret_cast<cudaStream_t>(other_stream));
  print_message("stream of another context -> %s: \"%s\"\n", cake_status_string(st), cake_last_error_message());
  ctx_get(&cur);
  assert_ptr_equal(cur, other);
  ctx_set(primary);
  CUDA_OK(cudaDeviceSynchronize());
  assert_int_equal(st, CAKE_STATUS_CUDA_ERROR);
  assert_true(std::strstr(cake_last_error_message(), "CUDA_ERROR") != nullptr);
  std::vector<uint8_t> y(t.out[0].bytes);
  CUDA_OK(cudaMemcpy(y.data(), t.out[0].ptr, y.size(), cudaMemcpyDeviceToHost));
  for (uint8_t b : y) assert_int_equal(b, 0xFF);
  CAKE_OK(t.launch(h, primary_stream));  // no sticky error
  got = t.read(primary_stream, &err);
  diff = relg::compare(t, got, want);
  print_message("(c) afterwards, primary stream: %s\n", diff.empty() ? "same bytes" : diff.c_str());
  assert_true(diff.empty());

  ctx_set(other);
  stream_destroy(other_stream);
  ctx_set(primary);
  assert_int_equal(ctx_destroy(other), CUDA_SUCCESS);
  ctx_set(primary);
  CUDA_OK(cudaStreamDestroy(primary_stream));
  cake_destroy(h2);
  cake_destroy(h);
}

// The child of test_two_devices: device-1 tensors given to a device-0 handle.
int child_wrong_device() {
  cake_handle_t h0 = nullptr;
  if (cake_create(&h0, 0) != CAKE_STATUS_SUCCESS) return 3;
  cudaSetDevice(1);
  relg::Task t = forward_task();
  std::string err;
  if (!t.setup(h0, &err)) return 4;  // sizes only; buffers land on device 1 (current)
  t.fill(9, nullptr);
  cudaDeviceSynchronize();
  cudaSetDevice(0);
  const cake_status_t st = t.launch(h0, nullptr);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("child: device-1 tensors, device-0 handle -> %s (\"%s\"); then %s\n", cake_status_string(st),
              cake_last_error_message(), cudaGetErrorString(e));
  // 0: refused by Cake, naming the other device; 1: anything else.
  return st == CAKE_STATUS_INVALID_ARGUMENT && std::strstr(cake_last_error_message(), "device 1") ? 0 : 1;
}

static void test_two_devices(void **) {
  SKIP_WITHOUT_GPU();
  int n = 0;
  CUDA_OK(cudaGetDeviceCount(&n));
  if (n < 2) {
    print_message("SKIP: one device (two-device checks need nvidia-h200-x2)\n");
    skip();
  }
  std::vector<std::vector<uint8_t>> first;
  for (int dev = 0; dev < 2; ++dev) {
    CUDA_OK(cudaSetDevice(dev));
    cake_handle_t h = nullptr;
    CAKE_OK(cake_create(&h, dev));
    relg::Task t = forward_task();
    std::string err;
    assert_true(t.setup(h, &err));
    t.fill(5, nullptr);
    CAKE_OK(t.launch(h, nullptr));
    const auto got = t.read(nullptr, &err);
    if (dev == 0) first = got;
    else assert_true(relg::compare(t, got, first).empty());
    cake_destroy(h);
  }
  CUDA_OK(cudaSetDevice(0));
  // A tensor on the other device is refused (CAKE_STATUS_INVALID_ARGUMENT naming it), not
  // computed on: the child exits 0 only then.
  const int rc = run_child("--child-wrong-device", nullptr);
  if (rc != 0) {
    print_error("a tensor on another device was not refused (child exit %d)\n", rc);
    fail();
  }
}

int main(int argc, char **argv) {
  g_self = "/proc/self/exe";
  char path[4096];
  const ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  if (len > 0) {
    path[len] = '\0';
    g_self = path;
  }
  if (argc > 1 && std::strcmp(argv[1], "--child-no-device") == 0) return child_no_device();
  if (argc > 1 && std::strcmp(argv[1], "--child-wrong-device") == 0) return child_wrong_device();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_visible_device),
      cmocka_unit_test(test_second_context),
      cmocka_unit_test(test_two_devices),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
