//! Safe Rust interface to `libcake.so`: fused training kernels for large models.
//!
//! * [`Handle`]: one device (RAII: `cake_destroy` on drop), `Send + Sync` as the C ABI allows.
//! * Every call returns [`Result`]; an [`Error`] carries the [`Status`] and the library's
//!   message (`cake_last_error_message()`), read on the failing thread right after the call.
//! * C enums are newtypes ([`Status`], [`Arch`], [`DType`], ...): an unknown value from a newer
//!   library is representable, never undefined behaviour.
//! * No panics: the crate calls no `unwrap` on anything the library returns, and nothing here is
//!   called back from C, so no unwinding can cross the ABI.
//!
//! Launching calls take raw device pointers and a stream and are `unsafe`: Cake cannot check
//! that the pointers are device memory of the right size and live until the kernel has run.
//!
//! A function that the linked `libcake.so` does not export (a library older than the header)
//! returns an error with status [`Status::NOT_IN_LIBRARY`] instead of failing to link.
use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;

pub use cake_sys as sys;

/// A CUDA stream (`CUstream` / `cudaStream_t`); null is the legacy default stream.
pub type Stream = sys::cake_stream_t;

macro_rules! newtype_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $konst:ident = $val:expr,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $name(pub u32);
        impl $name {
            $($(#[$vm])* pub const $konst: $name = $name($val as u32);)*
            /// The constant's name, or None for a value this crate does not know.
            pub fn name(self) -> Option<&'static str> {
                match self { $(Self::$konst => Some(stringify!($konst)),)* _ => None }
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => write!(f, concat!(stringify!($name), "::{}"), n),
                    None => write!(f, concat!(stringify!($name), "({})"), self.0),
                }
            }
        }
    };
}

newtype_enum!(
    /// `cake_status_t`.
    Status {
        SUCCESS = sys::CAKE_STATUS_SUCCESS,
        INVALID_ARGUMENT = sys::CAKE_STATUS_INVALID_ARGUMENT,
        ARCH_UNSUPPORTED = sys::CAKE_STATUS_ARCH_UNSUPPORTED,
        DRIVER_UNAVAILABLE = sys::CAKE_STATUS_DRIVER_UNAVAILABLE,
        CUDA_ERROR = sys::CAKE_STATUS_CUDA_ERROR,
        INSUFFICIENT_WORKSPACE = sys::CAKE_STATUS_INSUFFICIENT_WORKSPACE,
        UNSUPPORTED_SHAPE = sys::CAKE_STATUS_UNSUPPORTED_SHAPE,
        MISALIGNED = sys::CAKE_STATUS_MISALIGNED,
        INVALID_HANDLE = sys::CAKE_STATUS_INVALID_HANDLE,
        PROGRAM_NOT_FOUND = sys::CAKE_STATUS_PROGRAM_NOT_FOUND,
        INTERNAL_ERROR = sys::CAKE_STATUS_INTERNAL_ERROR,
        NO_DEVICE = sys::CAKE_STATUS_NO_DEVICE,
        /// Not a library status: the linked libcake.so does not export the function.
        NOT_IN_LIBRARY = 0x1_0000,
    }
);

newtype_enum!(
    /// `cake_arch_t`: an architecture table.
    Arch {
        NONE = sys::CAKE_ARCH_NONE,
        SM90 = sys::CAKE_ARCH_SM90,
        SM100 = sys::CAKE_ARCH_SM100,
        SM103 = sys::CAKE_ARCH_SM103,
        SM107 = sys::CAKE_ARCH_SM107,
    }
);

newtype_enum!(
    /// `cake_family_t`: a kernel family.
    Family {
        NORMGATE = sys::CAKE_FAMILY_NORMGATE,
        SWIGLU_MXFP8 = sys::CAKE_FAMILY_SWIGLU_MXFP8,
        SWIGLU_FP8 = sys::CAKE_FAMILY_SWIGLU_FP8,
    }
);

/// `cake_op_t`: an operation within a family (numbers are reused across families).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(transparent)]
pub struct Op(pub u32);

impl Op {
    pub const NORMGATE_FORWARD: Op = Op(sys::CAKE_OP_NORMGATE_FORWARD);
    pub const NORMGATE_BACKWARD_DET: Op = Op(sys::CAKE_OP_NORMGATE_BACKWARD_DET);
    pub const NORMGATE_BACKWARD_NONDET: Op = Op(sys::CAKE_OP_NORMGATE_BACKWARD_NONDET);
    pub const SWIGLU_FORWARD_ROWWISE: Op = Op(sys::CAKE_OP_SWIGLU_FORWARD_ROWWISE);
    pub const SWIGLU_FORWARD_COLWISE: Op = Op(sys::CAKE_OP_SWIGLU_FORWARD_COLWISE);
    pub const SWIGLU_FORWARD_BOTH: Op = Op(sys::CAKE_OP_SWIGLU_FORWARD_BOTH);
    pub const SWIGLU_BACKWARD_ROWWISE: Op = Op(sys::CAKE_OP_SWIGLU_BACKWARD_ROWWISE);
    pub const SWIGLU_BACKWARD_COLWISE: Op = Op(sys::CAKE_OP_SWIGLU_BACKWARD_COLWISE);
    pub const SWIGLU_BACKWARD_BOTH: Op = Op(sys::CAKE_OP_SWIGLU_BACKWARD_BOTH);
}

newtype_enum!(
    /// `cake_dtype_t`.
    DType {
        BF16 = sys::CAKE_DTYPE_BF16,
        F32 = sys::CAKE_DTYPE_F32,
        F16 = sys::CAKE_DTYPE_F16,
    }
);

newtype_enum!(
    /// `cake_normgate_gate_t`: the gate function a(z) of a norm-gate call.
    NormgateGate {
        /// a(z) = z * sigmoid(z) (the default).
        SILU = sys::CAKE_NORMGATE_GATE_SILU,
        /// a(z) = sigmoid(z).
        SIGMOID = sys::CAKE_NORMGATE_GATE_SIGMOID,
        /// No gate: y = rmsnorm_G(x) * w; z and dz are not used.
        NONE = sys::CAKE_NORMGATE_GATE_NONE,
    }
);

newtype_enum!(
    /// `cake_normgate_placement_t`: where the gate applies relative to the normalisation.
    NormgatePlacement {
        /// y = rmsnorm_G(x) * w * a(z) (the default).
        GATE_AFTER_NORM = sys::CAKE_NORMGATE_GATE_AFTER_NORM,
        /// y = rmsnorm_G(x * a(z)) * w.
        GATE_BEFORE_NORM = sys::CAKE_NORMGATE_GATE_BEFORE_NORM,
    }
);

newtype_enum!(
    /// `cake_normgate_package_t`: how dw is reduced.
    NormgatePackage {
        DETERMINISTIC = sys::CAKE_NORMGATE_DETERMINISTIC,
        NONDETERMINISTIC = sys::CAKE_NORMGATE_NONDETERMINISTIC,
    }
);

newtype_enum!(
    /// `cake_normgate_flags_t` bits (combine with `|`).
    NormgateFlags {
        NONE = 0,
        DW_ACCUMULATE = sys::CAKE_NORMGATE_DW_ACCUMULATE,
        DW_SKIP = sys::CAKE_NORMGATE_DW_SKIP,
    }
);

impl std::ops::BitOr for NormgateFlags {
    type Output = NormgateFlags;
    fn bitor(self, rhs: NormgateFlags) -> NormgateFlags {
        NormgateFlags(self.0 | rhs.0)
    }
}

newtype_enum!(
    /// `cake_mxfp8_orientation_t`.
    Orientation {
        ROWWISE = sys::CAKE_MXFP8_ROWWISE,
        COLWISE = sys::CAKE_MXFP8_COLWISE,
        BOTH = sys::CAKE_MXFP8_BOTH,
    }
);

newtype_enum!(
    /// `cake_fp8_scale_rule_t`: how an FP8 blockwise block's FP32 scale follows from its amax.
    Fp8ScaleRule {
        /// s = amax / 448 (the default).
        EXACT = sys::CAKE_FP8_SCALE_EXACT,
        /// s = 2^ceil(log2(amax / 448)), UE8M0-compatible.
        POW2 = sys::CAKE_FP8_SCALE_POW2,
    }
);

newtype_enum!(
    /// `cake_normgate_quant_format_t`: the quantized form of a norm-gate forward's y.
    NormgateQuantFormat {
        /// E4M3 + one FP32 scale per 128 columns, scales MN-major (F.scaled_mm's BlockWise1x128,
        /// DeepGEMM); d a multiple of 128 (the default).
        FP8_BLOCKWISE = sys::CAKE_NORMGATE_QUANT_FP8_BLOCKWISE,
        /// E4M3 + one E8M0 scale per 32 columns, swizzled 128x4; d a multiple of 32.
        MXFP8 = sys::CAKE_NORMGATE_QUANT_MXFP8,
    }
);

/// A failed call: its status, the library's message and the C function.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
    function: &'static str,
}

impl Error {
    /// The error of a failing status, with this thread's cake_last_error_message().
    fn last(function: &'static str, status: Status) -> Error {
        let message = cstr(unsafe { sys::cake_last_error_message() });
        Error {
            status,
            message,
            function,
        }
    }
    fn binding(function: &'static str, status: Status, message: String) -> Error {
        Error {
            status,
            message,
            function,
        }
    }
    #[allow(dead_code)] // used only while the linked library lacks a function
    fn not_in_library(function: &'static str) -> Error {
        Error::binding(
            function,
            Status::NOT_IN_LIBRARY,
            format!("the linked libcake.so does not export {function} (rebuild Cake)"),
        )
    }
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The C function that failed, e.g. "cake_create".
    pub fn function(&self) -> &'static str {
        self.function
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}: {}",
            self.function,
            status_string(self.status),
            self.message
        )
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn chars(a: &[c_char]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn check(function: &'static str, status: sys::cake_status_t) -> Result<()> {
    if status == sys::CAKE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::last(function, Status(status)))
    }
}

/// Calls a function that the linked library may lack (see build.rs): the body when it exports
/// `$name`, else an Err(NOT_IN_LIBRARY).
macro_rules! optional {
    ($cfg:ident, $name:expr, $body:block) => {{
        #[cfg($cfg)]
        {
            $body
        }
        #[cfg(not($cfg))]
        {
            Err(Error::not_in_library($name))
        }
    }};
}

/// The run-time library's version (major, minor, patch).
pub fn version() -> (u32, u32, u32) {
    let v = unsafe { sys::cake_version() }.max(0) as u32;
    (v / 10000, v / 100 % 100, v % 100)
}

/// The library's name of a status ("CAKE_STATUS_..."); for NOT_IN_LIBRARY, this crate's.
pub fn status_string(status: Status) -> String {
    if status == Status::NOT_IN_LIBRARY {
        return "CAKE_STATUS_NOT_IN_LIBRARY (binding)".into();
    }
    cstr(unsafe { sys::cake_status_string(status.0) })
}

/// Whether the linked libcake.so exports C function @p name (known when this crate was built).
pub fn library_has(name: &str) -> bool {
    include!(concat!(env!("OUT_DIR"), "/exported.rs")).contains(&name)
}

/// Options of [`Handle::with_options`].
#[derive(Clone, Copy, Debug, Default)]
pub struct HandleOptions {
    /// Route with this table instead of the device's (Arch::NONE: the device's).
    pub table: Option<Arch>,
    /// Route as if the device had this many SMs (0: the real count).
    pub sm_count: i32,
}

/// What a handle serves (`cake_device_info`).
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    pub device_ordinal: i32,
    pub cc: (i32, i32),
    pub sm_count: i32,
    pub routing_sm_count: i32,
    pub table: Arch,
    pub jit: bool,
    pub cross_check: bool,
    pub program_count: i32,
    pub image: String,
    pub device_name: String,
}

/// Which program a call runs, and why (`cake_program_info`).
#[derive(Clone, Debug)]
pub struct ProgramInfo {
    pub name: String,
    pub kernel: String,
    pub forced: bool,
    pub threads: i32,
    pub ctas_per_sm: i32,
    pub grid: i64,
    pub metric: i64,
    pub metric_lo: i64,
    pub metric_hi: i64,
}

impl ProgramInfo {
    fn from_raw(s: &sys::cake_program_info) -> ProgramInfo {
        ProgramInfo {
            name: chars(&s.name),
            kernel: chars(&s.kernel),
            forced: s.forced != 0,
            threads: s.threads,
            ctas_per_sm: s.ctas_per_sm,
            grid: s.grid,
            metric: s.metric,
            metric_lo: s.metric_lo,
            metric_hi: s.metric_hi,
        }
    }
}

fn program_info_init() -> sys::cake_program_info {
    let mut s: sys::cake_program_info = unsafe { std::mem::zeroed() };
    unsafe { sys::cake_program_info_init(&mut s) };
    s
}

fn program_cstring(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| {
        Error::binding(
            "cake",
            Status::INVALID_ARGUMENT,
            format!("program {name:?}: contains a NUL byte"),
        )
    })
}

/// A norm-gate call's shape and options (`cake_normgate_desc`), built from the defaults of
/// `cake_normgate_desc_init` (eps 1e-6, packed rows, deterministic, BF16 dw, routed; SiLU gate
/// after the norm over the whole row, BF16 x, z and w).
///
/// The variant fields (gate, placement, group size, x/z/w dtypes: Cake 0.3) are ignored by an
/// older libcake.so, whose init sets a smaller struct_size: [`NormgateDesc::check_fields`]
/// (called by every [`Handle`] normgate method) refuses a non-default value then.
#[derive(Clone)]
pub struct NormgateDesc {
    raw: sys::cake_normgate_desc,
    program: Option<CString>, // owns the string raw.program points to
}

impl NormgateDesc {
    /// Rows (tokens x heads) of width d.
    pub fn new(rows: i64, d: i32) -> NormgateDesc {
        let mut raw: sys::cake_normgate_desc = unsafe { std::mem::zeroed() };
        unsafe { sys::cake_normgate_desc_init(&mut raw) };
        raw.rows = rows;
        raw.d = d;
        NormgateDesc { raw, program: None }
    }
    pub fn eps(mut self, eps: f32) -> Self {
        self.raw.eps = eps;
        self
    }
    /// Row strides in elements (0: packed): x, z, y (forward), dy, dx, dz (backward).
    pub fn strides(mut self, x: i64, z: i64, y: i64, dy: i64, dx: i64, dz: i64) -> Self {
        let r = &mut self.raw;
        (
            r.x_stride,
            r.z_stride,
            r.y_stride,
            r.dy_stride,
            r.dx_stride,
            r.dz_stride,
        ) = (x, z, y, dy, dx, dz);
        self
    }
    pub fn package(mut self, package: NormgatePackage) -> Self {
        self.raw.package = package.0;
        self
    }
    pub fn dw_dtype(mut self, dtype: DType) -> Self {
        self.raw.dw_dtype = dtype.0;
        self
    }
    pub fn flags(mut self, flags: NormgateFlags) -> Self {
        self.raw.flags = flags.0;
        self
    }
    /// The gate function a(z) (NormgateGate::NONE: no gate, z and dz unused).
    pub fn gate(mut self, gate: NormgateGate) -> Self {
        self.raw.gate = gate.0;
        self
    }
    pub fn placement(mut self, placement: NormgatePlacement) -> Self {
        self.raw.placement = placement.0;
        self
    }
    /// true: y = rmsnorm_G(x * a(z)) * w; false (default): y = rmsnorm_G(x) * w * a(z).
    pub fn gate_before_norm(self, before: bool) -> Self {
        self.placement(if before {
            NormgatePlacement::GATE_BEFORE_NORM
        } else {
            NormgatePlacement::GATE_AFTER_NORM
        })
    }
    /// Columns per mean-square group: 0 or d for the whole row, else a multiple of 8 dividing d.
    pub fn group_size(mut self, group_size: i32) -> Self {
        self.raw.group_size = group_size;
        self
    }
    /// x and y (forward), dy and dx (backward).
    pub fn x_dtype(mut self, dtype: DType) -> Self {
        self.raw.x_dtype = dtype.0;
        self
    }
    /// z and dz.
    pub fn z_dtype(mut self, dtype: DType) -> Self {
        self.raw.z_dtype = dtype.0;
        self
    }
    /// w.
    pub fn w_dtype(mut self, dtype: DType) -> Self {
        self.raw.w_dtype = dtype.0;
        self
    }
    pub fn gate_fn(&self) -> NormgateGate {
        NormgateGate(self.raw.gate)
    }
    pub fn placement_of(&self) -> NormgatePlacement {
        NormgatePlacement(self.raw.placement)
    }
    /// Ok when the linked library reads every field set away from its default: a library
    /// older than a field (its init sets a smaller struct_size) would ignore it, so a
    /// non-default value gives Err(NOT_IN_LIBRARY) naming the field.
    pub fn check_fields(&self) -> Result<()> {
        let r = &self.raw;
        let known = r.struct_size;
        let base = std::mem::offset_of!(sys::cake_normgate_desc, gate);
        let fields: [(&str, usize, bool); 6] = [
            ("gate", base, r.gate != sys::CAKE_NORMGATE_GATE_SILU),
            (
                "placement",
                std::mem::offset_of!(sys::cake_normgate_desc, placement),
                r.placement != sys::CAKE_NORMGATE_GATE_AFTER_NORM,
            ),
            (
                "group_size",
                std::mem::offset_of!(sys::cake_normgate_desc, group_size),
                r.group_size != 0,
            ),
            (
                "x_dtype",
                std::mem::offset_of!(sys::cake_normgate_desc, x_dtype),
                r.x_dtype != sys::CAKE_DTYPE_BF16,
            ),
            (
                "z_dtype",
                std::mem::offset_of!(sys::cake_normgate_desc, z_dtype),
                r.z_dtype != sys::CAKE_DTYPE_BF16,
            ),
            (
                "w_dtype",
                std::mem::offset_of!(sys::cake_normgate_desc, w_dtype),
                r.w_dtype != sys::CAKE_DTYPE_BF16,
            ),
        ];
        for (name, offset, set) in fields {
            if set && known < offset + 4 {
                return Err(Error::binding(
                    "cake_normgate_desc_init",
                    Status::NOT_IN_LIBRARY,
                    format!(
                        "the linked libcake.so predates cake_normgate_desc.{name} (its struct \
                         is {known} bytes) and would ignore it; link a newer libcake"
                    ),
                ));
            }
        }
        Ok(())
    }
    /// Force a program of the handle's table by name.
    pub fn program(mut self, name: &str) -> Result<Self> {
        let c = program_cstring(name)?;
        self.raw.program = c.as_ptr();
        self.program = Some(c);
        Ok(self)
    }
    pub fn rows(&self) -> i64 {
        self.raw.rows
    }
    pub fn d(&self) -> i32 {
        self.raw.d
    }
    pub fn as_raw(&self) -> &sys::cake_normgate_desc {
        &self.raw
    }
    /// A descriptor from a raw `cake_normgate_desc` (e.g. one filled by C code), taken as it
    /// is, struct_size included.
    ///
    /// # Safety
    /// `raw.program` must be null or point to a NUL-terminated string that outlives the
    /// returned descriptor and its clones.
    pub unsafe fn from_raw(raw: sys::cake_normgate_desc) -> NormgateDesc {
        NormgateDesc { raw, program: None }
    }
}

/// The plain SwiGLU's `cake_swiglu_variant_desc`: what every SwiGLU descriptor's `*_init` sets
/// (the clamped activation's defaults are gpt-oss's alpha and limit).
pub(crate) fn plain_variant() -> sys::cake_swiglu_variant_desc {
    sys::cake_swiglu_variant_desc {
        activation: sys::CAKE_SWIGLU_ACT_SILU,
        alpha: 1.702,
        limit: 7.0,
        weighted: 0,
        p: std::ptr::null(),
        dp: std::ptr::null_mut(),
    }
}

/// The SwiGLU variant of a call (`cake_swiglu_variant_desc`, docs/spec/swiglu-mxfp8.md,
/// "Variants"): the clamped activation of gpt-oss and router weights. `p` and `dp` are device
/// pointers (FP32, one a row of `in`; `dp` written by the weighted backward).
#[derive(Clone, Copy, Debug)]
pub struct SwigluVariant {
    raw: sys::cake_swiglu_variant_desc,
}

impl Default for SwigluVariant {
    fn default() -> Self {
        SwigluVariant { raw: plain_variant() }
    }
}

impl SwigluVariant {
    /// min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, -limit, limit) + 1).
    pub fn clamped(mut self, alpha: f32, limit: f32) -> Self {
        self.raw.activation = sys::CAKE_SWIGLU_ACT_CLAMPED;
        self.raw.alpha = alpha;
        self.raw.limit = limit;
        self
    }
    /// y = act * p[row]; the backward writes dp[row] (pass a null `dp` for the forward).
    pub fn weighted(mut self, p: *const f32, dp: *mut f32) -> Self {
        self.raw.weighted = 1;
        self.raw.p = p;
        self.raw.dp = dp;
        self
    }
    pub fn as_raw(&self) -> &sys::cake_swiglu_variant_desc {
        &self.raw
    }
}

/// A SwiGLU + MXFP8 call's shape (`cake_swiglu_mxfp8_desc`): in = [m, 2k] BF16.
#[derive(Clone)]
pub struct SwigluMxfp8Desc {
    raw: sys::cake_swiglu_mxfp8_desc,
    program: Option<CString>,
}

impl SwigluMxfp8Desc {
    pub fn new(m: i64, k: i64, orientation: Orientation) -> SwigluMxfp8Desc {
        // The same defaults as cake_swiglu_mxfp8_desc_init(), which may not be linked yet.
        let raw = sys::cake_swiglu_mxfp8_desc {
            struct_size: std::mem::size_of::<sys::cake_swiglu_mxfp8_desc>(),
            m,
            k,
            orientation: orientation.0,
            program: std::ptr::null(),
            variant: plain_variant(),
        };
        SwigluMxfp8Desc { raw, program: None }
    }
    /// The SwiGLU variant (weighted, clamped); the default is the plain SwiGLU.
    pub fn variant(mut self, v: SwigluVariant) -> Self {
        self.raw.variant = v.raw;
        self
    }
    pub fn program(mut self, name: &str) -> Result<Self> {
        let c = program_cstring(name)?;
        self.raw.program = c.as_ptr();
        self.program = Some(c);
        Ok(self)
    }
    pub fn as_raw(&self) -> &sys::cake_swiglu_mxfp8_desc {
        &self.raw
    }
}

/// Output sizes of a SwiGLU + MXFP8 form (`cake_swiglu_mxfp8_sizes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwigluMxfp8Sizes {
    pub out_cols: i64,
    pub q_bytes: usize,
    pub row_s_bytes: usize,
    pub col_s_bytes: usize,
}

/// `cake_swiglu_mxfp8_buffer_sizes`: needs no handle and no device.
#[allow(unused_variables)]
pub fn swiglu_mxfp8_buffer_sizes(
    desc: &SwigluMxfp8Desc,
    backward: bool,
) -> Result<SwigluMxfp8Sizes> {
    optional!(
        cake_has_cake_swiglu_mxfp8_buffer_sizes,
        "cake_swiglu_mxfp8_buffer_sizes",
        {
            let mut s: sys::cake_swiglu_mxfp8_sizes = unsafe { std::mem::zeroed() };
            s.struct_size = std::mem::size_of::<sys::cake_swiglu_mxfp8_sizes>();
            check("cake_swiglu_mxfp8_buffer_sizes", unsafe {
                sys::cake_swiglu_mxfp8_buffer_sizes(desc.as_raw(), backward as i32, &mut s)
            })?;
            Ok(SwigluMxfp8Sizes {
                out_cols: s.out_cols,
                q_bytes: s.q_bytes,
                row_s_bytes: s.row_s_bytes,
                col_s_bytes: s.col_s_bytes,
            })
        }
    )
}

/// A SwiGLU + FP8 blockwise 1x128 call's shape (`cake_swiglu_fp8_desc`): in = [m, 2k] BF16.
#[derive(Clone)]
pub struct SwigluFp8Desc {
    raw: sys::cake_swiglu_fp8_desc,
    program: Option<CString>,
}

impl SwigluFp8Desc {
    pub fn new(m: i64, k: i64, orientation: Orientation) -> SwigluFp8Desc {
        // The same defaults as cake_swiglu_fp8_desc_init(), which may not be linked yet.
        let raw = sys::cake_swiglu_fp8_desc {
            struct_size: std::mem::size_of::<sys::cake_swiglu_fp8_desc>(),
            m,
            k,
            orientation: orientation.0,
            scale_rule: Fp8ScaleRule::EXACT.0,
            program: std::ptr::null(),
            variant: plain_variant(),
        };
        SwigluFp8Desc { raw, program: None }
    }
    /// The SwiGLU variant (weighted, clamped); the default is the plain SwiGLU.
    pub fn variant(mut self, v: SwigluVariant) -> Self {
        self.raw.variant = v.raw;
        self
    }
    pub fn scale_rule(mut self, rule: Fp8ScaleRule) -> Self {
        self.raw.scale_rule = rule.0;
        self
    }
    pub fn program(mut self, name: &str) -> Result<Self> {
        let c = program_cstring(name)?;
        self.raw.program = c.as_ptr();
        self.program = Some(c);
        Ok(self)
    }
    pub fn as_raw(&self) -> &sys::cake_swiglu_fp8_desc {
        &self.raw
    }
}

/// Output sizes of a SwiGLU + FP8 blockwise form (`cake_swiglu_fp8_sizes`), with the MN-major
/// scale strides (elements between scale columns: m rowwise, O colwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwigluFp8Sizes {
    pub out_cols: i64,
    pub q_bytes: usize,
    pub row_s_bytes: usize,
    pub col_s_bytes: usize,
    pub row_s_stride: i64,
    pub col_s_stride: i64,
}

/// `cake_swiglu_fp8_buffer_sizes`: needs no handle and no device.
#[allow(unused_variables)]
pub fn swiglu_fp8_buffer_sizes(desc: &SwigluFp8Desc, backward: bool) -> Result<SwigluFp8Sizes> {
    optional!(
        cake_has_cake_swiglu_fp8_buffer_sizes,
        "cake_swiglu_fp8_buffer_sizes",
        {
            let mut s: sys::cake_swiglu_fp8_sizes = unsafe { std::mem::zeroed() };
            s.struct_size = std::mem::size_of::<sys::cake_swiglu_fp8_sizes>();
            check("cake_swiglu_fp8_buffer_sizes", unsafe {
                sys::cake_swiglu_fp8_buffer_sizes(desc.as_raw(), backward as i32, &mut s)
            })?;
            Ok(SwigluFp8Sizes {
                out_cols: s.out_cols,
                q_bytes: s.q_bytes,
                row_s_bytes: s.row_s_bytes,
                col_s_bytes: s.col_s_bytes,
                row_s_stride: s.row_s_stride,
                col_s_stride: s.col_s_stride,
            })
        }
    )
}

/// The sizes docs/spec/fp8-blockwise.md defines, computed without the library.
pub fn swiglu_fp8_expected_sizes(m: i64, k: i64, backward: bool) -> SwigluFp8Sizes {
    let o = if backward { 2 * k } else { k };
    SwigluFp8Sizes {
        out_cols: o,
        q_bytes: (m * o) as usize,
        row_s_bytes: (4 * m * (o / 128)) as usize,
        col_s_bytes: (4 * o * ((m + 127) / 128)) as usize,
        row_s_stride: m,
        col_s_stride: o,
    }
}

/// The quantized y of a norm-gate forward (`cake_normgate_quant_desc`): format, scale rule and
/// heads, from the defaults of `cake_normgate_quant_desc_init` (FP8 blockwise, exact scales, one
/// head). The quantized matrix is [rows / heads, heads * d]: normgate row t * heads + h is its
/// row t, columns [h d, (h + 1) d) (docs/spec/normgate.md, "Quantized y").
#[derive(Clone, Copy)]
pub struct NormgateQuantDesc {
    raw: sys::cake_normgate_quant_desc,
}

impl NormgateQuantDesc {
    pub fn new(format: NormgateQuantFormat) -> NormgateQuantDesc {
        // The same defaults as cake_normgate_quant_desc_init(), which may not be linked yet.
        let raw = sys::cake_normgate_quant_desc {
            struct_size: std::mem::size_of::<sys::cake_normgate_quant_desc>(),
            format: format.0,
            scale_rule: Fp8ScaleRule::EXACT.0,
            heads: 0,
        };
        NormgateQuantDesc { raw }
    }
    /// FP8 blockwise: how a block's FP32 scale follows from its amax (not read for MXFP8).
    pub fn scale_rule(mut self, rule: Fp8ScaleRule) -> Self {
        self.raw.scale_rule = rule.0;
        self
    }
    /// Normgate rows a row of the quantized matrix holds (0, the default, means 1): H for
    /// [T, H, d] heads whose next GEMM reads [T, H * d].
    pub fn heads(mut self, heads: i64) -> Self {
        self.raw.heads = heads;
        self
    }
    pub fn format(&self) -> NormgateQuantFormat {
        NormgateQuantFormat(self.raw.format)
    }
    pub fn as_raw(&self) -> &sys::cake_normgate_quant_desc {
        &self.raw
    }
}

/// Sizes of a quantized norm-gate forward's outputs (`cake_normgate_quant_sizes`): the matrix
/// [q_rows, q_cols] = [rows / heads, heads * d], its E4M3 bytes, its scale bytes and columns,
/// and (FP8 blockwise) the MN-major scale stride q_rows: scale (t, j) at element j * q_rows + t
/// (MXFP8: 0, the swizzled layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NormgateQuantSizes {
    pub q_rows: i64,
    pub q_cols: i64,
    pub q_bytes: usize,
    pub s_bytes: usize,
    pub s_cols: i64,
    pub s_stride: i64,
}

/// `cake_normgate_quant_buffer_sizes`: every rule of the call on rows, d and @p quant; needs no
/// handle and no device.
#[allow(unused_variables)]
pub fn normgate_quant_buffer_sizes(
    desc: &NormgateDesc,
    quant: &NormgateQuantDesc,
) -> Result<NormgateQuantSizes> {
    optional!(
        cake_has_cake_normgate_quant_buffer_sizes,
        "cake_normgate_quant_buffer_sizes",
        {
            desc.check_fields()?;
            let mut s: sys::cake_normgate_quant_sizes = unsafe { std::mem::zeroed() };
            s.struct_size = std::mem::size_of::<sys::cake_normgate_quant_sizes>();
            check("cake_normgate_quant_buffer_sizes", unsafe {
                sys::cake_normgate_quant_buffer_sizes(desc.as_raw(), quant.as_raw(), &mut s)
            })?;
            Ok(NormgateQuantSizes {
                q_rows: s.q_rows,
                q_cols: s.q_cols,
                q_bytes: s.q_bytes,
                s_bytes: s.s_bytes,
                s_cols: s.s_cols,
                s_stride: s.s_stride,
            })
        }
    )
}

/// The sizes docs/spec/normgate.md ("Quantized y") defines, computed without the library; the
/// arguments are taken as valid (heads 0 means 1).
pub fn normgate_quant_expected_sizes(
    rows: i64,
    d: i32,
    format: NormgateQuantFormat,
    heads: i64,
) -> NormgateQuantSizes {
    let h = heads.max(1);
    let (t, k) = (rows / h, h * d as i64);
    if format == NormgateQuantFormat::MXFP8 {
        let c = k / 32;
        return NormgateQuantSizes {
            q_rows: t,
            q_cols: k,
            q_bytes: (rows * d as i64) as usize,
            s_bytes: (((t + 127) / 128 * 128) * ((c + 3) / 4 * 4)) as usize,
            s_cols: c,
            s_stride: 0,
        };
    }
    NormgateQuantSizes {
        q_rows: t,
        q_cols: k,
        q_bytes: (rows * d as i64) as usize,
        s_bytes: (4 * t * (k / 128)) as usize,
        s_cols: k / 128,
        s_stride: t,
    }
}

/// Device pointers of a quantized norm-gate forward's outputs: q (E4M3 [rows / heads,
/// heads * d]) and q_scale (the format's scales); both required.
#[derive(Clone, Copy, Debug)]
pub struct NormgateQuantOutputs {
    pub q: *mut c_void,
    pub q_scale: *mut c_void,
}

/// Device pointers of a norm-gate backward.
#[derive(Clone, Copy, Debug)]
pub struct NormgateBackwardArgs {
    pub dy: *const c_void,
    pub x: *const c_void,
    pub z: *const c_void,
    pub w: *const c_void,
    pub dx: *mut c_void,
    pub dz: *mut c_void,
    /// Null allowed with NormgateFlags::DW_SKIP.
    pub dw: *mut c_void,
    /// Zero-filled before its first use; Cake leaves it zeroed.
    pub workspace: *mut c_void,
    pub workspace_bytes: usize,
}

/// Output device pointers of a SwiGLU + MXFP8 call (null for an orientation not asked for).
#[derive(Clone, Copy, Debug)]
pub struct Mxfp8Outputs {
    pub row_q: *mut c_void,
    pub row_s: *mut c_void,
    pub col_q: *mut c_void,
    pub col_s: *mut c_void,
}

impl Default for Mxfp8Outputs {
    fn default() -> Self {
        let n = std::ptr::null_mut();
        Mxfp8Outputs {
            row_q: n,
            row_s: n,
            col_q: n,
            col_s: n,
        }
    }
}

/// A Cake handle: one device, its primary context and program table. Destroyed on drop.
pub struct Handle {
    raw: sys::cake_handle_t,
}

// The C ABI: every function may be called from many threads at once on one handle; creation
// and destruction are exclusive (guaranteed here by ownership).
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

impl Handle {
    /// `cake_create`: a handle for CUDA device @p device.
    pub fn new(device: i32) -> Result<Handle> {
        let mut raw = std::ptr::null_mut();
        check("cake_create", unsafe { sys::cake_create(&mut raw, device) })?;
        Ok(Handle { raw })
    }

    /// `cake_create_ex`.
    pub fn with_options(device: i32, options: HandleOptions) -> Result<Handle> {
        let mut o: sys::cake_handle_options = unsafe { std::mem::zeroed() };
        unsafe { sys::cake_handle_options_init(&mut o) };
        o.table = options.table.unwrap_or(Arch::NONE).0;
        o.sm_count = options.sm_count;
        let mut raw = std::ptr::null_mut();
        check("cake_create_ex", unsafe {
            sys::cake_create_ex(&mut raw, device, &o)
        })?;
        Ok(Handle { raw })
    }

    pub fn as_raw(&self) -> sys::cake_handle_t {
        self.raw
    }

    pub fn device_info(&self) -> Result<DeviceInfo> {
        let mut s: sys::cake_device_info = unsafe { std::mem::zeroed() };
        unsafe { sys::cake_device_info_init(&mut s) };
        check("cake_device_query", unsafe {
            sys::cake_device_query(self.raw, &mut s)
        })?;
        Ok(DeviceInfo {
            device_ordinal: s.device_ordinal,
            cc: (s.cc_major, s.cc_minor),
            sm_count: s.sm_count,
            routing_sm_count: s.routing_sm_count,
            table: Arch(s.table),
            jit: s.jit != 0,
            cross_check: s.cross_check != 0,
            program_count: s.program_count,
            image: chars(&s.image),
            device_name: chars(&s.device_name),
        })
    }

    /// Names of the programs of this handle's table.
    pub fn programs(&self) -> Result<Vec<String>> {
        let n = unsafe { sys::cake_program_count(self.raw) };
        if n < 0 {
            return Err(Error::last("cake_program_count", Status::INVALID_HANDLE));
        }
        Ok((0..n)
            .map(|i| cstr(unsafe { sys::cake_program_name(self.raw, i) }))
            .collect())
    }

    pub fn normgate_forward_query(&self, desc: &NormgateDesc) -> Result<ProgramInfo> {
        desc.check_fields()?;
        let mut s = program_info_init();
        check("cake_normgate_forward_query", unsafe {
            sys::cake_normgate_forward_query(self.raw, desc.as_raw(), &mut s)
        })?;
        Ok(ProgramInfo::from_raw(&s))
    }

    /// `cake_normgate_forward`: y = rmsnorm_G(x) * w * a(z) (or rmsnorm_G(x * a(z)) * w, as the
    /// descriptor's gate, placement and group size say) in x's dtype, asynchronous on @p stream.
    ///
    /// # Safety
    /// x, z, y ([rows, stride] of the descriptor's x / z dtypes; z may be null with
    /// NormgateGate::NONE), w ([d] of its w dtype) and rstd (null or [rows, d / group] f32)
    /// must be device memory of this handle's device, live until the kernel has run on
    /// @p stream.
    pub unsafe fn normgate_forward(
        &self,
        desc: &NormgateDesc,
        x: *const c_void,
        z: *const c_void,
        w: *const c_void,
        y: *mut c_void,
        rstd: *mut f32,
        stream: Stream,
    ) -> Result<()> {
        desc.check_fields()?;
        check(
            "cake_normgate_forward",
            sys::cake_normgate_forward(self.raw, desc.as_raw(), x, z, w, y, rstd, stream),
        )
    }

    /// `cake_normgate_workspace_size`: bytes of zero-filled workspace the backward needs.
    #[allow(unused_variables)]
    pub fn normgate_workspace_size(&self, desc: &NormgateDesc) -> Result<usize> {
        optional!(
            cake_has_cake_normgate_workspace_size,
            "cake_normgate_workspace_size",
            {
                desc.check_fields()?;
                let mut n = 0usize;
                check("cake_normgate_workspace_size", unsafe {
                    sys::cake_normgate_workspace_size(self.raw, desc.as_raw(), &mut n)
                })?;
                Ok(n)
            }
        )
    }

    /// `cake_normgate_backward`: dx, dz, dw, asynchronous on @p stream.
    ///
    /// # Safety
    /// Every pointer of @p args must be device memory of this handle's device with the sizes
    /// cake.h states, live until the kernel has run on @p stream.
    #[allow(unused_variables)]
    pub unsafe fn normgate_backward(
        &self,
        desc: &NormgateDesc,
        args: &NormgateBackwardArgs,
        stream: Stream,
    ) -> Result<()> {
        optional!(cake_has_cake_normgate_backward, "cake_normgate_backward", {
            desc.check_fields()?;
            let a = args;
            check(
                "cake_normgate_backward",
                sys::cake_normgate_backward(
                    self.raw,
                    desc.as_raw(),
                    a.dy,
                    a.x,
                    a.z,
                    a.w,
                    a.dx,
                    a.dz,
                    a.dw,
                    a.workspace,
                    a.workspace_bytes,
                    stream,
                ),
            )
        })
    }

    #[allow(unused_variables)]
    pub fn normgate_backward_query(&self, desc: &NormgateDesc) -> Result<ProgramInfo> {
        optional!(
            cake_has_cake_normgate_backward_query,
            "cake_normgate_backward_query",
            {
                desc.check_fields()?;
                let mut s = program_info_init();
                check("cake_normgate_backward_query", unsafe {
                    sys::cake_normgate_backward_query(self.raw, desc.as_raw(), &mut s)
                })?;
                Ok(ProgramInfo::from_raw(&s))
            }
        )
    }

    /// `cake_swiglu_mxfp8_forward`: silu(gate) * up from BF16 [m, 2k], quantized to MXFP8.
    ///
    /// # Safety
    /// @p input ([m, 2k] BF16) and every non-null output must be device memory of the sizes
    /// swiglu_mxfp8_buffer_sizes() gives, live until the kernel has run on @p stream.
    #[allow(unused_variables)]
    pub unsafe fn swiglu_mxfp8_forward(
        &self,
        desc: &SwigluMxfp8Desc,
        input: *const c_void,
        out: Mxfp8Outputs,
        stream: Stream,
    ) -> Result<()> {
        optional!(
            cake_has_cake_swiglu_mxfp8_forward,
            "cake_swiglu_mxfp8_forward",
            {
                check(
                    "cake_swiglu_mxfp8_forward",
                    sys::cake_swiglu_mxfp8_forward(
                        self.raw,
                        desc.as_raw(),
                        input,
                        out.row_q,
                        out.row_s,
                        out.col_q,
                        out.col_s,
                        stream,
                    ),
                )
            }
        )
    }

    /// `cake_swiglu_mxfp8_backward`: [dgate | dup] quantized to MXFP8 (O = 2k).
    ///
    /// # Safety
    /// As swiglu_mxfp8_forward(), with @p grad [m, k] BF16 device memory.
    #[allow(unused_variables)]
    pub unsafe fn swiglu_mxfp8_backward(
        &self,
        desc: &SwigluMxfp8Desc,
        input: *const c_void,
        grad: *const c_void,
        out: Mxfp8Outputs,
        stream: Stream,
    ) -> Result<()> {
        optional!(
            cake_has_cake_swiglu_mxfp8_backward,
            "cake_swiglu_mxfp8_backward",
            {
                check(
                    "cake_swiglu_mxfp8_backward",
                    sys::cake_swiglu_mxfp8_backward(
                        self.raw,
                        desc.as_raw(),
                        input,
                        grad,
                        out.row_q,
                        out.row_s,
                        out.col_q,
                        out.col_s,
                        stream,
                    ),
                )
            }
        )
    }

    #[allow(unused_variables)]
    pub fn swiglu_mxfp8_query(
        &self,
        desc: &SwigluMxfp8Desc,
        backward: bool,
    ) -> Result<ProgramInfo> {
        optional!(
            cake_has_cake_swiglu_mxfp8_query,
            "cake_swiglu_mxfp8_query",
            {
                let mut s = program_info_init();
                check("cake_swiglu_mxfp8_query", unsafe {
                    sys::cake_swiglu_mxfp8_query(self.raw, desc.as_raw(), backward as i32, &mut s)
                })?;
                Ok(ProgramInfo::from_raw(&s))
            }
        )
    }
}

impl Handle {
    /// `cake_swiglu_fp8_forward`: silu(gate) * up from BF16 [m, 2k], quantized to FP8
    /// blockwise 1x128 (E4M3 data, FP32 scales MN-major). The outputs use the same pointer
    /// struct as MXFP8; row_s and col_s point to FP32 scales here.
    ///
    /// # Safety
    /// @p input ([m, 2k] BF16) and every non-null output must be device memory of the sizes
    /// swiglu_fp8_buffer_sizes() gives, live until the kernel has run on @p stream.
    #[allow(unused_variables)]
    pub unsafe fn swiglu_fp8_forward(
        &self,
        desc: &SwigluFp8Desc,
        input: *const c_void,
        out: Mxfp8Outputs,
        stream: Stream,
    ) -> Result<()> {
        optional!(
            cake_has_cake_swiglu_fp8_forward,
            "cake_swiglu_fp8_forward",
            {
                check(
                    "cake_swiglu_fp8_forward",
                    sys::cake_swiglu_fp8_forward(
                        self.raw,
                        desc.as_raw(),
                        input,
                        out.row_q,
                        out.row_s,
                        out.col_q,
                        out.col_s,
                        stream,
                    ),
                )
            }
        )
    }

    /// `cake_swiglu_fp8_backward`: [dgate | dup] quantized to FP8 blockwise 1x128 (O = 2k).
    ///
    /// # Safety
    /// As swiglu_fp8_forward(), with @p grad [m, k] BF16 device memory.
    #[allow(unused_variables)]
    pub unsafe fn swiglu_fp8_backward(
        &self,
        desc: &SwigluFp8Desc,
        input: *const c_void,
        grad: *const c_void,
        out: Mxfp8Outputs,
        stream: Stream,
    ) -> Result<()> {
        optional!(
            cake_has_cake_swiglu_fp8_backward,
            "cake_swiglu_fp8_backward",
            {
                check(
                    "cake_swiglu_fp8_backward",
                    sys::cake_swiglu_fp8_backward(
                        self.raw,
                        desc.as_raw(),
                        input,
                        grad,
                        out.row_q,
                        out.row_s,
                        out.col_q,
                        out.col_s,
                        stream,
                    ),
                )
            }
        )
    }

    #[allow(unused_variables)]
    pub fn swiglu_fp8_query(&self, desc: &SwigluFp8Desc, backward: bool) -> Result<ProgramInfo> {
        optional!(cake_has_cake_swiglu_fp8_query, "cake_swiglu_fp8_query", {
            let mut s = program_info_init();
            check("cake_swiglu_fp8_query", unsafe {
                sys::cake_swiglu_fp8_query(self.raw, desc.as_raw(), backward as i32, &mut s)
            })?;
            Ok(ProgramInfo::from_raw(&s))
        })
    }
}

impl Handle {
    /// `cake_normgate_forward_quantized`: the y of normgate_forward() (the default form: SiLU
    /// gate after a whole-row norm, BF16 x, z, w) quantized by @p quant's format in the same
    /// pass into @p out; the BF16 y too when @p y is not null. Asynchronous on @p stream.
    ///
    /// # Safety
    /// x, z ([rows, stride] BF16), w ([d] BF16), y (null or [rows, stride] BF16), rstd (null or
    /// [rows] f32) and the outputs (normgate_quant_buffer_sizes()) must be device memory of this
    /// handle's device, 16-byte aligned, live until the kernel has run on @p stream.
    #[allow(unused_variables, clippy::too_many_arguments)]
    pub unsafe fn normgate_forward_quantized(
        &self,
        desc: &NormgateDesc,
        quant: &NormgateQuantDesc,
        x: *const c_void,
        z: *const c_void,
        w: *const c_void,
        y: *mut c_void,
        rstd: *mut f32,
        out: NormgateQuantOutputs,
        stream: Stream,
    ) -> Result<()> {
        optional!(
            cake_has_cake_normgate_forward_quantized,
            "cake_normgate_forward_quantized",
            {
                desc.check_fields()?;
                check(
                    "cake_normgate_forward_quantized",
                    sys::cake_normgate_forward_quantized(
                        self.raw,
                        desc.as_raw(),
                        quant.as_raw(),
                        x,
                        z,
                        w,
                        y,
                        rstd,
                        out.q,
                        out.q_scale,
                        stream,
                    ),
                )
            }
        )
    }

    /// Which program normgate_forward_quantized() would run, and why.
    #[allow(unused_variables)]
    pub fn normgate_forward_quantized_query(
        &self,
        desc: &NormgateDesc,
        quant: &NormgateQuantDesc,
    ) -> Result<ProgramInfo> {
        optional!(
            cake_has_cake_normgate_forward_quantized_query,
            "cake_normgate_forward_quantized_query",
            {
                desc.check_fields()?;
                let mut s = program_info_init();
                check("cake_normgate_forward_quantized_query", unsafe {
                    sys::cake_normgate_forward_quantized_query(
                        self.raw,
                        desc.as_raw(),
                        quant.as_raw(),
                        &mut s,
                    )
                })?;
                Ok(ProgramInfo::from_raw(&s))
            }
        )
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // A failure here (the module could not be unloaded) has no one to report to.
        let _ = unsafe { sys::cake_destroy(self.raw) };
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cake::Handle({:p})", self.raw)
    }
}

/// One program of an architecture's table (`cake_table_program`).
#[derive(Clone, Debug)]
pub struct TableProgram {
    pub name: String,
    pub kernel: String,
    pub family: Family,
    pub op: Op,
    pub threads: i32,
    pub min_ctas_per_sm: i32,
    pub knobs: [i32; 8],
    /// Knobs 8..15 in manifest order (swiglu_mxfp8: col_lanes); zeros from a 0.1 library.
    pub knobs_ext: [i32; 8],
}

/// One route of a table (`cake_table_route`); metric_hi -1 means open.
#[derive(Clone, Debug)]
pub struct TableRoute {
    pub family: Family,
    pub op: Op,
    pub d: i32,
    pub metric_lo: i64,
    pub metric_hi: i64,
    pub program: String,
}

#[allow(unused_variables, dead_code)]
fn table_counts(arch: Arch) -> Result<(i32, i32)> {
    optional!(cake_has_cake_table_counts, "cake_table_counts", {
        let (mut p, mut r) = (0i32, 0i32);
        check("cake_table_counts", unsafe {
            sys::cake_table_counts(arch.0, &mut p, &mut r)
        })?;
        Ok((p, r))
    })
}

/// The programs of table @p arch (needs no device).
#[allow(unused_variables)]
pub fn table_programs(arch: Arch) -> Result<Vec<TableProgram>> {
    optional!(cake_has_cake_table_program_get, "cake_table_program_get", {
        let (n, _) = table_counts(arch)?;
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let mut s: sys::cake_table_program = unsafe { std::mem::zeroed() };
            unsafe { sys::cake_table_program_init(&mut s) };
            check("cake_table_program_get", unsafe {
                sys::cake_table_program_get(arch.0, i, &mut s)
            })?;
            out.push(TableProgram {
                name: chars(&s.name),
                kernel: chars(&s.kernel),
                family: Family(s.family),
                op: Op(s.op),
                threads: s.threads,
                min_ctas_per_sm: s.min_ctas_per_sm,
                knobs: s.knobs,
                knobs_ext: s.knobs_ext,
            });
        }
        Ok(out)
    })
}

/// The routes of table @p arch, in the order the router tries them (needs no device).
#[allow(unused_variables)]
pub fn table_routes(arch: Arch) -> Result<Vec<TableRoute>> {
    optional!(cake_has_cake_table_route_get, "cake_table_route_get", {
        let (_, n) = table_counts(arch)?;
        let mut out = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let mut s: sys::cake_table_route = unsafe { std::mem::zeroed() };
            unsafe { sys::cake_table_route_init(&mut s) };
            check("cake_table_route_get", unsafe {
                sys::cake_table_route_get(arch.0, i, &mut s)
            })?;
            out.push(TableRoute {
                family: Family(s.family),
                op: Op(s.op),
                d: s.d,
                metric_lo: s.metric_lo,
                metric_hi: s.metric_hi,
                program: chars(&s.program),
            });
        }
        Ok(out)
    })
}

/// The sizes docs/spec/swiglu-mxfp8.md defines, computed without the library.
pub fn swiglu_mxfp8_expected_sizes(m: i64, k: i64, backward: bool) -> SwigluMxfp8Sizes {
    let o = if backward { 2 * k } else { k };
    let padded = |r: i64, c: i64| (((r + 127) / 128 * 128) * ((c + 3) / 4 * 4)) as usize;
    SwigluMxfp8Sizes {
        out_cols: o,
        q_bytes: (m * o) as usize,
        row_s_bytes: padded(m, o / 32),
        col_s_bytes: padded(o, m / 32),
    }
}

/// Byte offset of scale (r, c) of an R x C scale matrix in the swizzled 128x4 layout.
pub fn swizzled_scale_offset(r: usize, c: usize, cols: usize) -> usize {
    let cp = cols.div_ceil(4) * 4;
    ((r / 128) * (cp / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + c % 4
}

// Grouped SwiGLU (after the macros it uses).
mod grouped;
pub use grouped::*;
