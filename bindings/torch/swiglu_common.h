// What the SwiGLU ops share (swiglu_ops.cc, swiglu_fp8_ops.cc, swiglu_grouped_ops.cc): the
// checks of in and grad, the program name, the variant, the four outputs' allocation and the
// forward/backward call. Each family keeps
// its own orientation/scale checks, descriptor and scale shapes.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>
#include <tuple>

#include "cake.h"
#include "runtime.h"

namespace cake_torch {

// row_q, row_s, col_q, col_s; an orientation not asked for gets empty tensors.
using SwigluOutputs = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

// in: bfloat16 [m, 2k] on a CUDA device.
void check_swiglu_input(const char *op, const at::Tensor &inp);

// grad (the backward's, NULL for the forward): bfloat16 [m, k] on in's device.
void check_swiglu_grad(const char *op, const at::Tensor &inp, const at::Tensor *grad);

// The variant of a call (docs/spec/swiglu-mxfp8.md, "Variants") and the tensors its
// descriptor points to, kept alive for the call.
struct SwigluVariant {
  cake_swiglu_variant_desc desc;  // the descriptor's member
  at::Tensor prob;                // prob as the kernel reads it (contiguous FP32), or undefined
  at::Tensor dprob;               // FP32 [rows] for a weighted backward, else empty
};

// activation 0 (silu) or 1 (clamped, with alpha and limit: the library checks those); prob
// NULL-able, FP32 [rows] or [rows, 1] on in's device, rows = in.size(0); a weighted backward
// gets its dprob allocated. @p defaults: the descriptor's member as its *_init set it.
SwigluVariant swiglu_variant(const char *op, const at::Tensor &inp, bool backward,
                             const cake_swiglu_variant_desc &defaults, int64_t activation,
                             double alpha, double limit, const std::optional<at::Tensor> &prob);

// The program a call forces, kept alive for the descriptor's const char *.
std::optional<std::string> program_name(const std::optional<c10::string_view> &program);

// The outputs of [m, o] quantized (row_q [m, o], col_q [o, m], FP8 E4M3) with scales of the
// given shapes and type; `row`/`col` say which orientations are asked for.
SwigluOutputs swiglu_outputs(const at::Tensor &inp, int64_t m, int64_t o, bool row, bool col,
                             at::IntArrayRef row_s_shape, at::IntArrayRef col_s_shape,
                             at::ScalarType scale_type);

// A tensor's data, NULL when it is empty (an orientation not asked for).
void *ptr_or_null(const at::Tensor &t);

template <class Desc>
using SwigluForward = cake_status_t (*)(cake_handle_t, const Desc *, const void *, void *, void *,
                                        void *, void *, cake_stream_t);
template <class Desc>
using SwigluBackward = cake_status_t (*)(cake_handle_t, const Desc *, const void *, const void *,
                                         void *, void *, void *, void *, cake_stream_t);

// Runs the forward (grad NULL) or the backward on in's device and current stream into `out`.
template <class Desc>
void swiglu_launch(const Desc &desc, const at::Tensor &inp, const at::Tensor *grad,
                   SwigluOutputs &out, SwigluForward<Desc> forward, const char *forward_name,
                   SwigluBackward<Desc> backward, const char *backward_name) {
  const at::Tensor in = dense(inp);
  const cake_handle_t h = handle_for(inp.device());
  const cake_stream_t stream = current_stream(inp.device());
  auto &[row_q, row_s, col_q, col_s] = out;
  if (grad == nullptr) {
    check(forward(h, &desc, in.data_ptr(), ptr_or_null(row_q), ptr_or_null(row_s),
                  ptr_or_null(col_q), ptr_or_null(col_s), stream),
          forward_name);
  } else {
    const at::Tensor g = dense(*grad);
    check(backward(h, &desc, in.data_ptr(), g.data_ptr(), ptr_or_null(row_q), ptr_or_null(row_s),
                   ptr_or_null(col_q), ptr_or_null(col_s), stream),
          backward_name);
  }
}

}  // namespace cake_torch
