//! cuzk's circuit ids ("porep-32g", "wpost-32g", "winning-32g", "snap-32g", "porep-2KiB"...).

use anyhow::{bail, Result};
use zkforge_circuits::ProofKind;
use zkforge_filecoin::shape::parse_sector_size;

/// The proof kind and sector size a circuit id names.
pub fn parse_circuit_id(id: &str) -> Result<(ProofKind, u64)> {
    let (kind, size) = id.rsplit_once('-').ok_or_else(|| {
        anyhow::anyhow!("circuit id {id:?} is not <kind>-<sector size>, e.g. porep-32g")
    })?;
    let kind = match kind {
        "porep" => ProofKind::PoRep,
        "snap" => ProofKind::SnapDeals,
        "wpost" | "window-post" => ProofKind::WindowPost,
        "winning" | "winning-post" => ProofKind::WinningPost,
        other => {
            bail!("unknown proof kind {other:?} in circuit id {id:?} (porep, snap, wpost, winning)")
        }
    };
    Ok((kind, parse_sector_size(size)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuzk_and_our_spellings() {
        assert_eq!(
            parse_circuit_id("porep-32g").unwrap(),
            (ProofKind::PoRep, 32 << 30)
        );
        assert_eq!(
            parse_circuit_id("wpost-2KiB").unwrap(),
            (ProofKind::WindowPost, 2048)
        );
        assert_eq!(
            parse_circuit_id("window-post-2KiB").unwrap(),
            (ProofKind::WindowPost, 2048)
        );
        assert!(parse_circuit_id("porep-3k").is_err());
        assert!(parse_circuit_id("nope-32g")
            .unwrap_err()
            .to_string()
            .contains("unknown proof kind"));
    }
}
