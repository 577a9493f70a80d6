//! What the CUDA backend is told at start: which GPUs, how much of their memory, where
//! parameters live, how many pinned staging bytes to keep, and how MSMs are cut.

use std::fmt;
use std::str::FromStr;

use zkforge_groth16::prover::placement::Item;

use crate::host::MsmOptions;

/// Where a proving key's bases live while it is in use. A key kept in VRAM takes the room of
/// keys no partition is using, and one whose partitions are more urgent than those of a key in
/// use waits for that key to drain and takes its room (resident.rs); the other key comes back
/// when its partitions next run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residency {
    /// In VRAM when they fit the budget with two partitions' working memory, else streamed.
    #[default]
    Auto,
    /// Always in VRAM, with one partition's working memory (a key that does not fit is an
    /// error).
    Vram,
    /// Always streamed from host memory through pinned staging buffers, chunk by chunk.
    Host,
}

impl FromStr for Residency {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "vram" => Ok(Self::Vram),
            "host" => Ok(Self::Host),
            other => Err(format!(
                "unknown params_residency {other:?} (use \"auto\", \"vram\" or \"host\")"
            )),
        }
    }
}

impl fmt::Display for Residency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Vram => "vram",
            Self::Host => "host",
        })
    }
}

/// The CUDA backend's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaOptions {
    /// GPU ordinals to prove on; empty means every GPU the driver reports.
    pub devices: Vec<usize>,
    /// Device memory left free on each GPU (driver, other processes, fragmentation).
    pub vram_margin: u64,
    pub residency: Residency,
    /// Idle page-locked witness buffers kept for reuse, in bytes.
    pub staging_pool_bytes: u64,
    /// How the prover's MSMs are cut (the default is the tuned product path).
    pub msm: MsmOptions,
    /// G1 points per chunk of an MSM in the phased order (a placement that streams part of
    /// the key or the matrices from host memory): 8Mi is 768 MiB a chunk (4Mi G2 points), two
    /// chunk buffers. Checks use small chunks to cross many chunk boundaries.
    pub stream_chunk: usize,
    /// Forces the items kept resident (the rest streamed) instead of the plan's choice: checks
    /// and benchmarks compare placements side by side on one card. Not a daemon setting.
    pub resident_items: Option<Vec<Item>>,
}

impl Default for CudaOptions {
    fn default() -> Self {
        Self {
            devices: Vec::new(),
            vram_margin: 2 << 30,
            residency: Residency::Auto,
            staging_pool_bytes: 32 << 30,
            msm: MsmOptions::default(),
            stream_chunk: 1 << 23,
            resident_items: None,
        }
    }
}

/// Parses "all" or a comma-separated list of ordinals ("0,1").
pub fn parse_devices(s: &str) -> Result<Vec<usize>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("all") || t.is_empty() {
        return Ok(Vec::new());
    }
    t.split(',')
        .map(|x| {
            x.trim().parse::<usize>().map_err(|_| {
                format!("devices: {x:?} is not a GPU ordinal (use \"all\" or \"0,1\")")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_ones_are_named() {
        assert_eq!(parse_devices("all").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_devices("0, 2").unwrap(), vec![0, 2]);
        assert!(parse_devices("0,x").unwrap_err().contains("\"x\""));
        assert_eq!("HOST".parse::<Residency>().unwrap(), Residency::Host);
        assert!("disk".parse::<Residency>().unwrap_err().contains("disk"));
    }
}
