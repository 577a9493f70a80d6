//! A batch: COUNT proofs through the daemon, CONCURRENCY in flight, each timed by the client
//! and by the daemon (queue, parameter load, synthesis, prove); optional saving and
//! verification after the timed part. Running a batch (one daemon or several): `fleet.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use zkforge_server::pb;

use super::address::{status_code, Client, DaemonAddr};
use super::input::ProofInput;

/// How long past `proof_timeout` the client waits for the daemon's own TIMEOUT answer.
const CLIENT_SLACK: Duration = Duration::from_secs(30);

/// Everything one batch needs.
#[derive(Clone, Debug)]
pub struct BatchConfig {
    pub addr: DaemonAddr,
    pub input: Arc<ProofInput>,
    pub count: usize,
    pub concurrency: usize,
    /// Connecting and the first GetStatus must succeed within this.
    pub connect_timeout: Duration,
    /// Longest wait for one proof (AwaitProof's timeout); None waits forever.
    pub proof_timeout: Option<Duration>,
    /// Write each completed proof here as `proof-NNNN.bin`.
    pub save_proofs: Option<PathBuf>,
    /// Check each proof with filecoin-proofs' verifier (needs fixtures) after the timed run.
    pub verify: bool,
    /// A progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// A line per proof on stdout as it completes.
    pub print_lines: bool,
}

/// One proof's outcome. Times in ms; the daemon's come from AwaitProofResponse.
#[derive(Clone, Debug, Serialize)]
pub struct ProofRecord {
    pub index: usize,
    pub request_id: String,
    /// The daemon that proved it (its address as given).
    pub daemon: String,
    /// The daemon's job id (TIMELINE `job`); empty if the submit was refused.
    pub job_id: String,
    /// COMPLETED, FAILED, CANCELLED, TIMEOUT, or REJECTED (the submit failed).
    pub status: String,
    pub error: String,
    /// Submit to result, measured by the client.
    pub client_ms: f64,
    pub queue_ms: u64,
    pub srs_load_ms: u64,
    pub synthesis_ms: u64,
    /// The daemon's GPU time for the proof (gpu_compute_ms: device-timed phases summed over
    /// partitions); 0 when it proved on the CPU.
    pub gpu_ms: u64,
    pub total_ms: u64,
    pub proof_bytes: usize,
    pub saved_to: Option<PathBuf>,
    /// Accepted (true) or rejected (false) by filecoin-proofs; `None` when not checked.
    pub verified: Option<bool>,
    /// Why the verifier could not check the proof (its `.vk` not found, say): not a rejection.
    pub verify_error: Option<String>,
    #[serde(skip)]
    pub proof: Vec<u8>,
}

impl ProofRecord {
    /// A proof about to be submitted: REJECTED until the daemon takes it.
    pub(crate) fn new(index: usize, request_id: String, daemon: String) -> Self {
        ProofRecord {
            index,
            request_id,
            daemon,
            job_id: String::new(),
            status: "REJECTED".into(),
            error: String::new(),
            client_ms: 0.0,
            queue_ms: 0,
            srs_load_ms: 0,
            synthesis_ms: 0,
            gpu_ms: 0,
            total_ms: 0,
            proof_bytes: 0,
            saved_to: None,
            verified: None,
            verify_error: None,
            proof: Vec::new(),
        }
    }

    pub fn completed(&self) -> bool {
        self.status == "COMPLETED"
    }
}

/// min / avg / max of a set of samples.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(samples: &[f64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        Some(Spread {
            min: samples.iter().copied().fold(f64::MAX, f64::min),
            avg: samples.iter().sum::<f64>() / samples.len() as f64,
            max: samples.iter().copied().fold(f64::MIN, f64::max),
        })
    }
}

/// A batch's numbers, as `--json` writes them: of one daemon, or of a fleet (then `addr`
/// lists them all).
#[derive(Clone, Debug, Serialize)]
pub struct BatchReport {
    pub addr: String,
    pub proof_type: &'static str,
    /// Proofs requested (of one daemon in a fleet: the proofs sent to it).
    pub count: usize,
    /// Proofs in flight at once (of one daemon in a fleet: the most it was sent at once).
    pub concurrency: usize,
    /// First submit to last result.
    pub wall_s: f64,
    pub completed: usize,
    pub failed: usize,
    /// Daemon total_ms of the completed proofs, in seconds.
    pub total_s: Option<Spread>,
    /// Daemon GPU time (gpu_compute_ms) of the completed proofs that report one, in seconds;
    /// `None` from a CPU daemon.
    pub gpu_s: Option<Spread>,
    /// Completed proofs per minute of the batch's wall time (a fleet's daemons add up to it).
    pub proofs_per_min: f64,
    /// Wall time per completed proof.
    pub s_per_proof: Option<f64>,
    /// Proofs verified and accepted, when `verify` was asked.
    pub verified_ok: Option<usize>,
    pub proofs: Vec<ProofRecord>,
}

impl BatchReport {
    /// Why each completed proof the verifier could not check was left unchecked.
    pub fn unchecked(&self) -> impl Iterator<Item = &str> {
        self.proofs.iter().filter_map(|p| p.verify_error.as_deref())
    }
}

pub(crate) fn status_name(status: i32) -> String {
    pb::ProofStatus::try_from(status)
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_else(|_| format!("STATUS_{status}"))
}

/// A prefix unique to this run: the daemon dedupes request ids, also across runs.
pub(crate) fn run_prefix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("bench-{}-{nanos:x}", std::process::id())
}

/// Submits one proof to `daemon` and waits for it; RPC errors become a failed record, not
/// an error.
pub(crate) async fn prove_one(
    mut client: Client,
    daemon: &DaemonAddr,
    config: &BatchConfig,
    index: usize,
    request_id: String,
) -> ProofRecord {
    let t = Instant::now();
    let mut r = ProofRecord::new(index, request_id.clone(), daemon.to_string());
    match client.submit_proof(config.input.request(&request_id)).await {
        Ok(resp) => r.job_id = resp.into_inner().job_id,
        Err(s) => {
            r.error = format!("{:?}: {}", status_code(&s), s.message());
            r.client_ms = t.elapsed().as_secs_f64() * 1e3;
            return r;
        }
    }
    let timeout_ms = config
        .proof_timeout
        .map_or(0, |d| d.as_millis().max(1) as u64);
    let request = client.await_proof(pb::AwaitProofRequest {
        job_id: r.job_id.clone(),
        timeout_ms,
    });
    let awaited = match config.proof_timeout {
        // The daemon enforces the timeout; this only covers a daemon that stops answering.
        Some(d) => tokio::time::timeout(d + CLIENT_SLACK, request).await.ok(),
        None => Some(request.await),
    };
    r.client_ms = t.elapsed().as_secs_f64() * 1e3;
    match awaited {
        None => {
            r.status = "TIMEOUT".into();
            r.error = "the daemon stopped answering AwaitProof".into();
        }
        Some(Ok(resp)) => {
            let timed_out = resp.get_ref().status == pb::ProofStatus::Timeout as i32;
            record_result(&mut r, resp.into_inner());
            if timed_out {
                // Leave nothing running behind us.
                let _ = client
                    .cancel_proof(pb::CancelProofRequest {
                        job_id: r.job_id.clone(),
                    })
                    .await;
            }
        }
        Some(Err(s)) => {
            r.status = "FAILED".into();
            r.error = format!("AwaitProof {:?}: {}", status_code(&s), s.message());
        }
    }
    r
}

/// The daemon's answer: status, error, timings and the proof.
fn record_result(r: &mut ProofRecord, a: pb::AwaitProofResponse) {
    r.status = status_name(a.status);
    r.error = a.error_message;
    r.queue_ms = a.queue_wait_ms;
    r.srs_load_ms = a.srs_load_ms;
    r.synthesis_ms = a.synthesis_ms;
    r.gpu_ms = a.gpu_compute_ms;
    r.total_ms = a.total_ms;
    r.proof_bytes = a.proof.len();
    r.proof = a.proof;
}

/// Writes through a temporary name and renames: a killed client never leaves half a proof.
pub(crate) fn save(dir: &std::path::Path, r: &mut ProofRecord) -> Result<()> {
    let path = dir.join(format!("proof-{:04}.bin", r.index));
    let tmp = dir.join(format!(
        "proof-{:04}.bin.{}.partial",
        r.index,
        std::process::id()
    ));
    std::fs::write(&tmp, &r.proof)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .with_context(|| format!("writing {}", path.display()))?;
    r.saved_to = Some(path);
    Ok(())
}

pub(crate) fn progress_bar(config: &BatchConfig) -> ProgressBar {
    if !config.progress {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(config.count as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] {wide_bar} {pos}/{len} (eta {eta})",
        )
        .expect("valid template"),
    );
    bar.set_message(format!(
        "{} {}x{}",
        config.input.proof_type.name(),
        config.count,
        config.concurrency
    ));
    bar
}

/// Checks every completed proof with filecoin-proofs, outside the timed part, and returns the
/// records marked (a proof the verifier could not check keeps why); `summarize` counts them.
pub(crate) async fn verify_records(
    config: &BatchConfig,
    mut records: Vec<ProofRecord>,
) -> Result<Vec<ProofRecord>> {
    let input = config.input.clone();
    tokio::task::spawn_blocking(move || {
        for r in records.iter_mut().filter(|r| r.completed()) {
            match input.verify(&r.proof) {
                Ok(good) => r.verified = Some(good),
                Err(e) => r.verify_error = Some(format!("{e:#}")),
            }
        }
        records
    })
    .await
    .context("the verification task panicked")
}

/// The numbers of `records` (all of a batch, or one daemon's share) over the batch's `wall`
/// time; `verify`: count the accepted proofs.
pub(crate) fn summarize(
    proof_type: &'static str,
    addr: String,
    concurrency: usize,
    records: Vec<ProofRecord>,
    wall: Duration,
    verify: bool,
) -> BatchReport {
    let ok: Vec<&ProofRecord> = records.iter().filter(|r| r.completed()).collect();
    let verified_ok = verify.then(|| ok.iter().filter(|r| r.verified == Some(true)).count());
    let secs =
        |f: fn(&ProofRecord) -> u64| ok.iter().map(|r| f(r) as f64 / 1e3).collect::<Vec<_>>();
    let wall_s = wall.as_secs_f64();
    BatchReport {
        addr,
        proof_type,
        count: records.len(),
        concurrency,
        wall_s,
        completed: ok.len(),
        failed: records.len() - ok.len(),
        total_s: Spread::of(&secs(|r| r.total_ms)),
        gpu_s: Spread::of(
            &secs(|r| r.gpu_ms)
                .into_iter()
                .filter(|&s| s > 0.0)
                .collect::<Vec<_>>(),
        ),
        proofs_per_min: if wall_s > 0.0 {
            ok.len() as f64 * 60.0 / wall_s
        } else {
            0.0
        },
        s_per_proof: (!ok.is_empty()).then(|| wall_s / ok.len() as f64),
        verified_ok,
        proofs: records,
    }
}
