//! Finds libcake.so, links it, and says which one: an explicit CAKE_LIB_DIR (the folder holding
//! libcake.so), else pkg-config's `cake` (the cake.pc that `cmake --install` puts in
//! <prefix>/lib/pkgconfig; PKG_CONFIG_PATH finds a prefix of your own), else a build error that
//! names both. No other folder is guessed.
//!
//! Tells dependents which of cake.h's functions that library exports: for each exported `cake_*`
//! function `cargo:has_<name>=1`, read by dependents as `DEP_CAKE_HAS_<NAME>` (this package
//! `links = "cake"`). That lets the `cake` crate build against a library older than the header.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

/// The folder of libcake.so and a sentence saying how it was found.
fn find_library() -> Result<(PathBuf, String), String> {
    if let Some(d) = env::var_os("CAKE_LIB_DIR") {
        let dir = PathBuf::from(&d);
        return Ok((dir.clone(), format!("CAKE_LIB_DIR={}", dir.display())));
    }
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let query = |args: &[&str]| -> Result<String, String> {
        let out = Command::new(&pkg_config)
            .args(args)
            .output()
            .map_err(|e| format!("{pkg_config} did not run ({e})"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(if err.is_empty() {
                format!("{pkg_config} finds no cake.pc")
            } else {
                format!("{pkg_config}: {err}")
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let libdir = query(&["--variable=libdir", "cake"])?;
    let version = query(&["--modversion", "cake"])?;
    let pc_path = env::var("PKG_CONFIG_PATH").unwrap_or_default();
    Ok((
        PathBuf::from(&libdir),
        format!("pkg-config: cake {version} (PKG_CONFIG_PATH={pc_path})"),
    ))
}

fn main() {
    println!("cargo:rerun-if-env-changed=CAKE_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    let (dir, how) = match find_library() {
        Ok(found) => found,
        Err(why) => panic!(
            "cake-sys: libcake.so not found: CAKE_LIB_DIR is not set and pkg-config has no \
             `cake` ({why}). Set CAKE_LIB_DIR to the folder holding libcake.so (a build: \
             <build>/lib), or install Cake (cmake --install build --prefix P) and add \
             P/lib/pkgconfig to PKG_CONFIG_PATH."
        ),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let so = dir.join("libcake.so");
    if !so.exists() {
        panic!("cake-sys: {} does not exist (found through {how})", so.display());
    }
    println!("cargo:warning=cake-sys: linking {} (found through {how})", so.display());
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=dylib=cake");
    println!("cargo:lib_dir={}", dir.display());
    println!("cargo:rerun-if-changed={}", so.display());
    match fs::read(&so).ok().and_then(|b| dynamic_symbols(&b)) {
        Some(symbols) => {
            for s in symbols.iter().filter(|s| s.starts_with("cake_")) {
                println!("cargo:has_{}=1", s);
            }
        }
        None => panic!("cake-sys: {} is not an ELF64 shared library", so.display()),
    }
}

/// Names of the defined symbols in an ELF64 little-endian shared object's .dynsym (version
/// suffixes are in .gnu.version, not in the names). None if the file is not such an object.
fn dynamic_symbols(b: &[u8]) -> Option<Vec<String>> {
    let u16_at =
        |o: usize| -> Option<u16> { Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?)) };
    let u32_at =
        |o: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?)) };
    let u64_at =
        |o: usize| -> Option<u64> { Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?)) };
    if b.get(0..4)? != b"\x7fELF" || *b.get(4)? != 2 || *b.get(5)? != 1 {
        return None; // not ELF64 little-endian
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3A)? as usize;
    let shnum = u16_at(0x3C)? as usize;
    let section = |i: usize| -> Option<(u32, usize, usize, usize)> {
        let h = shoff + i * shentsize;
        Some((
            u32_at(h + 4)?,
            u64_at(h + 0x18)? as usize,
            u64_at(h + 0x20)? as usize,
            u32_at(h + 0x28)? as usize,
        ))
    };
    const SHT_DYNSYM: u32 = 11;
    for i in 0..shnum {
        let (kind, off, size, link) = section(i)?;
        if kind != SHT_DYNSYM {
            continue;
        }
        let (_, str_off, str_size, _) = section(link)?;
        let strtab = b.get(str_off..str_off + str_size)?;
        let mut names = Vec::new();
        for s in (off..off + size).step_by(24) {
            let name = u32_at(s)? as usize;
            let shndx = u16_at(s + 6)?;
            if shndx == 0 || name >= strtab.len() {
                continue; // undefined here
            }
            let end = strtab[name..].iter().position(|&c| c == 0)? + name;
            names.push(String::from_utf8_lossy(&strtab[name..end]).into_owned());
        }
        return Some(names);
    }
    None
}
