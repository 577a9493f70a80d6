//! What to prove: a request template built once from an input file (C1 output, or a JSON
//! array of base64 vanilla proofs) and flags or a fixtures manifest, and its verifier.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use zkforge_filecoin::porep;
use zkforge_filecoin::shape::parse_sector_size;
use zkforge_fixtures::{self as fixtures, read_base64_list, unhex32, Manifest};
use zkforge_server::pb;

/// The proof kinds the daemon serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProofType {
    Porep,
    WinningPost,
    WindowPost,
    Snap,
}

impl ProofType {
    fn wire(self) -> pb::ProofKind {
        match self {
            ProofType::Porep => pb::ProofKind::PorepSealCommit,
            ProofType::WinningPost => pb::ProofKind::WinningPost,
            ProofType::WindowPost => pb::ProofKind::WindowPostPartition,
            ProofType::Snap => pb::ProofKind::SnapDealsUpdate,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProofType::Porep => "porep",
            ProofType::WinningPost => "winning-post",
            ProofType::WindowPost => "window-post",
            ProofType::Snap => "snap",
        }
    }
}

/// Where the request's fields come from; flags win over the fixtures manifest.
#[derive(Clone, Debug)]
pub struct InputSpec {
    pub proof_type: ProofType,
    /// C1 output (PoRep) or JSON array of base64 vanilla proofs (PoSt, SnapDeals).
    pub input: Option<PathBuf>,
    /// A `zkforge fixtures` directory: default input and public values, and what `verify` uses.
    pub fixtures: Option<PathBuf>,
    pub sector_size: Option<String>,
    /// PoSt randomness, 64 hex digits.
    pub randomness: Option<String>,
    /// PoSt: the daemon derives the prover id from it.
    pub miner_id: u64,
    pub partition_index: Option<u32>,
    pub comm_r_old: Option<String>,
    pub comm_r_new: Option<String>,
    pub comm_d_new: Option<String>,
}

impl InputSpec {
    /// A spec that takes everything from a fixtures directory.
    pub fn from_fixtures(proof_type: ProofType, dir: &Path) -> Self {
        Self {
            proof_type,
            input: None,
            fixtures: Some(dir.to_path_buf()),
            sector_size: None,
            randomness: None,
            miner_id: 1000,
            partition_index: None,
            comm_r_old: None,
            comm_r_new: None,
            comm_d_new: None,
        }
    }
}

/// A ready request template and, with fixtures, the public values to verify against.
#[derive(Clone, Debug)]
pub struct ProofInput {
    pub proof_type: ProofType,
    template: pb::SubmitProofRequest,
    manifest: Option<Manifest>,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading input {}", path.display()))
}

/// A 32-byte hex value from its flag, else from the manifest.
fn hex32(flag: &Option<String>, from_manifest: Option<&str>, name: &str) -> Result<Vec<u8>> {
    let text = match (flag, from_manifest) {
        (Some(s), _) => s.as_str(),
        (None, Some(s)) => s,
        (None, None) => bail!("--{name} is required without --fixtures"),
    };
    Ok(unhex32(text).with_context(|| format!("--{name}"))?.to_vec())
}

impl ProofInput {
    /// Reads and checks the input once, so that a bad file fails before any request.
    pub fn load(spec: &InputSpec) -> Result<Self> {
        let manifest = match &spec.fixtures {
            Some(dir) => Some(fixtures::load(dir)?),
            None => None,
        };
        let m = manifest.as_ref();
        let path = match (&spec.input, &spec.fixtures, m) {
            (Some(p), _, _) => p.clone(),
            (None, Some(dir), Some(m)) => dir.join(match spec.proof_type {
                ProofType::Porep => &m.c1_wrapper,
                ProofType::WinningPost => &m.winning_post()?.vanilla,
                ProofType::WindowPost => &m.window_post()?.vanilla,
                ProofType::Snap => &m.snap()?.vanilla,
            }),
            _ => bail!("give --input FILE or --fixtures DIR"),
        };
        let bytes = read(&path)?;
        let sector_size = match (&spec.sector_size, m) {
            (Some(s), _) => Some(parse_sector_size(s)?),
            (None, Some(m)) => Some(m.sector_size),
            (None, None) => None,
        };
        let mut t = pb::SubmitProofRequest {
            proof_kind: spec.proof_type.wire() as i32,
            ..Default::default()
        };
        match spec.proof_type {
            ProofType::Porep => {
                let c1 = porep::parse_c1(&bytes).with_context(|| format!("{}", path.display()))?;
                t.sector_size = u64::from(c1.registered_proof.sector_size());
                t.vanilla_proof = bytes;
            }
            kind => {
                t.vanilla_proofs =
                    read_base64_list(&bytes).with_context(|| format!("{}", path.display()))?;
                t.sector_size = sector_size
                    .with_context(|| format!("--sector-size is required for {}", kind.name()))?;
                Self::fill_public(&mut t, spec, m)?;
            }
        }
        Ok(Self {
            proof_type: spec.proof_type,
            template: t,
            manifest,
        })
    }

    fn fill_public(
        t: &mut pb::SubmitProofRequest,
        spec: &InputSpec,
        m: Option<&Manifest>,
    ) -> Result<()> {
        match spec.proof_type {
            ProofType::WinningPost | ProofType::WindowPost => {
                let post = m
                    .map(|m| match spec.proof_type {
                        ProofType::WinningPost => m.winning_post(),
                        _ => m.window_post(),
                    })
                    .transpose()?;
                t.randomness = hex32(
                    &spec.randomness,
                    post.map(|p| p.randomness.as_str()),
                    "randomness",
                )?;
                t.miner_id = spec.miner_id;
                t.partition_index = spec
                    .partition_index
                    .or(post.map(|p| p.partition_index as u32))
                    .unwrap_or(0);
            }
            ProofType::Snap => {
                let snap = m.map(Manifest::snap).transpose()?;
                t.comm_r_old = hex32(
                    &spec.comm_r_old,
                    snap.map(|s| s.comm_r_old.as_str()),
                    "comm-r-old",
                )?;
                t.comm_r_new = hex32(
                    &spec.comm_r_new,
                    snap.map(|s| s.comm_r_new.as_str()),
                    "comm-r-new",
                )?;
                t.comm_d_new = hex32(
                    &spec.comm_d_new,
                    snap.map(|s| s.comm_d_new.as_str()),
                    "comm-d-new",
                )?;
            }
            ProofType::Porep => {}
        }
        Ok(())
    }

    /// The request for one proof; ids must be unique because the daemon dedupes them.
    pub fn request(&self, request_id: &str) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: request_id.to_string(),
            ..self.template.clone()
        }
    }

    pub fn can_verify(&self) -> bool {
        self.manifest.is_some()
    }

    /// Checks a proof with filecoin-proofs' verifier against the fixtures' public values
    /// (which read `.vk` files from `$FIL_PROOFS_PARAMETER_CACHE`).
    pub fn verify(&self, proof: &[u8]) -> Result<bool> {
        let Some(m) = &self.manifest else {
            bail!("verifying needs --fixtures DIR (the public values of the inputs)");
        };
        match self.proof_type {
            ProofType::Porep => m.verify_porep(proof),
            ProofType::WinningPost => m.verify_winning_post(proof),
            ProofType::WindowPost => m.verify_window_post(proof),
            ProofType::Snap => m.verify_snap(proof),
        }
    }
}
