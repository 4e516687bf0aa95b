// Puts libcake.so's directory (CAKE_LIB_DIR, default <repo>/build/lib) in the binary's rpath.
fn main() {
    println!("cargo:rerun-if-env-changed=CAKE_LIB_DIR");
    let dir = std::env::var("CAKE_LIB_DIR").unwrap_or_else(|_| {
        format!(
            "{}/../../build/lib",
            std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()
        )
    });
    let dir = std::fs::canonicalize(&dir)
        .map(|p| p.display().to_string())
        .unwrap_or(dir);
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{dir}");
}
