// libcake_jax.so: XLA FFI handlers that run Cake's kernels inside JAX programs.
//
// One handler per op (XLA_FFI_DEFINE_HANDLER_SYMBOL), registered from Python
// (cake_jax/__init__.py) with jax.ffi.register_ffi_target(..., platform="CUDA"):
//
//   cake_jax_normgate_fwd        x, z, w                   -> y (x's dtype)       eps, program,
//                                                                                 gate, gate_
//                                                                                 before_norm,
//                                                                                 group_size
//   cake_jax_normgate_bwd        dy, x, z, w               -> dx, dz, dw,         the same and
//                                                             workspace (U8)      package
//     (x, z, w each BF16, F16 or F32; dy, dx in x's dtype, dz in z's; dw BF16, F16 or F32;
//      every attribute optional, defaults as cake_normgate_desc_init's)
//   cake_jax_swiglu_mxfp8_fwd    in (BF16 [m, 2k])         -> row_q, row_s,       orientation,
//                                                             col_q, col_s        program
//   cake_jax_swiglu_mxfp8_bwd    in, grad (BF16 [m, k])    -> the same, O = 2k
//   cake_jax_swiglu_fp8_fwd      in                        -> row_q, row_s (FP32  orientation,
//                                                             [O/128, m]), col_q, scale_rule,
//                                                             col_s ([m/128, O])  program
//   cake_jax_swiglu_fp8_bwd      in, grad                  -> the same, O = 2k
//   cake_jax_swiglu_{mxfp8,fp8}_variant_{fwd,bwd}: the four above with the variant
//     (docs/spec/swiglu-mxfp8.md, "Variants"): the same operands then, optionally, prob (F32
//     [m], the weighted SwiGLU's), the same results then, for a weighted backward, dprob (F32
//     [m]); the same attributes and activation (s32), alpha (f32), limit (f32)
//   cake_jax_normgate_fwd_quant  x, z, w (BF16 [..., d])   -> q (E4M3, rows * d   eps, format,
//                                                             values), q_scale    scale_rule,
//                                                             (FP32 or U8), y     heads, program
//                                                             (BF16, or empty)
//     (q and q_scale in any shape holding the C API's bytes: q [rows/heads, heads*d] row-major,
//      q_scale FP8 blockwise [heads*d/128, rows/heads] MN-major or MXFP8 swizzled bytes)
//   cake_jax_swiglu_mxfp8_grouped_fwd  in (BF16 [T, 2k]),    -> row_q, row_s,    orientation,
//                                      offsets (S32 [E])       col_q, col_s,     program
//                                                              status (S32 [1])
//   cake_jax_swiglu_mxfp8_grouped_bwd  in, grad (BF16 [T, k]), offsets -> the same, O = 2k
//   cake_jax_swiglu_fp8_grouped_fwd    in, offsets           -> the same         orientation,
//                                                                                scale_rule,
//                                                                                program
//   cake_jax_swiglu_fp8_grouped_bwd    in, grad, offsets     -> the same, O = 2k
//     (the outputs in any shape holding the C API's bytes, each checked against
//      cake_swiglu_*_grouped_buffer_sizes(); offsets stay on the device: the kernel reads them)
//   cake_jax_swiglu_{mxfp8,fp8}_grouped_variant_{fwd,bwd}: the four above with the variant
//      (prob after offsets, dprob after status, activation / alpha / limit attributes)
//
// Every kernel launches on the stream of the call frame (ffi::PlatformStream<cudaStream_t>).
// A failing Cake call becomes an ffi::Error carrying the status name and
// cake_last_error_message(). Handles: one per device, created by cake_jax_prepare() (called by
// the Python module while tracing, before XLA executes anything) and kept for the process's
// life, so the execute stage only looks one up: no module load, no allocation of its own. The
// norm-gate backward's workspace is an extra result buffer (sized while tracing), zeroed on the
// stream before the call (Cake needs it zeroed; it is tiny next to the tensors).
//
// The ops added after Cake 0.1's first release are referenced weakly, so this shim loads with
// any libcake.so.0 and answers "not in this libcake.so" for an op the library lacks.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "cake.h"
#include "xla/ffi/api/ffi.h"

#pragma weak cake_normgate_workspace_size
#pragma weak cake_normgate_backward
#pragma weak cake_normgate_backward_query
#pragma weak cake_swiglu_mxfp8_desc_init
#pragma weak cake_swiglu_mxfp8_sizes_init
#pragma weak cake_swiglu_mxfp8_buffer_sizes
#pragma weak cake_swiglu_mxfp8_forward
#pragma weak cake_swiglu_mxfp8_backward
#pragma weak cake_swiglu_mxfp8_query
#pragma weak cake_swiglu_fp8_desc_init
#pragma weak cake_swiglu_fp8_forward
#pragma weak cake_swiglu_fp8_backward
#pragma weak cake_normgate_quant_desc_init
#pragma weak cake_normgate_quant_sizes_init
#pragma weak cake_normgate_quant_buffer_sizes
#pragma weak cake_normgate_forward_quantized
#pragma weak cake_swiglu_grouped_sizes_init
#pragma weak cake_swiglu_mxfp8_grouped_desc_init
#pragma weak cake_swiglu_mxfp8_grouped_buffer_sizes
#pragma weak cake_swiglu_mxfp8_grouped_forward
#pragma weak cake_swiglu_mxfp8_grouped_backward
#pragma weak cake_swiglu_fp8_grouped_desc_init
#pragma weak cake_swiglu_fp8_grouped_buffer_sizes
#pragma weak cake_swiglu_fp8_grouped_forward
#pragma weak cake_swiglu_fp8_grouped_backward

namespace ffi = xla::ffi;

namespace {

constexpr int kMaxDevices = 64;
std::array<std::atomic<cake_handle_t>, kMaxDevices> g_handles{};
std::mutex g_prepare_mutex;

// Maps a Cake status to the closest XLA error code, with Cake's own name and message.
ffi::Error cake_error(const char *function, cake_status_t status) {
  ffi::ErrorCode code = ffi::ErrorCode::kInternal;
  switch (status) {
    case CAKE_STATUS_INVALID_ARGUMENT:
    case CAKE_STATUS_UNSUPPORTED_SHAPE:
    case CAKE_STATUS_MISALIGNED:
    case CAKE_STATUS_INSUFFICIENT_WORKSPACE:
      code = ffi::ErrorCode::kInvalidArgument;
      break;
    case CAKE_STATUS_PROGRAM_NOT_FOUND:
      code = ffi::ErrorCode::kNotFound;
      break;
    case CAKE_STATUS_DRIVER_UNAVAILABLE:
    case CAKE_STATUS_NO_DEVICE:
    case CAKE_STATUS_ARCH_UNSUPPORTED:
      code = ffi::ErrorCode::kUnavailable;
      break;
    case CAKE_STATUS_INVALID_HANDLE:
      code = ffi::ErrorCode::kFailedPrecondition;
      break;
    default:
      break;
  }
  return ffi::Error(code, std::string(function) + ": " + cake_status_string(status) + ": " +
                              cake_last_error_message());
}

#define CAKE_JAX_CALL(fn, ...)                                  \
  do {                                                          \
    const cake_status_t status_ = fn(__VA_ARGS__);              \
    if (status_ != CAKE_STATUS_SUCCESS) return cake_error(#fn, status_); \
  } while (0)

#define CAKE_JAX_REQUIRE(fn)                                                                  \
  do {                                                                                        \
    if (&fn == nullptr) {                                                                     \
      return ffi::Error(ffi::ErrorCode::kUnimplemented,                                       \
                        #fn " is not in this libcake.so (built before it was added)");        \
    }                                                                                         \
  } while (0)

ffi::ErrorOr<cake_handle_t> handle_for(int32_t device) {
  if (device < 0 || device >= kMaxDevices) {
    return ffi::Error(ffi::ErrorCode::kOutOfRange,
                      "cake_jax: device ordinal " + std::to_string(device) + " out of range");
  }
  cake_handle_t h = g_handles[device].load(std::memory_order_acquire);
  if (h == nullptr) {
    return ffi::Error(ffi::ErrorCode::kFailedPrecondition,
                      "cake_jax: no Cake handle for device " + std::to_string(device) +
                          "; call cake_jax.prepare() (the cake_jax functions do so while "
                          "tracing) before running the computation");
  }
  return h;
}

const char *program_or_null(std::string_view program, std::string *storage) {
  if (program.empty()) return nullptr;
  storage->assign(program.data(), program.size());
  return storage->c_str();
}

// rows x d of a [..., d] buffer.
void rows_and_d(ffi::AnyBuffer::Dimensions dims, int64_t *rows, int64_t *d) {
  *d = dims.size() == 0 ? 1 : dims.back();
  *rows = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) *rows *= dims[i];
}

bool same_dims(ffi::AnyBuffer::Dimensions a, ffi::AnyBuffer::Dimensions b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

using BF16Buffer = ffi::Buffer<ffi::DataType::BF16>;

// The Cake dtype of an operand (BF16, F16, F32), or CAKE_DTYPE_* 0 for any other.
cake_dtype_t cake_dtype_of(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::BF16:
      return CAKE_DTYPE_BF16;
    case ffi::DataType::F16:
      return CAKE_DTYPE_F16;
    case ffi::DataType::F32:
      return CAKE_DTYPE_F32;
    default:
      return static_cast<cake_dtype_t>(0);
  }
}

// The variant attributes of a normgate call. Every attribute is optional and defaults to what
// the first handlers did (SiLU, gate after the norm, whole row, eps 1e-6, routed), so calls
// traced by an older cake_jax (eps, program, package only) decode unchanged.
struct NormgateAttrs {
  float eps = 1e-6f;
  std::string program;
  int32_t package = CAKE_NORMGATE_DETERMINISTIC;
  int32_t gate = CAKE_NORMGATE_GATE_SILU;
  int32_t gate_before_norm = 0;
  int32_t group_size = 0;
};

template <typename T>
ffi::Error read_attr(const ffi::Dictionary &attrs, std::string_view name, T *value) {
  if (!attrs.contains(name)) return ffi::Error::Success();
  ffi::ErrorOr<T> v = attrs.get<T>(name);
  if (v.has_error()) {
    return ffi::Error::InvalidArgument("cake_jax normgate: attribute " + std::string(name) +
                                       ": " + v.error().message());
  }
  *value = *v;
  return ffi::Error::Success();
}

ffi::Error read_normgate_attrs(const ffi::Dictionary &attrs, NormgateAttrs *a) {
  if (ffi::Error e = read_attr(attrs, "eps", &a->eps); e.failure()) return e;
  if (attrs.contains("program")) {
    ffi::ErrorOr<std::string_view> v = attrs.get<std::string_view>("program");
    if (v.has_error()) {
      return ffi::Error::InvalidArgument("cake_jax normgate: attribute program: " +
                                         v.error().message());
    }
    a->program.assign(v->data(), v->size());
  }
  if (ffi::Error e = read_attr(attrs, "package", &a->package); e.failure()) return e;
  if (ffi::Error e = read_attr(attrs, "gate", &a->gate); e.failure()) return e;
  // gate_before_norm: an int32 0/1 (what cake_jax passes) or a bool.
  if (attrs.contains<bool>("gate_before_norm")) {
    ffi::ErrorOr<bool> v = attrs.get<bool>("gate_before_norm");
    if (v.has_error()) return ffi::Error::InvalidArgument(v.error().message());
    a->gate_before_norm = *v ? 1 : 0;
  } else if (ffi::Error e = read_attr(attrs, "gate_before_norm", &a->gate_before_norm);
             e.failure()) {
    return e;
  }
  if (ffi::Error e = read_attr(attrs, "group_size", &a->group_size); e.failure()) return e;
  if (a->gate < CAKE_NORMGATE_GATE_SILU || a->gate > CAKE_NORMGATE_GATE_NONE) {
    return ffi::Error::InvalidArgument("cake_jax normgate: gate " + std::to_string(a->gate) +
                                       ": 0 (silu), 1 (sigmoid) or 2 (none)");
  }
  return ffi::Error::Success();
}

// Shapes and dtypes of x, z, w: x [..., d]; z x's shape (ignored without a gate); w [d];
// each BF16, F16 or F32. Fills the descriptor's rows, d and dtypes.
ffi::Error check_normgate_operands(const ffi::AnyBuffer &x, const ffi::AnyBuffer &z,
                                   const ffi::AnyBuffer &w, bool gated, cake_normgate_desc *desc) {
  int64_t rows = 0, d = 0;
  rows_and_d(x.dimensions(), &rows, &d);
  if (x.dimensions().size() < 1 || (gated && !same_dims(x.dimensions(), z.dimensions())) ||
      w.dimensions().size() != 1 || w.dimensions()[0] != d) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate: x and z must have one shape [..., d] and w must be [d]");
  }
  desc->rows = rows;
  desc->d = static_cast<int32_t>(d);
  desc->x_dtype = cake_dtype_of(x.element_type());
  desc->z_dtype = gated ? cake_dtype_of(z.element_type()) : desc->x_dtype;
  desc->w_dtype = cake_dtype_of(w.element_type());
  if (desc->x_dtype == 0 || desc->z_dtype == 0 || desc->w_dtype == 0) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate: x, z and w must each be bfloat16, float16 or float32");
  }
  return ffi::Error::Success();
}

void apply_normgate_attrs(const NormgateAttrs &a, cake_normgate_desc *desc) {
  desc->eps = a.eps;
  desc->program = a.program.empty() ? nullptr : a.program.c_str();
  desc->package = static_cast<cake_normgate_package_t>(a.package);
  desc->gate = static_cast<cake_normgate_gate_t>(a.gate);
  desc->placement = a.gate_before_norm ? CAKE_NORMGATE_GATE_BEFORE_NORM
                                       : CAKE_NORMGATE_GATE_AFTER_NORM;
  desc->group_size = a.group_size;
}

// Set a descriptor's 0.3 fields only where the library's struct has them: an older library
// (smaller struct_size) would ignore them, so a non-default value is refused instead.
ffi::Error check_struct_size(const cake_normgate_desc &desc) {
  if (desc.struct_size >= sizeof(cake_normgate_desc)) return ffi::Error::Success();
  if (desc.gate != CAKE_NORMGATE_GATE_SILU || desc.placement != CAKE_NORMGATE_GATE_AFTER_NORM ||
      desc.group_size != 0 || desc.x_dtype != CAKE_DTYPE_BF16 ||
      desc.z_dtype != CAKE_DTYPE_BF16 || desc.w_dtype != CAKE_DTYPE_BF16 ||
      desc.dw_dtype == CAKE_DTYPE_F16) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      "cake_jax normgate: this libcake.so predates the gate, placement, "
                      "group_size and dtype fields (its cake_normgate_desc is " +
                          std::to_string(desc.struct_size) + " bytes); use a newer libcake");
  }
  return ffi::Error::Success();
}

// ---- normgate ----------------------------------------------------------------------------
ffi::Error NormgateForward(cudaStream_t stream, int32_t device, ffi::AnyBuffer x,
                           ffi::AnyBuffer z, ffi::AnyBuffer w, ffi::Result<ffi::AnyBuffer> y,
                           ffi::Dictionary attrs) {
  NormgateAttrs a;
  if (ffi::Error e = read_normgate_attrs(attrs, &a); e.failure()) return e;
  const bool gated = a.gate != CAKE_NORMGATE_GATE_NONE;
  cake_normgate_desc desc;
  CAKE_JAX_CALL(cake_normgate_desc_init, &desc);
  if (ffi::Error e = check_normgate_operands(x, z, w, gated, &desc); e.failure()) return e;
  if (y->element_type() != x.element_type() || !same_dims(y->dimensions(), x.dimensions())) {
    return ffi::Error::InvalidArgument("cake_jax normgate: y must have x's shape and dtype");
  }
  apply_normgate_attrs(a, &desc);
  if (ffi::Error e = check_struct_size(desc); e.failure()) return e;
  if (desc.rows == 0) return ffi::Error::Success();
  ffi::ErrorOr<cake_handle_t> h = handle_for(device);
  if (h.has_error()) return h.error();
  CAKE_JAX_CALL(cake_normgate_forward, *h, &desc, x.untyped_data(),
                gated ? z.untyped_data() : nullptr, w.untyped_data(), y->untyped_data(),
                nullptr, stream);
  return ffi::Error::Success();
}

ffi::Error NormgateBackward(cudaStream_t stream, int32_t device, ffi::AnyBuffer dy,
                            ffi::AnyBuffer x, ffi::AnyBuffer z, ffi::AnyBuffer w,
                            ffi::Result<ffi::AnyBuffer> dx, ffi::Result<ffi::AnyBuffer> dz,
                            ffi::Result<ffi::AnyBuffer> dw,
                            ffi::Result<ffi::AnyBuffer> workspace, ffi::Dictionary attrs) {
  CAKE_JAX_REQUIRE(cake_normgate_workspace_size);
  CAKE_JAX_REQUIRE(cake_normgate_backward);
  NormgateAttrs a;
  if (ffi::Error e = read_normgate_attrs(attrs, &a); e.failure()) return e;
  const bool gated = a.gate != CAKE_NORMGATE_GATE_NONE;
  cake_normgate_desc desc;
  CAKE_JAX_CALL(cake_normgate_desc_init, &desc);
  if (ffi::Error e = check_normgate_operands(x, z, w, gated, &desc); e.failure()) return e;
  if (!same_dims(dy.dimensions(), x.dimensions()) || dy.element_type() != x.element_type() ||
      !same_dims(dx->dimensions(), x.dimensions()) || dx->element_type() != x.element_type()) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate backward: dy and dx must have x's shape and dtype");
  }
  if (gated && (!same_dims(dz->dimensions(), z.dimensions()) ||
                dz->element_type() != z.element_type())) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate backward: dz must have z's shape and dtype");
  }
  const cake_dtype_t dw_type = cake_dtype_of(dw->element_type());
  if (dw_type == 0 || static_cast<int64_t>(dw->element_count()) != desc.d) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate backward: dw must be BF16, F16 or F32 [d]");
  }
  apply_normgate_attrs(a, &desc);
  desc.dw_dtype = dw_type;
  if (ffi::Error e = check_struct_size(desc); e.failure()) return e;
  ffi::ErrorOr<cake_handle_t> h = handle_for(device);
  if (h.has_error()) return h.error();
  if (desc.rows == 0) {
    const cudaError_t err = cudaMemsetAsync(dw->untyped_data(), 0, dw->size_bytes(), stream);
    if (err != cudaSuccess) return ffi::Error::Internal(cudaGetErrorString(err));
    return ffi::Error::Success();
  }
  // The workspace is an extra result buffer, sized at trace time with
  // cake_jax_normgate_workspace_size_ex(): XLA allocates it fresh for every call, so it is
  // zeroed here, on the stream, before Cake uses it.
  size_t ws_bytes = 0;
  CAKE_JAX_CALL(cake_normgate_workspace_size, *h, &desc, &ws_bytes);
  if (workspace->size_bytes() < ws_bytes) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate backward: workspace result has " +
        std::to_string(workspace->size_bytes()) + " bytes; this call needs " +
        std::to_string(ws_bytes) + " (traced for another device?)");
  }
  void *ws = ws_bytes > 0 ? workspace->untyped_data() : nullptr;
  if (ws != nullptr) {
    const cudaError_t err = cudaMemsetAsync(ws, 0, ws_bytes, stream);
    if (err != cudaSuccess) {
      return ffi::Error::Internal(std::string("cake_jax: cudaMemsetAsync: ") +
                                  cudaGetErrorString(err));
    }
  }
  CAKE_JAX_CALL(cake_normgate_backward, *h, &desc, dy.untyped_data(), x.untyped_data(),
                gated ? z.untyped_data() : nullptr, w.untyped_data(), dx->untyped_data(),
                gated ? dz->untyped_data() : nullptr, dw->untyped_data(), ws, ws_bytes, stream);
  return ffi::Error::Success();
}

// ---- normgate with quantized y ------------------------------------------------------------
// The default form's forward (SiLU gate after a whole-row norm, BF16 x, z, w) with y quantized
// by the format (FP8 blockwise 1x128 or MXFP8); the BF16 y too when its result is not empty.
// The results' shapes are the Python module's (any shape holding the C API's bytes): each is
// checked against cake_normgate_quant_buffer_sizes() by element count and type.
ffi::Error NormgateForwardQuant(cudaStream_t stream, int32_t device, ffi::AnyBuffer x,
                                ffi::AnyBuffer z, ffi::AnyBuffer w, ffi::Result<ffi::AnyBuffer> q,
                                ffi::Result<ffi::AnyBuffer> q_scale, ffi::Result<ffi::AnyBuffer> y,
                                float eps, int32_t format, int32_t scale_rule, int64_t heads,
                                std::string_view program) {
  CAKE_JAX_REQUIRE(cake_normgate_quant_desc_init);
  CAKE_JAX_REQUIRE(cake_normgate_quant_sizes_init);
  CAKE_JAX_REQUIRE(cake_normgate_quant_buffer_sizes);
  CAKE_JAX_REQUIRE(cake_normgate_forward_quantized);
  cake_normgate_desc desc;
  CAKE_JAX_CALL(cake_normgate_desc_init, &desc);
  if (ffi::Error e = check_normgate_operands(x, z, w, true, &desc); e.failure()) return e;
  if (desc.x_dtype != CAKE_DTYPE_BF16 || desc.z_dtype != CAKE_DTYPE_BF16 ||
      desc.w_dtype != CAKE_DTYPE_BF16) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate quantized: x, z and w must be bfloat16 (the default form only)");
  }
  const bool write_y = y->element_count() != 0;
  if (write_y && (y->element_type() != x.element_type() ||
                  !same_dims(y->dimensions(), x.dimensions()))) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate quantized: y must be empty or have x's shape and dtype");
  }
  if (desc.rows == 0) return ffi::Error::Success();
  std::string name;
  desc.eps = eps;
  desc.program = program_or_null(program, &name);
  cake_normgate_quant_desc quant;
  CAKE_JAX_CALL(cake_normgate_quant_desc_init, &quant);
  quant.format = static_cast<cake_normgate_quant_format_t>(format);
  quant.scale_rule = static_cast<cake_fp8_scale_rule_t>(scale_rule);
  quant.heads = heads;
  cake_normgate_quant_sizes sizes;
  CAKE_JAX_CALL(cake_normgate_quant_sizes_init, &sizes);
  CAKE_JAX_CALL(cake_normgate_quant_buffer_sizes, &desc, &quant, &sizes);
  const bool fp8b = format == CAKE_NORMGATE_QUANT_FP8_BLOCKWISE;
  const ffi::DataType s_type = fp8b ? ffi::DataType::F32 : ffi::DataType::U8;
  if (q->element_type() != ffi::DataType::F8E4M3FN || q->size_bytes() != sizes.q_bytes ||
      q_scale->element_type() != s_type || q_scale->size_bytes() != sizes.s_bytes) {
    return ffi::Error::InvalidArgument(
        "cake_jax normgate quantized: q must hold " + std::to_string(sizes.q_bytes) +
        " E4M3 values and q_scale " + std::to_string(sizes.s_bytes) + " bytes of " +
        (fp8b ? "float32" : "uint8") + " (cake_normgate_quant_buffer_sizes)");
  }
  ffi::ErrorOr<cake_handle_t> h = handle_for(device);
  if (h.has_error()) return h.error();
  CAKE_JAX_CALL(cake_normgate_forward_quantized, *h, &desc, &quant, x.untyped_data(),
                z.untyped_data(), w.untyped_data(), write_y ? y->untyped_data() : nullptr,
                nullptr, q->untyped_data(), q_scale->untyped_data(), stream);
  return ffi::Error::Success();
}

// ---- swiglu + mxfp8, swiglu + fp8 blockwise -----------------------------------------------
void *data_or_null(const ffi::Result<ffi::AnyBuffer> &b) {
  return b->element_count() == 0 ? nullptr : b->untyped_data();
}

// What the SwiGLU handlers need of a family: its descriptor, its entry points (weak: NULL when
// the library lacks them), its name in messages, and whether its descriptor has a scale rule.
struct Mxfp8Family {
  using Desc = cake_swiglu_mxfp8_desc;
  static constexpr const char *kName = "swiglu_mxfp8";
  static auto init() { return &cake_swiglu_mxfp8_desc_init; }
  static auto forward() { return &cake_swiglu_mxfp8_forward; }
  static auto backward() { return &cake_swiglu_mxfp8_backward; }
  static void set_scale_rule(Desc *, int32_t) {}
};

struct Fp8Family {
  using Desc = cake_swiglu_fp8_desc;
  static constexpr const char *kName = "swiglu_fp8";
  static auto init() { return &cake_swiglu_fp8_desc_init; }
  static auto forward() { return &cake_swiglu_fp8_forward; }
  static auto backward() { return &cake_swiglu_fp8_backward; }
  static void set_scale_rule(Desc *d, int32_t rule) {
    d->scale_rule = static_cast<cake_fp8_scale_rule_t>(rule);
  }
};

// A Cake call through a family's entry point, its name in the error.
template <typename Fn, typename... Args>
ffi::Error call_entry(Fn fn, const std::string &name, Args... args) {
  if (fn == nullptr) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      name + " is not in this libcake.so (built before it was added)");
  }
  const cake_status_t status = fn(args...);
  if (status != CAKE_STATUS_SUCCESS) return cake_error(name.c_str(), status);
  return ffi::Error::Success();
}

// The variant of a call: the attributes, prob (NULL: unweighted) and the backward's dprob.
struct SwigluVariantArgs {
  int32_t activation;
  float alpha, limit;
  const ffi::AnyBuffer *prob;
  ffi::Result<ffi::AnyBuffer> *dprob;
};

// Sets @p desc's variant; prob and dprob must be F32 [m]. A library whose descriptor ends
// before the variant (an older libcake.so) would run the plain SwiGLU: refused instead.
template <class Desc>
ffi::Error apply_variant(const char *name, bool backward, int64_t m, const SwigluVariantArgs &v,
                         Desc *desc) {
  if (desc->struct_size < sizeof(Desc)) {
    return ffi::Error(ffi::ErrorCode::kUnimplemented,
                      std::string("cake_jax ") + name +
                          ": this libcake.so predates the SwiGLU variants (its descriptor has " +
                          std::to_string(desc->struct_size) + " bytes); use a newer libcake");
  }
  desc->variant.activation = static_cast<cake_swiglu_activation_t>(v.activation);
  desc->variant.alpha = v.alpha;
  desc->variant.limit = v.limit;
  if (v.prob == nullptr) return ffi::Error::Success();
  const auto f32_m = [m](ffi::DataType t, size_t n) { return t == ffi::F32 && n == size_t(m); };
  if (!f32_m(v.prob->element_type(), v.prob->element_count())) {
    return ffi::Error::InvalidArgument(std::string("cake_jax ") + name +
                                       ": prob must be F32 [m] = [" + std::to_string(m) + "]");
  }
  desc->variant.weighted = 1;
  desc->variant.p = static_cast<const float *>(v.prob->untyped_data());
  if (!backward) return ffi::Error::Success();
  if (v.dprob == nullptr || !f32_m((*v.dprob)->element_type(), (*v.dprob)->element_count())) {
    return ffi::Error::InvalidArgument(std::string("cake_jax ") + name +
                                       " backward: a weighted call returns dprob, F32 [m] = [" +
                                       std::to_string(m) + "]");
  }
  desc->variant.dp = static_cast<float *>((*v.dprob)->untyped_data());
  return ffi::Error::Success();
}

template <class F>
ffi::Error SwigluCall(bool backward, cudaStream_t stream, int32_t device, BF16Buffer in,
                      const BF16Buffer *grad, ffi::Result<ffi::AnyBuffer> row_q,
                      ffi::Result<ffi::AnyBuffer> row_s, ffi::Result<ffi::AnyBuffer> col_q,
                      ffi::Result<ffi::AnyBuffer> col_s, int32_t orientation, int32_t scale_rule,
                      std::string_view program, const SwigluVariantArgs *variant = nullptr) {
  const std::string cake_name = std::string("cake_") + F::kName;
  auto dims = in.dimensions();
  if (dims.size() != 2 || dims[1] % 2 != 0) {
    return ffi::Error::InvalidArgument(std::string("cake_jax ") + F::kName +
                                       ": in must be BF16 [m, 2k]");
  }
  const int64_t m = dims[0], k = dims[1] / 2;
  if (grad != nullptr && (grad->dimensions().size() != 2 || grad->dimensions()[0] != m ||
                          grad->dimensions()[1] != k)) {
    return ffi::Error::InvalidArgument(std::string("cake_jax ") + F::kName +
                                       " backward: grad must be [m, k]");
  }
  ffi::ErrorOr<cake_handle_t> h = handle_for(device);
  if (h.has_error()) return h.error();
  typename F::Desc desc;
  if (ffi::Error e = call_entry(F::init(), cake_name + "_desc_init", &desc); e.failure()) return e;
  std::string name;
  desc.m = m;
  desc.k = k;
  desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  F::set_scale_rule(&desc, scale_rule);
  desc.program = program_or_null(program, &name);
  if (variant != nullptr) {
    if (ffi::Error e = apply_variant(F::kName, backward, m, *variant, &desc); e.failure()) {
      return e;
    }
  }
  if (backward) {
    return call_entry(F::backward(), cake_name + "_backward", *h, &desc, in.untyped_data(),
                      grad->untyped_data(), data_or_null(row_q), data_or_null(row_s),
                      data_or_null(col_q), data_or_null(col_s), stream);
  }
  return call_entry(F::forward(), cake_name + "_forward", *h, &desc, in.untyped_data(),
                    data_or_null(row_q), data_or_null(row_s), data_or_null(col_q),
                    data_or_null(col_s), stream);
}

ffi::Error SwigluForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                         ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,
                         ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,
                         int32_t orientation, std::string_view program) {
  return SwigluCall<Mxfp8Family>(false, stream, device, in, nullptr, row_q, row_s, col_q, col_s,
                                 orientation, 0, program);
}

ffi::Error SwigluBackward(cudaStream_t stream, int32_t device, BF16Buffer in, BF16Buffer grad,
                          ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,
                          ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,
                          int32_t orientation, std::string_view program) {
  return SwigluCall<Mxfp8Family>(true, stream, device, in, &grad, row_q, row_s, col_q, col_s,
                                 orientation, 0, program);
}

ffi::Error SwigluFp8Forward(cudaStream_t stream, int32_t device, BF16Buffer in,
                            ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,
                            ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,
                            int32_t orientation, int32_t scale_rule, std::string_view program) {
  return SwigluCall<Fp8Family>(false, stream, device, in, nullptr, row_q, row_s, col_q, col_s,
                               orientation, scale_rule, program);
}

ffi::Error SwigluFp8Backward(cudaStream_t stream, int32_t device, BF16Buffer in, BF16Buffer grad,
                             ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,
                             ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,
                             int32_t orientation, int32_t scale_rule, std::string_view program) {
  return SwigluCall<Fp8Family>(true, stream, device, in, &grad, row_q, row_s, col_q, col_s,
                               orientation, scale_rule, program);
}

// The variant handlers: the plain ones' operands, results and attributes, then prob (optional
// operand), dprob (optional result, a weighted backward's) and the variant's attributes.
using OptionalBuffer = std::optional<ffi::AnyBuffer>;
using OptionalResult = std::optional<ffi::Result<ffi::AnyBuffer>>;

SwigluVariantArgs variant_args(const OptionalBuffer &prob, OptionalResult *dprob,
                               int32_t activation, float alpha, float limit) {
  return {activation, alpha, limit, prob.has_value() ? &*prob : nullptr,
          dprob != nullptr && dprob->has_value() ? &**dprob : nullptr};
}

ffi::Error SwigluVariantForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                OptionalBuffer prob, ffi::Result<ffi::AnyBuffer> row_q,
                                ffi::Result<ffi::AnyBuffer> row_s,
                                ffi::Result<ffi::AnyBuffer> col_q,
                                ffi::Result<ffi::AnyBuffer> col_s, int32_t orientation,
                                std::string_view program, int32_t activation, float alpha,
                                float limit) {
  const SwigluVariantArgs v = variant_args(prob, nullptr, activation, alpha, limit);
  return SwigluCall<Mxfp8Family>(false, stream, device, in, nullptr, row_q, row_s, col_q, col_s,
                                 orientation, 0, program, &v);
}

ffi::Error SwigluVariantBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                 BF16Buffer grad, OptionalBuffer prob,
                                 ffi::Result<ffi::AnyBuffer> row_q,
                                 ffi::Result<ffi::AnyBuffer> row_s,
                                 ffi::Result<ffi::AnyBuffer> col_q,
                                 ffi::Result<ffi::AnyBuffer> col_s, OptionalResult dprob,
                                 int32_t orientation, std::string_view program,
                                 int32_t activation, float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, &dprob, activation, alpha, limit);
  return SwigluCall<Mxfp8Family>(true, stream, device, in, &grad, row_q, row_s, col_q, col_s,
                                 orientation, 0, program, &v);
}

ffi::Error SwigluFp8VariantForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                   OptionalBuffer prob, ffi::Result<ffi::AnyBuffer> row_q,
                                   ffi::Result<ffi::AnyBuffer> row_s,
                                   ffi::Result<ffi::AnyBuffer> col_q,
                                   ffi::Result<ffi::AnyBuffer> col_s, int32_t orientation,
                                   int32_t scale_rule, std::string_view program,
                                   int32_t activation, float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, nullptr, activation, alpha, limit);
  return SwigluCall<Fp8Family>(false, stream, device, in, nullptr, row_q, row_s, col_q, col_s,
                               orientation, scale_rule, program, &v);
}

ffi::Error SwigluFp8VariantBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                    BF16Buffer grad, OptionalBuffer prob,
                                    ffi::Result<ffi::AnyBuffer> row_q,
                                    ffi::Result<ffi::AnyBuffer> row_s,
                                    ffi::Result<ffi::AnyBuffer> col_q,
                                    ffi::Result<ffi::AnyBuffer> col_s, OptionalResult dprob,
                                    int32_t orientation, int32_t scale_rule,
                                    std::string_view program, int32_t activation, float alpha,
                                    float limit) {
  const SwigluVariantArgs v = variant_args(prob, &dprob, activation, alpha, limit);
  return SwigluCall<Fp8Family>(true, stream, device, in, &grad, row_q, row_s, col_q, col_s,
                               orientation, scale_rule, program, &v);
}

// ---- grouped swiglu (MoE experts), both formats ------------------------------------------
// What the grouped handlers need of a family, as the ungrouped ones' traits.
struct Mxfp8GroupedFamily {
  using Desc = cake_swiglu_mxfp8_grouped_desc;
  static constexpr const char *kName = "swiglu_mxfp8_grouped";
  static auto init() { return &cake_swiglu_mxfp8_grouped_desc_init; }
  static auto sizes() { return &cake_swiglu_mxfp8_grouped_buffer_sizes; }
  static auto forward() { return &cake_swiglu_mxfp8_grouped_forward; }
  static auto backward() { return &cake_swiglu_mxfp8_grouped_backward; }
  static constexpr ffi::DataType kScale = ffi::DataType::U8;
  static void set_scale_rule(Desc *, int32_t) {}
};

struct Fp8GroupedFamily {
  using Desc = cake_swiglu_fp8_grouped_desc;
  static constexpr const char *kName = "swiglu_fp8_grouped";
  static auto init() { return &cake_swiglu_fp8_grouped_desc_init; }
  static auto sizes() { return &cake_swiglu_fp8_grouped_buffer_sizes; }
  static auto forward() { return &cake_swiglu_fp8_grouped_forward; }
  static auto backward() { return &cake_swiglu_fp8_grouped_backward; }
  static constexpr ffi::DataType kScale = ffi::DataType::F32;
  static void set_scale_rule(Desc *d, int32_t rule) {
    d->scale_rule = static_cast<cake_fp8_scale_rule_t>(rule);
  }
};

using S32Buffer = ffi::Buffer<ffi::DataType::S32>;

// An output of an enabled orientation must hold exactly the bytes the C call writes, of its type;
// one of an orientation not asked for is empty.
bool output_fits(ffi::Result<ffi::AnyBuffer> &b, bool enabled, ffi::DataType type,
                 size_t bytes) {
  if (!enabled) return b->element_count() == 0;
  return b->element_type() == type && b->size_bytes() == bytes;
}

template <class F>
ffi::Error SwigluGroupedCall(bool backward, cudaStream_t stream, int32_t device, BF16Buffer in,
                             const BF16Buffer *grad, S32Buffer offsets,
                             ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,
                             ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,
                             ffi::Result<S32Buffer> status, int32_t orientation,
                             int32_t scale_rule, std::string_view program,
                             const SwigluVariantArgs *variant = nullptr) {
  const std::string cake_name = std::string("cake_") + F::kName;
  const std::string what = std::string("cake_jax ") + F::kName;
  auto dims = in.dimensions();
  if (dims.size() != 2 || dims[1] % 2 != 0) {
    return ffi::Error::InvalidArgument(what + ": in must be BF16 [T, 2k]");
  }
  const int64_t t = dims[0], k = dims[1] / 2;
  if (grad != nullptr && (grad->dimensions().size() != 2 || grad->dimensions()[0] != t ||
                          grad->dimensions()[1] != k)) {
    return ffi::Error::InvalidArgument(what + " backward: grad must be [T, k]");
  }
  if (offsets.dimensions().size() != 1 || status->element_count() != 1) {
    return ffi::Error::InvalidArgument(what + ": offsets must be int32 [E], status int32 [1]");
  }
  typename F::Desc desc;
  if (ffi::Error e = call_entry(F::init(), cake_name + "_desc_init", &desc); e.failure()) return e;
  std::string name;
  desc.tokens = t;
  desc.k = k;
  desc.experts = static_cast<int32_t>(offsets.dimensions()[0]);
  desc.orientation = static_cast<cake_mxfp8_orientation_t>(orientation);
  F::set_scale_rule(&desc, scale_rule);
  desc.program = program_or_null(program, &name);
  if (variant != nullptr) {
    if (ffi::Error e = apply_variant(F::kName, backward, t, *variant, &desc); e.failure()) {
      return e;
    }
  }
  cake_swiglu_grouped_sizes sizes;
  if (ffi::Error e = call_entry(&cake_swiglu_grouped_sizes_init, "cake_swiglu_grouped_sizes_init",
                                &sizes);
      e.failure()) {
    return e;
  }
  if (ffi::Error e = call_entry(F::sizes(), cake_name + "_buffer_sizes", &desc,
                                backward ? 1 : 0, &sizes);
      e.failure()) {
    return e;
  }
  const bool row = (orientation & CAKE_MXFP8_ROWWISE) != 0;
  const bool col = (orientation & CAKE_MXFP8_COLWISE) != 0;
  const ffi::DataType e4m3 = ffi::DataType::F8E4M3FN;
  if (!output_fits(row_q, row, e4m3, sizes.q_bytes) ||
      !output_fits(row_s, row, F::kScale, sizes.row_s_bytes) ||
      !output_fits(col_q, col, e4m3, sizes.q_bytes) ||
      !output_fits(col_s, col, F::kScale, sizes.col_s_bytes)) {
    return ffi::Error::InvalidArgument(
        what + ": the outputs of an enabled orientation must hold the bytes of " + cake_name +
        "_buffer_sizes (q " + std::to_string(sizes.q_bytes) + ", row_s " +
        std::to_string(sizes.row_s_bytes) + ", col_s " + std::to_string(sizes.col_s_bytes) +
        "), the others be empty");
  }
  ffi::ErrorOr<cake_handle_t> h = handle_for(device);
  if (h.has_error()) return h.error();
  const auto *offs = static_cast<const int32_t *>(offsets.untyped_data());
  auto *st = static_cast<int32_t *>(status->untyped_data());
  if (backward) {
    return call_entry(F::backward(), cake_name + "_backward", *h, &desc, in.untyped_data(),
                      grad->untyped_data(), offs, data_or_null(row_q), data_or_null(row_s),
                      data_or_null(col_q), data_or_null(col_s), st, stream);
  }
  return call_entry(F::forward(), cake_name + "_forward", *h, &desc, in.untyped_data(), offs,
                    data_or_null(row_q), data_or_null(row_s), data_or_null(col_q),
                    data_or_null(col_s), st, stream);
}

#define CAKE_JAX_GROUPED_RESULTS                                                              \
  ffi::Result<ffi::AnyBuffer> row_q, ffi::Result<ffi::AnyBuffer> row_s,                       \
      ffi::Result<ffi::AnyBuffer> col_q, ffi::Result<ffi::AnyBuffer> col_s,                   \
      ffi::Result<S32Buffer> status

ffi::Error SwigluMxfp8GroupedForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                     S32Buffer offsets, CAKE_JAX_GROUPED_RESULTS,
                                     int32_t orientation, std::string_view program) {
  return SwigluGroupedCall<Mxfp8GroupedFamily>(false, stream, device, in, nullptr, offsets, row_q,
                                               row_s, col_q, col_s, status, orientation, 0,
                                               program);
}

ffi::Error SwigluMxfp8GroupedBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                      BF16Buffer grad, S32Buffer offsets,
                                      CAKE_JAX_GROUPED_RESULTS, int32_t orientation,
                                      std::string_view program) {
  return SwigluGroupedCall<Mxfp8GroupedFamily>(true, stream, device, in, &grad, offsets, row_q,
                                               row_s, col_q, col_s, status, orientation, 0,
                                               program);
}

ffi::Error SwigluFp8GroupedForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                   S32Buffer offsets, CAKE_JAX_GROUPED_RESULTS,
                                   int32_t orientation, int32_t scale_rule,
                                   std::string_view program) {
  return SwigluGroupedCall<Fp8GroupedFamily>(false, stream, device, in, nullptr, offsets, row_q,
                                             row_s, col_q, col_s, status, orientation, scale_rule,
                                             program);
}

ffi::Error SwigluFp8GroupedBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                    BF16Buffer grad, S32Buffer offsets, CAKE_JAX_GROUPED_RESULTS,
                                    int32_t orientation, int32_t scale_rule,
                                    std::string_view program) {
  return SwigluGroupedCall<Fp8GroupedFamily>(true, stream, device, in, &grad, offsets, row_q,
                                             row_s, col_q, col_s, status, orientation, scale_rule,
                                             program);
}

// The grouped variant handlers: the plain ones' operands and results, then prob (optional
// operand, F32 [T]), dprob (optional result of a weighted backward, F32 [T]) and the variant's
// attributes.
ffi::Error SwigluMxfp8GroupedVariantForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                            S32Buffer offsets, OptionalBuffer prob,
                                            CAKE_JAX_GROUPED_RESULTS, int32_t orientation,
                                            std::string_view program, int32_t activation,
                                            float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, nullptr, activation, alpha, limit);
  return SwigluGroupedCall<Mxfp8GroupedFamily>(false, stream, device, in, nullptr, offsets, row_q,
                                               row_s, col_q, col_s, status, orientation, 0,
                                               program, &v);
}

ffi::Error SwigluMxfp8GroupedVariantBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                             BF16Buffer grad, S32Buffer offsets,
                                             OptionalBuffer prob, CAKE_JAX_GROUPED_RESULTS,
                                             OptionalResult dprob, int32_t orientation,
                                             std::string_view program, int32_t activation,
                                             float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, &dprob, activation, alpha, limit);
  return SwigluGroupedCall<Mxfp8GroupedFamily>(true, stream, device, in, &grad, offsets, row_q,
                                               row_s, col_q, col_s, status, orientation, 0,
                                               program, &v);
}

ffi::Error SwigluFp8GroupedVariantForward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                          S32Buffer offsets, OptionalBuffer prob,
                                          CAKE_JAX_GROUPED_RESULTS, int32_t orientation,
                                          int32_t scale_rule, std::string_view program,
                                          int32_t activation, float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, nullptr, activation, alpha, limit);
  return SwigluGroupedCall<Fp8GroupedFamily>(false, stream, device, in, nullptr, offsets, row_q,
                                             row_s, col_q, col_s, status, orientation, scale_rule,
                                             program, &v);
}

ffi::Error SwigluFp8GroupedVariantBackward(cudaStream_t stream, int32_t device, BF16Buffer in,
                                           BF16Buffer grad, S32Buffer offsets,
                                           OptionalBuffer prob, CAKE_JAX_GROUPED_RESULTS,
                                           OptionalResult dprob, int32_t orientation,
                                           int32_t scale_rule, std::string_view program,
                                           int32_t activation, float alpha, float limit) {
  const SwigluVariantArgs v = variant_args(prob, &dprob, activation, alpha, limit);
  return SwigluGroupedCall<Fp8GroupedFamily>(true, stream, device, in, &grad, offsets, row_q,
                                             row_s, col_q, col_s, status, orientation, scale_rule,
                                             program, &v);
}

#undef CAKE_JAX_GROUPED_RESULTS

}  // namespace

// ---- exported handlers -------------------------------------------------------------------
// The library is built with hidden visibility; these declarations export the handler symbols
// that XLA_FFI_DEFINE_HANDLER_SYMBOL defines.
#define CAKE_JAX_EXPORT extern "C" __attribute__((visibility("default")))
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_normgate_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_normgate_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_normgate_fwd_quant(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_variant_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_variant_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_variant_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_variant_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_grouped_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_grouped_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_grouped_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_grouped_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_grouped_variant_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_mxfp8_grouped_variant_bwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_grouped_variant_fwd(XLA_FFI_CallFrame *call_frame);
CAKE_JAX_EXPORT XLA_FFI_Error *cake_jax_swiglu_fp8_grouped_variant_bwd(XLA_FFI_CallFrame *call_frame);

// Attributes (all optional, by name): eps (f32), program (string), package (s32, backward),
// gate (s32: cake_normgate_gate_t), gate_before_norm (s32 0/1 or bool), group_size (s32).
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_normgate_fwd, NormgateForward,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // x: BF16, F16 or F32
                                  .Arg<ffi::AnyBuffer>()  // z: BF16, F16 or F32 (any, no gate)
                                  .Arg<ffi::AnyBuffer>()  // w: BF16, F16 or F32
                                  .Ret<ffi::AnyBuffer>()  // y: x's dtype
                                  .Attrs<ffi::Dictionary>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_normgate_bwd, NormgateBackward,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // dy: x's dtype
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // z
                                  .Arg<ffi::AnyBuffer>()  // w
                                  .Ret<ffi::AnyBuffer>()  // dx: x's dtype
                                  .Ret<ffi::AnyBuffer>()  // dz: z's dtype (empty, no gate)
                                  .Ret<ffi::AnyBuffer>()  // dw: BF16, F16 or F32
                                  .Ret<ffi::AnyBuffer>()  // workspace: U8, discarded
                                  .Attrs<ffi::Dictionary>());

// The SwiGLU handlers' binding: in (and grad: BF16 [m, k]), then the four results row_q, row_s,
// col_q, col_s (E4M3 [m, O] and [O, m]; the family's scales: MXFP8 uint8 swizzled bytes, FP8
// blockwise FP32 [O/128, m] and [m/128, O] MN-major; each empty for an orientation not asked
// for), the orientation, the family's own attributes and the program.
#define CAKE_JAX_SWIGLU_BINDING(args, attrs)                                                  \
  ffi::Ffi::Bind()                                                                            \
      .Ctx<ffi::PlatformStream<cudaStream_t>>()                                               \
      .Ctx<ffi::DeviceOrdinal>() args                                                         \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Attr<int32_t>("orientation") attrs                                                     \
      .Attr<std::string_view>("program")

XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_fwd, SwigluForward,
                              CAKE_JAX_SWIGLU_BINDING(.Arg<BF16Buffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_bwd, SwigluBackward,
                              CAKE_JAX_SWIGLU_BINDING(.Arg<BF16Buffer>().Arg<BF16Buffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_fwd, SwigluFp8Forward,
                              CAKE_JAX_SWIGLU_BINDING(.Arg<BF16Buffer>(),
                                                      .Attr<int32_t>("scale_rule")));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_bwd, SwigluFp8Backward,
                              CAKE_JAX_SWIGLU_BINDING(.Arg<BF16Buffer>().Arg<BF16Buffer>(),
                                                      .Attr<int32_t>("scale_rule")));

// The variant handlers' binding: CAKE_JAX_SWIGLU_BINDING's with prob after the operands,
// dprob after the results (both optional: absent for an unweighted call, dprob for a forward)
// and the variant's attributes last.
#define CAKE_JAX_SWIGLU_VARIANT_BINDING(args, rets, attrs)                                    \
  ffi::Ffi::Bind()                                                                            \
      .Ctx<ffi::PlatformStream<cudaStream_t>>()                                               \
      .Ctx<ffi::DeviceOrdinal>() args                                                         \
      .OptionalArg<ffi::AnyBuffer>()                                                          \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>() rets                                                             \
      .Attr<int32_t>("orientation") attrs                                                     \
      .Attr<std::string_view>("program")                                                      \
      .Attr<int32_t>("activation")                                                            \
      .Attr<float>("alpha")                                                                   \
      .Attr<float>("limit")

XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_variant_fwd, SwigluVariantForward,
                              CAKE_JAX_SWIGLU_VARIANT_BINDING(.Arg<BF16Buffer>(), , ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_variant_bwd, SwigluVariantBackward,
                              CAKE_JAX_SWIGLU_VARIANT_BINDING(.Arg<BF16Buffer>()
                                                                  .Arg<BF16Buffer>(),
                                                              .OptionalRet<ffi::AnyBuffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_variant_fwd, SwigluFp8VariantForward,
                              CAKE_JAX_SWIGLU_VARIANT_BINDING(.Arg<BF16Buffer>(), ,
                                                              .Attr<int32_t>("scale_rule")));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_variant_bwd, SwigluFp8VariantBackward,
                              CAKE_JAX_SWIGLU_VARIANT_BINDING(.Arg<BF16Buffer>()
                                                                  .Arg<BF16Buffer>(),
                                                              .OptionalRet<ffi::AnyBuffer>(),
                                                              .Attr<int32_t>("scale_rule")));

// x, z, w (BF16), then q (F8E4M3FN), q_scale (F32 for FP8 blockwise, U8 for MXFP8), y (BF16,
// empty when not asked for); every attribute required (the Python module passes all of them).
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_normgate_fwd_quant, NormgateForwardQuant,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // z
                                  .Arg<ffi::AnyBuffer>()  // w
                                  .Ret<ffi::AnyBuffer>()  // q
                                  .Ret<ffi::AnyBuffer>()  // q_scale
                                  .Ret<ffi::AnyBuffer>()  // y
                                  .Attr<float>("eps")
                                  .Attr<int32_t>("format")
                                  .Attr<int32_t>("scale_rule")
                                  .Attr<int64_t>("heads")
                                  .Attr<std::string_view>("program"));

// The grouped SwiGLU handlers' binding: in (and grad: BF16 [T, k]), offsets (S32 [E], read by
// the kernel only), then row_q, row_s, col_q, col_s (each empty for an orientation not asked for)
// and status (S32 [1]), the orientation, the family's own attributes and the program.
#define CAKE_JAX_SWIGLU_GROUPED_BINDING(args, attrs)                                          \
  ffi::Ffi::Bind()                                                                            \
      .Ctx<ffi::PlatformStream<cudaStream_t>>()                                               \
      .Ctx<ffi::DeviceOrdinal>() args                                                         \
      .Arg<ffi::Buffer<ffi::DataType::S32>>()                                                 \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::Buffer<ffi::DataType::S32>>()                                                 \
      .Attr<int32_t>("orientation") attrs                                                     \
      .Attr<std::string_view>("program")

XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_grouped_fwd, SwigluMxfp8GroupedForward,
                              CAKE_JAX_SWIGLU_GROUPED_BINDING(.Arg<BF16Buffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_grouped_bwd, SwigluMxfp8GroupedBackward,
                              CAKE_JAX_SWIGLU_GROUPED_BINDING(.Arg<BF16Buffer>()
                                                                  .Arg<BF16Buffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_grouped_fwd, SwigluFp8GroupedForward,
                              CAKE_JAX_SWIGLU_GROUPED_BINDING(.Arg<BF16Buffer>(),
                                                              .Attr<int32_t>("scale_rule")));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_grouped_bwd, SwigluFp8GroupedBackward,
                              CAKE_JAX_SWIGLU_GROUPED_BINDING(.Arg<BF16Buffer>().Arg<BF16Buffer>(),
                                                              .Attr<int32_t>("scale_rule")));

// The grouped variant handlers' binding: CAKE_JAX_SWIGLU_GROUPED_BINDING's with prob after the
// offsets, dprob after status (both optional) and the variant's attributes last.
#define CAKE_JAX_SWIGLU_GROUPED_VARIANT_BINDING(args, rets, attrs)                            \
  ffi::Ffi::Bind()                                                                            \
      .Ctx<ffi::PlatformStream<cudaStream_t>>()                                               \
      .Ctx<ffi::DeviceOrdinal>() args                                                         \
      .Arg<ffi::Buffer<ffi::DataType::S32>>()                                                 \
      .OptionalArg<ffi::AnyBuffer>()                                                          \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::AnyBuffer>()                                                                  \
      .Ret<ffi::Buffer<ffi::DataType::S32>>() rets                                            \
      .Attr<int32_t>("orientation") attrs                                                     \
      .Attr<std::string_view>("program")                                                      \
      .Attr<int32_t>("activation")                                                            \
      .Attr<float>("alpha")                                                                   \
      .Attr<float>("limit")

XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_grouped_variant_fwd,
                              SwigluMxfp8GroupedVariantForward,
                              CAKE_JAX_SWIGLU_GROUPED_VARIANT_BINDING(.Arg<BF16Buffer>(), , ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_mxfp8_grouped_variant_bwd,
                              SwigluMxfp8GroupedVariantBackward,
                              CAKE_JAX_SWIGLU_GROUPED_VARIANT_BINDING(
                                  .Arg<BF16Buffer>().Arg<BF16Buffer>(),
                                  .OptionalRet<ffi::AnyBuffer>(), ));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_grouped_variant_fwd,
                              SwigluFp8GroupedVariantForward,
                              CAKE_JAX_SWIGLU_GROUPED_VARIANT_BINDING(
                                  .Arg<BF16Buffer>(), , .Attr<int32_t>("scale_rule")));
XLA_FFI_DEFINE_HANDLER_SYMBOL(cake_jax_swiglu_fp8_grouped_variant_bwd,
                              SwigluFp8GroupedVariantBackward,
                              CAKE_JAX_SWIGLU_GROUPED_VARIANT_BINDING(
                                  .Arg<BF16Buffer>().Arg<BF16Buffer>(),
                                  .OptionalRet<ffi::AnyBuffer>(), .Attr<int32_t>("scale_rule")));

// ---- plain C entry points for the Python module --------------------------------------------

/// Version of this shim's handler set (bumped when a handler's signature changes).
CAKE_JAX_EXPORT int cake_jax_abi_version(void) { return 1; }

/// Create (once) the Cake handle of CUDA device @p device; later calls return at once.
/// Called from Python while tracing, never from XLA's execute stage. On failure the status is
/// returned and cake_last_error_message() says why.
CAKE_JAX_EXPORT cake_status_t cake_jax_prepare(int device) {
  if (device < 0 || device >= kMaxDevices) return CAKE_STATUS_NO_DEVICE;
  if (g_handles[device].load(std::memory_order_acquire) != nullptr) return CAKE_STATUS_SUCCESS;
  std::lock_guard<std::mutex> lock(g_prepare_mutex);
  if (g_handles[device].load(std::memory_order_acquire) != nullptr) return CAKE_STATUS_SUCCESS;
  cake_handle_t h = nullptr;
  const cake_status_t status = cake_create(&h, device);
  if (status != CAKE_STATUS_SUCCESS) return status;
  g_handles[device].store(h, std::memory_order_release);
  return CAKE_STATUS_SUCCESS;
}

/// Bytes of workspace the norm-gate backward needs on device @p device (prepared) for rows x d,
/// @p package, FP32 (@p dw_f32 != 0) or BF16 dw, the default variant. Kept for callers of the
/// first shim; cake_jax uses cake_jax_normgate_workspace_size_ex().
CAKE_JAX_EXPORT cake_status_t cake_jax_normgate_workspace_size(int device, int64_t rows, int32_t d,
                                                               int32_t package, int32_t dw_f32,
                                                               size_t *bytes) {
  if (&cake_normgate_workspace_size == nullptr) return CAKE_STATUS_INTERNAL_ERROR;
  if (device < 0 || device >= kMaxDevices) return CAKE_STATUS_NO_DEVICE;
  cake_handle_t h = g_handles[device].load(std::memory_order_acquire);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = rows;
  desc.d = d;
  desc.package = static_cast<cake_normgate_package_t>(package);
  desc.dw_dtype = dw_f32 ? CAKE_DTYPE_F32 : CAKE_DTYPE_BF16;
  return cake_normgate_workspace_size(h, &desc, bytes);
}

/// As cake_jax_normgate_workspace_size() for any variant: dtypes are cake_dtype_t values,
/// @p gate a cake_normgate_gate_t, @p gate_before_norm 0/1, @p group_size 0 for the row.
/// CAKE_STATUS_UNSUPPORTED_SHAPE when the library predates the variant fields and a value
/// is not the default (it would ignore it).
CAKE_JAX_EXPORT cake_status_t cake_jax_normgate_workspace_size_ex(
    int device, int64_t rows, int32_t d, int32_t package, int32_t dw_dtype, int32_t gate,
    int32_t gate_before_norm, int32_t group_size, int32_t x_dtype, int32_t z_dtype,
    int32_t w_dtype, size_t *bytes) {
  if (&cake_normgate_workspace_size == nullptr) return CAKE_STATUS_INTERNAL_ERROR;
  if (device < 0 || device >= kMaxDevices) return CAKE_STATUS_NO_DEVICE;
  cake_handle_t h = g_handles[device].load(std::memory_order_acquire);
  cake_normgate_desc desc;
  cake_normgate_desc_init(&desc);
  desc.rows = rows;
  desc.d = d;
  desc.package = static_cast<cake_normgate_package_t>(package);
  desc.dw_dtype = static_cast<cake_dtype_t>(dw_dtype);
  desc.gate = static_cast<cake_normgate_gate_t>(gate);
  desc.placement = gate_before_norm ? CAKE_NORMGATE_GATE_BEFORE_NORM : CAKE_NORMGATE_GATE_AFTER_NORM;
  desc.group_size = group_size;
  desc.x_dtype = static_cast<cake_dtype_t>(x_dtype);
  desc.z_dtype = static_cast<cake_dtype_t>(z_dtype);
  desc.w_dtype = static_cast<cake_dtype_t>(w_dtype);
  if (check_struct_size(desc).failure()) return CAKE_STATUS_UNSUPPORTED_SHAPE;
  return cake_normgate_workspace_size(h, &desc, bytes);
}

/// 1: the normgate handlers read the gate, gate_before_norm and group_size attributes and take
/// BF16, F16 and F32 operands (the Python module checks this before passing a variant).
CAKE_JAX_EXPORT int cake_jax_normgate_variants(void) { return 1; }

/// 1: the cake_jax_swiglu_*_variant_* handlers are here (the SwiGLU variants).
CAKE_JAX_EXPORT int cake_jax_swiglu_variants(void) { return 1; }

/// 1: the cake_jax_swiglu_*_grouped_variant_* handlers are here (the grouped SwiGLU variants).
CAKE_JAX_EXPORT int cake_jax_swiglu_grouped_variants(void) { return 1; }

/// Whether libcake.so exports the op's entry points: 0 normgate forward, 1 normgate backward,
/// 2 swiglu_mxfp8 forward, 3 swiglu_mxfp8 backward, 4 swiglu_fp8 forward, 5 swiglu_fp8 backward,
/// 6 normgate forward with quantized y, 7 swiglu_mxfp8_grouped forward, 8 its backward,
/// 9 swiglu_fp8_grouped forward, 10 its backward.
CAKE_JAX_EXPORT int cake_jax_has_op(int op) {
  switch (op) {
    case 0:
      return 1;
    case 1:
      return &cake_normgate_backward != nullptr && &cake_normgate_workspace_size != nullptr;
    case 2:
      return &cake_swiglu_mxfp8_forward != nullptr && &cake_swiglu_mxfp8_desc_init != nullptr;
    case 3:
      return &cake_swiglu_mxfp8_backward != nullptr && &cake_swiglu_mxfp8_desc_init != nullptr;
    case 4:
      return &cake_swiglu_fp8_forward != nullptr && &cake_swiglu_fp8_desc_init != nullptr;
    case 5:
      return &cake_swiglu_fp8_backward != nullptr && &cake_swiglu_fp8_desc_init != nullptr;
    case 6:
      return &cake_normgate_forward_quantized != nullptr &&
             &cake_normgate_quant_desc_init != nullptr &&
             &cake_normgate_quant_sizes_init != nullptr &&
             &cake_normgate_quant_buffer_sizes != nullptr;
    case 7:
    case 8:
    case 9:
    case 10: {
      const bool mx = op <= 8, bwd = op == 8 || op == 10;
      const bool common = &cake_swiglu_grouped_sizes_init != nullptr;
      if (mx) {
        return common && &cake_swiglu_mxfp8_grouped_desc_init != nullptr &&
               &cake_swiglu_mxfp8_grouped_buffer_sizes != nullptr &&
               (bwd ? &cake_swiglu_mxfp8_grouped_backward != nullptr
                    : &cake_swiglu_mxfp8_grouped_forward != nullptr);
      }
      return common && &cake_swiglu_fp8_grouped_desc_init != nullptr &&
             &cake_swiglu_fp8_grouped_buffer_sizes != nullptr &&
             (bwd ? &cake_swiglu_fp8_grouped_backward != nullptr
                  : &cake_swiglu_fp8_grouped_forward != nullptr);
    }
    default:
      return 0;
  }
}
