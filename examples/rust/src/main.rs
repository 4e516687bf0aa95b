//! Cake from Rust: a Gated DeltaNet output norm (norm-gate forward and backward) and a SwiGLU +
//! MXFP8 forward, on device memory from cuda-min, checked against float64 on the host.
//! Exits 0 when every check passes, 2 without a GPU.
use cake::{
    DType, Handle, Mxfp8Outputs, NormgateBackwardArgs, NormgateDesc, Orientation, SwigluMxfp8Desc,
};
use cuda_min::host::{from_bf16, to_bf16, Rng};
use cuda_min::Driver;
use std::process::ExitCode;

fn sigmoid(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

fn rel(got: &[f64], want: &[f64]) -> f64 {
    let e: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
    let r: f64 = want.iter().map(|w| w * w).sum();
    (e / r).sqrt()
}

fn run() -> Result<bool, String> {
    let drv = Driver::open(0)?;
    let h = Handle::new(0).map_err(|e| e.to_string())?;
    let info = h.device_info().map_err(|e| e.to_string())?;
    let (ma, mi, pa) = cake::version();
    println!(
        "Cake {ma}.{mi}.{pa} on {} (table {:?}, {} programs)",
        info.device_name, info.table, info.program_count
    );
    let mut ok = true;

    // Norm-gate: 2048 tokens x 16 heads, D = 128.
    let (rows, d) = (2048 * 16usize, 128usize);
    let mut rng = Rng(7);
    let mut gen = |n: usize, s: f64, o: f64| -> Vec<u16> {
        (0..n)
            .map(|_| to_bf16((o + s * rng.normal()) as f32))
            .collect()
    };
    let (x, z, w, dy) = (
        gen(rows * d, 1.0, 0.0),
        gen(rows * d, 2.0, 0.0),
        gen(d, 0.5, 1.0),
        gen(rows * d, 1.0, 0.0),
    );
    let up = |v: &[u16]| drv.upload(v);
    let (xd, zd, wd, dyd) = (up(&x)?, up(&z)?, up(&w)?, up(&dy)?);
    let yd = drv.alloc(rows * d * 2)?;
    let desc = NormgateDesc::new(rows as i64, d as i32).dw_dtype(DType::F32);
    let prog = h.normgate_forward_query(&desc).map_err(|e| e.to_string())?;
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
    .map_err(|e| e.to_string())?;
    drv.synchronize()?;
    let y: Vec<u16> = yd.read(rows * d)?;
    let f = |v: &[u16], i: usize| from_bf16(v[i]) as f64;
    let mut want_y = Vec::with_capacity(rows * d);
    let mut want_dw = vec![0.0; d];
    for r in 0..rows {
        let rstd =
            1.0 / ((0..d).map(|c| f(&x, r * d + c).powi(2)).sum::<f64>() / d as f64 + 1e-6).sqrt();
        for c in 0..d {
            let i = r * d + c;
            let (n, zv) = (f(&x, i) * rstd, f(&z, i));
            want_y.push(n * f(&w, c) * zv * sigmoid(zv));
            want_dw[c] += f(&dy, i) * zv * sigmoid(zv) * n;
        }
    }
    let got_y: Vec<f64> = (0..rows * d).map(|i| f(&y, i)).collect();
    let e = rel(&got_y, &want_y);
    println!(
        "normgate forward   {rows} x {d}  program {}  rel. L2 error {e:.1e}",
        prog.name
    );
    ok &= e <= 2e-3;

    match h.normgate_workspace_size(&desc) {
        Ok(ws_bytes) => {
            let ws = drv.alloc(ws_bytes)?;
            ws.fill(0)?; // once; Cake leaves it zeroed
            let (dxd, dzd, dwd) = (
                drv.alloc(rows * d * 2)?,
                drv.alloc(rows * d * 2)?,
                drv.alloc(d * 4)?,
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
            unsafe { h.normgate_backward(&desc, &args, std::ptr::null_mut()) }
                .map_err(|e| e.to_string())?;
            drv.synchronize()?;
            let dw: Vec<f32> = dwd.read(d)?;
            let e = rel(&dw.iter().map(|&v| v as f64).collect::<Vec<_>>(), &want_dw);
            println!("normgate backward  FP32 dw  rel. L2 error {e:.1e}  ({ws_bytes} bytes of workspace)");
            ok &= e <= 1e-5;
        }
        Err(e) => println!("normgate backward  skipped: {e}"),
    }

    // SwiGLU + MXFP8 forward, both orientations.
    let (m, k) = (1024usize, 2048usize);
    let sdesc = SwigluMxfp8Desc::new(m as i64, k as i64, Orientation::BOTH);
    match cake::swiglu_mxfp8_buffer_sizes(&sdesc, false) {
        Ok(sizes) => {
            let input = gen(m * 2 * k, 3.0, 0.0);
            let ind = up(&input)?;
            let (rq, rs) = (drv.alloc(sizes.q_bytes)?, drv.alloc(sizes.row_s_bytes)?);
            let (cq, cs) = (drv.alloc(sizes.q_bytes)?, drv.alloc(sizes.col_s_bytes)?);
            let out = Mxfp8Outputs {
                row_q: rq.ptr(),
                row_s: rs.ptr(),
                col_q: cq.ptr(),
                col_s: cs.ptr(),
            };
            unsafe { h.swiglu_mxfp8_forward(&sdesc, ind.ptr(), out, std::ptr::null_mut()) }
                .map_err(|e| e.to_string())?;
            drv.synchronize()?;
            let (q, s): (Vec<u8>, Vec<u8>) = (rq.read(sizes.q_bytes)?, rs.read(sizes.row_s_bytes)?);
            let e4m3 = |b: u8| {
                let (e, mt) = (((b >> 3) & 0xF) as i32, (b & 7) as f64);
                let v = if e == 0 {
                    mt * 2f64.powi(-9)
                } else {
                    (1.0 + mt / 8.0) * 2f64.powi(e - 7)
                };
                if b & 0x80 != 0 {
                    -v
                } else {
                    v
                }
            };
            let mut got = Vec::with_capacity(m * k);
            let mut want = Vec::with_capacity(m * k);
            for r in 0..m {
                for c in 0..k {
                    let (g, u) = (f(&input, r * 2 * k + c), f(&input, r * 2 * k + k + c));
                    want.push(g * sigmoid(g) * u);
                    let sc = s[cake::swizzled_scale_offset(r, c / 32, k / 32)] as i32;
                    got.push(e4m3(q[r * k + c]) * 2f64.powi(sc - 127));
                }
            }
            let e = rel(&got, &want);
            println!("swiglu+mxfp8 fwd   {m} x {} -> E4M3 rowwise + colwise; dequantized rel. L2 error {e:.1e}", 2 * k);
            ok &= e <= 0.05;
        }
        Err(e) => println!("swiglu+mxfp8 fwd   skipped: {e}"),
    }
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => {
            println!("all checks passed");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            println!("CHECKS FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("cake-rust-demo: {e}");
            ExitCode::from(2)
        }
    }
}
