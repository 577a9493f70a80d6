//! Sector size → Merkle tree shape, with an error (not a panic) for sizes the crates lack.

use anyhow::{bail, Result};
use filecoin_proofs::constants::{
    SECTOR_SIZE_2_KIB, SECTOR_SIZE_32_GIB, SECTOR_SIZE_512_MIB, SECTOR_SIZE_64_GIB,
    SECTOR_SIZE_8_MIB,
};

/// The sector sizes Filecoin registers proofs for.
pub const SUPPORTED: [u64; 5] = [
    SECTOR_SIZE_2_KIB,
    SECTOR_SIZE_8_MIB,
    SECTOR_SIZE_512_MIB,
    SECTOR_SIZE_32_GIB,
    SECTOR_SIZE_64_GIB,
];

pub fn check_supported(sector_size: u64) -> Result<()> {
    if !SUPPORTED.contains(&sector_size) {
        bail!(
            "unsupported sector size {sector_size} bytes; supported: 2KiB, 8MiB, 512MiB, 32GiB, 64GiB"
        );
    }
    Ok(())
}

/// The entry of `per_size` (ordered as [`SUPPORTED`]) for `sector_size`.
pub fn by_size<T: Copy>(sector_size: u64, per_size: [T; 5]) -> Result<T> {
    check_supported(sector_size)?;
    Ok(per_size[SUPPORTED
        .iter()
        .position(|&s| s == sector_size)
        .expect("checked above")])
}

/// Calls `$f::<Tree>(args)` with the tree shape of `$size`, or returns an error. Exported (as
/// [`with_tree`]) for the fixtures crate, whose sparse trees are built per shape too; the
/// caller needs `filecoin_proofs` among its dependencies.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_tree {
    ($size:expr, $f:ident $(, $args:expr)* $(,)?) => {{
        use filecoin_proofs::constants as c;
        match $size {
            s if s == c::SECTOR_SIZE_2_KIB => $f::<c::SectorShape2KiB>($($args),*),
            s if s == c::SECTOR_SIZE_8_MIB => $f::<c::SectorShape8MiB>($($args),*),
            s if s == c::SECTOR_SIZE_512_MIB => $f::<c::SectorShape512MiB>($($args),*),
            s if s == c::SECTOR_SIZE_32_GIB => $f::<c::SectorShape32GiB>($($args),*),
            s if s == c::SECTOR_SIZE_64_GIB => $f::<c::SectorShape64GiB>($($args),*),
            s => $crate::shape::check_supported(s).map(|_| unreachable!()),
        }
    }};
}

pub use crate::__with_tree as with_tree;

/// [`with_tree`] for a registered proof: `$f::<Tree>(&config)`, `config` being the proof's v1
/// configuration and `Tree` its sector size's shape. Each kind's parameter set and recorded
/// constraints are reached from its registered proof this way.
macro_rules! with_proof_tree {
    ($proof:expr, $f:ident) => {{
        let proof = $proof;
        $crate::shape::with_tree!(u64::from(proof.sector_size()), $f, &proof.as_v1_config())
    }};
}

pub(crate) use with_proof_tree;

/// Parses "2KiB", "32GiB", "2048"...
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.find(|c: char| !c.is_ascii_digit()) {
        None => (t, 1),
        Some(i) => {
            let unit = &t[i..];
            let mult = match unit.to_ascii_lowercase().as_str() {
                "kib" | "k" => 1u64 << 10,
                "mib" | "m" => 1 << 20,
                "gib" | "g" => 1 << 30,
                _ => bail!("unknown sector size unit {unit:?} in {s:?} (use KiB, MiB or GiB)"),
            };
            (&t[..i], mult)
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("not a sector size: {s:?}"))?;
    let size = n
        .checked_mul(mult)
        .ok_or_else(|| anyhow::anyhow!("sector size {s:?} overflows"))?;
    check_supported(size)?;
    Ok(size)
}

pub use zkforge_circuits::format_sector_size;
