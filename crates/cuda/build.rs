//! Builds kernels/zkforge.cu into one fatbin when the `cuda` feature is on; otherwise nothing.

use std::collections::hash_map::DefaultHasher;
use std::env;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

const SPPARK_DIR: &str = "sppark-0.1.16";
/// SASS for every card a provider owns (nvcc 13.0 takes each): Turing (T4, RTX 20xx, Quadro
/// RTX: 75), Ampere (A100: 80; A10, A40, RTX 30xx: 86), Ada (L4, L40, RTX 40xx: 89), Hopper
/// (H100, H200: 90), Blackwell (B200: 100; RTX 50xx, RTX PRO 6000: 120); PTX for the newest, so
/// that a later card JITs it once (`zkforge_cuda::archs`, `zkforge doctor`).
const DEFAULT_ARCHS: &str = "75,80,86,89,90,100,120";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_CUDA").is_none() {
        embedded_code(&[], None);
        return;
    }
    println!("cargo:rerun-if-changed=kernels");
    for v in [
        "NVCC",
        "SPPARK_DIR",
        "ZKFORGE_CUDA_ARCHS",
        "ZKFORGE_CUDA_STUB",
        "CARGO_HOME",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let out = out_dir.join("zkforge.fatbin");
    // For `cargo clippy --all-features` on machines without nvcc: an empty image, which
    // CudaDevice::open reports as CudaError::NotBuilt.
    if env::var_os("ZKFORGE_CUDA_STUB").is_some() {
        std::fs::write(&out, b"").unwrap();
        embedded_code(&[], None);
        return;
    }
    let nvcc = env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let sppark = find_sppark().unwrap_or_else(|| {
        panic!(
            "sppark {SPPARK_DIR} headers not found: set SPPARK_DIR=<.../sppark> or run \
             scripts/install-cuda-toolkit.sh, which fetches the crate into the cargo registry"
        )
    });
    // SASS for every listed arch plus PTX for the newest, so later GPUs can still JIT it.
    let archs = env::var("ZKFORGE_CUDA_ARCHS").unwrap_or_else(|_| DEFAULT_ARCHS.into());
    let mut args: Vec<String> = [
        "-fatbin",
        "-std=c++17",
        "-O3",
        "--expt-relaxed-constexpr",
        "--threads",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("-I{}", sppark.display()));
    let sass: Vec<u32> = archs
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| {
            a.parse().unwrap_or_else(|_| {
                panic!("ZKFORGE_CUDA_ARCHS = {archs:?}: comma-separated numbers like 90, not {a:?}")
            })
        })
        .collect();
    let newest = sass
        .iter()
        .copied()
        .max()
        .expect("ZKFORGE_CUDA_ARCHS lists no arch");
    for a in &sass {
        args.push(format!("-gencode=arch=compute_{a},code=sm_{a}"));
    }
    args.push(format!(
        "-gencode=arch=compute_{newest},code=compute_{newest}"
    ));
    embedded_code(&sass, Some(newest));

    // nvcc takes minutes for the big-integer kernels: skip it when nothing it reads changed.
    let stamp_path = out_dir.join("zkforge.fatbin.stamp");
    let stamp = stamp(&nvcc, &args, Path::new("kernels"));
    if out.exists() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str())
    {
        return;
    }
    let status = Command::new(&nvcc)
        .args(&args)
        .arg("-o")
        .arg(&out)
        .arg("kernels/zkforge.cu")
        .status()
        .unwrap_or_else(|e| panic!("cannot run nvcc ({nvcc}): {e}; set NVCC or put nvcc on PATH"));
    assert!(status.success(), "nvcc failed on kernels/zkforge.cu");
    std::fs::write(&stamp_path, stamp).unwrap();
}

/// What the fatbin carries, for `zkforge doctor` (`zkforge_cuda::archs`): the SASS archs and
/// the PTX's, each empty where the build has no kernels. Printed on every run of this script,
/// since cargo keeps only the last run's instructions.
fn embedded_code(sass: &[u32], ptx: Option<u32>) {
    let list: Vec<String> = sass.iter().map(u32::to_string).collect();
    println!("cargo:rustc-env=ZKFORGE_CUDA_SASS={}", list.join(","));
    println!(
        "cargo:rustc-env=ZKFORGE_CUDA_PTX={}",
        ptx.map(|p| p.to_string()).unwrap_or_default()
    );
}

fn stamp(nvcc: &str, args: &[String], dir: &Path) -> String {
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.sort();
    let mut h = DefaultHasher::new();
    (nvcc, args).hash(&mut h);
    for f in files {
        f.hash(&mut h);
        std::fs::read(&f).unwrap_or_default().hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn find_sppark() -> Option<PathBuf> {
    if let Ok(dir) = env::var("SPPARK_DIR") {
        return Some(PathBuf::from(dir));
    }
    let home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    let src = home.join("registry").join("src");
    for entry in std::fs::read_dir(src).ok()?.flatten() {
        let cand = entry.path().join(SPPARK_DIR).join("sppark");
        if cand.join("ff").join("bls12-381.hpp").exists() {
            return Some(cand);
        }
    }
    None
}
