//! Grouped SwiGLU (docs/spec/swiglu-grouped.md): the experts of a mixture-of-experts layer in one
//! launch over one token buffer, in either format. Both formats have the same calls, so one macro
//! writes each format's descriptor, sizes query and Handle methods.
use std::ffi::{c_void, CString};
use std::fmt;

// Error: named by optional! where the linked library lacks a call.
#[allow(unused_imports)]
use crate::Error;
use crate::{
    check, program_cstring, program_info_init, sys, Fp8ScaleRule, Handle, Mxfp8Outputs,
    Orientation, ProgramInfo, Result, Stream,
};

newtype_enum!(
    /// Bits of the word a grouped call writes to its `status` pointer (`cake_swiglu_grouped_status_t`):
    /// 0 when the offsets are valid; offsets that break a rule still give a defined result.
    SwigluGroupedStatus {
        OFFSETS_OK = sys::CAKE_SWIGLU_GROUPED_OFFSETS_OK,
        OFFSETS_DECREASING = sys::CAKE_SWIGLU_GROUPED_OFFSETS_DECREASING,
        OFFSETS_PAST_TOKENS = sys::CAKE_SWIGLU_GROUPED_OFFSETS_PAST_TOKENS,
    }
);

/// Output sizes of a grouped form (`cake_swiglu_grouped_sizes`, both formats): scales sized for
/// every split of the tokens into the experts (scale_rows padded rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwigluGroupedSizes {
    pub out_cols: i64,
    pub scale_rows: i64,
    pub q_bytes: usize,
    pub row_s_bytes: usize,
    pub col_s_bytes: usize,
}

/// P, the padded scale rows of @p tokens rows over @p experts experts (each expert's scales start
/// on a 128-row boundary): 128 * floor((T + 127 * min(E, T)) / 128).
pub fn swiglu_grouped_scale_rows(tokens: i64, experts: i64) -> i64 {
    128 * ((tokens + 127 * experts.min(tokens)) / 128)
}

/// The sizes include/cake.h gives for grouped SwiGLU + MXFP8, computed without the library.
pub fn swiglu_mxfp8_grouped_expected_sizes(
    tokens: i64,
    k: i64,
    experts: i64,
    backward: bool,
) -> SwigluGroupedSizes {
    let o = if backward { 2 * k } else { k };
    let p = swiglu_grouped_scale_rows(tokens, experts);
    let o128 = (o + 127) / 128;
    SwigluGroupedSizes {
        out_cols: o,
        scale_rows: p,
        q_bytes: (tokens * o) as usize,
        row_s_bytes: (p * o128 * 4) as usize,
        col_s_bytes: (o128 * 128 * p / 32) as usize,
    }
}

/// The sizes include/cake.h gives for grouped SwiGLU + FP8 blockwise, computed without the
/// library.
pub fn swiglu_fp8_grouped_expected_sizes(
    tokens: i64,
    k: i64,
    experts: i64,
    backward: bool,
) -> SwigluGroupedSizes {
    let o = if backward { 2 * k } else { k };
    let p = swiglu_grouped_scale_rows(tokens, experts);
    SwigluGroupedSizes {
        out_cols: o,
        scale_rows: p,
        q_bytes: (tokens * o) as usize,
        row_s_bytes: (4 * p * (o / 128)) as usize,
        col_s_bytes: (4 * o * p / 128) as usize,
    }
}

fn sizes_from_raw(s: &sys::cake_swiglu_grouped_sizes) -> SwigluGroupedSizes {
    SwigluGroupedSizes {
        out_cols: s.out_cols,
        scale_rows: s.scale_rows,
        q_bytes: s.q_bytes,
        row_s_bytes: s.row_s_bytes,
        col_s_bytes: s.col_s_bytes,
    }
}

fn sizes_init() -> sys::cake_swiglu_grouped_sizes {
    let mut s: sys::cake_swiglu_grouped_sizes = unsafe { std::mem::zeroed() };
    s.struct_size = std::mem::size_of::<sys::cake_swiglu_grouped_sizes>();
    s
}

/// One format's grouped calls: the descriptor type (its extra defaults after `program`), the
/// buffer-sizes function, and the Handle's forward, backward and query; each C function by its
/// name and the cfg that says the linked library exports it.
macro_rules! grouped_format {
    (
        $(#[$dm:meta])* $desc:ident, $raw:ident { $($field:ident: $value:expr),* },
        sizes: $sizes_fn:ident, $sizes_c:ident, $sizes_cfg:ident,
        forward: $fwd:ident, $fwd_c:ident, $fwd_cfg:ident,
        backward: $bwd:ident, $bwd_c:ident, $bwd_cfg:ident,
        query: $query:ident, $query_c:ident, $query_cfg:ident
    ) => {
        $(#[$dm])*
        #[derive(Clone)]
        pub struct $desc {
            raw: sys::$raw,
            program: Option<CString>,
        }

        impl $desc {
            /// in = [tokens, 2k] BF16 over @p experts experts; the defaults of the C init (which
            /// may not be linked yet) for the rest.
            pub fn new(tokens: i64, k: i64, experts: i32, orientation: Orientation) -> $desc {
                let raw = sys::$raw {
                    struct_size: std::mem::size_of::<sys::$raw>(),
                    tokens,
                    k,
                    experts,
                    orientation: orientation.0,
                    $($field: $value,)*
                    program: std::ptr::null(),
                    variant: crate::plain_variant(),
                };
                $desc { raw, program: None }
            }
            /// The SwiGLU variant (weighted: p and dp one a token of `in`, [T]; clamped).
            pub fn variant(mut self, v: crate::SwigluVariant) -> Self {
                self.raw.variant = *v.as_raw();
                self
            }
            /// Forces a grouped program of the handle's table by name.
            pub fn program(mut self, name: &str) -> Result<Self> {
                let c = program_cstring(name)?;
                self.raw.program = c.as_ptr();
                self.program = Some(c);
                Ok(self)
            }
            pub fn as_raw(&self) -> &sys::$raw {
                &self.raw
            }
        }

        #[doc = concat!("`", stringify!($sizes_c), "`: needs no handle and no device.")]
        #[allow(unused_variables)]
        pub fn $sizes_fn(desc: &$desc, backward: bool) -> Result<SwigluGroupedSizes> {
            optional!($sizes_cfg, stringify!($sizes_c), {
                let mut s = sizes_init();
                check(stringify!($sizes_c), unsafe {
                    sys::$sizes_c(desc.as_raw(), backward as i32, &mut s)
                })?;
                Ok(sizes_from_raw(&s))
            })
        }

        impl Handle {
            #[doc = concat!("`", stringify!($fwd_c), "`: each expert's rows of silu(gate) * up, ")]
            #[doc = "quantized into its slices of the outputs (docs/spec/swiglu-grouped.md)."]
            ///
            /// # Safety
            /// @p input ([tokens, 2k] BF16), @p offsets (experts int32 end offsets) and every
            /// non-null output must be device memory of the sizes the buffer-sizes call gives,
            /// @p status null or one device int32, all live until the kernel has run on
            /// @p stream.
            #[allow(unused_variables)]
            pub unsafe fn $fwd(
                &self,
                desc: &$desc,
                input: *const c_void,
                offsets: *const i32,
                out: Mxfp8Outputs,
                status: *mut i32,
                stream: Stream,
            ) -> Result<()> {
                optional!($fwd_cfg, stringify!($fwd_c), {
                    check(
                        stringify!($fwd_c),
                        sys::$fwd_c(
                            self.raw,
                            desc.as_raw(),
                            input,
                            offsets,
                            out.row_q,
                            out.row_s,
                            out.col_q,
                            out.col_s,
                            status,
                            stream,
                        ),
                    )
                })
            }

            #[doc = concat!("`", stringify!($bwd_c), "`: each expert's rows of [dgate | dup] ")]
            #[doc = "(O = 2k)."]
            ///
            /// # Safety
            /// As the forward, with @p grad [tokens, k] BF16 device memory.
            #[allow(unused_variables)]
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $bwd(
                &self,
                desc: &$desc,
                input: *const c_void,
                grad: *const c_void,
                offsets: *const i32,
                out: Mxfp8Outputs,
                status: *mut i32,
                stream: Stream,
            ) -> Result<()> {
                optional!($bwd_cfg, stringify!($bwd_c), {
                    check(
                        stringify!($bwd_c),
                        sys::$bwd_c(
                            self.raw,
                            desc.as_raw(),
                            input,
                            grad,
                            offsets,
                            out.row_q,
                            out.row_s,
                            out.col_q,
                            out.col_s,
                            status,
                            stream,
                        ),
                    )
                })
            }

            #[doc = concat!("`", stringify!($query_c), "`: the program a call would run.")]
            #[allow(unused_variables)]
            pub fn $query(&self, desc: &$desc, backward: bool) -> Result<ProgramInfo> {
                optional!($query_cfg, stringify!($query_c), {
                    let mut s = program_info_init();
                    check(stringify!($query_c), unsafe {
                        sys::$query_c(self.raw, desc.as_raw(), backward as i32, &mut s)
                    })?;
                    Ok(ProgramInfo::from_raw(&s))
                })
            }
        }
    };
}

grouped_format!(
    /// A grouped SwiGLU + MXFP8 call's shape (`cake_swiglu_mxfp8_grouped_desc`): k a multiple
    /// of 32.
    SwigluMxfp8GroupedDesc, cake_swiglu_mxfp8_grouped_desc {},
    sizes: swiglu_mxfp8_grouped_buffer_sizes, cake_swiglu_mxfp8_grouped_buffer_sizes,
        cake_has_cake_swiglu_mxfp8_grouped_buffer_sizes,
    forward: swiglu_mxfp8_grouped_forward, cake_swiglu_mxfp8_grouped_forward,
        cake_has_cake_swiglu_mxfp8_grouped_forward,
    backward: swiglu_mxfp8_grouped_backward, cake_swiglu_mxfp8_grouped_backward,
        cake_has_cake_swiglu_mxfp8_grouped_backward,
    query: swiglu_mxfp8_grouped_query, cake_swiglu_mxfp8_grouped_query,
        cake_has_cake_swiglu_mxfp8_grouped_query
);

grouped_format!(
    /// A grouped SwiGLU + FP8 blockwise 1x128 call's shape (`cake_swiglu_fp8_grouped_desc`): k a
    /// multiple of 128; the exact scale rule unless scale_rule() says otherwise.
    SwigluFp8GroupedDesc, cake_swiglu_fp8_grouped_desc { scale_rule: Fp8ScaleRule::EXACT.0 },
    sizes: swiglu_fp8_grouped_buffer_sizes, cake_swiglu_fp8_grouped_buffer_sizes,
        cake_has_cake_swiglu_fp8_grouped_buffer_sizes,
    forward: swiglu_fp8_grouped_forward, cake_swiglu_fp8_grouped_forward,
        cake_has_cake_swiglu_fp8_grouped_forward,
    backward: swiglu_fp8_grouped_backward, cake_swiglu_fp8_grouped_backward,
        cake_has_cake_swiglu_fp8_grouped_backward,
    query: swiglu_fp8_grouped_query, cake_swiglu_fp8_grouped_query,
        cake_has_cake_swiglu_fp8_grouped_query
);

impl SwigluFp8GroupedDesc {
    pub fn scale_rule(mut self, rule: Fp8ScaleRule) -> Self {
        self.raw.scale_rule = rule.0;
        self
    }
}
