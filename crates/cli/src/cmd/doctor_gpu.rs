//! `zkforge doctor`'s GPUs: each card the driver reports (read without loading the kernels,
//! so a card this binary has no code for is still named), whether this binary runs it
//! natively or by JIT, its PCIe link as sysfs reports it, and the pinned host-to-device rate
//! the CUDA backend measured when it opened the card.

use std::path::Path;

use zkforge_cuda::archs::{self, CodeFor};
use zkforge_cuda::{CudaError, GpuProbe};
use zkforge_groth16::DeviceInfo;

use super::doctor::gib;

/// Below this pinned rate a link is slow for streamed keys: a PCIe 4 x16 link moves ~25 GB/s,
/// PCIe 5 ~55 (docs/perf.md); x8 or a PCIe 3 slot moves half as much or less.
const SLOW_LINK_BYTES_PER_S: f64 = 20e9;

/// A PCIe link's speed (GT/s a lane) and width (lanes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Link {
    pub gts: f64,
    pub width: u32,
}

impl Link {
    /// The PCIe generation of a lane rate: 2.5 GT/s is gen 1, doubling since (8 for gen 3).
    pub fn generation(&self) -> Option<u32> {
        [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
            .iter()
            .position(|&g| (self.gts - g).abs() < 0.01)
            .map(|i| i as u32 + 1)
    }
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.generation() {
            Some(g) => write!(f, "gen {g} x{}", self.width),
            None => write!(f, "{} GT/s x{}", self.gts, self.width),
        }
    }
}

/// The link of PCI device `address` under `root` (`/sys/bus/pci/devices`): now, and the most
/// it can train to. None where sysfs has no such device or files (a VM, a container).
pub fn read_link(root: &Path, address: &str) -> Option<(Link, Option<Link>)> {
    let dir = root.join(address);
    let read = |speed: &str, width: &str| -> Option<Link> {
        // "16.0 GT/s PCIe" (older kernels: "16 GT/s"), "16".
        let s = std::fs::read_to_string(dir.join(speed)).ok()?;
        let w = std::fs::read_to_string(dir.join(width)).ok()?;
        Some(Link {
            gts: s.split_whitespace().next()?.parse().ok()?,
            width: w.trim().parse().ok()?,
        })
    };
    let now = read("current_link_speed", "current_link_width")?;
    Some((now, read("max_link_speed", "max_link_width")))
}

/// One card's lines, and the problems that change what it will do.
pub struct GpuReport {
    pub lines: Vec<String>,
    pub problems: Vec<String>,
    /// This binary's kernels run on it.
    pub runs: bool,
}

/// The card `p`: what the driver says, the code it gets, its link, and what the backend
/// measured when it opened it (`opened`, None where it was not opened).
pub fn report(p: &GpuProbe, opened: Option<&DeviceInfo>, sysfs: &Path) -> GpuReport {
    let (major, minor) = p.compute;
    let mut problems = Vec::new();
    let code = archs::code_for(major, minor);
    let built = archs::sass()
        .iter()
        .map(|a| format!("sm_{a}"))
        .collect::<Vec<_>>()
        .join(", ");
    let ptx = archs::ptx().map_or("none".into(), |p| format!("compute_{p}"));
    let code_line = match code {
        CodeFor::Native { sm } => format!("native SASS (sm_{sm}) in this binary"),
        CodeFor::Jit { compute } => {
            problems.push(format!(
                "GPU {}: no SASS for sm_{major}{minor} in this binary: the driver JIT-compiles \
                 the compute_{compute} PTX at first use (minutes), into CUDA_CACHE_PATH (the \
                 packaged unit sets one that persists); rebuild with ZKFORGE_CUDA_ARCHS \
                 including {major}{minor} to run natively",
                p.ordinal
            ));
            format!("JIT from compute_{compute} PTX: no SASS for sm_{major}{minor} here")
        }
        CodeFor::None if built.is_empty() => {
            problems.push(format!(
                "GPU {}: this binary has no kernels (a ZKFORGE_CUDA_STUB lint build): rebuild \
                 without ZKFORGE_CUDA_STUB",
                p.ordinal
            ));
            "no kernels in this binary".into()
        }
        CodeFor::None => {
            problems.push(format!(
                "GPU {}: sm_{major}{minor} cannot run this binary's kernels (SASS: {built}; \
                 PTX: {ptx}): rebuild with ZKFORGE_CUDA_ARCHS including {major}{minor}",
                p.ordinal
            ));
            "CANNOT RUN: no SASS or usable PTX for it".into()
        }
    };
    let mut lines = vec![format!(
        "GPU {} {}: {}, sm_{major}{minor}: {code_line}",
        p.ordinal, p.pci_address, p.name
    )];
    lines.push(format!(
        "  VRAM {} total, {} free now",
        gib(p.vram_total),
        gib(p.vram_free)
    ));
    let link = match read_link(sysfs, &p.pci_address) {
        Some((now, max)) => {
            let max_s = max.map_or(String::new(), |m| {
                format!(" (the slot and card: {m} at most)")
            });
            if let Some(m) = max.filter(|m| m.width > now.width) {
                problems.push(format!(
                    "GPU {}: its link runs x{} of x{}: a riser, a shared or wrongly wired slot \
                     halves what streamed keys move",
                    p.ordinal, now.width, m.width
                ));
            }
            format!("PCIe {now} now{max_s}; an idle card may lower its speed")
        }
        None => format!(
            "PCIe link not in sysfs ({})",
            sysfs.join(&p.pci_address).display()
        ),
    };
    lines.push(format!("  {link}"));
    match opened {
        Some(d) => {
            let rate = d.h2d_pinned_bytes_per_s as f64;
            lines.push(format!(
                "  host to device: {:.1} GB/s from pinned memory, {:.1} GB/s from pageable \
                 (measured now); the backend may use {} of VRAM (free less gpu.vram_margin)",
                rate / 1e9,
                d.h2d_pageable_bytes_per_s as f64 / 1e9,
                gib(d.budget_bytes)
            ));
            if rate < SLOW_LINK_BYTES_PER_S {
                problems.push(format!(
                    "GPU {}: {:.1} GB/s from pinned memory is slow (PCIe 4 x16 moves ~25): a key \
                     streamed from host memory is bound by it; check the slot",
                    p.ordinal,
                    rate / 1e9
                ));
            }
        }
        None => lines.push("  not opened by the backend: no measured rate".into()),
    }
    GpuReport {
        lines,
        problems,
        runs: !matches!(code, CodeFor::None),
    }
}

/// Why no card was looked at, in words, from the probe's error.
pub fn no_gpus(e: &CudaError) -> String {
    match e {
        CudaError::NotBuilt => "not looked for: this zkforge was built without the `cuda` \
                                feature (cargo build --release -p zkforge-cli --features cuda)"
            .into(),
        CudaError::NoDriver => "none: no NVIDIA driver (libcuda.so cannot be loaded)".into(),
        e => format!("none: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(root: &Path, address: &str, files: &[(&str, &str)]) {
        let dir = root.join(address);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    #[test]
    fn links_are_read_from_sysfs_as_kernels_write_them() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        device(
            r,
            "0000:3b:00.0",
            &[
                ("current_link_speed", "16.0 GT/s PCIe\n"),
                ("current_link_width", "8\n"),
                ("max_link_speed", "32.0 GT/s PCIe\n"),
                ("max_link_width", "16\n"),
            ],
        );
        // An older kernel's format, and no max files.
        device(
            r,
            "0000:af:00.0",
            &[
                ("current_link_speed", "8 GT/s\n"),
                ("current_link_width", "16\n"),
            ],
        );
        let (now, max) = read_link(r, "0000:3b:00.0").unwrap();
        assert_eq!((now.generation(), now.width), (Some(4), 8));
        assert_eq!(max.unwrap().to_string(), "gen 5 x16");
        let (now, max) = read_link(r, "0000:af:00.0").unwrap();
        assert_eq!(now.to_string(), "gen 3 x16");
        assert!(max.is_none());
        assert!(read_link(r, "0000:01:00.0").is_none());
        assert_eq!(Link { gts: 2.7, width: 1 }.to_string(), "2.7 GT/s x1");
    }

    #[test]
    fn a_card_is_named_by_its_sysfs_address() {
        assert_eq!(zkforge_cuda::pci_address(0, 0x3b, 0), "0000:3b:00.0");
        assert_eq!(zkforge_cuda::pci_address(1, 0xaf, 0x1f), "0001:af:1f.0");
    }
}
