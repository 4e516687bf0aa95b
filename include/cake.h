/**
 * @file cake.h
 * @brief Cake: fused training kernels for large models, behind a stable C ABI.
 *
 * This is the only public header of libcake.so. It is C99 and needs no CUDA header: streams are
 * `struct CUstream_st *`, which is what both the driver's `CUstream` and the runtime's
 * `cudaStream_t` are. Device pointers are plain `void *` / `const void *`.
 *
 * Two sections. The stable section (everything declared by default) is the promise. Within one
 * CAKE_VERSION_MAJOR it only grows: functions are only added; every public struct starts with
 * `struct_size` and only grows at its end (initialise it with the matching `*_init` function,
 * which sets `struct_size` and every default); no field is removed, reordered or resized; enum
 * values are explicit and never renumbered; handles are opaque.
 *
 * The experimental section is declared only when the caller defines CAKE_EXPERIMENTAL_API
 * before including this header (a later inclusion with it defined adds the section to an
 * earlier one without). It holds the tuning introspection: the shipped program tables, with
 * each program's knobs and each route's size bounds and wave band, for tools and benchmarks.
 * Anything in it may change or go in any release, a patch release included; code that uses it
 * must be built against the header of the library it runs with. libcake.so exports the
 * functions of both sections.
 *
 * Program names (cake_program_name(), cake_program_info.name, the `program` field of a
 * descriptor) are tuning too: the mechanism is stable, the set of programs a release ships is
 * not. Forcing a name the library does not have fails with CAKE_STATUS_PROGRAM_NOT_FOUND.
 *
 * Threads: every function may be called from many threads at once, except that a handle must
 * not be used while it is being created or destroyed. `cake_last_error_message()` is
 * thread-local.
 *
 * Streams and graphs: every launching call is asynchronous on the caller's stream. It performs
 * no allocation and no synchronisation, so it may be captured in a CUDA graph. Scratch memory
 * (workspace) is supplied by the caller after a size query.
 */
#ifndef CAKE_H_
#define CAKE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks an exported function (default visibility; the library hides everything else). */
#if defined(__GNUC__)
#define CAKE_API __attribute__((visibility("default")))
#else
#define CAKE_API
#endif

/** @name Version */
/** @{ */
#define CAKE_VERSION_MAJOR 0 /**< Incremented when the stable section breaks (never, we intend). */
#define CAKE_VERSION_MINOR 3 /**< Incremented when functions or fields are added. */
#define CAKE_VERSION_PATCH 0 /**< Incremented for fixes. */
/** The version as one number: major * 10000 + minor * 100 + patch. */
#define CAKE_VERSION (CAKE_VERSION_MAJOR * 10000 + CAKE_VERSION_MINOR * 100 + CAKE_VERSION_PATCH)
/** @} */

/** Status of every call. Values are stable; new codes are only appended. */
typedef enum cake_status {
  CAKE_STATUS_SUCCESS = 0,                /**< The call did what it was asked. */
  CAKE_STATUS_INVALID_ARGUMENT = 1,       /**< An argument is wrong; the message names it. */
  CAKE_STATUS_ARCH_UNSUPPORTED = 2,       /**< The device is older than sm_90 or no table loads. */
  CAKE_STATUS_DRIVER_UNAVAILABLE = 3,     /**< libcuda.so.1 could not be loaded or initialised. */
  CAKE_STATUS_CUDA_ERROR = 4,             /**< A CUDA driver call failed; the message has its name. */
  CAKE_STATUS_INSUFFICIENT_WORKSPACE = 5, /**< The workspace is smaller than its size query says. */
  CAKE_STATUS_UNSUPPORTED_SHAPE = 6,      /**< A size or width no program serves (e.g. D). */
  CAKE_STATUS_MISALIGNED = 7,             /**< A pointer or stride breaks an alignment rule. */
  CAKE_STATUS_INVALID_HANDLE = 8,         /**< A NULL or destroyed handle. */
  CAKE_STATUS_PROGRAM_NOT_FOUND = 9,      /**< A forced program name is unknown or cannot serve. */
  CAKE_STATUS_INTERNAL_ERROR = 10,        /**< A broken invariant inside Cake; please report. */
  CAKE_STATUS_NO_DEVICE = 11,             /**< The driver loaded but no such device ordinal. */
} cake_status_t;

/** Architecture tables shipped in the library. */
typedef enum cake_arch {
  CAKE_ARCH_NONE = 0,
  CAKE_ARCH_SM90 = 90,   /**< H100, H200: sm_90a SASS + compute_90 PTX. */
  CAKE_ARCH_SM100 = 100, /**< B200: sm_100a SASS. */
  CAKE_ARCH_SM103 = 103, /**< GB300: sm_103a SASS. */
  CAKE_ARCH_SM107 = 107, /**< R200: sm_107a SASS, or sm_100f SASS + compute_100 PTX. */
} cake_arch_t;

/** Element types. */
typedef enum cake_dtype {
  CAKE_DTYPE_BF16 = 1,
  CAKE_DTYPE_F32 = 2,
  CAKE_DTYPE_F16 = 3,
} cake_dtype_t;

/** Opaque handle: one device, its primary context, and the loaded program table. */
typedef struct cake_handle_st *cake_handle_t;

/** A CUDA stream; the same type as CUstream and cudaStream_t. NULL is the legacy default stream. */
typedef struct CUstream_st *cake_stream_t;

/** @return The run-time version, in the form of #CAKE_VERSION. */
CAKE_API int cake_version(void);

/**
 * Name of a status.
 * @param[in] status Any value; unknown ones give "CAKE_STATUS_UNKNOWN".
 * @return A static string naming @p status (e.g. "CAKE_STATUS_INVALID_ARGUMENT"); never NULL.
 */
CAKE_API const char *cake_status_string(cake_status_t status);

/**
 * @return The message of the last failing call on this thread: which argument, which value,
 * what was expected. Empty string when the last call succeeded. Valid until the next Cake call
 * on this thread.
 */
CAKE_API const char *cake_last_error_message(void);

/** Options for cake_create_ex(). Initialise with cake_handle_options_init(). */
typedef struct cake_handle_options {
  size_t struct_size; /**< sizeof(cake_handle_options), set by the init function. */
  /**
   * Route with this architecture's table instead of the device's own (for tests and A/B).
   * On an sm_90 device the other tables' programs run from a cross-check image compiled for
   * sm_90 from the same manifests. CAKE_ARCH_NONE (default): the device's table.
   */
  cake_arch_t table;
  /** Route as if the device had this many SMs (for tests); 0 (default): the real count. */
  int32_t sm_count;
} cake_handle_options;

/**
 * Set @p options to defaults (its struct_size included).
 * @param[out] options The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p options is NULL.
 */
CAKE_API cake_status_t cake_handle_options_init(cake_handle_options *options);

/**
 * Create a handle for device @p device_ordinal: loads the driver (first time), retains the
 * device's primary context, loads the architecture's program image once.
 * @param[out] handle          Receives the handle; set to NULL on failure.
 * @param[in]  device_ordinal  CUDA device ordinal (as cuDeviceGet numbers them).
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_ARGUMENT, CAKE_STATUS_DRIVER_UNAVAILABLE,
 *         CAKE_STATUS_NO_DEVICE, CAKE_STATUS_ARCH_UNSUPPORTED, CAKE_STATUS_CUDA_ERROR.
 * Not thread-safe with respect to the handle it creates (there is none yet); safe otherwise.
 */
CAKE_API cake_status_t cake_create(cake_handle_t *handle, int device_ordinal);

/**
 * As cake_create(), with options (may be NULL for defaults).
 * @param[out] handle   Receives the handle.
 * @param[in]  device_ordinal CUDA device ordinal.
 * @param[in]  options  NULL or initialised options; a struct_size from a newer header whose
 *                      extra fields are non-zero is rejected.
 * @return As cake_create().
 */
CAKE_API cake_status_t cake_create_ex(cake_handle_t *handle, int device_ordinal,
                                      const cake_handle_options *options);

/**
 * Destroy a handle: unloads its module and releases the primary context. No call on the handle
 * may be running or follow. Work already queued on streams must have finished.
 * @param[in] handle The handle, or NULL (then nothing happens).
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_CUDA_ERROR if unloading failed.
 */
CAKE_API cake_status_t cake_destroy(cake_handle_t handle);

/** What a handle serves. Initialise with cake_device_info_init(). */
typedef struct cake_device_info {
  size_t struct_size;             /**< sizeof(cake_device_info). */
  int32_t device_ordinal;         /**< As given to cake_create(). */
  int32_t cc_major;               /**< Compute capability, major. */
  int32_t cc_minor;               /**< Compute capability, minor. */
  int32_t sm_count;               /**< Multiprocessors (the real count). */
  int32_t routing_sm_count;       /**< The count routes use (options.sm_count, else sm_count). */
  cake_arch_t table;              /**< The route table in use. */
  int32_t jit;                    /**< 1 when the image is PTX compiled by the driver at load. */
  int32_t cross_check;            /**< 1 when another table's programs run from the sm_90 image. */
  int32_t program_count;          /**< Programs in the table. */
  char image[32];                 /**< The image loaded, e.g. "sm_90a", "compute_100 (PTX)". */
  char device_name[96];           /**< The driver's device name. */
} cake_device_info;

/**
 * Set @p info's struct_size and zero the rest.
 * @param[out] info The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p info is NULL.
 */
CAKE_API cake_status_t cake_device_info_init(cake_device_info *info);

/**
 * Describe the handle's device and table.
 * @param[in]  handle A live handle.
 * @param[out] info   Initialised with cake_device_info_init(); filled up to its struct_size.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT.
 */
CAKE_API cake_status_t cake_device_query(cake_handle_t handle, cake_device_info *info);

/** Which program a call runs, and why. Initialise with cake_program_info_init(). */
typedef struct cake_program_info {
  size_t struct_size;   /**< sizeof(cake_program_info). */
  char name[64];        /**< Program name, e.g. "sm90.ng_fwd_d128_short". */
  char kernel[80];      /**< The kernel symbol in the image. */
  int32_t forced;       /**< 1 when the caller forced it by name. */
  int32_t threads;      /**< CTA size. */
  int32_t ctas_per_sm;  /**< CTAs per SM the register budget is fitted to. */
  int64_t grid;         /**< CTAs the launch would use (product of the grid dimensions). */
  int64_t metric;       /**< The route's size metric for this call (normgate: rows per SM,
                             rounded down; swiglu: M*K). */
  int64_t metric_lo;    /**< The chosen route's inclusive lower bound (-1 when forced). */
  int64_t metric_hi;    /**< The chosen route's exclusive upper bound (-1 when forced, or open). */
} cake_program_info;

/**
 * Set @p info's struct_size and zero the rest.
 * @param[out] info The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p info is NULL.
 */
CAKE_API cake_status_t cake_program_info_init(cake_program_info *info);

/**
 * Number of programs in the handle's table (index them with cake_program_name()).
 * @param[in] handle A live handle.
 * @return The count, or -1 for a bad handle.
 */
CAKE_API int cake_program_count(cake_handle_t handle);

/**
 * Name of program @p index of the handle's table (for listing and forcing by name).
 * @param[in] handle A live handle.
 * @param[in] index  0 .. cake_program_count() - 1.
 * @return A static string, or NULL when the handle or index is invalid.
 */
CAKE_API const char *cake_program_name(cake_handle_t handle, int index);

/* ---------------------------------------------------------------------------------------- */
/** @name Kernel families and their operations (programs and routes are labelled with them). */
/** @{ */

/** Kernel families. */
typedef enum cake_family {
  CAKE_FAMILY_NORMGATE = 1,     /**< SiLU-gated RMSNorm. */
  CAKE_FAMILY_SWIGLU_MXFP8 = 2, /**< SwiGLU + MXFP8 quantization. */
  CAKE_FAMILY_SWIGLU_FP8 = 3,   /**< SwiGLU + FP8 blockwise 1x128 quantization. Added in 0.4. */
} cake_family_t;

/** Operations within a family (the same numbers are reused across families). */
typedef enum cake_op {
  CAKE_OP_NORMGATE_FORWARD = 0,           /**< normgate forward. */
  CAKE_OP_NORMGATE_BACKWARD_DET = 1,      /**< normgate backward, deterministic package. */
  CAKE_OP_NORMGATE_BACKWARD_NONDET = 2,   /**< normgate backward, non-deterministic package. */
  CAKE_OP_SWIGLU_FORWARD_ROWWISE = 0,     /**< swiglu_mxfp8 forward, rowwise. */
  CAKE_OP_SWIGLU_FORWARD_COLWISE = 1,     /**< swiglu_mxfp8 forward, colwise. */
  CAKE_OP_SWIGLU_FORWARD_BOTH = 2,        /**< swiglu_mxfp8 forward, both. */
  CAKE_OP_SWIGLU_BACKWARD_ROWWISE = 3,    /**< swiglu_mxfp8 backward, rowwise. */
  CAKE_OP_SWIGLU_BACKWARD_COLWISE = 4,    /**< swiglu_mxfp8 backward, colwise. */
  CAKE_OP_SWIGLU_BACKWARD_BOTH = 5,       /**< swiglu_mxfp8 backward, both. */
  /* The grouped (MoE) forms of both SwiGLU families: the ungrouped form plus 6. Added in 0.4. */
  CAKE_OP_SWIGLU_GROUPED_FORWARD_ROWWISE = 6,  /**< swiglu grouped forward, rowwise. */
  CAKE_OP_SWIGLU_GROUPED_FORWARD_COLWISE = 7,  /**< swiglu grouped forward, colwise. */
  CAKE_OP_SWIGLU_GROUPED_FORWARD_BOTH = 8,     /**< swiglu grouped forward, both. */
  CAKE_OP_SWIGLU_GROUPED_BACKWARD_ROWWISE = 9, /**< swiglu grouped backward, rowwise. */
  CAKE_OP_SWIGLU_GROUPED_BACKWARD_COLWISE = 10, /**< swiglu grouped backward, colwise. */
  CAKE_OP_SWIGLU_GROUPED_BACKWARD_BOTH = 11,   /**< swiglu grouped backward, both. */
} cake_op_t;

/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Gated RMSNorm (normgate): y = rmsnorm(x) * w * silu(z) per row of width d, and variants. */
/** @{ */

/** How dw is reduced in the backward. */
typedef enum cake_normgate_package {
  CAKE_NORMGATE_DETERMINISTIC = 0,     /**< dw bits depend only on the inputs and row count. */
  CAKE_NORMGATE_NONDETERMINISTIC = 1,  /**< FP64 atomics; dw within 1 ulp of the deterministic. */
} cake_normgate_package_t;

/** Backward flags (bitwise OR). */
typedef enum cake_normgate_flags {
  CAKE_NORMGATE_DW_ACCUMULATE = 1, /**< dw += gradient instead of dw = gradient. */
  CAKE_NORMGATE_DW_SKIP = 2,       /**< Do not compute dw (dw may be NULL). */
} cake_normgate_flags_t;

/** The gate function a(z) of a normgate call. */
typedef enum cake_normgate_gate {
  CAKE_NORMGATE_GATE_SILU = 0,    /**< a(z) = z * sigmoid(z) (the default). */
  CAKE_NORMGATE_GATE_SIGMOID = 1, /**< a(z) = sigmoid(z). */
  CAKE_NORMGATE_GATE_NONE = 2,    /**< No gate: y = rmsnorm_G(x) * w; z and dz are not used. */
} cake_normgate_gate_t;

/** Where the gate applies relative to the normalisation. */
typedef enum cake_normgate_placement {
  CAKE_NORMGATE_GATE_AFTER_NORM = 0,  /**< y = rmsnorm_G(x) * w * a(z) (the default). */
  CAKE_NORMGATE_GATE_BEFORE_NORM = 1, /**< y = rmsnorm_G(x * a(z)) * w. */
} cake_normgate_placement_t;

/**
 * Shape and options of a normgate call. Initialise with cake_normgate_desc_init(). Strides are
 * in elements between consecutive rows (>= d; the last dimension is contiguous); 0 means packed
 * (= d).
 */
typedef struct cake_normgate_desc {
  size_t struct_size;       /**< sizeof(cake_normgate_desc). */
  int64_t rows;             /**< Rows (tokens x heads), > 0. */
  int32_t d;                /**< Row width: a multiple of 8, 8..8192. */
  float eps;                /**< Added to mean(x^2); finite and >= 0. Default 1e-6. */
  int64_t x_stride;         /**< Row stride of x. */
  int64_t z_stride;         /**< Row stride of z. */
  int64_t y_stride;         /**< Row stride of y (forward). */
  int64_t dy_stride;        /**< Row stride of dy (backward). */
  int64_t dx_stride;        /**< Row stride of dx (backward). */
  int64_t dz_stride;        /**< Row stride of dz (backward). */
  cake_normgate_package_t package; /**< Default CAKE_NORMGATE_DETERMINISTIC. */
  cake_dtype_t dw_dtype;    /**< CAKE_DTYPE_BF16 (default), CAKE_DTYPE_F32 or CAKE_DTYPE_F16. */
  uint32_t flags;           /**< cake_normgate_flags_t bits. */
  /** NULL: the router picks; else the name of a program of the handle's table to force. */
  const char *program;
  /* Added in 0.3. A caller whose struct_size ends before these fields gets their defaults. */
  cake_normgate_gate_t gate;           /**< Default CAKE_NORMGATE_GATE_SILU. */
  cake_normgate_placement_t placement; /**< Default CAKE_NORMGATE_GATE_AFTER_NORM. */
  /** Columns per mean-square group: 0 (the default) or d for the whole row, else a multiple of
   *  8 that divides d. rstd (forward) is then FP32 [rows, d / group_size]. */
  int32_t group_size;
  cake_dtype_t x_dtype; /**< x and y (forward), dy and dx (backward): BF16 (default), F16, F32. */
  cake_dtype_t z_dtype; /**< z and dz: BF16 (default), F16, F32. */
  cake_dtype_t w_dtype; /**< w: BF16 (default), F16, F32. */
} cake_normgate_desc;

/**
 * Set @p desc to defaults: eps 1e-6, packed strides, deterministic package, BF16 dw, routed.
 * @param[out] desc The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p desc is NULL.
 */
CAKE_API cake_status_t cake_normgate_desc_init(cake_normgate_desc *desc);

/**
 * Forward: y = rmsnorm_G(x) * w * a(z) (the default: SiLU gate after a whole-row norm, BF16),
 * FP32 inside, one rounding into x's dtype. The variant fields of @p desc choose the gate a(z)
 * (SiLU z*sigmoid(z), sigmoid(z), or none: y = rmsnorm_G(x) * w), its placement (before the
 * norm: y = rmsnorm_G(x * a(z)) * w) and the mean-square groups of group_size columns
 * (rmsnorm_G: 1/sqrt(mean(u^2) + eps) per group). docs/spec/normgate.md has every formula.
 * @param[in]  handle A live handle.
 * @param[in]  desc   Shape and options (rows, d, eps, x/z/y strides, program, gate, placement,
 *                    group_size, x/z/w dtypes).
 * @param[in]  x      [rows, x_stride] of desc->x_dtype (BF16 default, F16, FP32), 16-byte aligned.
 * @param[in]  z      [rows, z_stride] of desc->z_dtype, 16-byte aligned; not read (may be NULL)
 *                    with CAKE_NORMGATE_GATE_NONE.
 * @param[in]  w      [d] of desc->w_dtype, 16-byte aligned.
 * @param[out] y      [rows, y_stride] of desc->x_dtype, 16-byte aligned.
 * @param[out] rstd   NULL, or FP32 [rows, d / G] (G = group_size, d when 0): the groups'
 *                    1/sqrt(mean(u^2)+eps), u = x (or x * a(z) with the gate before the norm).
 * @param[in]  stream The stream to launch on.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT,
 *         CAKE_STATUS_UNSUPPORTED_SHAPE, CAKE_STATUS_MISALIGNED, CAKE_STATUS_PROGRAM_NOT_FOUND,
 *         CAKE_STATUS_CUDA_ERROR. Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_normgate_forward(cake_handle_t handle, const cake_normgate_desc *desc,
                                             const void *x, const void *z, const void *w,
                                             void *y, float *rstd, cake_stream_t stream);

/**
 * Which program cake_normgate_forward() would run for @p desc, and why. Touches no device
 * memory and launches nothing.
 * @param[in]  handle A live handle.
 * @param[in]  desc   As for cake_normgate_forward().
 * @param[out] info   Initialised with cake_program_info_init(); receives the choice.
 * @return As cake_normgate_forward(), without the pointer checks.
 */
CAKE_API cake_status_t cake_normgate_forward_query(cake_handle_t handle,
                                                   const cake_normgate_desc *desc,
                                                   cake_program_info *info);

/**
 * Bytes of workspace cake_normgate_backward() needs for @p desc (rows, d, package, dw dtype,
 * flags). The workspace is left ready for reuse after every call (counters back at zero), so
 * one buffer serves any later call on the same stream and every CUDA graph replay. Streams
 * running at the same time need their own buffers. May be 0 (then workspace may be NULL).
 * @param[in]  handle A live handle.
 * @param[in]  desc   The backward's descriptor.
 * @param[out] bytes  Receives the size.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT,
 *         CAKE_STATUS_UNSUPPORTED_SHAPE.
 */
CAKE_API cake_status_t cake_normgate_workspace_size(cake_handle_t handle,
                                                    const cake_normgate_desc *desc,
                                                    size_t *bytes);

/**
 * Backward of the forward above, recomputing rstd and the gate from x and z. The default form,
 * with s = sigmoid(z), n = x*rstd, a = dy*z*s, g = a*w:
 * dz = dy*n*w*s*(1 + z*(1-s)), dx = rstd*(g - n*mean(g*n)), dw = sum over rows of a*n.
 * Every variant (desc's gate, placement, group_size, dtypes), with pdy = dy*a(z) (gate after)
 * or dy, dn = pdy*w, du = rstd*(dn - n*mean_G(dn*n)): dx = du*a(z) (gate before) or du,
 * dz = (du*x)*a'(z) (before) or (dy*n*w)*a'(z) (after), dw = sum over rows of pdy*n
 * (docs/spec/normgate.md derives them).
 * @param[in]  handle    A live handle.
 * @param[in]  desc      rows, d, eps, dy/x/z/dx/dz strides, package, dw_dtype, flags, program,
 *                       gate, placement, group_size, x/z/w dtypes.
 * @param[in]  dy        [rows, dy_stride] of desc->x_dtype, 16-byte aligned.
 * @param[in]  x         [rows, x_stride] of desc->x_dtype, 16-byte aligned.
 * @param[in]  z         [rows, z_stride] of desc->z_dtype, 16-byte aligned; not read (may be
 *                       NULL) with CAKE_NORMGATE_GATE_NONE.
 * @param[in]  w         [d] of desc->w_dtype, 16-byte aligned.
 * @param[out] dx        [rows, dx_stride] of desc->x_dtype, 16-byte aligned.
 * @param[out] dz        [rows, dz_stride] of desc->z_dtype, 16-byte aligned; not written (may be
 *                       NULL) with CAKE_NORMGATE_GATE_NONE.
 * @param[in,out] dw     [d] of desc->dw_dtype (BF16, FP32, F16), 16-byte aligned; read too with
 *                       CAKE_NORMGATE_DW_ACCUMULATE; NULL allowed with CAKE_NORMGATE_DW_SKIP.
 * @param[in,out] workspace       Device scratch of at least cake_normgate_workspace_size()
 *                                bytes, 16-byte aligned, zero-filled before its first use and
 *                                left so by every call (cudaMemset once after allocating).
 * @param[in]  workspace_bytes    Its size.
 * @param[in]  stream    The stream to launch on.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT,
 *         CAKE_STATUS_UNSUPPORTED_SHAPE, CAKE_STATUS_MISALIGNED,
 *         CAKE_STATUS_INSUFFICIENT_WORKSPACE, CAKE_STATUS_PROGRAM_NOT_FOUND,
 *         CAKE_STATUS_CUDA_ERROR. Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_normgate_backward(cake_handle_t handle, const cake_normgate_desc *desc,
                                              const void *dy, const void *x, const void *z,
                                              const void *w, void *dx, void *dz, void *dw,
                                              void *workspace, size_t workspace_bytes,
                                              cake_stream_t stream);

/**
 * Which program cake_normgate_backward() would run for @p desc, and why.
 * @param[in]  handle A live handle.
 * @param[in]  desc   As for cake_normgate_backward().
 * @param[out] info   Initialised with cake_program_info_init(); receives the choice.
 * @return As cake_normgate_backward(), without the pointer and workspace checks.
 */
CAKE_API cake_status_t cake_normgate_backward_query(cake_handle_t handle,
                                                    const cake_normgate_desc *desc,
                                                    cake_program_info *info);

/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name SwiGLU + MXFP8 quantization: silu(gate) * up from BF16 [M, 2K] to E4M3 + E8M0.  */
/** @{ */

/** Which quantized orientations a call writes (bit flags; at least one). */
typedef enum cake_mxfp8_orientation {
  CAKE_MXFP8_ROWWISE = 1, /**< row_q [M, O] row-major, one scale per 32 columns of a row. */
  CAKE_MXFP8_COLWISE = 2, /**< col_q stored transposed ([O, M]), one scale per 32 rows. */
  CAKE_MXFP8_BOTH = 3,    /**< Both, from one read of the input. */
} cake_mxfp8_orientation_t;

/** The activation of a SwiGLU call (every form of both block formats, ungrouped and grouped):
 * docs/spec/swiglu-mxfp8.md, "Variants". Added in 0.4. */
typedef enum cake_swiglu_activation {
  CAKE_SWIGLU_ACT_SILU = 0,    /**< silu(g) * u (the default). */
  /** gpt-oss's clamped SwiGLU: g' = min(g, limit), u' = clamp(u, -limit, limit),
   * g' * sigmoid(alpha * g') * (u' + 1); alpha and limit from the descriptor. */
  CAKE_SWIGLU_ACT_CLAMPED = 1,
} cake_swiglu_activation_t;

/** The variant of a SwiGLU call, the last member of every SwiGLU descriptor (ungrouped and
 * grouped, both block formats): docs/spec/swiglu-mxfp8.md, "Variants". A descriptor from an
 * older header (a struct_size that ends before it) is the plain SwiGLU. Its fields are set by the
 * descriptor's *_init function. Added in 0.4. */
typedef struct cake_swiglu_variant_desc {
  cake_swiglu_activation_t activation; /**< Default CAKE_SWIGLU_ACT_SILU. */
  float alpha;      /**< CAKE_SWIGLU_ACT_CLAMPED: the sigmoid's slope, finite (default 1.702). */
  float limit;      /**< CAKE_SWIGLU_ACT_CLAMPED: the clamp bound, > 0 (default 7.0). */
  int32_t weighted; /**< 1: router-weighted, y = act(g, u) * p[row]; 0 (default) unweighted. */
  /** weighted: device FP32 [rows of in] (grouped: [tokens]), one weight a row, 4-byte aligned. */
  const float *p;
  /** weighted backward: device FP32 [rows of in] receiving dp[row], the sum over the row's k
   * columns of grad * act(g, u) in the spec's order, 4-byte aligned. Not read by the forward. */
  float *dp;
} cake_swiglu_variant_desc;

/** Shape of a SwiGLU + MXFP8 call. Initialise with cake_swiglu_mxfp8_desc_init(). */
typedef struct cake_swiglu_mxfp8_desc {
  size_t struct_size;  /**< sizeof(cake_swiglu_mxfp8_desc). */
  int64_t m;           /**< Rows: a positive multiple of 32. */
  int64_t k;           /**< Output columns of the forward (input is [m, 2k]): a positive
                            multiple of 32. */
  cake_mxfp8_orientation_t orientation; /**< Default CAKE_MXFP8_ROWWISE. */
  /** NULL: the router picks; else the name of a program of the handle's table to force. */
  const char *program;
  cake_swiglu_variant_desc variant; /**< Default: the plain SwiGLU. Added in 0.4. */
} cake_swiglu_mxfp8_desc;

/** Sizes of the output buffers of one form. */
typedef struct cake_swiglu_mxfp8_sizes {
  size_t struct_size;   /**< sizeof(cake_swiglu_mxfp8_sizes). */
  int64_t out_cols;     /**< O: k forward, 2k backward. */
  size_t q_bytes;       /**< Each of row_q and col_q: m * O bytes. */
  size_t row_s_bytes;   /**< Rowwise scales: R' * C' of the swizzled 128x4 layout. */
  size_t col_s_bytes;   /**< Colwise scales, likewise. */
} cake_swiglu_mxfp8_sizes;

/**
 * Set @p desc to defaults (rowwise, routed).
 * @param[out] desc The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p desc is NULL.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_desc_init(cake_swiglu_mxfp8_desc *desc);

/**
 * Set @p sizes's struct_size and zero the rest.
 * @param[out] sizes The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p sizes is NULL.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_sizes_init(cake_swiglu_mxfp8_sizes *sizes);

/**
 * Output buffer sizes for @p desc. Needs no handle and no device.
 * @param[in]  desc      The shape (m, k).
 * @param[in]  backward  0 for the forward (O = k), 1 for the backward (O = 2k).
 * @param[out] sizes     Initialised with cake_swiglu_mxfp8_sizes_init().
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_ARGUMENT (also when a size overflows 64
 *         bits), CAKE_STATUS_UNSUPPORTED_SHAPE.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_buffer_sizes(const cake_swiglu_mxfp8_desc *desc,
                                                      int backward,
                                                      cake_swiglu_mxfp8_sizes *sizes);

/**
 * Forward: Y = bf16(silu(g) * u) with g = in[:, :k], u = in[:, k:], quantized to MXFP8.
 * @param[in]  handle A live handle.
 * @param[in]  desc   Shape, orientation, program.
 * @param[in]  in     BF16 [m, 2k], contiguous, 16-byte aligned.
 * @param[out] row_q  E4M3 [m, k] (rowwise, else ignored), 16-byte aligned.
 * @param[out] row_s  E8M0 swizzled scales (rowwise), 16-byte aligned.
 * @param[out] col_q  E4M3 [k, m] (colwise), 16-byte aligned.
 * @param[out] col_s  E8M0 swizzled scales (colwise), 16-byte aligned.
 * @param[in]  stream The stream to launch on.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT,
 *         CAKE_STATUS_UNSUPPORTED_SHAPE, CAKE_STATUS_MISALIGNED, CAKE_STATUS_PROGRAM_NOT_FOUND,
 *         CAKE_STATUS_CUDA_ERROR. Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_forward(cake_handle_t handle,
                                                 const cake_swiglu_mxfp8_desc *desc,
                                                 const void *in, void *row_q, void *row_s,
                                                 void *col_q, void *col_s, cake_stream_t stream);

/**
 * Backward: with s = sigmoid(g), a = g*s: dgate = bf16((fma(a, 1-s, s)*grad)*u),
 * dup = bf16(a*grad); the [m, 2k] result [dgate | dup] quantized to MXFP8 (O = 2k).
 * @param[in]  handle A live handle.
 * @param[in]  desc   Shape, orientation, program.
 * @param[in]  in     BF16 [m, 2k], contiguous, 16-byte aligned.
 * @param[in]  grad   BF16 [m, k], contiguous, 16-byte aligned.
 * @param[out] row_q  E4M3 [m, 2k] (rowwise), 16-byte aligned.
 * @param[out] row_s  E8M0 swizzled scales (rowwise), 16-byte aligned.
 * @param[out] col_q  E4M3 [2k, m] (colwise), 16-byte aligned.
 * @param[out] col_s  E8M0 swizzled scales (colwise), 16-byte aligned.
 * @param[in]  stream The stream to launch on.
 * @return As cake_swiglu_mxfp8_forward().
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_backward(cake_handle_t handle,
                                                  const cake_swiglu_mxfp8_desc *desc,
                                                  const void *in, const void *grad, void *row_q,
                                                  void *row_s, void *col_q, void *col_s,
                                                  cake_stream_t stream);

/**
 * Which program a SwiGLU + MXFP8 call would run, and why.
 * @param[in]  handle   A live handle.
 * @param[in]  desc     The call's descriptor.
 * @param[in]  backward 0 forward, 1 backward.
 * @param[out] info     Initialised with cake_program_info_init(); receives the choice.
 * @return As the call, without the pointer checks.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_query(cake_handle_t handle,
                                               const cake_swiglu_mxfp8_desc *desc, int backward,
                                               cake_program_info *info);

/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name SwiGLU + FP8 blockwise 1x128: silu(gate) * up to E4M3 + one FP32 scale per 128.
 * The format Hopper FP8 GEMMs consume (F.scaled_mm with BlockWise1x128 scales, DeepGEMM):
 * docs/spec/fp8-blockwise.md. Added in 0.4. */
/** @{ */

/** How a block's FP32 scale is derived from its amax (the BF16 values' max |v|). */
typedef enum cake_fp8_scale_rule {
  CAKE_FP8_SCALE_EXACT = 0, /**< s = amax / 448 (FP32, round to nearest). Default. */
  CAKE_FP8_SCALE_POW2 = 1,  /**< s = 2^ceil(log2(amax / 448)): UE8M0-compatible. */
} cake_fp8_scale_rule_t;

/** Shape of a SwiGLU + FP8 blockwise call. Initialise with cake_swiglu_fp8_desc_init(). */
typedef struct cake_swiglu_fp8_desc {
  size_t struct_size;  /**< sizeof(cake_swiglu_fp8_desc). */
  int64_t m;           /**< Rows: any positive count. */
  int64_t k;           /**< Output columns of the forward (input is [m, 2k]): a positive
                            multiple of 128. */
  /** CAKE_MXFP8_ROWWISE (blocks along the columns of [m, O]), _COLWISE (the transpose [O, m],
   * blocks along m) or _BOTH. Default CAKE_MXFP8_ROWWISE. */
  cake_mxfp8_orientation_t orientation;
  cake_fp8_scale_rule_t scale_rule; /**< Default CAKE_FP8_SCALE_EXACT. */
  /** NULL: the router picks; else the name of a program of the handle's table to force. */
  const char *program;
  cake_swiglu_variant_desc variant; /**< Default: the plain SwiGLU. Added in 0.4. */
} cake_swiglu_fp8_desc;

/** Sizes of the output buffers of one form. Scales are FP32, MN-major: rowwise scale (r, j) of
 * [m, O/128] at element j * row_s_stride + r; colwise (o, i) of [O, ceil(m/128)] at
 * i * col_s_stride + o. */
typedef struct cake_swiglu_fp8_sizes {
  size_t struct_size;   /**< sizeof(cake_swiglu_fp8_sizes). */
  int64_t out_cols;     /**< O: k forward, 2k backward. */
  size_t q_bytes;       /**< Each of row_q and col_q: m * O bytes. */
  size_t row_s_bytes;   /**< Rowwise scales: 4 * m * (O / 128) bytes. */
  size_t col_s_bytes;   /**< Colwise scales: 4 * O * ceil(m / 128) bytes. */
  int64_t row_s_stride; /**< Elements between rowwise scale columns: m. */
  int64_t col_s_stride; /**< Elements between colwise scale columns: O. */
} cake_swiglu_fp8_sizes;

/**
 * Set @p desc to defaults (rowwise, exact scales, routed).
 * @param[out] desc The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p desc is NULL.
 */
CAKE_API cake_status_t cake_swiglu_fp8_desc_init(cake_swiglu_fp8_desc *desc);

/**
 * Set @p sizes's struct_size and zero the rest.
 * @param[out] sizes The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p sizes is NULL.
 */
CAKE_API cake_status_t cake_swiglu_fp8_sizes_init(cake_swiglu_fp8_sizes *sizes);

/**
 * Output buffer sizes for @p desc (both orientations, whatever it enables). Needs no handle.
 * @param[in]  desc      The shape (m, k).
 * @param[in]  backward  0 for the forward (O = k), 1 for the backward (O = 2k).
 * @param[out] sizes     Initialised with cake_swiglu_fp8_sizes_init().
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_ARGUMENT (also when a size overflows 64
 *         bits), CAKE_STATUS_UNSUPPORTED_SHAPE.
 */
CAKE_API cake_status_t cake_swiglu_fp8_buffer_sizes(const cake_swiglu_fp8_desc *desc,
                                                    int backward, cake_swiglu_fp8_sizes *sizes);

/**
 * Forward: Y = bf16(silu(g) * u) with g = in[:, :k], u = in[:, k:] (the bits of
 * cake_swiglu_mxfp8_forward's Y), quantized to FP8 blockwise 1x128.
 * @param[in]  handle A live handle.
 * @param[in]  desc   Shape, orientation, scale rule, program.
 * @param[in]  in     BF16 [m, 2k], contiguous, 16-byte aligned.
 * @param[out] row_q  E4M3 [m, k] (rowwise, else ignored), 16-byte aligned.
 * @param[out] row_s  FP32 scales [m, k/128], MN-major (rowwise), 16-byte aligned.
 * @param[out] col_q  E4M3 [k, m] (colwise), 16-byte aligned.
 * @param[out] col_s  FP32 scales [k, ceil(m/128)], MN-major (colwise), 16-byte aligned.
 * @param[in]  stream The stream to launch on.
 * @return As cake_swiglu_mxfp8_forward(). Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_swiglu_fp8_forward(cake_handle_t handle,
                                               const cake_swiglu_fp8_desc *desc, const void *in,
                                               void *row_q, void *row_s, void *col_q,
                                               void *col_s, cake_stream_t stream);

/**
 * Backward: [dgate | dup] as cake_swiglu_mxfp8_backward() (O = 2k), quantized to FP8 blockwise
 * 1x128 (the dgate and dup halves never share a block: k is a multiple of 128).
 * @param[in]  handle A live handle.
 * @param[in]  desc   Shape, orientation, scale rule, program.
 * @param[in]  in     BF16 [m, 2k], contiguous, 16-byte aligned.
 * @param[in]  grad   BF16 [m, k], contiguous, 16-byte aligned.
 * @param[out] row_q  E4M3 [m, 2k] (rowwise), 16-byte aligned.
 * @param[out] row_s  FP32 scales [m, 2k/128], MN-major (rowwise), 16-byte aligned.
 * @param[out] col_q  E4M3 [2k, m] (colwise), 16-byte aligned.
 * @param[out] col_s  FP32 scales [2k, ceil(m/128)], MN-major (colwise), 16-byte aligned.
 * @param[in]  stream The stream to launch on.
 * @return As cake_swiglu_fp8_forward().
 */
CAKE_API cake_status_t cake_swiglu_fp8_backward(cake_handle_t handle,
                                                const cake_swiglu_fp8_desc *desc, const void *in,
                                                const void *grad, void *row_q, void *row_s,
                                                void *col_q, void *col_s, cake_stream_t stream);

/**
 * Which program a SwiGLU + FP8 blockwise call would run, and why.
 * @param[in]  handle   A live handle.
 * @param[in]  desc     The call's descriptor.
 * @param[in]  backward 0 forward, 1 backward.
 * @param[out] info     Initialised with cake_program_info_init(); receives the choice.
 * @return As the call, without the pointer checks.
 */
CAKE_API cake_status_t cake_swiglu_fp8_query(cake_handle_t handle,
                                             const cake_swiglu_fp8_desc *desc, int backward,
                                             cake_program_info *info);

/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Grouped SwiGLU + quantization for MoE experts: the token rows of E experts in one launch,
 * in either block format. The rows of `in` [T, 2K] are grouped by expert; the experts' end rows
 * are in device memory and are never read on the host, so a CUDA graph captures a call once and
 * every replay uses the offsets then in memory. Each expert's rows get the bytes of the
 * ungrouped call of its family for those rows, in the layouts the grouped GEMMs that consume them
 * read: docs/spec/swiglu-grouped.md. Added in 0.4. */
/** @{ */

/** The most experts a grouped call takes. */
#define CAKE_SWIGLU_GROUPED_MAX_EXPERTS 1024

/** Bits of the word a grouped call writes to its `status` pointer: 0 when the offsets are valid.
 * Offsets that break a rule still give a defined result (docs/spec/swiglu-grouped.md). */
typedef enum cake_swiglu_grouped_status {
  CAKE_SWIGLU_GROUPED_OFFSETS_OK = 0,          /**< Nondecreasing, at least 0, at most T. */
  CAKE_SWIGLU_GROUPED_OFFSETS_DECREASING = 1,  /**< Some offsets[e] < offsets[e-1], or < 0. */
  CAKE_SWIGLU_GROUPED_OFFSETS_PAST_TOKENS = 2, /**< Some offsets[e] > T. */
} cake_swiglu_grouped_status_t;

/** Shape of a grouped SwiGLU + MXFP8 call. Initialise with cake_swiglu_mxfp8_grouped_desc_init(). */
typedef struct cake_swiglu_mxfp8_grouped_desc {
  size_t struct_size; /**< sizeof(cake_swiglu_mxfp8_grouped_desc). */
  /** T: rows of in (the token buffer's capacity; every expert's rows lie inside it),
   *  1 .. 2^31 - 2^18. */
  int64_t tokens;
  int64_t k;          /**< Output columns of the forward (in is [T, 2k]): a positive multiple of 32. */
  int32_t experts;    /**< E: 1 .. CAKE_SWIGLU_GROUPED_MAX_EXPERTS. */
  cake_mxfp8_orientation_t orientation; /**< Default CAKE_MXFP8_ROWWISE. */
  /** NULL: the router picks; else the name of a grouped program of the handle's table. */
  const char *program;
  cake_swiglu_variant_desc variant; /**< Default: the plain SwiGLU. Added in 0.4. */
} cake_swiglu_mxfp8_grouped_desc;

/** Shape of a grouped SwiGLU + FP8 blockwise call. Initialise with
 * cake_swiglu_fp8_grouped_desc_init(). */
typedef struct cake_swiglu_fp8_grouped_desc {
  size_t struct_size; /**< sizeof(cake_swiglu_fp8_grouped_desc). */
  int64_t tokens;     /**< T: rows of in, 1 .. 2^31 - 2^18 (as the MXFP8 descriptor's). */
  int64_t k;          /**< Output columns of the forward: a positive multiple of 128. */
  int32_t experts;    /**< E: 1 .. CAKE_SWIGLU_GROUPED_MAX_EXPERTS. */
  cake_mxfp8_orientation_t orientation; /**< Default CAKE_MXFP8_ROWWISE. */
  cake_fp8_scale_rule_t scale_rule;     /**< Default CAKE_FP8_SCALE_EXACT. */
  /** NULL: the router picks; else the name of a grouped program of the handle's table. */
  const char *program;
  cake_swiglu_variant_desc variant; /**< Default: the plain SwiGLU. Added in 0.4. */
} cake_swiglu_fp8_grouped_desc;

/** Sizes of the output buffers of a grouped form (both formats). Scales are sized for every split
 * of T rows into E experts: P padded scale rows, each expert's scales starting on a 128-row
 * boundary. */
typedef struct cake_swiglu_grouped_sizes {
  size_t struct_size;  /**< sizeof(cake_swiglu_grouped_sizes). */
  int64_t out_cols;    /**< O: k forward, 2k backward. */
  int64_t scale_rows;  /**< P = 128 * floor((T + 127 * min(E, T)) / 128). */
  size_t q_bytes;      /**< Each of row_q and col_q: T * O bytes. */
  size_t row_s_bytes;  /**< MXFP8: P * ceil(O / 128) * 4; FP8 blockwise: 4 * P * (O / 128). */
  size_t col_s_bytes;  /**< MXFP8: ceil(O / 128) * 128 * P / 32; FP8 blockwise: 4 * O * P / 128. */
} cake_swiglu_grouped_sizes;

/**
 * Set @p desc to defaults (rowwise, routed; tokens, k and experts 0).
 * @param[out] desc The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p desc is NULL.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_desc_init(cake_swiglu_mxfp8_grouped_desc *desc);

/**
 * Set @p desc to defaults (rowwise, exact scales, routed; tokens, k and experts 0).
 * @param[out] desc The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p desc is NULL.
 */
CAKE_API cake_status_t cake_swiglu_fp8_grouped_desc_init(cake_swiglu_fp8_grouped_desc *desc);

/**
 * Set @p sizes's struct_size and zero the rest.
 * @param[out] sizes The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p sizes is NULL.
 */
CAKE_API cake_status_t cake_swiglu_grouped_sizes_init(cake_swiglu_grouped_sizes *sizes);

/**
 * Output buffer sizes of a grouped SwiGLU + MXFP8 call (both orientations). Needs no handle.
 * @param[in]  desc      The shape (tokens, k, experts).
 * @param[in]  backward  0 for the forward (O = k), 1 for the backward (O = 2k).
 * @param[out] sizes     Initialised with cake_swiglu_grouped_sizes_init().
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_ARGUMENT (also when a size overflows 64
 *         bits), CAKE_STATUS_UNSUPPORTED_SHAPE.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_buffer_sizes(
    const cake_swiglu_mxfp8_grouped_desc *desc, int backward, cake_swiglu_grouped_sizes *sizes);

/**
 * Output buffer sizes of a grouped SwiGLU + FP8 blockwise call (both orientations). Needs no
 * handle.
 * @param[in]  desc      The shape (tokens, k, experts).
 * @param[in]  backward  0 for the forward (O = k), 1 for the backward (O = 2k).
 * @param[out] sizes     Initialised with cake_swiglu_grouped_sizes_init().
 * @return As cake_swiglu_mxfp8_grouped_buffer_sizes().
 */
CAKE_API cake_status_t cake_swiglu_fp8_grouped_buffer_sizes(
    const cake_swiglu_fp8_grouped_desc *desc, int backward, cake_swiglu_grouped_sizes *sizes);

/**
 * Grouped forward, MXFP8: for each expert e, its rows of Y = bf16(silu(g) * u) quantized as
 * cake_swiglu_mxfp8_forward() quantizes them (colwise blocks along the expert's own rows), in the
 * layouts of the Blackwell grouped MXFP8 GEMMs: row_q [T, k], row_s each expert's swizzled
 * 128x4 tiles from padded row p[e], col_q [k, T], col_s each expert's tiles contiguous.
 * @param[in]  handle  A live handle.
 * @param[in]  desc    tokens, k, experts, orientation, program.
 * @param[in]  in      BF16 [T, 2k], rows grouped by expert, contiguous, 16-byte aligned.
 * @param[in]  offsets Device int32 [E]: the end row of each expert (expert e holds rows
 *                     [offsets[e-1], offsets[e]), offsets[-1] = 0; PyTorch's `offs`), 4-byte
 *                     aligned. Read by the kernel only.
 * @param[out] row_q   E4M3 [T, k] (rowwise, else ignored), 16-byte aligned.
 * @param[out] row_s   E8M0 per-expert swizzled scales (rowwise), 16-byte aligned.
 * @param[out] col_q   E4M3 [k, T] (colwise), 16-byte aligned.
 * @param[out] col_s   E8M0 per-expert swizzled scales (colwise), 16-byte aligned.
 * @param[out] status  NULL, or a device int32 that receives the offsets' check
 *                     (cake_swiglu_grouped_status_t bits; 0 when valid), 4-byte aligned.
 * @param[in]  stream  The stream to launch on.
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_HANDLE, CAKE_STATUS_INVALID_ARGUMENT,
 *         CAKE_STATUS_UNSUPPORTED_SHAPE, CAKE_STATUS_MISALIGNED, CAKE_STATUS_PROGRAM_NOT_FOUND,
 *         CAKE_STATUS_CUDA_ERROR. Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_forward(
    cake_handle_t handle, const cake_swiglu_mxfp8_grouped_desc *desc, const void *in,
    const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s, int32_t *status,
    cake_stream_t stream);

/**
 * Grouped backward, MXFP8: each expert's rows of [dgate | dup] (as cake_swiglu_mxfp8_backward(),
 * O = 2k) in the layouts of cake_swiglu_mxfp8_grouped_forward().
 * @param[in]  handle  A live handle.
 * @param[in]  desc    tokens, k, experts, orientation, program.
 * @param[in]  in      BF16 [T, 2k], 16-byte aligned.
 * @param[in]  grad    BF16 [T, k], 16-byte aligned.
 * @param[in]  offsets Device int32 [E] end rows, 4-byte aligned.
 * @param[out] row_q   E4M3 [T, 2k] (rowwise), 16-byte aligned.
 * @param[out] row_s   E8M0 per-expert swizzled scales (rowwise), 16-byte aligned.
 * @param[out] col_q   E4M3 [2k, T] (colwise), 16-byte aligned.
 * @param[out] col_s   E8M0 per-expert swizzled scales (colwise), 16-byte aligned.
 * @param[out] status  NULL, or a device int32 for the offsets' check, 4-byte aligned.
 * @param[in]  stream  The stream to launch on.
 * @return As cake_swiglu_mxfp8_grouped_forward().
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_backward(
    cake_handle_t handle, const cake_swiglu_mxfp8_grouped_desc *desc, const void *in,
    const void *grad, const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s,
    int32_t *status, cake_stream_t stream);

/**
 * Which program a grouped SwiGLU + MXFP8 call would run, and why.
 * @param[in]  handle   A live handle.
 * @param[in]  desc     The call's descriptor.
 * @param[in]  backward 0 forward, 1 backward.
 * @param[out] info     Initialised with cake_program_info_init(); receives the choice (grid: the
 *                      CTAs of the launch, sized from T, E and k).
 * @return As the call, without the pointer checks.
 */
CAKE_API cake_status_t cake_swiglu_mxfp8_grouped_query(cake_handle_t handle,
                                                       const cake_swiglu_mxfp8_grouped_desc *desc,
                                                       int backward, cake_program_info *info);

/**
 * Grouped forward, FP8 blockwise 1x128: each expert's rows of Y quantized as
 * cake_swiglu_fp8_forward() quantizes them, every expert's slices exactly the ungrouped call's
 * for its rows (for a per-expert F.scaled_mm loop): row_q [T, k]; row_s expert e's [n_e, k/128]
 * MN-major from element p[e] * k/128; col_q expert e's [k, n_e] from byte offsets[e-1] * k;
 * col_s expert e's [k, ceil(n_e/128)] MN-major from element p[e] / 128 * k.
 * @param[in]  handle  A live handle.
 * @param[in]  desc    tokens, k, experts, orientation, scale rule, program.
 * @param[in]  in      BF16 [T, 2k], rows grouped by expert, 16-byte aligned.
 * @param[in]  offsets Device int32 [E] end rows, 4-byte aligned.
 * @param[out] row_q   E4M3 [T, k] (rowwise), 16-byte aligned.
 * @param[out] row_s   FP32 per-expert scales (rowwise), 16-byte aligned.
 * @param[out] col_q   E4M3 per-expert [k, n_e] (colwise), 16-byte aligned.
 * @param[out] col_s   FP32 per-expert scales (colwise), 16-byte aligned.
 * @param[out] status  NULL, or a device int32 for the offsets' check, 4-byte aligned.
 * @param[in]  stream  The stream to launch on.
 * @return As cake_swiglu_mxfp8_grouped_forward().
 */
CAKE_API cake_status_t cake_swiglu_fp8_grouped_forward(
    cake_handle_t handle, const cake_swiglu_fp8_grouped_desc *desc, const void *in,
    const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s, int32_t *status,
    cake_stream_t stream);

/**
 * Grouped backward, FP8 blockwise 1x128: each expert's rows of [dgate | dup] (O = 2k) in the
 * layouts of cake_swiglu_fp8_grouped_forward().
 * @param[in]  handle  A live handle.
 * @param[in]  desc    tokens, k, experts, orientation, scale rule, program.
 * @param[in]  in      BF16 [T, 2k], 16-byte aligned.
 * @param[in]  grad    BF16 [T, k], 16-byte aligned.
 * @param[in]  offsets Device int32 [E] end rows, 4-byte aligned.
 * @param[out] row_q   E4M3 [T, 2k] (rowwise), 16-byte aligned.
 * @param[out] row_s   FP32 per-expert scales (rowwise), 16-byte aligned.
 * @param[out] col_q   E4M3 per-expert [2k, n_e] (colwise), 16-byte aligned.
 * @param[out] col_s   FP32 per-expert scales (colwise), 16-byte aligned.
 * @param[out] status  NULL, or a device int32 for the offsets' check, 4-byte aligned.
 * @param[in]  stream  The stream to launch on.
 * @return As cake_swiglu_mxfp8_grouped_forward().
 */
CAKE_API cake_status_t cake_swiglu_fp8_grouped_backward(
    cake_handle_t handle, const cake_swiglu_fp8_grouped_desc *desc, const void *in,
    const void *grad, const int32_t *offsets, void *row_q, void *row_s, void *col_q, void *col_s,
    int32_t *status, cake_stream_t stream);

/**
 * Which program a grouped SwiGLU + FP8 blockwise call would run, and why.
 * @param[in]  handle   A live handle.
 * @param[in]  desc     The call's descriptor.
 * @param[in]  backward 0 forward, 1 backward.
 * @param[out] info     Initialised with cake_program_info_init(); receives the choice.
 * @return As the call, without the pointer checks.
 */
CAKE_API cake_status_t cake_swiglu_fp8_grouped_query(cake_handle_t handle,
                                                     const cake_swiglu_fp8_grouped_desc *desc,
                                                     int backward, cake_program_info *info);

/** @} */

/* ---------------------------------------------------------------------------------------- */
/** @name Normgate with quantized y: the forward's y written as FP8 for the GEMM that reads it.
 * One pass writes E4M3 data and its scales (and, optionally, the BF16 y); the bytes are those of
 * the plain forward's BF16 y quantized by the format's block rule: docs/spec/normgate.md,
 * "Quantized y". The backward is cake_normgate_backward(). Added in 0.4. */
/** @{ */

/** The quantized form of y. */
typedef enum cake_normgate_quant_format {
  /** E4M3 + one FP32 scale per 128 consecutive columns, scales MN-major
   * (docs/spec/fp8-blockwise.md): F.scaled_mm's BlockWise1x128, DeepGEMM. d a multiple of 128. */
  CAKE_NORMGATE_QUANT_FP8_BLOCKWISE = 1,
  /** E4M3 + one E8M0 scale per 32 columns, swizzled 128x4 (docs/spec/swiglu-mxfp8.md):
   * Blackwell's MXFP8 GEMMs. d a multiple of 32. */
  CAKE_NORMGATE_QUANT_MXFP8 = 2,
} cake_normgate_quant_format_t;

/** The quantized output of a normgate forward. Initialise with cake_normgate_quant_desc_init(). */
typedef struct cake_normgate_quant_desc {
  size_t struct_size;                  /**< sizeof(cake_normgate_quant_desc). */
  cake_normgate_quant_format_t format; /**< Default CAKE_NORMGATE_QUANT_FP8_BLOCKWISE. */
  /** FP8 blockwise: CAKE_FP8_SCALE_EXACT (default) or CAKE_FP8_SCALE_POW2. Not read for MXFP8
   *  (its E8M0 scale has one rule). */
  cake_fp8_scale_rule_t scale_rule;
  /** Normgate rows a row of the quantized matrix holds (0, the default, means 1): the quantized
   *  matrix is [rows / heads, heads * d], normgate row t * heads + h being its row t, columns
   *  [h * d, (h + 1) * d). For [T, H, d] heads whose next GEMM reads [T, H * d] (o_proj): H. */
  int64_t heads;
} cake_normgate_quant_desc;

/** Sizes of the quantized outputs of one call. */
typedef struct cake_normgate_quant_sizes {
  size_t struct_size; /**< sizeof(cake_normgate_quant_sizes). */
  int64_t q_rows;     /**< T = rows / heads: rows of the quantized matrix. */
  int64_t q_cols;     /**< heads * d: its columns (the next GEMM's K). */
  size_t q_bytes;     /**< E4M3 data, [T, heads * d] row-major: rows * d bytes. */
  size_t s_bytes;     /**< Scales: FP8 blockwise 4 * T * (heads * d / 128); MXFP8 the swizzled
                           [T, heads * d / 32] matrix padded to 128 x 4 tiles. */
  int64_t s_cols;     /**< Scale columns: heads * d / 128 (FP8 blockwise) or / 32 (MXFP8). */
  int64_t s_stride;   /**< FP8 blockwise: elements between scale columns (T, MN-major: scale
                           (t, j) at j * T + t). MXFP8: 0 (swizzled). */
} cake_normgate_quant_sizes;

/**
 * Set @p quant to defaults (FP8 blockwise, exact scales, one head).
 * @param[out] quant The descriptor to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p quant is NULL.
 */
CAKE_API cake_status_t cake_normgate_quant_desc_init(cake_normgate_quant_desc *quant);

/**
 * Set @p sizes's struct_size and zero the rest.
 * @param[out] sizes The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p sizes is NULL.
 */
CAKE_API cake_status_t cake_normgate_quant_sizes_init(cake_normgate_quant_sizes *sizes);

/**
 * Buffer sizes of cake_normgate_forward_quantized() for @p desc (rows, d) and @p quant. Needs no
 * handle and no device; applies every rule of the call on rows, d and @p quant.
 * @param[in]  desc   The forward's descriptor.
 * @param[in]  quant  The quantized output.
 * @param[out] sizes  Initialised with cake_normgate_quant_sizes_init().
 * @return CAKE_STATUS_SUCCESS, CAKE_STATUS_INVALID_ARGUMENT, CAKE_STATUS_UNSUPPORTED_SHAPE.
 */
CAKE_API cake_status_t cake_normgate_quant_buffer_sizes(const cake_normgate_desc *desc,
                                                        const cake_normgate_quant_desc *quant,
                                                        cake_normgate_quant_sizes *sizes);

/**
 * Forward with quantized y: the y of cake_normgate_forward() (the default form: SiLU gate after
 * a whole-row norm, BF16 x, z, w), rounded to BF16, then quantized by @p quant's format, in one
 * pass. The BF16 y is written too when @p y is not NULL.
 * @param[in]  handle  A live handle.
 * @param[in]  desc    As for cake_normgate_forward() (the default form only).
 * @param[in]  quant   Format, scale rule, heads.
 * @param[in]  x       BF16 [rows, x_stride], 16-byte aligned.
 * @param[in]  z       BF16 [rows, z_stride], 16-byte aligned.
 * @param[in]  w       BF16 [d], 16-byte aligned.
 * @param[out] y       NULL (not written), or BF16 [rows, y_stride], 16-byte aligned.
 * @param[out] rstd    NULL, or FP32 [rows].
 * @param[out] q       E4M3 [rows, d] packed (= [rows / heads, heads * d]), 16-byte aligned.
 * @param[out] q_scale The scales (cake_normgate_quant_buffer_sizes()), 16-byte aligned.
 * @param[in]  stream  The stream to launch on.
 * @return As cake_normgate_forward(). Nothing is launched or written on error.
 */
CAKE_API cake_status_t cake_normgate_forward_quantized(
    cake_handle_t handle, const cake_normgate_desc *desc, const cake_normgate_quant_desc *quant,
    const void *x, const void *z, const void *w, void *y, float *rstd, void *q, void *q_scale,
    cake_stream_t stream);

/**
 * Which program cake_normgate_forward_quantized() would run, and why.
 * @param[in]  handle A live handle.
 * @param[in]  desc   As for the call.
 * @param[in]  quant  As for the call.
 * @param[out] info   Initialised with cake_program_info_init(); receives the choice.
 * @return As the call, without the pointer checks.
 */
CAKE_API cake_status_t cake_normgate_forward_quantized_query(cake_handle_t handle,
                                                             const cake_normgate_desc *desc,
                                                             const cake_normgate_quant_desc *quant,
                                                             cake_program_info *info);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CAKE_H_ */

/* ==== The experimental section: tuning introspection, declared only with CAKE_EXPERIMENTAL_API
 * defined; not covered by the stable section's rules (see the top of this file). ============ */
#if defined(CAKE_EXPERIMENTAL_API) && !defined(CAKE_H_EXPERIMENTAL_)
#define CAKE_H_EXPERIMENTAL_

#ifdef __cplusplus
extern "C" {
#endif

/** @name Program tables (experimental): what the library ships, for cake-info and cake-bench. */
/** @{ */

/** One program of a table. Initialise with cake_table_program_init(). */
typedef struct cake_table_program {
  size_t struct_size;      /**< sizeof(cake_table_program). */
  char name[64];           /**< Program name, e.g. "sm90.ng_fwd_d128_short". */
  char kernel[80];         /**< Kernel symbol in the table's image. */
  cake_family_t family;    /**< Its family. */
  cake_op_t op;            /**< Its operation. */
  int32_t threads;         /**< CTA size. */
  int32_t min_ctas_per_sm; /**< CTAs per SM its register budget is fitted to. */
  int32_t knobs[8];        /**< Family knobs in manifest order (see kernels/common/program_desc.h). */
  int32_t knobs_ext[8];    /**< Knobs 8..15 in manifest order, 0 past a family's last knob
                                (swiglu_mxfp8: col_lanes, slot_cols, row_from_tile, variant,
                                col_runs). Added in 0.2. */
} cake_table_program;

/** One route of a table. Initialise with cake_table_route_init(). */
typedef struct cake_table_route {
  size_t struct_size;   /**< sizeof(cake_table_route). */
  cake_family_t family; /**< Family it routes. */
  cake_op_t op;         /**< Operation it routes. */
  int32_t d;            /**< normgate width it serves (0: any); 0 for swiglu_mxfp8. */
  int64_t metric_lo;    /**< Inclusive lower bound of the size metric (normgate: rows per SM;
                             swiglu_mxfp8: M*K). */
  int64_t metric_hi;    /**< Exclusive upper bound, -1 for open. */
  char program[64];     /**< The program it picks. */
  /** Wave route (normgate, added in 0.2): 0 for a plain route; else the route also needs the
      call's rows, cut into units of this many rows, to make W = units / SMs waves with
      waves_lo <= floor(100 W) < waves_hi and frac_lo <= floor(100 W) mod 100 <= frac_hi, and
      it is taken before the plain routes of its op and width. A library older than the field
      leaves a struct of the older size unfilled past program. */
  int32_t wave_rows;
  int32_t waves_lo;     /**< Wave band, hundredths of a wave, inclusive. */
  int32_t waves_hi;     /**< Wave band, hundredths of a wave, exclusive. */
  int32_t frac_lo;      /**< Fill of the last wave, hundredths, inclusive. */
  int32_t frac_hi;      /**< Fill of the last wave, hundredths, inclusive. */
} cake_table_route;

/**
 * Set @p program's struct_size and zero the rest.
 * @param[out] program The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p program is NULL.
 */
CAKE_API cake_status_t cake_table_program_init(cake_table_program *program);

/**
 * Set @p route's struct_size and zero the rest.
 * @param[out] route The struct to initialise.
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT if @p route is NULL.
 */
CAKE_API cake_status_t cake_table_route_init(cake_table_route *route);

/**
 * Sizes of an architecture's table. Needs no device.
 * @param[in]  table    CAKE_ARCH_SM90, _SM100, _SM103 or _SM107.
 * @param[out] programs Receives the number of programs (may be NULL).
 * @param[out] routes   Receives the number of routes (may be NULL).
 * @return CAKE_STATUS_SUCCESS, or CAKE_STATUS_INVALID_ARGUMENT for an unknown table.
 */
CAKE_API cake_status_t cake_table_counts(cake_arch_t table, int32_t *programs, int32_t *routes);

/**
 * Program @p index of a table. Needs no device.
 * @param[in]  table   An architecture table.
 * @param[in]  index   0 .. programs - 1.
 * @param[out] program Initialised with cake_table_program_init().
 * @return CAKE_STATUS_SUCCESS or CAKE_STATUS_INVALID_ARGUMENT.
 */
CAKE_API cake_status_t cake_table_program_get(cake_arch_t table, int32_t index,
                                              cake_table_program *program);

/**
 * Route @p index of a table, in the order the router tries them. Needs no device.
 * @param[in]  table An architecture table.
 * @param[in]  index 0 .. routes - 1.
 * @param[out] route Initialised with cake_table_route_init().
 * @return CAKE_STATUS_SUCCESS or CAKE_STATUS_INVALID_ARGUMENT.
 */
CAKE_API cake_status_t cake_table_route_get(cake_arch_t table, int32_t index,
                                            cake_table_route *route);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CAKE_EXPERIMENTAL_API && !CAKE_H_EXPERIMENTAL_ */
