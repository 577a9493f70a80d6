//! The requests Curio sends, field for field (`lib/ffi/cuzk_funcs.go`,
//! `tasks/proofshare/task_prove.go`), for a sealed 2 KiB sector's fixtures: its request ids,
//! its priorities, `registered_proof` as Go's `abi` numbers, and what it leaves unset.

use std::path::{Path, PathBuf};

use filecoin_proofs_api::RegisteredSealProof;
use zkforge_fixtures::{self as fixtures, read_base64_list, Manifest};
use zkforge_server::pb;

/// The miner the sector belongs to.
pub const MINER: u64 = 1000;

/// A sealed 2 KiB sector's client inputs.
pub struct Sector {
    pub dir: PathBuf,
    pub m: Manifest,
    _keep: tempfile::TempDir,
}

impl Sector {
    /// Seals a sector (under a second) into a directory of its own.
    pub fn new(seed: u64) -> Self {
        Self::sealed_with(|dir| fixtures::make(2048, dir, seed))
    }

    /// A 2 KiB sector sealed for another seal proof type (`UseSyntheticPoRep`'s synthetic
    /// PoRep, NI-PoRep): its PoRep C1 only.
    pub fn porep_only(proof: RegisteredSealProof, seed: u64) -> Self {
        Self::sealed_with(|dir| fixtures::make_porep(proof, dir, seed))
    }

    fn sealed_with(seal: impl FnOnce(&Path) -> anyhow::Result<Manifest>) -> Self {
        // Sealing reads filecoin-proofs' settings, and with them the parameter directory the
        // verifiers will use: it must be set first.
        crate::daemon::param_dir();
        let keep = tempfile::tempdir().unwrap();
        let m = seal(keep.path()).unwrap();
        Self {
            dir: keep.path().to_path_buf(),
            m,
            _keep: keep,
        }
    }

    fn read(&self, file: &Path) -> Vec<u8> {
        std::fs::read(self.dir.join(file)).unwrap()
    }

    fn vanilla(&self, file: &Path) -> Vec<Vec<u8>> {
        read_base64_list(&self.read(file)).unwrap()
    }

    /// `PoRepSnarkCuzk`: the C1 output in its wrapper, `porep-<miner>-<sector>`.
    pub fn porep(&self) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: format!("porep-{MINER}-{}", self.m.sector_id),
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: self.m.registered_seal_proof as u64,
            priority: pb::Priority::Normal as i32,
            vanilla_proof: self.read(&self.m.c1_wrapper),
            sector_number: self.m.sector_id,
            miner_id: MINER,
            ..Default::default()
        }
    }

    /// ProofShare's `computePoRep`: the same, as `ps-porep-<miner>-<sector>-<task>`.
    pub fn ps_porep(&self, task: u64) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: format!("ps-porep-{MINER}-{}-{task}", self.m.sector_id),
            ..self.porep()
        }
    }

    /// `ProveUpdateCuzk`: `snap-<miner>-<sector>`.
    pub fn snap(&self) -> pb::SubmitProofRequest {
        let s = self.m.snap().unwrap();
        pb::SubmitProofRequest {
            request_id: format!("snap-{MINER}-{}", self.m.sector_id),
            proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
            sector_size: 2048,
            registered_proof: s.registered_proof as u64,
            priority: pb::Priority::Normal as i32,
            vanilla_proofs: self.vanilla(&s.vanilla),
            sector_number: self.m.sector_id,
            miner_id: MINER,
            comm_r_old: fixtures::unhex32(&s.comm_r_old).unwrap().to_vec(),
            comm_r_new: fixtures::unhex32(&s.comm_r_new).unwrap().to_vec(),
            comm_d_new: fixtures::unhex32(&s.comm_d_new).unwrap().to_vec(),
            ..Default::default()
        }
    }

    /// ProofShare's `computeSnap`: `ps-snap-<miner>-<sector>-<task>`, no `sector_size` (the
    /// update proof type, 0 for 2 KiB, is all that names the size).
    pub fn ps_snap(&self, task: u64) -> pb::SubmitProofRequest {
        pb::SubmitProofRequest {
            request_id: format!("ps-snap-{MINER}-{}-{task}", self.m.sector_id),
            sector_size: 0,
            ..self.snap()
        }
    }

    /// `WindowPoStCuzk`: `wdpost-<miner>-<partition>-[b0 b1 … b7]` (Go's `%d` of a byte
    /// slice), HIGH.
    pub fn window_post(&self) -> pb::SubmitProofRequest {
        let p = self.m.window_post().unwrap();
        let randomness = fixtures::unhex32(&p.randomness).unwrap().to_vec();
        let bytes: Vec<String> = randomness[..8].iter().map(|b| b.to_string()).collect();
        pb::SubmitProofRequest {
            request_id: format!("wdpost-{MINER}-{}-[{}]", p.partition_index, bytes.join(" ")),
            proof_kind: pb::ProofKind::WindowPostPartition as i32,
            sector_size: 2048,
            registered_proof: p.registered_proof as u64,
            priority: pb::Priority::High as i32,
            vanilla_proofs: self.vanilla(&p.vanilla),
            miner_id: MINER,
            randomness,
            partition_index: p.partition_index as u32,
            ..Default::default()
        }
    }

    /// `WinningPoStCuzk`: `winpost-<miner>-<hex of 8 randomness bytes>`, CRITICAL.
    pub fn winning_post(&self) -> pb::SubmitProofRequest {
        let p = self.m.winning_post().unwrap();
        let randomness = fixtures::unhex32(&p.randomness).unwrap().to_vec();
        let hex: String = randomness[..8].iter().map(|b| format!("{b:02x}")).collect();
        pb::SubmitProofRequest {
            request_id: format!("winpost-{MINER}-{hex}"),
            proof_kind: pb::ProofKind::WinningPost as i32,
            sector_size: 2048,
            registered_proof: p.registered_proof as u64,
            priority: pb::Priority::Critical as i32,
            vanilla_proofs: self.vanilla(&p.vanilla),
            miner_id: MINER,
            randomness,
            ..Default::default()
        }
    }

    /// Verifies `proof` for `req`'s kind with filecoin-proofs' verifier.
    pub fn verifies(&self, req: &pb::SubmitProofRequest, proof: &[u8]) -> bool {
        let m = &self.m;
        match pb::ProofKind::try_from(req.proof_kind).unwrap() {
            pb::ProofKind::PorepSealCommit => m.verify_porep(proof),
            pb::ProofKind::SnapDealsUpdate => m.verify_snap(proof),
            pb::ProofKind::WindowPostPartition => m.verify_window_post(proof),
            pb::ProofKind::WinningPost => m.verify_winning_post(proof),
            pb::ProofKind::Unspecified => unreachable!(),
        }
        .unwrap()
    }
}
