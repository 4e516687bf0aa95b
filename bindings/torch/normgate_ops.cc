// cake::normgate_fwd, cake::normgate_bwd, cake::normgate_bwd_accumulate: the CUDA kernels, and
// the autograd of normgate_fwd in C++ (its backward is one normgate_bwd call), so that an eager
// call runs no Python between the op and the launch.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include "ops.h"
#include "runtime.h"

namespace cake_torch {
namespace {

// Cake's dw_mode argument: 0 skips dw, else the cake_dtype_t of dw; -1 (the forward op's
// default) means w's dtype.
constexpr int64_t kDwSkip = 0;
constexpr int64_t kDwOfW = -1;

struct Variant {
  int64_t gate;
  bool gate_before_norm;
  int64_t group_size;
};

void check_float(const char *op, const at::Tensor &t, const char *name) {
  TORCH_CHECK_TYPE(dtype_of(t.scalar_type()) != 0, "cake ", op, ": ", name, " is ",
                   t.scalar_type(), "; Cake takes bfloat16, float16 or float32");
}

// The rules the op checks before the library does (the library checks the rest: widths, group
// sizes, strides): ranks, shapes, dtypes, devices, and z present exactly when a gate is.
void check_inputs(const char *op, const at::Tensor &x, const std::optional<at::Tensor> &z,
                  const at::Tensor &w, int64_t gate) {
  TORCH_CHECK_VALUE(x.dim() >= 1, "cake ", op, ": x must be [..., d]");
  const bool has_z = z.has_value() && z->defined();
  TORCH_CHECK_VALUE(has_z == (gate != CAKE_NORMGATE_GATE_NONE), "cake ", op, ": gate ", gate,
                    has_z ? " (none) with a z tensor" : " needs z", "; pass z exactly when "
                    "there is a gate");
  if (has_z) {
    TORCH_CHECK_VALUE(z->sizes() == x.sizes(), "cake ", op, ": x ", x.sizes(), " and z ",
                      z->sizes(), " must have one shape [..., d]");
  }
  TORCH_CHECK_VALUE(w.dim() == 1 && w.size(0) == x.size(-1), "cake ", op, ": w ", w.sizes(),
                    " must be [d] with d = x.shape[-1] = ", x.size(-1));
  check_float(op, x, "x");
  if (has_z) check_float(op, *z, "z");
  check_float(op, w, "w");
  if (has_z) {
    check_same_cuda_device(op, x, "x", {{&*z, "z"}, {&w, "w"}});
  } else {
    check_same_cuda_device(op, x, "x", {{&w, "w"}});
  }
}

void fill_desc(cake_normgate_desc *desc, int64_t rows, int64_t d, double eps, const Variant &v,
               const at::Tensor &x, const std::optional<at::Tensor> &z, const at::Tensor &w,
               const std::string *program) {
  cake_normgate_desc_init(desc);
  desc->rows = rows;
  desc->d = static_cast<int32_t>(d);
  desc->eps = static_cast<float>(eps);
  desc->gate = static_cast<cake_normgate_gate_t>(v.gate);
  desc->placement = v.gate_before_norm ? CAKE_NORMGATE_GATE_BEFORE_NORM
                                       : CAKE_NORMGATE_GATE_AFTER_NORM;
  desc->group_size = static_cast<int32_t>(v.group_size);
  desc->x_dtype = dtype_of(x.scalar_type());
  desc->z_dtype = z.has_value() && z->defined() ? dtype_of(z->scalar_type()) : CAKE_DTYPE_BF16;
  desc->w_dtype = dtype_of(w.scalar_type());
  desc->program = program != nullptr ? program->c_str() : nullptr;
}

std::optional<std::string> own(std::optional<c10::string_view> program) {
  if (!program.has_value()) return std::nullopt;
  return std::string(program->data(), program->size());
}

const void *ptr_or_null(const std::optional<Rows> &r) {
  return r.has_value() ? r->tensor.data_ptr() : nullptr;
}

at::Tensor normgate_fwd_cuda(const at::Tensor &x, const std::optional<at::Tensor> &z,
                             const at::Tensor &w, double eps, int64_t gate, bool gate_before_norm,
                             int64_t group_size, bool /*deterministic*/, int64_t /*dw_mode*/,
                             const std::optional<at::Tensor> & /*main_grad*/,
                             std::optional<c10::string_view> program) {
  check_inputs("normgate", x, z, w, gate);
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (x.numel() == 0) return y;
  const int64_t d = x.size(-1);
  const Rows xr = as_rows(x, d);
  std::optional<Rows> zr;
  if (z.has_value() && z->defined()) zr = as_rows(*z, d);
  const at::Tensor wd = dense(w);
  const std::optional<std::string> name = own(program);
  cake_normgate_desc desc;
  fill_desc(&desc, xr.rows, d, eps, {gate, gate_before_norm, group_size}, x, z, w,
            name ? &*name : nullptr);
  desc.x_stride = xr.stride;
  desc.z_stride = zr ? zr->stride : 0;
  desc.y_stride = d;
  check(cake_normgate_forward(handle_for(x.device()), &desc, xr.tensor.data_ptr(), ptr_or_null(zr),
                              wd.data_ptr(), y.data_ptr(), nullptr, current_stream(x.device())),
        "cake_normgate_forward");
  return y;
}

cake_dtype_t dw_dtype_of(int64_t dw_mode, const at::Tensor &w) {
  if (dw_mode == kDwOfW) return dtype_of(w.scalar_type());
  TORCH_CHECK_VALUE(dw_mode == CAKE_DTYPE_BF16 || dw_mode == CAKE_DTYPE_F32 ||
                        dw_mode == CAKE_DTYPE_F16,
                    "cake normgate backward: dw_mode ", dw_mode,
                    ": 0 (skip), 1 (bfloat16), 2 (float32), 3 (float16) or -1 (w's dtype)");
  return static_cast<cake_dtype_t>(dw_mode);
}

at::ScalarType scalar_type_of(cake_dtype_t t) {
  return t == CAKE_DTYPE_F32 ? at::kFloat : t == CAKE_DTYPE_F16 ? at::kHalf : at::kBFloat16;
}

// The backward's launch, shared by the plain and the accumulating op. dw may be undefined
// (skipped).
void run_backward(const at::Tensor &dy, const at::Tensor &x, const std::optional<at::Tensor> &z,
                  const at::Tensor &w, const at::Tensor &dx, const at::Tensor &dz,
                  const at::Tensor &dw, double eps, const Variant &v, bool deterministic,
                  cake_dtype_t dw_dtype, uint32_t flags, const std::optional<std::string> &name) {
  const int64_t d = x.size(-1);
  const Rows dyr = as_rows(dy, d), xr = as_rows(x, d);
  std::optional<Rows> zr;
  if (z.has_value() && z->defined()) zr = as_rows(*z, d);
  const at::Tensor wd = dense(w);
  cake_normgate_desc desc;
  fill_desc(&desc, xr.rows, d, eps, v, x, z, w, name ? &*name : nullptr);
  desc.dy_stride = dyr.stride;
  desc.x_stride = xr.stride;
  desc.z_stride = zr ? zr->stride : 0;
  desc.dx_stride = d;
  desc.dz_stride = d;
  desc.package = deterministic ? CAKE_NORMGATE_DETERMINISTIC : CAKE_NORMGATE_NONDETERMINISTIC;
  desc.dw_dtype = dw_dtype;
  desc.flags = flags;
  const cake_handle_t h = handle_for(x.device());
  size_t bytes = 0;
  check(cake_normgate_workspace_size(h, &desc, &bytes), "cake_normgate_workspace_size");
  const cake_stream_t stream = current_stream(x.device());
  void *ws = workspace(x.device(), stream, bytes);
  check(cake_normgate_backward(h, &desc, dyr.tensor.data_ptr(), xr.tensor.data_ptr(),
                               ptr_or_null(zr), wd.data_ptr(), dx.data_ptr(),
                               dz.defined() && dz.numel() ? dz.data_ptr() : nullptr,
                               dw.defined() ? dw.data_ptr() : nullptr, ws, bytes, stream),
        "cake_normgate_backward");
}

void check_dy(const at::Tensor &dy, const at::Tensor &x) {
  TORCH_CHECK_VALUE(dy.sizes() == x.sizes() && dy.scalar_type() == x.scalar_type() &&
                        dy.device() == x.device(),
                    "cake normgate backward: dy (", dy.sizes(), ", ", dy.scalar_type(), ", ",
                    dy.device(), ") must match x (", x.sizes(), ", ", x.scalar_type(), ", ",
                    x.device(), ")");
}

at::Tensor dz_like(const std::optional<at::Tensor> &z, const at::Tensor &x) {
  if (z.has_value() && z->defined()) return at::empty(z->sizes(), z->options());
  return at::empty({0}, x.options());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> normgate_bwd_cuda(
    const at::Tensor &dy, const at::Tensor &x, const std::optional<at::Tensor> &z,
    const at::Tensor &w, double eps, int64_t gate, bool gate_before_norm, int64_t group_size,
    bool deterministic, int64_t dw_mode, std::optional<c10::string_view> program) {
  check_inputs("normgate backward", x, z, w, gate);
  check_dy(dy, x);
  at::Tensor dx = at::empty(x.sizes(), x.options());
  at::Tensor dz = dz_like(z, x);
  const bool skip = dw_mode == kDwSkip;
  const cake_dtype_t dw_dtype = skip ? CAKE_DTYPE_BF16 : dw_dtype_of(dw_mode, w);
  at::Tensor dw = skip ? at::empty({0}, w.options().dtype(at::kBFloat16))
                       : at::empty({x.size(-1)}, w.options().dtype(scalar_type_of(dw_dtype)));
  if (x.numel() == 0) {
    dw.zero_();
    return {dx, dz, dw};
  }
  run_backward(dy, x, z, w, dx, dz, skip ? at::Tensor() : dw, eps,
               {gate, gate_before_norm, group_size}, deterministic, dw_dtype,
               skip ? uint32_t{CAKE_NORMGATE_DW_SKIP} : 0u, own(program));
  return {dx, dz, dw};
}

std::tuple<at::Tensor, at::Tensor> normgate_bwd_accumulate_cuda(
    const at::Tensor &dy, const at::Tensor &x, const std::optional<at::Tensor> &z,
    const at::Tensor &w, const at::Tensor &dw, double eps, int64_t gate, bool gate_before_norm,
    int64_t group_size, bool deterministic, std::optional<c10::string_view> program) {
  check_inputs("normgate backward", x, z, w, gate);
  check_dy(dy, x);
  const int64_t d = x.size(-1);
  const cake_dtype_t dw_dtype = dtype_of(dw.scalar_type());
  TORCH_CHECK_VALUE(dw.dim() == 1 && dw.size(0) == d && dw_dtype != 0 && dw.device() == x.device(),
                    "cake normgate backward: main_grad ", dw.sizes(), " ", dw.scalar_type(),
                    " must be a float32, bfloat16 or float16 [d = ", d, "] tensor on ", x.device());
  TORCH_CHECK_VALUE(dw.is_contiguous() && (reinterpret_cast<uintptr_t>(dw.data_ptr()) & 15u) == 0,
                    "cake normgate backward: main_grad must be contiguous and 16-byte aligned "
                    "(it is accumulated into in place)");
  at::Tensor dx = at::empty(x.sizes(), x.options());
  at::Tensor dz = dz_like(z, x);
  if (x.numel() == 0) return {dx, dz};
  run_backward(dy, x, z, w, dx, dz, dw, eps, {gate, gate_before_norm, group_size}, deterministic,
               dw_dtype, CAKE_NORMGATE_DW_ACCUMULATE, own(program));
  return {dx, dz};
}

// ---- the forward with quantized y -----------------------------------------------------------
// (q, q_scale, y): q E4M3 [rows / heads, heads * d]; q_scale FP8 blockwise FP32 in its MN-major
// storage [heads * d / 128, rows / heads] (cake.torch.normgate_fp8() returns the transpose,
// strides (1, rows / heads), as F.scaled_mm checks), or MXFP8 uint8 swizzled bytes; y x's shape
// when write_y, else empty.
std::tuple<at::Tensor, at::Tensor, at::Tensor> normgate_fwd_quant_cuda(
    const at::Tensor &x, const at::Tensor &z, const at::Tensor &w, int64_t format,
    int64_t scale_rule, int64_t heads, bool write_y, double eps,
    std::optional<c10::string_view> program) {
  const char *op = "normgate_fp8";
  check_inputs(op, x, z, w, CAKE_NORMGATE_GATE_SILU);
  TORCH_CHECK_VALUE(format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE || format == CAKE_NORMGATE_QUANT_MXFP8,
                    "cake ", op, ": format ", format, ": 1 (FP8 blockwise) or 2 (MXFP8)");
  TORCH_CHECK_VALUE(scale_rule == 0 || scale_rule == 1, "cake ", op, ": scale_rule ", scale_rule,
                    ": 0 (amax / 448) or 1 (powers of two)");
  const int64_t d = x.size(-1);
  if (x.numel() == 0) {  // no rows: nothing to launch (the library takes rows > 0)
    const int64_t k = (heads > 1 ? heads : 1) * d;
    at::Tensor s = format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE
                       ? at::empty({k / 128, 0}, x.options().dtype(at::kFloat))
                       : at::empty({0}, x.options().dtype(at::kByte));
    return {at::empty({0, k}, x.options().dtype(at::kFloat8_e4m3fn)), s,
            at::empty(write_y ? x.sizes() : at::IntArrayRef{0}, x.options())};
  }
  const Rows xr = as_rows(x, d), zr = as_rows(z, d);
  const at::Tensor wd = dense(w);
  const std::optional<std::string> name = own(program);
  cake_normgate_desc desc;
  fill_desc(&desc, xr.rows, d, eps, {CAKE_NORMGATE_GATE_SILU, false, 0}, x, z, w,
            name ? &*name : nullptr);
  desc.x_stride = xr.stride;
  desc.z_stride = zr.stride;
  desc.y_stride = d;
  cake_normgate_quant_desc quant;
  cake_normgate_quant_desc_init(&quant);
  quant.format = static_cast<cake_normgate_quant_format_t>(format);
  quant.scale_rule = static_cast<cake_fp8_scale_rule_t>(scale_rule);
  quant.heads = heads;
  cake_normgate_quant_sizes sizes;
  cake_normgate_quant_sizes_init(&sizes);
  check(cake_normgate_quant_buffer_sizes(&desc, &quant, &sizes), "cake_normgate_quant_buffer_sizes");
  at::Tensor q = at::empty({sizes.q_rows, sizes.q_cols}, x.options().dtype(at::kFloat8_e4m3fn));
  at::Tensor s = format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE
                     ? at::empty({sizes.s_cols, sizes.q_rows}, x.options().dtype(at::kFloat))
                     : at::empty({static_cast<int64_t>(sizes.s_bytes)}, x.options().dtype(at::kByte));
  at::Tensor y = write_y ? at::empty(x.sizes(), x.options()) : at::empty({0}, x.options());
  check(cake_normgate_forward_quantized(handle_for(x.device()), &desc, &quant, xr.tensor.data_ptr(),
                                        zr.tensor.data_ptr(), wd.data_ptr(),
                                        write_y ? y.data_ptr() : nullptr, nullptr, q.data_ptr(),
                                        s.data_ptr(), current_stream(x.device())),
        "cake_normgate_forward_quantized");
  return {q, s, y};
}

// ---- autograd --------------------------------------------------------------------------------
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class NormgateFunction : public torch::autograd::Function<NormgateFunction> {
 public:
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &x,
                            const std::optional<at::Tensor> &z, const at::Tensor &w, double eps,
                            int64_t gate, bool gate_before_norm, int64_t group_size,
                            bool deterministic, int64_t dw_mode,
                            const std::optional<at::Tensor> &main_grad,
                            std::optional<c10::string_view> program) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("cake::normgate_fwd", "")
                               .typed<decltype(normgate_fwd_cuda)>();
    at::Tensor y;
    {
      at::AutoDispatchBelowADInplaceOrView below;
      y = op.call(x, z, w, eps, gate, gate_before_norm, group_size, deterministic, dw_mode,
                  main_grad, program);
    }
    ctx->save_for_backward({x, z.has_value() ? *z : at::Tensor(), w});
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["gate"] = gate;
    ctx->saved_data["before"] = gate_before_norm;
    ctx->saved_data["group"] = group_size;
    ctx->saved_data["det"] = deterministic;
    ctx->saved_data["dw_mode"] = dw_mode;
    if (main_grad.has_value() && main_grad->defined()) ctx->saved_data["main_grad"] = *main_grad;
    if (program.has_value()) ctx->saved_data["program"] = std::string(*program);
    return y;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    static const auto bwd = c10::Dispatcher::singleton()
                                .findSchemaOrThrow("cake::normgate_bwd", "")
                                .typed<decltype(normgate_bwd_cuda)>();
    static const auto bwd_acc = c10::Dispatcher::singleton()
                                    .findSchemaOrThrow("cake::normgate_bwd_accumulate", "")
                                    .typed<decltype(normgate_bwd_accumulate_cuda)>();
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[2];
    const std::optional<at::Tensor> z =
        saved[1].defined() ? std::optional<at::Tensor>(saved[1]) : std::nullopt;
    at::Tensor dy = grads[0];
    if (dy.scalar_type() != x.scalar_type()) dy = dy.to(x.scalar_type());
    const auto &data = ctx->saved_data;
    const double eps = data.at("eps").toDouble();
    const int64_t gate = data.at("gate").toInt(), group = data.at("group").toInt();
    const bool before = data.at("before").toBool(), det = data.at("det").toBool();
    std::optional<c10::string_view> program;
    std::string name;
    if (data.count("program")) {
      name = data.at("program").toStringRef();
      program = c10::string_view(name);
    }
    at::Tensor dx, dz, dw;
    if (data.count("main_grad")) {
      std::tie(dx, dz) = bwd_acc.call(dy, x, z, w, data.at("main_grad").toTensor(), eps, gate,
                                      before, group, det, program);
    } else {
      // needs_input_grad counts the tensors the forward was given: x, z (when present), w.
      const bool w_grad = ctx->needs_input_grad(z.has_value() ? 2 : 1);
      const int64_t mode = w_grad ? data.at("dw_mode").toInt() : kDwSkip;
      std::tie(dx, dz, dw) = bwd.call(dy, x, z, w, eps, gate, before, group, det, mode, program);
      if (mode == kDwSkip) {
        dw = at::Tensor();
      } else if (dw.scalar_type() != w.scalar_type()) {
        dw = dw.to(w.scalar_type());
      }
    }
    return {dx, z.has_value() ? dz : at::Tensor(), dw, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor normgate_fwd_autograd(const at::Tensor &x, const std::optional<at::Tensor> &z,
                                 const at::Tensor &w, double eps, int64_t gate,
                                 bool gate_before_norm, int64_t group_size, bool deterministic,
                                 int64_t dw_mode, const std::optional<at::Tensor> &main_grad,
                                 std::optional<c10::string_view> program) {
  // Nothing to differentiate: straight to the kernel, without building a graph node (the
  // forward-only call's host cost).
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() ||
                     (z.has_value() && z->defined() && z->requires_grad()));
  if (!grad) {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("cake::normgate_fwd", "")
                               .typed<decltype(normgate_fwd_cuda)>();
    at::AutoDispatchBelowADInplaceOrView below;
    return op.call(x, z, w, eps, gate, gate_before_norm, group_size, deterministic, dw_mode,
                   main_grad, program);
  }
  return NormgateFunction::apply(x, z, w, eps, gate, gate_before_norm, group_size, deterministic,
                                 dw_mode, main_grad, program);
}

}  // namespace

TORCH_LIBRARY_IMPL(cake, CUDA, m) {
  m.impl("normgate_fwd", &normgate_fwd_cuda);
  m.impl("normgate_bwd", &normgate_bwd_cuda);
  m.impl("normgate_bwd_accumulate", &normgate_bwd_accumulate_cuda);
  m.impl("normgate_fwd_quant", &normgate_fwd_quant_cuda);
}

// CPU tensors reach the same checks, which name the device, instead of the dispatcher's list of
// backends.
TORCH_LIBRARY_IMPL(cake, CPU, m) {
  m.impl("normgate_fwd", &normgate_fwd_cuda);
  m.impl("normgate_bwd", &normgate_bwd_cuda);
  m.impl("normgate_bwd_accumulate", &normgate_bwd_accumulate_cuda);
  m.impl("normgate_fwd_quant", &normgate_fwd_quant_cuda);
}

TORCH_LIBRARY_IMPL(cake, Autograd, m) { m.impl("normgate_fwd", &normgate_fwd_autograd); }

}  // namespace cake_torch
