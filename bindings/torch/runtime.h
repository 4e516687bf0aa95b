// What every Cake op of libcake_torch needs from one place: the process-wide Cake handle of a
// device, the current stream, the backward's workspace per (device, stream), Cake's status
// turned into a PyTorch error, and tensors viewed as the [rows, d] matrices Cake takes.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "cake.h"

namespace cake_torch {

// The handle of @p device (a CUDA device), created on first use and kept for the process's life:
// module loads happen once, never on the launch path afterwards.
cake_handle_t handle_for(const at::Device &device);

// PyTorch's current stream of @p device.
cake_stream_t current_stream(const at::Device &device);

// A zero-filled device buffer of at least @p bytes for @p stream of @p device; nullptr for 0
// bytes. Cached per (device, stream) and grown when needed; Cake leaves it zeroed after every
// call, so it is zeroed only when allocated. Allocating one while the stream is being captured
// into a CUDA graph is refused (the buffer would live in the graph's private pool).
void *workspace(const at::Device &device, cake_stream_t stream, size_t bytes);

// Throws unless @p status is CAKE_STATUS_SUCCESS. The message starts with a marker the Python
// package turns back into its CakeError class: "cake: <function>: <status name> (<n>): <text>".
// Statuses that mean "the caller passed something wrong" raise ValueError, the others
// RuntimeError.
void check(cake_status_t status, const char *function);

// @p t ([..., d]) as [rows, d] with a contiguous last dimension, a 16-byte aligned start and a
// row stride of whole 16-byte units: a view when it already is one, else a copy.
struct Rows {
  at::Tensor tensor;
  int64_t rows;
  int64_t stride;  // in elements
};
Rows as_rows(const at::Tensor &t, int64_t d);

// @p t contiguous with a 16-byte aligned start (a copy when it is not).
at::Tensor dense(const at::Tensor &t);

// The cake_dtype_t of a floating tensor (0 for a dtype Cake does not take).
cake_dtype_t dtype_of(at::ScalarType type);

// The one device all of @p tensors live on (a CUDA device), or a ValueError naming the first
// that is elsewhere.
void check_same_cuda_device(const char *op, const at::Tensor &first, const char *first_name,
                            std::initializer_list<std::pair<const at::Tensor *, const char *>> rest);

}  // namespace cake_torch
