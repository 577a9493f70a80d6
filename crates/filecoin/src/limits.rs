//! The protocol's bounds on what a request may carry, checked before anything is decoded or
//! sized from it, and kept here so that the daemon can cite them in its errors and docs. An
//! allocation failure aborts the process (no `catch_unwind` stops it), so no count or index from
//! a client sizes anything until it has been checked against one of these.
//!
//! - WindowPoSt `partition_index`: below [`MAX_PARTITIONS_PER_DEADLINE`] (`post::post_circuits`).
//! - WinningPoSt `partition_index`: 0, it has one partition (`post::post_circuits`).
//! - Vanilla proofs per request: [`max_vanilla_proofs`] (WinningPoSt exactly that many,
//!   WindowPoSt 1 to that many, SnapDeals exactly that many), checked before any is decoded
//!   (`post::post_circuits`, `snap::snap_circuits`), and as the list is read ([`decode_base64_list`]).
//!
//! [`decode_base64_list`]: crate::decode_base64_list

use anyhow::Result;
use filecoin_proofs::SectorUpdateConfig;

use crate::registered_proof::RegisteredProof;
use crate::ProofKind;

/// Partitions one WindowPoSt deadline can hold: builtin-actors' miner policy
/// (`actors/miner/src/policy.rs`, `MAX_PARTITIONS_PER_DEADLINE` = 3,000, sized for 10 EiB of
/// 32 GiB sectors per deadline). A WindowPoSt `partition_index` is in `0..3000`.
pub const MAX_PARTITIONS_PER_DEADLINE: usize = 3000;

/// The most vanilla proofs a request of `kind` for `sector_size` carries: WinningPoSt its
/// challenged sectors (1), WindowPoSt one partition's sectors (2,349 at 32 GiB), SnapDeals one
/// proof per partition (16 at 32 GiB), PoRep 0 (its vanilla proofs are inside the C1 output).
/// An unsupported sector size is an error naming it.
pub fn max_vanilla_proofs(kind: ProofKind, sector_size: u64) -> Result<usize> {
    Ok(match RegisteredProof::current(kind, sector_size)? {
        // Its vanilla proofs are inside the C1 output.
        RegisteredProof::PoRep(_) => 0,
        RegisteredProof::WinningPost(p) | RegisteredProof::WindowPost(p) => {
            p.as_v1_config().sector_count
        }
        RegisteredProof::SnapDeals(p) => {
            let config = p.as_v1_config();
            usize::from(SectorUpdateConfig::from_porep_config(&config).update_partitions)
        }
    })
}
