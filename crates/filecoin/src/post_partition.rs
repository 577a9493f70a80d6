//! One PoSt partition from its own sectors: the public inputs of its circuit and the check of its
//! vanilla proofs. storage-proofs finds partition k inside the deadline's whole sector list
//! (`sectors.chunks(sector_count).nth(k)`), so asking it about partition k meant building a list
//! of k·sector_count sectors first: memory chosen by a client's `partition_index` (4 billion
//! aborted the daemon on a 343 GB allocation). Here k enters only where storage-proofs uses it,
//! the challenge derivation (sector i of partition k is sector k·sector_count + i of the
//! deadline), and nothing is sized by it.

use anyhow::{ensure, Context, Result};
use blstrs::Scalar;
use filecoin_hashers::Hasher;
use filecoin_proofs::MerkleTreeTrait;
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_post::fallback::{
    self, generate_leaf_challenge_inner, get_challenge_index, FallbackPoSt, PublicSector,
};

/// The field element type of a tree's hasher (comm_r, randomness, prover id).
pub type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// Sector `i` of partition `k` as the deadline counts it. Checked, with the challenge indices
/// derived from it (index · challenge_count + challenge under ApiVersion 1.0): `k` comes from a
/// client, and storage-proofs' arithmetic on it is unchecked.
fn sector_index(pp: &fallback::PublicParams, k: usize, i: usize) -> Result<usize> {
    k.checked_mul(pp.sector_count)
        .and_then(|first| first.checked_add(i))
        .filter(|index| {
            index
                .checked_add(1)
                .and_then(|next| next.checked_mul(pp.challenge_count))
                .is_some()
        })
        .with_context(|| {
            format!(
                "partition {k} of {} sectors is beyond any sector index",
                pp.sector_count
            )
        })
}

/// storage-proofs' challenge seed of a sector: randomness, then the sector id.
fn challenge_hasher<D: AsRef<[u8]>>(randomness: &D, sector_id: u64) -> Sha256 {
    let mut hasher = Sha256::new();
    hasher.update(randomness.as_ref());
    hasher.update(sector_id.to_le_bytes());
    hasher
}

/// The public inputs of partition `k`'s circuit from the partition's own sectors (1 to
/// `pp.sector_count` of them), equal to `FallbackPoStCompound::generate_public_inputs` on the
/// deadline's list: per sector its comm_r, then each challenged leaf (the PoR input of a
/// private-root proof); a short partition repeats its last sector's inputs, as the circuit
/// repeats the sector.
pub fn partition_public_inputs<Tree: MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    randomness: &Domain<Tree>,
    sectors: &[PublicSector<Domain<Tree>>],
    k: usize,
) -> Result<Vec<Scalar>> {
    let n = pp.sector_count;
    ensure!(
        (1..=n).contains(&sectors.len()),
        "a partition holds 1 to {n} sectors, not {}",
        sectors.len()
    );
    let per_sector = 1 + pp.challenge_count;
    let mut inputs: Vec<Scalar> = Vec::with_capacity(n * per_sector);
    for (i, sector) in sectors.iter().enumerate() {
        let index = sector_index(pp, k, i)?;
        inputs.push(sector.comm_r.into());
        let seed = challenge_hasher(randomness, u64::from(sector.id));
        for c in 0..pp.challenge_count {
            let challenge = get_challenge_index(pp.api_version, index, pp.challenge_count, c);
            let leaf = generate_leaf_challenge_inner::<Domain<Tree>>(seed.clone(), pp, challenge);
            inputs.push(Scalar::from(leaf));
        }
    }
    let last = inputs.len() - per_sector;
    for _ in sectors.len()..n {
        inputs.extend_from_within(last..last + per_sector);
    }
    Ok(inputs)
}

/// Checks partition `inputs.k`'s vanilla proofs, one `fallback::Proof` of one sector proof per
/// public sector of `inputs` (the partition's own, unpadded), with storage-proofs' verifier.
///
/// Each sector is verified on its own as a one-sector partition numbered k·sector_count + i:
/// `FallbackPoSt::verify` uses the sector count only in that index and in its length checks, so
/// this is the same check as verifying the partition at once, without the copies of the last
/// sector proof a short partition would need to fill `sector_count` (2,348 of them for a
/// one-sector 32 GiB request). `name(i)` says what position `i` is, for the error.
pub fn verify_partition<Tree: 'static + MerkleTreeTrait>(
    pp: &fallback::PublicParams,
    inputs: &fallback::PublicInputs<Domain<Tree>>,
    proofs: &[fallback::Proof<Tree::Proof>],
    name: &(dyn Fn(usize) -> String + Sync),
) -> Result<()> {
    let k = inputs.k.context("the partition index is missing")?;
    ensure!(
        proofs.len() == inputs.sectors.len() && proofs.len() <= pp.sector_count,
        "{} sector proofs for {} public sectors (at most {})",
        proofs.len(),
        inputs.sectors.len(),
        pp.sector_count
    );
    let one = fallback::PublicParams {
        sector_count: 1,
        ..pp.clone()
    };
    inputs
        .sectors
        .par_iter()
        .zip(proofs.par_iter())
        .enumerate()
        .try_for_each(|(i, (sector, proof))| {
            let alone = fallback::PublicInputs {
                randomness: inputs.randomness,
                prover_id: inputs.prover_id,
                sectors: vec![sector.clone()],
                k: Some(sector_index(pp, k, i)?),
            };
            let valid = FallbackPoSt::<Tree>::verify(&one, &alone, proof)
                .with_context(|| format!("{} (sector {})", name(i), u64::from(sector.id)))?;
            ensure!(
                valid,
                "{} (sector {}) does not verify: its comm_r, the randomness, the partition or \
                 the sector size differ from the ones it was made for, or it is damaged",
                name(i),
                u64::from(sector.id)
            );
            Ok(())
        })
}
