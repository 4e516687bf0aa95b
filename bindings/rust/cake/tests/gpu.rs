//! GPU tests: they run the kernels through the safe wrapper on device memory from cuda-min and
//! check against float64 host references. Where they cannot run they are reported as ignored,
//! never as passed: they are compiled in only where the build script saw an NVIDIA driver (or
//! CAKE_GPU_TESTS=1; CAKE_GPU_TESTS=0 leaves them out), and then a missing device fails them.
use cake::{
    DType, Fp8ScaleRule, Handle, Mxfp8Outputs, NormgateBackwardArgs, NormgateDesc, NormgatePackage,
    NormgateQuantDesc, NormgateQuantFormat, NormgateQuantOutputs, Orientation, SwigluMxfp8Desc,
};
use cuda_min::host::{bf16_ordinal, from_bf16, to_bf16, Rng};
use cuda_min::{DeviceBuffer, Driver};

fn setup() -> (Driver, Handle) {
    let drv = Driver::open(0).unwrap_or_else(|e| panic!("no usable GPU 0 (CUDA driver): {e}"));
    let h = Handle::new(0).unwrap_or_else(|e| panic!("cake::Handle::new(0): {e}"));
    (drv, h)
}

fn bf16_vec(rng: &mut Rng, n: usize, scale: f64, offset: f64) -> Vec<u16> {
    (0..n)
        .map(|_| to_bf16((offset + scale * rng.normal()) as f32))
        .collect()
}

/// The four output buffers of a SwiGLU call (row_q, row_s, col_q, col_s), poisoned, and their
/// pointers.
fn outputs(
    drv: &Driver,
    q: usize,
    row_s: usize,
    col_s: usize,
) -> ([DeviceBuffer<'_>; 4], Mxfp8Outputs) {
    let bufs = [q, row_s, q, col_s].map(|n| drv.alloc(n).unwrap());
    for b in &bufs {
        b.fill(0xa5).unwrap();
    }
    let out = Mxfp8Outputs {
        row_q: bufs[0].ptr(),
        row_s: bufs[1].ptr(),
        col_q: bufs[2].ptr(),
        col_s: bufs[3].ptr(),
    };
    (bufs, out)
}

fn read_all(bufs: &[DeviceBuffer<'_>; 4]) -> [Vec<u8>; 4] {
    [0, 1, 2, 3].map(|i| bufs[i].read(bufs[i].bytes()).unwrap())
}

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

#[test]
#[cfg_attr(
    not(cake_gpu_tests),
    ignore = "no NVIDIA driver where this was built (CAKE_GPU_TESTS=1 builds it in)"
)]
fn normgate_forward_and_backward() {
    let (drv, h) = setup();
    let (rows, d) = (4096usize, 128usize);
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let x = bf16_vec(&mut rng, rows * d, 1.0, 0.0);
    let z = bf16_vec(&mut rng, rows * d, 2.0, 0.0);
    let w = bf16_vec(&mut rng, d, 0.5, 1.0);
    let dy = bf16_vec(&mut rng, rows * d, 1.0, 0.0);
    let (xd, zd, wd, dyd) = (
        drv.upload(&x).unwrap(),
        drv.upload(&z).unwrap(),
        drv.upload(&w).unwrap(),
        drv.upload(&dy).unwrap(),
    );
    let yd = drv.alloc(rows * d * 2).unwrap();
    let desc = NormgateDesc::new(rows as i64, d as i32);
    let info = h.normgate_forward_query(&desc).expect("query");
    unsafe {
        h.normgate_forward(
            &desc,
            xd.ptr(),
            zd.ptr(),
            wd.ptr(),
            yd.ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    }
    .expect("forward");
    drv.synchronize().unwrap();
    let y: Vec<u16> = yd.read(rows * d).unwrap();
    let f = |v: &[u16], i: usize| from_bf16(v[i]) as f64;
    let mut worst = 0;
    let mut rstds = vec![0.0; rows];
    for r in 0..rows {
        let ss: f64 = (0..d).map(|c| f(&x, r * d + c).powi(2)).sum();
        rstds[r] = 1.0 / (ss / d as f64 + 1e-6).sqrt();
        for c in 0..d {
            let i = r * d + c;
            let zv = f(&z, i);
            let want = f(&x, i) * rstds[r] * f(&w, c) * zv * sigmoid(zv);
            worst = worst.max((bf16_ordinal(y[i]) - bf16_ordinal(to_bf16(want as f32))).abs());
        }
    }
    assert!(
        worst <= 1,
        "forward: an element is {worst} BF16 ulps from the float64 value ({})",
        info.name
    );

    let bdesc = desc
        .clone()
        .package(NormgatePackage::DETERMINISTIC)
        .dw_dtype(DType::F32);
    let ws_bytes = match h.normgate_workspace_size(&bdesc) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("backward skipped: {e}");
            return;
        }
    };
    let ws = drv.alloc(ws_bytes).unwrap();
    ws.fill(0).unwrap();
    let (dxd, dzd, dwd) = (
        drv.alloc(rows * d * 2).unwrap(),
        drv.alloc(rows * d * 2).unwrap(),
        drv.alloc(d * 4).unwrap(),
    );
    let args = NormgateBackwardArgs {
        dy: dyd.ptr(),
        x: xd.ptr(),
        z: zd.ptr(),
        w: wd.ptr(),
        dx: dxd.ptr(),
        dz: dzd.ptr(),
        dw: dwd.ptr(),
        workspace: ws.ptr(),
        workspace_bytes: ws_bytes,
    };
    unsafe { h.normgate_backward(&bdesc, &args, std::ptr::null_mut()) }.expect("backward");
    drv.synchronize().unwrap();
    let (dx, dz, dw): (Vec<u16>, Vec<u16>, Vec<f32>) = (
        dxd.read(rows * d).unwrap(),
        dzd.read(rows * d).unwrap(),
        dwd.read(d).unwrap(),
    );
    let mut dw64 = vec![0.0f64; d];
    let (mut e2, mut r2) = (0.0, 0.0);
    for r in 0..rows {
        let mut g = vec![0.0; d];
        let mut n = vec![0.0; d];
        let mut want_dz = vec![0.0; d];
        let mut mean_gn = 0.0;
        for c in 0..d {
            let i = r * d + c;
            let (zv, s) = (f(&z, i), sigmoid(f(&z, i)));
            n[c] = f(&x, i) * rstds[r];
            let a = f(&dy, i) * zv * s;
            g[c] = a * f(&w, c);
            dw64[c] += a * n[c];
            want_dz[c] = f(&dy, i) * n[c] * f(&w, c) * s * (1.0 + zv * (1.0 - s));
            mean_gn += g[c] * n[c] / d as f64;
        }
        let want_dx: Vec<f64> = (0..d).map(|c| rstds[r] * (g[c] - n[c] * mean_gn)).collect();
        for (got, want) in [(&dx, &want_dx), (&dz, &want_dz)] {
            let row_max = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for c in 0..d {
                let (gv, wv) = (f(got, r * d + c), want[c]);
                let ulp = if wv == 0.0 {
                    0.0
                } else {
                    2f64.powi(wv.abs().log2().floor() as i32 - 7)
                };
                let err = (gv - wv).abs();
                assert!(
                    err <= ulp || err <= row_max * 2f64.powi(-10),
                    "row {r} col {c}: {gv} vs {wv}"
                );
                e2 += err * err;
                r2 += wv * wv;
            }
        }
    }
    assert!((e2 / r2).sqrt() <= 2e-3);
    let (mut de2, mut dr2) = (0.0, 0.0);
    for c in 0..d {
        de2 += (dw[c] as f64 - dw64[c]).powi(2);
        dr2 += dw64[c].powi(2);
    }
    assert!(
        (de2 / dr2).sqrt() <= 1e-5,
        "dw relative L2 {}",
        (de2 / dr2).sqrt()
    );
}

fn e4m3(b: u8) -> f64 {
    let (s, e, m) = (
        if b & 0x80 != 0 { -1.0 } else { 1.0 },
        ((b >> 3) & 0xF) as i32,
        (b & 7) as f64,
    );
    if e == 0xF && m == 7.0 {
        return f64::NAN;
    }
    s * if e == 0 {
        m * 2f64.powi(-9)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    }
}

#[test]
#[cfg_attr(
    not(cake_gpu_tests),
    ignore = "no NVIDIA driver where this was built (CAKE_GPU_TESTS=1 builds it in)"
)]
fn swiglu_mxfp8_forward_rowwise_and_colwise() {
    let (drv, h) = setup();
    let (m, k) = (256usize, 512usize);
    let desc = SwigluMxfp8Desc::new(m as i64, k as i64, Orientation::BOTH);
    let sizes = match cake::swiglu_mxfp8_buffer_sizes(&desc, false) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mut rng = Rng(42);
    let input = bf16_vec(&mut rng, m * 2 * k, 3.0, 0.0);
    let ind = drv.upload(&input).unwrap();
    let (bufs, out) = outputs(&drv, sizes.q_bytes, sizes.row_s_bytes, sizes.col_s_bytes);
    unsafe { h.swiglu_mxfp8_forward(&desc, ind.ptr(), out, std::ptr::null_mut()) }
        .expect("forward");
    drv.synchronize().unwrap();
    let [rq, rs, cq, cs] = read_all(&bufs);
    let yv = |r: usize, c: usize| {
        let (g, u) = (
            from_bf16(input[r * 2 * k + c]) as f64,
            from_bf16(input[r * 2 * k + k + c]) as f64,
        );
        from_bf16(to_bf16((g * sigmoid(g) * u) as f32)) as f64
    };
    let (mut e2, mut r2, mut gaps) = (0.0, 0.0, 0usize);
    for r in 0..m {
        for c in 0..k {
            let want = yv(r, c);
            // rowwise: scale of (r, c/32); colwise: the transpose, scale of (c, r/32)
            let srow = rs[cake::swizzled_scale_offset(r, c / 32, k / 32)] as i32;
            let scol = cs[cake::swizzled_scale_offset(c, r / 32, m / 32)] as i32;
            for (q, s) in [(rq[r * k + c], srow), (cq[c * m + r], scol)] {
                let got = e4m3(q) * 2f64.powi(s - 127);
                e2 += (got - want).powi(2);
                r2 += want * want;
            }
            let amax = (0..32)
                .map(|j| yv(r, c / 32 * 32 + j).abs())
                .fold(0.0, f64::max);
            let bits = (amax as f32).to_bits() as i64;
            let want_s = (((bits + 0x001F_0000) >> 23) - 8).max(0) as i32;
            if (srow - want_s).abs() > 0 {
                gaps += 1;
                assert!(
                    (srow - want_s).abs() <= 1,
                    "row {r} block {}: scale {srow} vs {want_s}",
                    c / 32
                );
            }
        }
    }
    assert!(gaps <= 64, "{gaps} scale differences");
    assert!(
        (e2 / r2).sqrt() <= 0.05,
        "dequantized relative L2 {}",
        (e2 / r2).sqrt()
    );
}

#[test]
#[cfg_attr(
    not(cake_gpu_tests),
    ignore = "no NVIDIA driver where this was built (CAKE_GPU_TESTS=1 builds it in)"
)]
fn swiglu_fp8_forward_rowwise_and_colwise() {
    let (drv, h) = setup();
    let (m, k) = (256usize, 384usize);
    let desc = cake::SwigluFp8Desc::new(m as i64, k as i64, Orientation::BOTH);
    let sizes = match cake::swiglu_fp8_buffer_sizes(&desc, false) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mut rng = Rng(7);
    let input = bf16_vec(&mut rng, m * 2 * k, 3.0, 0.0);
    let ind = drv.upload(&input).unwrap();
    let (bufs, out) = outputs(&drv, sizes.q_bytes, sizes.row_s_bytes, sizes.col_s_bytes);
    unsafe { h.swiglu_fp8_forward(&desc, ind.ptr(), out, std::ptr::null_mut()) }.expect("forward");
    drv.synchronize().unwrap();
    let [rq, rs, cq, cs] = read_all(&bufs);
    let f32_at = |v: &[u8], i: usize| f32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap());
    let (mut e2, mut r2) = (0.0, 0.0);
    for r in 0..m {
        for c in 0..k {
            let (g, u) = (
                from_bf16(input[r * 2 * k + c]) as f64,
                from_bf16(input[r * 2 * k + k + c]) as f64,
            );
            let want = from_bf16(to_bf16((g * sigmoid(g) * u) as f32)) as f64;
            // MN-major FP32 scales: rowwise (r, c/128) at (c/128)*m + r, colwise (c, r/128) at
            // (r/128)*k + c (docs/spec/fp8-blockwise.md).
            let srow = f32_at(&rs, (c / 128) * m + r) as f64;
            let scol = f32_at(&cs, (r / 128) * k + c) as f64;
            assert!(srow >= 2f64.powi(-126) && scol >= 2f64.powi(-126));
            for got in [e4m3(rq[r * k + c]) * srow, e4m3(cq[c * m + r]) * scol] {
                e2 += (got - want).powi(2);
                r2 += want * want;
            }
        }
    }
    assert!(
        (e2 / r2).sqrt() <= 0.05,
        "dequantized relative L2 {}",
        (e2 / r2).sqrt()
    );
}

/// E4M3 (OCP E4M3FN) of a finite f32: round to nearest even, saturating at 448; the sign kept
/// for values that round to zero.
fn e4m3_rn_satfinite(v: f32) -> u8 {
    let sign = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = v.abs() as f64;
    if a >= 448.0 {
        return sign | 0x7E;
    }
    // The codes 0..=0x7E are increasing; the nearest, ties to the even code (mantissa bit 0).
    let hi = (0u8..=0x7E).find(|&c| e4m3(c) >= a).unwrap_or(0x7E);
    if hi == 0 || e4m3(hi) == a {
        return sign | hi;
    }
    let lo = hi - 1;
    let (dl, dh) = (a - e4m3(lo), e4m3(hi) - a);
    sign | if dl < dh || (dl == dh && lo % 2 == 0) {
        lo
    } else {
        hi
    }
}

/// The spec's bytes of the quantized y (docs/spec/normgate.md, "Quantized y") from the BF16 y
/// [rows, d] viewed as [rows / heads, heads * d]: (q, scale bytes). Finite y only.
fn quant_model(
    y: &[u16],
    k: usize,
    format: NormgateQuantFormat,
    rule: Fp8ScaleRule,
) -> (Vec<u8>, Vec<u8>) {
    let t = y.len() / k;
    let v = |i: usize| from_bf16(y[i]);
    let mut q = vec![0u8; y.len()];
    if format == NormgateQuantFormat::FP8_BLOCKWISE {
        let mut s = vec![0u8; 4 * t * (k / 128)];
        for r in 0..t {
            for j in 0..k / 128 {
                let base = r * k + j * 128;
                let amax = (0..128).map(|c| v(base + c).abs()).fold(0.0f32, f32::max);
                let a = amax.max(448.0 * 2f32.powi(-126));
                let (scale, mult) = if rule == Fp8ScaleRule::POW2 {
                    let e = ((((a.to_bits() >> 16) << 16) + 0x001F_0000) >> 23) - 8;
                    (f32::from_bits(e << 23), f32::from_bits((254 - e) << 23))
                } else {
                    (a / 448.0, 448.0 / a)
                };
                let at = 4 * (j * t + r); // MN-major: scale (r, j) at j * T + r
                s[at..at + 4].copy_from_slice(&scale.to_le_bytes());
                for c in 0..128 {
                    q[base + c] = e4m3_rn_satfinite(v(base + c) * mult);
                }
            }
        }
        return (q, s);
    }
    let (cols, cp) = (k / 32, (k / 32).div_ceil(4) * 4);
    let mut s = vec![0u8; t.div_ceil(128) * 128 * cp]; // padding 0x00
    for r in 0..t {
        for j in 0..cols {
            let base = r * k + j * 32;
            let amax = (0..32).map(|c| v(base + c).abs()).fold(0.0f32, f32::max);
            let e = ((amax.to_bits() as i64 + 0x001F_0000) >> 23) - 8;
            let e = e.max(0) as i32;
            s[cake::swizzled_scale_offset(r, j, cols)] = e as u8;
            for c in 0..32 {
                let scaled = from_bf16(to_bf16(v(base + c) * 2f32.powi(127 - e)));
                q[base + c] = e4m3_rn_satfinite(scaled);
            }
        }
    }
    (q, s)
}

#[test]
#[cfg_attr(
    not(cake_gpu_tests),
    ignore = "no NVIDIA driver where this was built (CAKE_GPU_TESTS=1 builds it in)"
)]
fn normgate_forward_quantized_bytes() {
    let (drv, h) = setup();
    let cases = [
        (
            2400usize,
            128usize,
            8i64,
            NormgateQuantFormat::FP8_BLOCKWISE,
            Fp8ScaleRule::EXACT,
        ),
        (
            777,
            256,
            1,
            NormgateQuantFormat::FP8_BLOCKWISE,
            Fp8ScaleRule::POW2,
        ),
        (
            2400,
            128,
            8,
            NormgateQuantFormat::MXFP8,
            Fp8ScaleRule::EXACT,
        ),
        (777, 96, 1, NormgateQuantFormat::MXFP8, Fp8ScaleRule::EXACT),
    ];
    for (rows, d, heads, format, rule) in cases {
        let mut rng = Rng(0x5eed ^ rows as u64 ^ d as u64);
        let x = bf16_vec(&mut rng, rows * d, 1.0, 0.0);
        let z = bf16_vec(&mut rng, rows * d, 2.0, 0.0);
        let w = bf16_vec(&mut rng, d, 0.5, 1.0);
        let (xd, zd, wd) = (
            drv.upload(&x).unwrap(),
            drv.upload(&z).unwrap(),
            drv.upload(&w).unwrap(),
        );
        let desc = NormgateDesc::new(rows as i64, d as i32);
        let quant = NormgateQuantDesc::new(format).scale_rule(rule).heads(heads);
        let sizes = match cake::normgate_quant_buffer_sizes(&desc, &quant) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        // The plain forward's y, then the quantized call into poisoned buffers.
        let (y_plain, y_q) = (
            drv.alloc(rows * d * 2).unwrap(),
            drv.alloc(rows * d * 2).unwrap(),
        );
        let (qd, sd) = (
            drv.alloc(sizes.q_bytes).unwrap(),
            drv.alloc(sizes.s_bytes).unwrap(),
        );
        for b in [&y_q, &qd, &sd] {
            b.fill(0xA5).unwrap();
        }
        let info = h
            .normgate_forward_quantized_query(&desc, &quant)
            .expect("query");
        let (no_rstd, stream) = (std::ptr::null_mut(), std::ptr::null_mut());
        unsafe {
            let (x, z, w) = (xd.ptr(), zd.ptr(), wd.ptr());
            h.normgate_forward(&desc, x, z, w, y_plain.ptr(), no_rstd, stream)
                .expect("forward");
            let out = NormgateQuantOutputs {
                q: qd.ptr(),
                q_scale: sd.ptr(),
            };
            h.normgate_forward_quantized(&desc, &quant, x, z, w, y_q.ptr(), no_rstd, out, stream)
                .expect("forward_quantized");
        }
        drv.synchronize().unwrap();
        let y: Vec<u16> = y_plain.read(rows * d).unwrap();
        assert_eq!(y, y_q.read::<u16>(rows * d).unwrap(), "{}: y", info.name);
        let (q_want, s_want) = quant_model(&y, sizes.q_cols as usize, format, rule);
        let q: Vec<u8> = qd.read(sizes.q_bytes).unwrap();
        let s: Vec<u8> = sd.read(sizes.s_bytes).unwrap();
        let diff = |a: &[u8], b: &[u8]| a.iter().zip(b).filter(|(x, y)| x != y).count();
        assert_eq!(
            diff(&q, &q_want),
            0,
            "{}: q bytes differ from the model",
            info.name
        );
        assert_eq!(
            diff(&s, &s_want),
            0,
            "{}: scale bytes differ from the model",
            info.name
        );
    }
}

/// Grouped SwiGLU + FP8 blockwise, forward both orientations over four uneven experts (one
/// empty, one of a partial colwise block): every expert's dequantized rows and columns against
/// the float64 SwiGLU, through the layouts of docs/spec/swiglu-grouped.md; the status word 0
/// for valid offsets, and the past-T bit for an offset past T.
#[test]
#[cfg_attr(
    not(cake_gpu_tests),
    ignore = "no NVIDIA driver where this was built (CAKE_GPU_TESTS=1 builds it in)"
)]
fn swiglu_fp8_grouped_forward_both() {
    let (drv, h) = setup();
    let (t, k) = (400usize, 256usize);
    let ends: [i32; 4] = [100, 100, 333, 400];
    let desc = cake::SwigluFp8GroupedDesc::new(t as i64, k as i64, 4, Orientation::BOTH);
    let sizes = match cake::swiglu_fp8_grouped_buffer_sizes(&desc, false) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mut rng = Rng(11);
    let input = bf16_vec(&mut rng, t * 2 * k, 3.0, 0.0);
    let ind = drv.upload(&input).unwrap();
    let offs = drv.upload(&ends).unwrap();
    let status = drv.upload(&[0x7f7f_7f7fi32]).unwrap();
    let (bufs, out) = outputs(&drv, sizes.q_bytes, sizes.row_s_bytes, sizes.col_s_bytes);
    // One grouped forward with the offsets in `offs`: the status word it writes.
    let run = |what: &str| -> u32 {
        unsafe {
            h.swiglu_fp8_grouped_forward(
                &desc,
                ind.ptr(),
                offs.ptr() as *const i32,
                out,
                status.ptr() as *mut i32,
                std::ptr::null_mut(),
            )
        }
        .expect(what);
        drv.synchronize().unwrap();
        status.read::<i32>(1).unwrap()[0] as u32
    };
    assert_eq!(run("grouped forward"), 0, "status of valid offsets");
    let [rq, rs, cq, cs] = read_all(&bufs);
    let f32_at = |v: &[u8], i: usize| f32::from_le_bytes(v[4 * i..4 * i + 4].try_into().unwrap());
    let (o, blocks) = (k, k / 128);
    let (mut e2, mut r2, mut start, mut p) = (0.0, 0.0, 0usize, 0usize);
    for &end in &ends {
        let n = end as usize - start;
        for r in 0..n {
            let m = start + r;
            for c in 0..o {
                let (g, u) = (
                    from_bf16(input[m * 2 * k + c]) as f64,
                    from_bf16(input[m * 2 * k + k + c]) as f64,
                );
                let want = from_bf16(to_bf16((g * sigmoid(g) * u) as f32)) as f64;
                // Expert slices: row_s [n, O/128] MN-major from element p * O/128; col_q the
                // expert's [O, n] from byte start * O; col_s from element (p / 128) * O.
                let srow = f32_at(&rs, p * blocks + (c / 128) * n + r) as f64;
                let scol = f32_at(&cs, (p / 128 + r / 128) * o + c) as f64;
                assert!(srow >= 2f64.powi(-126) && scol >= 2f64.powi(-126));
                let (qr, qc) = (rq[m * o + c], cq[start * o + c * n + r]);
                for got in [e4m3(qr) * srow, e4m3(qc) * scol] {
                    e2 += (got - want).powi(2);
                    r2 += want * want;
                }
            }
        }
        start = end as usize;
        p += n.div_ceil(128) * 128;
    }
    assert!(
        (e2 / r2).sqrt() <= 0.05,
        "dequantized relative L2 {}",
        (e2 / r2).sqrt()
    );

    // An offset past T: still a defined result, and the status word says so.
    offs.write(&[100i32, 100, 333, 405]).unwrap();
    let word = run("grouped forward, offset past T");
    assert_ne!(
        word & cake::SwigluGroupedStatus::OFFSETS_PAST_TOKENS.0,
        0,
        "status {word:#x}"
    );
}
