#include "runtime.h"

#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <utility>

namespace cake_torch {
namespace {

constexpr int kMaxDevices = 64;
std::array<std::atomic<cake_handle_t>, kMaxDevices> g_handles{};
std::mutex g_mutex;
std::map<std::pair<int, cake_stream_t>, at::Tensor> g_workspaces;

bool is_caller_error(cake_status_t status) {
  switch (status) {
    case CAKE_STATUS_INVALID_ARGUMENT:
    case CAKE_STATUS_UNSUPPORTED_SHAPE:
    case CAKE_STATUS_MISALIGNED:
    case CAKE_STATUS_INSUFFICIENT_WORKSPACE:
    case CAKE_STATUS_INVALID_HANDLE:
    case CAKE_STATUS_PROGRAM_NOT_FOUND:
      return true;
    default:
      return false;
  }
}

bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

}  // namespace

void check(cake_status_t status, const char *function) {
  if (status == CAKE_STATUS_SUCCESS) return;
  const char *name = cake_status_string(status);
  const char *message = cake_last_error_message();
  if (is_caller_error(status)) {
    TORCH_CHECK_VALUE(false, "cake: ", function, ": ", name, " (", static_cast<int>(status),
                      "): ", message);
  }
  TORCH_CHECK(false, "cake: ", function, ": ", name, " (", static_cast<int>(status), "): ",
              message);
}

cake_handle_t handle_for(const at::Device &device) {
  const int index = device.index() < 0 ? 0 : device.index();
  TORCH_CHECK_VALUE(index < kMaxDevices, "cake: device index ", index, " >= ", kMaxDevices);
  cake_handle_t h = g_handles[index].load(std::memory_order_acquire);
  if (h != nullptr) return h;
  std::lock_guard<std::mutex> lock(g_mutex);
  h = g_handles[index].load(std::memory_order_relaxed);
  if (h == nullptr) {
    check(cake_create(&h, index), "cake_create");
    g_handles[index].store(h, std::memory_order_release);
  }
  return h;
}

cake_stream_t current_stream(const at::Device &device) {
  return c10::cuda::getCurrentCUDAStream(device.index()).stream();
}

void *workspace(const at::Device &device, cake_stream_t stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  const auto key = std::make_pair(static_cast<int>(device.index()), stream);
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_workspaces.find(key);
  if (it != g_workspaces.end() && static_cast<size_t>(it->second.numel()) >= bytes) {
    return it->second.data_ptr();
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TORCH_CHECK(cudaStreamIsCapturing(stream, &capture) == cudaSuccess,
              "cake: cudaStreamIsCapturing failed");
  TORCH_CHECK(capture == cudaStreamCaptureStatusNone,
              "cake: the norm-gate backward needs a workspace of ", bytes,
              " bytes on this stream while it is being captured into a CUDA graph; make one "
              "eager call of this shape on the stream before capturing");
  // Rounded up so that slowly growing sizes do not reallocate each time.
  const int64_t old = it == g_workspaces.end() ? 0 : it->second.numel();
  const int64_t size = std::max<int64_t>({static_cast<int64_t>(bytes), 2 * old, 4096});
  at::Tensor ws = at::zeros({size}, at::TensorOptions().dtype(at::kByte).device(device));
  g_workspaces[key] = ws;
  return ws.data_ptr();
}

Rows as_rows(const at::Tensor &t, int64_t d) {
  // The common cases need no new tensor: a [..., d] tensor whose leading dimensions collapse
  // into one row stride (contiguous, or rows of a wider buffer) is passed as it is.
  const int64_t n = t.dim();
  const int64_t esize = static_cast<int64_t>(t.element_size());
  if (n >= 1 && t.stride(n - 1) == 1 && aligned16(t.data_ptr())) {
    const int64_t rows = n == 1 ? 1 : t.numel() / d;
    int64_t stride = n == 1 ? d : t.stride(n - 2);
    bool collapses = true;
    for (int64_t i = n - 3; i >= 0 && collapses; --i) {
      collapses = t.size(i) == 1 || t.stride(i) == t.stride(i + 1) * t.size(i + 1);
    }
    if (rows <= 1) stride = d;
    if (collapses && (rows <= 1 || (stride >= d && (stride * esize) % 16 == 0))) {
      return {t, rows, stride};
    }
  }
  at::Tensor m = t.reshape({-1, d}).contiguous();
  if (!aligned16(m.data_ptr())) m = m.clone(at::MemoryFormat::Contiguous);
  return {m, m.size(0), d};
}

at::Tensor dense(const at::Tensor &t) {
  if (t.is_contiguous() && aligned16(t.data_ptr())) return t;
  at::Tensor c = t.contiguous();
  return aligned16(c.data_ptr()) ? c : c.clone(at::MemoryFormat::Contiguous);
}

cake_dtype_t dtype_of(at::ScalarType type) {
  switch (type) {
    case at::kBFloat16:
      return CAKE_DTYPE_BF16;
    case at::kFloat:
      return CAKE_DTYPE_F32;
    case at::kHalf:
      return CAKE_DTYPE_F16;
    default:
      return static_cast<cake_dtype_t>(0);
  }
}

void check_same_cuda_device(const char *op, const at::Tensor &first, const char *first_name,
                            std::initializer_list<std::pair<const at::Tensor *, const char *>> rest) {
  TORCH_CHECK_VALUE(first.is_cuda(), "cake ", op, ": ", first_name, " is on ", first.device(),
                    "; Cake runs on CUDA tensors");
  for (const auto &[t, name] : rest) {
    TORCH_CHECK_VALUE(t->device() == first.device(), "cake ", op, ": ", name, " is on ",
                      t->device(), "; all tensors must be on one CUDA device (", first.device(),
                      ")");
  }
}

}  // namespace cake_torch
