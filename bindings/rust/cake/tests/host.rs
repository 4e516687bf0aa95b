//! Host-only tests: need libcake.so, no GPU and no driver.
use cake::{
    Arch, DType, Fp8ScaleRule, Handle, HandleOptions, NormgateDesc, NormgateGate, NormgatePackage,
    NormgatePlacement, NormgateQuantDesc, NormgateQuantFormat, Orientation, Status,
    SwigluMxfp8Desc,
};

#[test]
fn version_matches_header() {
    let (ma, mi, pa) = cake::version();
    assert_eq!(
        (ma, mi, pa),
        (
            cake::sys::CAKE_VERSION_MAJOR,
            cake::sys::CAKE_VERSION_MINOR,
            cake::sys::CAKE_VERSION_PATCH
        )
    );
}

#[test]
fn status_names_come_from_the_library() {
    for v in 0..=11u32 {
        let s = Status(v);
        let name = s.name().expect("every cake.h status has a constant");
        assert_eq!(cake::status_string(s), format!("CAKE_STATUS_{name}"));
    }
    assert_eq!(cake::status_string(Status(9999)), "CAKE_STATUS_UNKNOWN");
    assert_eq!(format!("{:?}", Status(9999)), "Status(9999)");
    assert_eq!(format!("{:?}", Arch::SM90), "Arch::SM90");
}

#[test]
fn bad_options_give_status_and_message() {
    let e = Handle::with_options(
        0,
        HandleOptions {
            table: None,
            sm_count: -1,
        },
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert_eq!(e.message(), "options.sm_count = -1: must be >= 0");
    assert_eq!(e.function(), "cake_create_ex");
    assert_eq!(
        e.to_string(),
        "cake_create_ex: CAKE_STATUS_INVALID_ARGUMENT: options.sm_count = -1: must be >= 0"
    );
    let e = Handle::with_options(
        0,
        HandleOptions {
            table: Some(Arch(55)),
            sm_count: 0,
        },
    )
    .unwrap_err();
    assert!(e.message().starts_with("options.table = 55"), "{e}");
}

#[test]
fn create_without_gpu_says_why() {
    match Handle::new(0) {
        Ok(h) => {
            let info = h.device_info().expect("device_info");
            assert!(info.sm_count > 0);
            assert_eq!(
                h.programs().expect("programs").len() as i32,
                info.program_count
            );
        }
        Err(e) => {
            assert!(
                [
                    Status::DRIVER_UNAVAILABLE,
                    Status::NO_DEVICE,
                    Status::ARCH_UNSUPPORTED
                ]
                .contains(&e.status()),
                "{e}"
            );
            assert!(!e.message().is_empty());
        }
    }
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Handle>();
}

#[test]
fn descriptors() {
    let d = NormgateDesc::new(4096, 128)
        .package(NormgatePackage::NONDETERMINISTIC)
        .dw_dtype(DType::F32);
    let raw = d.as_raw();
    assert_eq!(
        raw.struct_size,
        std::mem::size_of::<cake::sys::cake_normgate_desc>()
    );
    assert_eq!((raw.rows, raw.d, raw.x_stride), (4096, 128, 0));
    assert!((raw.eps - 1e-6).abs() < 1e-12);
    assert_eq!(
        (raw.package, raw.dw_dtype),
        (NormgatePackage::NONDETERMINISTIC.0, DType::F32.0)
    );
    assert!(raw.program.is_null());
    let forced = d.clone().program("sm90.x").expect("program");
    let name = unsafe { std::ffi::CStr::from_ptr(forced.as_raw().program) };
    assert_eq!(name.to_str(), Ok("sm90.x"));
    let e = NormgateDesc::new(1, 8)
        .program("a\0b")
        .err()
        .expect("NUL is rejected");
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
}

#[test]
fn normgate_variant_fields() {
    let d = NormgateDesc::new(64, 256);
    let raw = d.as_raw();
    assert_eq!(std::mem::size_of::<cake::sys::cake_normgate_desc>(), 120);
    if raw.struct_size < 120 {
        eprintln!("skipped: the linked libcake.so predates the normgate variant fields");
        return;
    }
    // The defaults of cake_normgate_desc_init: Cake 0.2's op.
    assert_eq!((raw.gate, raw.placement, raw.group_size), (0, 0, 0));
    assert_eq!((raw.x_dtype, raw.z_dtype, raw.w_dtype), (1, 1, 1));
    assert_eq!(d.gate_fn(), NormgateGate::SILU);
    assert_eq!(d.placement_of(), NormgatePlacement::GATE_AFTER_NORM);
    assert!(d.check_fields().is_ok());
    let v = d
        .gate(NormgateGate::SIGMOID)
        .gate_before_norm(true)
        .group_size(64)
        .x_dtype(DType::F16)
        .z_dtype(DType::F32)
        .w_dtype(DType::F32)
        .dw_dtype(DType::F16);
    let r = v.as_raw();
    assert_eq!((r.gate, r.placement, r.group_size), (1, 1, 64));
    assert_eq!((r.x_dtype, r.z_dtype, r.w_dtype, r.dw_dtype), (3, 2, 2, 3));
    assert!(v.check_fields().is_ok());
    assert_eq!(v.placement_of(), NormgatePlacement::GATE_BEFORE_NORM);
    let none = NormgateDesc::new(1, 8)
        .gate(NormgateGate::NONE)
        .gate_before_norm(false);
    assert_eq!(none.as_raw().gate, cake::sys::CAKE_NORMGATE_GATE_NONE);
    assert_eq!(
        none.as_raw().placement,
        cake::sys::CAKE_NORMGATE_GATE_AFTER_NORM
    );
    assert_eq!(
        format!("{:?}", NormgateGate::SIGMOID),
        "NormgateGate::SIGMOID"
    );
    assert_eq!(format!("{:?}", DType(3)), "DType::F16");
}

#[test]
fn an_older_library_refuses_the_variant_fields_it_would_ignore() {
    // As if cake_normgate_desc_init came from a 0.2 library: its struct ends at program.
    let old = std::mem::offset_of!(cake::sys::cake_normgate_desc, gate);
    let with_size = |d: NormgateDesc| {
        let mut raw = *d.as_raw();
        raw.struct_size = old;
        unsafe { NormgateDesc::from_raw(raw) } // program: null
    };
    assert!(with_size(NormgateDesc::new(4, 128)).check_fields().is_ok());
    let cases: [(NormgateDesc, &str); 6] = [
        (
            NormgateDesc::new(4, 128).gate(NormgateGate::SIGMOID),
            "gate",
        ),
        (
            NormgateDesc::new(4, 128).gate_before_norm(true),
            "placement",
        ),
        (NormgateDesc::new(4, 128).group_size(64), "group_size"),
        (NormgateDesc::new(4, 128).x_dtype(DType::F32), "x_dtype"),
        (NormgateDesc::new(4, 128).z_dtype(DType::F16), "z_dtype"),
        (NormgateDesc::new(4, 128).w_dtype(DType::F32), "w_dtype"),
    ];
    for (desc, field) in cases {
        let e = with_size(desc).check_fields().err().expect("refused");
        assert_eq!(e.status(), Status::NOT_IN_LIBRARY);
        let want = format!("cake_normgate_desc.{field}");
        assert!(e.message().contains(&want), "{}", e.message());
    }
}

#[test]
fn swiglu_fp8_sizes() {
    let s = cake::swiglu_fp8_expected_sizes(256, 384, true);
    assert_eq!(
        (
            s.out_cols,
            s.q_bytes,
            s.row_s_bytes,
            s.col_s_bytes,
            s.row_s_stride,
            s.col_s_stride
        ),
        (768, 256 * 768, 4 * 256 * 6, 4 * 768 * 2, 256, 768)
    );
    let desc =
        cake::SwigluFp8Desc::new(256, 384, Orientation::BOTH).scale_rule(cake::Fp8ScaleRule::POW2);
    match cake::swiglu_fp8_buffer_sizes(&desc, true) {
        Ok(got) => {
            assert_eq!(got, s);
            // Any m (a partial last colwise block); k a multiple of 128.
            for m in [1, 200, 129] {
                let d = cake::SwigluFp8Desc::new(m, 384, Orientation::BOTH);
                let got = cake::swiglu_fp8_buffer_sizes(&d, false).unwrap();
                assert_eq!(got, cake::swiglu_fp8_expected_sizes(m, 384, false));
            }
            let bad = cake::SwigluFp8Desc::new(256, 320, Orientation::ROWWISE);
            let e = cake::swiglu_fp8_buffer_sizes(&bad, false).unwrap_err();
            assert_eq!(e.status(), Status::UNSUPPORTED_SHAPE, "{e}");
            // The SwiGLU variants: a clamped call needs a positive limit; the sizes do not change.
            let v = cake::SwigluVariant::default().clamped(1.702, 7.0);
            let d = cake::SwigluFp8Desc::new(256, 384, Orientation::BOTH).variant(v);
            assert_eq!(cake::swiglu_fp8_buffer_sizes(&d, true).unwrap(), s);
            let bad = d.variant(cake::SwigluVariant::default().clamped(1.702, 0.0));
            let e = cake::swiglu_fp8_buffer_sizes(&bad, false).unwrap_err();
            assert_eq!(e.status(), Status::INVALID_ARGUMENT, "{e}");
        }
        Err(e) => {
            assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}");
            eprintln!("skipped: {e}");
        }
    }
}

#[test]
fn swiglu_sizes_and_layout() {
    let s = cake::swiglu_mxfp8_expected_sizes(256, 512, false);
    assert_eq!(
        (s.out_cols, s.q_bytes, s.row_s_bytes, s.col_s_bytes),
        (512, 256 * 512, 4096, 4096)
    );
    // docs/spec/swiglu-mxfp8.md worked examples (M=256, K=512, forward).
    assert_eq!(cake::swizzled_scale_offset(161, 300 / 32, 512 / 32), 3093);
    assert_eq!(cake::swizzled_scale_offset(300, 200 / 32, 256 / 32), 2758);
    let desc = SwigluMxfp8Desc::new(256, 512, Orientation::BOTH);
    match cake::swiglu_mxfp8_buffer_sizes(&desc, false) {
        Ok(got) => {
            assert!(cake::library_has("cake_swiglu_mxfp8_buffer_sizes"));
            for (m, k) in [(128, 128), (384, 640), (1024, 7168), (32, 32), (96, 160)] {
                for bwd in [false, true] {
                    let d = SwigluMxfp8Desc::new(m, k, Orientation::BOTH);
                    assert_eq!(
                        cake::swiglu_mxfp8_buffer_sizes(&d, bwd).expect("sizes"),
                        cake::swiglu_mxfp8_expected_sizes(m, k, bwd)
                    );
                }
            }
            assert_eq!(got, s);
            let e = cake::swiglu_mxfp8_buffer_sizes(
                &SwigluMxfp8Desc::new(100, 128, Orientation::ROWWISE),
                false,
            )
            .unwrap_err();
            assert!(
                [Status::UNSUPPORTED_SHAPE, Status::INVALID_ARGUMENT].contains(&e.status()),
                "{e}"
            );
            assert!(!e.message().is_empty());
        }
        Err(e) => {
            assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}");
            assert!(!cake::library_has("cake_swiglu_mxfp8_buffer_sizes"));
            eprintln!("skipped: {e}");
        }
    }
}

#[test]
fn library_reports_its_exports() {
    assert!(cake::library_has("cake_version"));
    assert!(cake::library_has("cake_normgate_forward"));
    assert!(!cake::library_has("cake_no_such_function"));
}

#[test]
fn program_tables() {
    for arch in [Arch::SM90, Arch::SM100, Arch::SM103, Arch::SM107] {
        let programs = match cake::table_programs(arch) {
            Ok(p) => p,
            Err(e) => {
                assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}");
                eprintln!("skipped: {e}");
                return;
            }
        };
        let routes = cake::table_routes(arch).expect("routes");
        assert!(!programs.is_empty() && !routes.is_empty(), "{arch:?}");
        for r in &routes {
            assert!(
                programs.iter().any(|p| p.name == r.program),
                "{arch:?}: route to {}",
                r.program
            );
        }
        if arch == Arch::SM90 {
            // col_lanes, the ninth knob, in knobs_ext[0].
            let p = programs
                .iter()
                .find(|p| p.name == "sm90.sw_fwd_both_st2_128x128w_p2")
                .expect("program");
            assert_eq!((p.knobs[7], p.knobs_ext[0]), (-2, 8));
        }
    }
    let e = cake::table_programs(Arch(55)).unwrap_err();
    assert_eq!(e.status(), Status::INVALID_ARGUMENT);
    assert!(!e.message().is_empty());
}

#[test]
fn normgate_quant_desc_and_sizes() {
    use NormgateQuantFormat as F;
    // docs/spec/normgate.md's worked examples: rows 3200, d 128, 32 heads (T 100, K 4096);
    // rows 77, d 64, MXFP8 (C 2 padded to 4: one 512-byte tile).
    let e = cake::normgate_quant_expected_sizes(3200, 128, F::FP8_BLOCKWISE, 32);
    assert_eq!(
        (e.q_rows, e.q_cols, e.q_bytes, e.s_bytes, e.s_cols, e.s_stride),
        (100, 4096, 3200 * 128, 4 * 100 * 32, 32, 100)
    );
    let e = cake::normgate_quant_expected_sizes(77, 64, F::MXFP8, 0);
    assert_eq!(
        (e.q_rows, e.q_cols, e.s_bytes, e.s_cols, e.s_stride),
        (77, 64, 512, 2, 0)
    );
    let q = NormgateQuantDesc::new(F::MXFP8)
        .scale_rule(Fp8ScaleRule::POW2)
        .heads(4);
    assert_eq!(q.format(), F::MXFP8);
    assert_eq!((q.as_raw().scale_rule, q.as_raw().heads), (1, 4));
    if !cake::library_has("cake_normgate_quant_desc_init") {
        assert_eq!(
            cake::normgate_quant_buffer_sizes(&NormgateDesc::new(4, 128), &q)
                .unwrap_err()
                .status(),
            Status::NOT_IN_LIBRARY
        );
        eprintln!("skipped: the linked libcake.so predates the quantized norm-gate forward");
        return;
    }
    // The defaults are the library's init's (a call linked only where the library has it).
    #[cfg(cake_has_cake_normgate_quant_desc_init)]
    {
        let mut raw: cake::sys::cake_normgate_quant_desc = unsafe { std::mem::zeroed() };
        assert_eq!(
            unsafe { cake::sys::cake_normgate_quant_desc_init(&mut raw) },
            0
        );
        let ours = *NormgateQuantDesc::new(F::FP8_BLOCKWISE).as_raw();
        assert_eq!(
            (raw.struct_size, raw.format, raw.scale_rule, raw.heads),
            (ours.struct_size, ours.format, ours.scale_rule, ours.heads)
        );
    }
    for (rows, d, f, heads) in [
        (3200, 128, F::FP8_BLOCKWISE, 32),
        (777, 256, F::FP8_BLOCKWISE, 0),
        (77, 64, F::MXFP8, 0),
        (4096, 128, F::MXFP8, 8),
        (1000, 96, F::MXFP8, 1),
    ] {
        let desc = NormgateDesc::new(rows, d);
        let quant = NormgateQuantDesc::new(f).heads(heads);
        assert_eq!(
            cake::normgate_quant_buffer_sizes(&desc, &quant).expect("sizes"),
            cake::normgate_quant_expected_sizes(rows, d, f, heads)
        );
    }
    let cases: [(NormgateDesc, NormgateQuantDesc, Status, &str); 4] = [
        (
            NormgateDesc::new(8, 64),
            NormgateQuantDesc::new(F::FP8_BLOCKWISE),
            Status::UNSUPPORTED_SHAPE,
            "desc->d = 64: FP8 blockwise y needs a multiple of 128",
        ),
        (
            NormgateDesc::new(8, 128),
            NormgateQuantDesc::new(F::FP8_BLOCKWISE).heads(3),
            Status::INVALID_ARGUMENT,
            "quant->heads = 3: does not divide desc->rows = 8",
        ),
        (
            NormgateDesc::new(8, 128).gate(NormgateGate::SIGMOID),
            NormgateQuantDesc::new(F::MXFP8),
            Status::INVALID_ARGUMENT,
            "quantized y serves the default form only",
        ),
        (
            NormgateDesc::new(8, 128),
            NormgateQuantDesc::new(NormgateQuantFormat(7)),
            Status::INVALID_ARGUMENT,
            "quant->format = 7",
        ),
    ];
    for (desc, quant, status, words) in cases {
        let e = cake::normgate_quant_buffer_sizes(&desc, &quant).unwrap_err();
        assert_eq!(e.status(), status, "{e}");
        assert!(e.message().contains(words), "{e}");
        assert_eq!(e.function(), "cake_normgate_quant_buffer_sizes");
    }
}

#[test]
fn normgate_forward_quantized_without_gpu_says_why() {
    let h = match Handle::new(0) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let desc = NormgateDesc::new(4096, 128);
    let quant = NormgateQuantDesc::new(NormgateQuantFormat::FP8_BLOCKWISE).heads(32);
    match h.normgate_forward_quantized_query(&desc, &quant) {
        Ok(info) => assert!(info.name.ends_with("_fp8b"), "{}", info.name),
        Err(e) => assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}"),
    }
}

#[test]
fn swiglu_grouped_sizes() {
    // include/cake.h: P = 128 * floor((T + 127 * min(E, T)) / 128); the spec's worked example.
    assert_eq!(cake::swiglu_grouped_scale_rows(256, 3), 512);
    assert_eq!(
        cake::swiglu_grouped_scale_rows(5, 64),
        128 * ((5 + 127 * 5) / 128)
    );
    let mx = cake::swiglu_mxfp8_grouped_expected_sizes(1000, 256, 8, false);
    assert_eq!(
        (
            mx.out_cols,
            mx.scale_rows,
            mx.q_bytes,
            mx.row_s_bytes,
            mx.col_s_bytes
        ),
        (256, 1920, 256_000, 1920 * 2 * 4, 2 * 128 * 1920 / 32)
    );
    let f8 = cake::swiglu_fp8_grouped_expected_sizes(1000, 256, 8, true);
    assert_eq!(
        (
            f8.out_cols,
            f8.scale_rows,
            f8.q_bytes,
            f8.row_s_bytes,
            f8.col_s_bytes
        ),
        (512, 1920, 512_000, 4 * 1920 * 4, 4 * 512 * 1920 / 128)
    );
    let desc = cake::SwigluMxfp8GroupedDesc::new(1000, 256, 8, Orientation::BOTH);
    match cake::swiglu_mxfp8_grouped_buffer_sizes(&desc, false) {
        Ok(got) => {
            assert_eq!(got, mx);
            for (t, k, e) in [(1, 128, 1), (4099, 64, 64), (2053, 128, 256), (256, 96, 3)] {
                for bwd in [false, true] {
                    let d = cake::SwigluMxfp8GroupedDesc::new(t, k, e, Orientation::ROWWISE);
                    assert_eq!(
                        cake::swiglu_mxfp8_grouped_buffer_sizes(&d, bwd).expect("mxfp8 sizes"),
                        cake::swiglu_mxfp8_grouped_expected_sizes(t, k, e as i64, bwd)
                    );
                    if k % 128 == 0 {
                        let d = cake::SwigluFp8GroupedDesc::new(t, k, e, Orientation::COLWISE)
                            .scale_rule(Fp8ScaleRule::POW2);
                        assert_eq!(
                            cake::swiglu_fp8_grouped_buffer_sizes(&d, bwd).expect("fp8 sizes"),
                            cake::swiglu_fp8_grouped_expected_sizes(t, k, e as i64, bwd)
                        );
                    }
                }
            }
            // K off the scale block, no experts, an unknown scale rule: refused, with a message.
            let e = cake::swiglu_mxfp8_grouped_buffer_sizes(
                &cake::SwigluMxfp8GroupedDesc::new(256, 48, 2, Orientation::ROWWISE),
                false,
            )
            .unwrap_err();
            assert_eq!(e.status(), Status::UNSUPPORTED_SHAPE, "{e}");
            assert_eq!(e.function(), "cake_swiglu_mxfp8_grouped_buffer_sizes");
            let e = cake::swiglu_fp8_grouped_buffer_sizes(
                &cake::SwigluFp8GroupedDesc::new(256, 128, 0, Orientation::ROWWISE),
                false,
            )
            .unwrap_err();
            assert_eq!(e.status(), Status::INVALID_ARGUMENT, "{e}");
            assert!(e.message().contains("experts"), "{e}");
            let e = cake::swiglu_fp8_grouped_buffer_sizes(
                &cake::SwigluFp8GroupedDesc::new(256, 128, 2, Orientation::ROWWISE)
                    .scale_rule(Fp8ScaleRule(7)),
                false,
            )
            .unwrap_err();
            assert_eq!(e.status(), Status::INVALID_ARGUMENT, "{e}");
            assert!(e.message().contains("scale_rule"), "{e}");
        }
        Err(e) => {
            assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}");
            assert!(!cake::library_has("cake_swiglu_mxfp8_grouped_buffer_sizes"));
            eprintln!("skipped: {e}");
        }
    }
    assert_eq!(
        cake::SwigluGroupedStatus::OFFSETS_PAST_TOKENS.name(),
        Some("OFFSETS_PAST_TOKENS")
    );
    assert_eq!(cake::SwigluGroupedStatus(3).name(), None);
}

#[test]
fn swiglu_grouped_query_without_gpu_says_why() {
    let h = match Handle::new(0) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mx = cake::SwigluMxfp8GroupedDesc::new(16384, 2048, 64, Orientation::BOTH);
    let f8 = cake::SwigluFp8GroupedDesc::new(16384, 2048, 64, Orientation::BOTH);
    for (got, part) in [
        (h.swiglu_mxfp8_grouped_query(&mx, true), "swg_bwd_both"),
        (h.swiglu_fp8_grouped_query(&f8, false), "sw8g_fwd_both"),
    ] {
        match got {
            Ok(info) => assert!(info.name.contains(part), "{} for {part}", info.name),
            Err(e) => assert_eq!(e.status(), Status::NOT_IN_LIBRARY, "{e}"),
        }
    }
}
