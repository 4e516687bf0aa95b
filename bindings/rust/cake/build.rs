//! Turns cake-sys's report of the linked libcake.so's exports (DEP_CAKE_HAS_<NAME>) into cfgs
//! `cake_has_<name>` for the functions added after Cake 0.1's first release, and a list for
//! `cake::library_has`. Also puts the library's directory in the rpath of this package's tests,
//! so they run from the build tree without LD_LIBRARY_PATH, and compiles the GPU tests in only
//! where they can run (gpu_tests()).
use std::env;
use std::fs;
use std::path::Path;

const OPTIONAL: &[&str] = &[
    "cake_table_program_init",
    "cake_table_route_init",
    "cake_table_counts",
    "cake_table_program_get",
    "cake_table_route_get",
    "cake_normgate_workspace_size",
    "cake_normgate_backward",
    "cake_normgate_backward_query",
    "cake_swiglu_mxfp8_desc_init",
    "cake_swiglu_mxfp8_sizes_init",
    "cake_swiglu_mxfp8_buffer_sizes",
    "cake_swiglu_mxfp8_forward",
    "cake_swiglu_mxfp8_backward",
    "cake_swiglu_mxfp8_query",
    "cake_swiglu_fp8_desc_init",
    "cake_swiglu_fp8_sizes_init",
    "cake_swiglu_fp8_buffer_sizes",
    "cake_swiglu_fp8_forward",
    "cake_swiglu_fp8_backward",
    "cake_swiglu_fp8_query",
    "cake_normgate_quant_desc_init",
    "cake_normgate_quant_sizes_init",
    "cake_normgate_quant_buffer_sizes",
    "cake_normgate_forward_quantized",
    "cake_normgate_forward_quantized_query",
    "cake_swiglu_mxfp8_grouped_desc_init",
    "cake_swiglu_fp8_grouped_desc_init",
    "cake_swiglu_grouped_sizes_init",
    "cake_swiglu_mxfp8_grouped_buffer_sizes",
    "cake_swiglu_fp8_grouped_buffer_sizes",
    "cake_swiglu_mxfp8_grouped_forward",
    "cake_swiglu_mxfp8_grouped_backward",
    "cake_swiglu_mxfp8_grouped_query",
    "cake_swiglu_fp8_grouped_forward",
    "cake_swiglu_fp8_grouped_backward",
    "cake_swiglu_fp8_grouped_query",
];

fn main() {
    let mut exported = Vec::new();
    for (key, _) in env::vars() {
        if let Some(name) = key.strip_prefix("DEP_CAKE_HAS_") {
            exported.push(name.to_ascii_lowercase());
        }
    }
    exported.sort();
    for f in OPTIONAL {
        println!("cargo:rustc-check-cfg=cfg(cake_has_{f})");
        if exported.iter().any(|e| e == f) {
            println!("cargo:rustc-cfg=cake_has_{f}");
        }
    }
    let list = format!(
        "[{}]",
        exported
            .iter()
            .map(|e| format!("{e:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let out = Path::new(&env::var("OUT_DIR").unwrap_or_default()).join("exported.rs");
    if let Err(e) = fs::write(&out, format!("{list} as [&str; {}]", exported.len())) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
    if let Ok(dir) = env::var("DEP_CAKE_LIB_DIR") {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
    }
    gpu_tests();
}

/// cfg `cake_gpu_tests`: the GPU tests are compiled in (else cargo reports them as ignored).
/// CAKE_GPU_TESTS=1 or 0 decides; unset, an NVIDIA driver on this machine does.
fn gpu_tests() {
    println!("cargo:rustc-check-cfg=cfg(cake_gpu_tests)");
    println!("cargo:rerun-if-env-changed=CAKE_GPU_TESTS");
    let on = match env::var("CAKE_GPU_TESTS").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => Path::new("/proc/driver/nvidia/version").exists(),
    };
    if on {
        println!("cargo:rustc-cfg=cake_gpu_tests");
    }
}
