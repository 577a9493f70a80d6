//! Test fixtures made offline: a sealed 2 KiB-class sector and the client inputs derived from
//! it (C1 output in both formats), plus a manifest of the public values a verifier needs.

use std::fs::{self, File, OpenOptions};
use std::io::Cursor;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use base64::Engine as _;
use filecoin_proofs::{SectorSize, UnpaddedBytesAmount};
use filecoin_proofs_api::{seal, RegisteredSealProof, SectorId};
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// What a verifier needs besides the proof, and where the inputs were written.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub sector_size: u64,
    pub registered_seal_proof: RegisteredSealProof,
    pub sector_id: u64,
    pub prover_id: String,
    pub ticket: String,
    pub seed: String,
    pub comm_r: String,
    pub comm_d: String,
    /// Curio's wrapper `{"SectorNum","Phase1Out","SectorSize"}`.
    pub c1_wrapper: PathBuf,
    /// The raw JSON of `SealCommitPhase1Output`.
    pub c1_raw: PathBuf,
}

pub const MANIFEST: &str = "manifest.json";

/// The registered seal proof (latest API version) for a sector size.
pub fn seal_proof_for(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    crate::shape::check_supported(sector_size)?;
    Ok(match sector_size {
        s if s == 2 << 10 => StackedDrg2KiBV1_1,
        s if s == 8 << 20 => StackedDrg8MiBV1_1,
        s if s == 512 << 20 => StackedDrg512MiBV1_1,
        s if s == 32 << 30 => StackedDrg32GiBV1_1,
        _ => StackedDrg64GiBV1_1,
    })
}

/// Seals a sector of random data in `out` and writes the fixtures and the manifest.
/// Deterministic for a given `seed_value`.
pub fn make(sector_size: u64, out: &Path, seed_value: u64) -> Result<Manifest> {
    let proof = seal_proof_for(sector_size)?;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed_value);
    let work = out.join("sector");
    let cache = work.join("cache");
    fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;

    let piece_len = UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount::from(
        SectorSize(sector_size),
    ));
    let mut data = vec![0u8; u64::from(piece_len) as usize];
    rng.fill_bytes(&mut data);
    let staged = work.join("staged");
    let sealed = work.join("sealed");
    let mut staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    let (piece, _) = seal::add_piece(proof, Cursor::new(&data), &mut staged_file, piece_len, &[])
        .context("add_piece")?;
    File::create(&sealed).with_context(|| format!("creating {}", sealed.display()))?;

    let prover_id = field_bytes(&mut rng);
    let sector_id = SectorId::from(rng.next_u64() >> 1);
    let ticket = field_bytes(&mut rng);
    let seed = field_bytes(&mut rng);
    let pieces = [piece];

    let pc1 = seal::seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )
    .context("seal_pre_commit_phase1")?;
    let pc2 =
        seal::seal_pre_commit_phase2(pc1, &cache, &sealed).context("seal_pre_commit_phase2")?;
    let (comm_r, comm_d) = (pc2.comm_r, pc2.comm_d);
    let c1 = seal::seal_commit_phase1(
        &cache, &sealed, prover_id, sector_id, ticket, seed, pc2, &pieces,
    )
    .context("seal_commit_phase1")?;

    let raw = serde_json::to_vec(&c1)?;
    let wrapper = serde_json::json!({
        "SectorNum": u64::from(sector_id),
        "Phase1Out": base64::engine::general_purpose::STANDARD.encode(&raw),
        "SectorSize": sector_size,
    });
    let manifest = Manifest {
        sector_size,
        registered_seal_proof: proof,
        sector_id: u64::from(sector_id),
        prover_id: hex(&prover_id),
        ticket: hex(&ticket),
        seed: hex(&seed),
        comm_r: hex(&comm_r),
        comm_d: hex(&comm_d),
        c1_wrapper: PathBuf::from("porep-c1.json"),
        c1_raw: PathBuf::from("porep-c1-raw.json"),
    };
    fs::write(out.join(&manifest.c1_raw), &raw)?;
    fs::write(
        out.join(&manifest.c1_wrapper),
        serde_json::to_vec(&wrapper)?,
    )?;
    fs::write(out.join(MANIFEST), serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// Reads `manifest.json` from a fixtures directory.
pub fn load(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

/// 32 random bytes that are also a canonical field element (top bits cleared).
fn field_bytes(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0x3f;
    b
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses 64 hex digits.
pub fn unhex32(s: &str) -> Result<[u8; 32]> {
    anyhow::ensure!(s.len() == 64, "expected 64 hex digits, got {}", s.len());
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16)
            .with_context(|| format!("bad hex {s:?}"))?;
    }
    Ok(out)
}

impl Manifest {
    /// Verifies a PoRep proof with filecoin-proofs' verifier (which reads the `.vk` from
    /// `$FIL_PROOFS_PARAMETER_CACHE`).
    pub fn verify_porep(&self, proof: &[u8]) -> Result<bool> {
        seal::verify_seal(
            self.registered_seal_proof,
            unhex32(&self.comm_r)?,
            unhex32(&self.comm_d)?,
            unhex32(&self.prover_id)?,
            SectorId::from(self.sector_id),
            unhex32(&self.ticket)?,
            unhex32(&self.seed)?,
            proof,
        )
    }
}
