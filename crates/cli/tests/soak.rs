//! Soak: small proofs (2 KiB WinningPoSt, CPU backend) from 8 clients against a `zkforge
//! daemon` process, with random cancels, duplicate request ids, AwaitProof timeouts and garbage
//! requests interleaved. Every valid job ends COMPLETED (filecoin-proofs accepts the proof) or,
//! when the client cancelled it, CANCELLED; none is lost or duplicated; the queue drains; the
//! daemon's RSS over the last 10% of the jobs stays within 5% of the second 10% (in the short
//! run, whose tenths hold 2 proofs each, grows by no more than 20%).
//!
//! CI runs [`CI_JOBS`] jobs (why that many suffices: there). The full soak of
//! docs/reliability.md, 1000 jobs and the 5% bound, is the ignored
//! `soak_a_thousand_jobs_rss_within_5_percent` (`cargo test --release -p zkforge-cli --test soak
//! -- --ignored --nocapture`); `ZKFORGE_SOAK_JOBS=N` sets either test's count and
//! `ZKFORGE_SOAK_REPORT=FILE` writes the table there.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::DaemonProcess;
use rand::{Rng, SeedableRng};
use tonic::Code;
use zkforge_bench_client::address::Client;
use zkforge_bench_client::{connect, InputSpec, ProofInput, ProofType};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures as fixtures;
use zkforge_server::pb;

const CLIENTS: usize = 8;
/// Jobs of the CI run. Each costs a real WinningPoSt proof through the daemon (seconds on 2
/// cores). 20 suffice for what the short run asserts: the 8 clients keep 8 requests in flight
/// throughout, so cancels, duplicates and timeouts meet jobs queued, proving and done; every
/// plan and a garbage request occur (asserted below, not left to chance); and each tenth of the
/// run holds 2 finished jobs for the RSS comparison, which at this length catches gross growth
/// (a leaked witness or proof buffer per job), not the slow drift the 1000-job run bounds.
const CI_JOBS: usize = 20;
/// Jobs of the warm-up before either run: two rounds of the clients.
const WARM_UP_JOBS: usize = 2 * CLIENTS;
/// Jobs of the full soak (docs/reliability.md).
const FULL_JOBS: usize = 1000;
/// One client-side limit per RPC: a daemon that stops answering fails the test, not hangs it.
const RPC_LIMIT: Duration = Duration::from_secs(600);

/// What a client does with one valid job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Plan {
    /// Submit, then await the result.
    Plain,
    /// Submit, cancel after a random delay, then await: CANCELLED, or COMPLETED if it was done.
    Cancel(u64),
    /// Submit the same request id twice at once: one job.
    Duplicate,
    /// Await with a 1 ms timeout first (TIMEOUT unless already done), then without.
    AwaitTimeout,
}

impl Plan {
    fn pick(rng: &mut impl Rng) -> Self {
        match rng.gen_range(0..10) {
            0 | 1 => Plan::Cancel(rng.gen_range(0..400)),
            2 => Plan::Duplicate,
            3 => Plan::AwaitTimeout,
            _ => Plan::Plain,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Plan::Plain => "plain",
            Plan::Cancel(_) => "cancel",
            Plan::Duplicate => "duplicate id",
            Plan::AwaitTimeout => "await timeout",
        }
    }
}

struct Outcome {
    plan: Plan,
    job_id: String,
    status: pb::ProofStatus,
    proof: Vec<u8>,
}

async fn limited<T>(
    f: impl std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
) -> Result<T, tonic::Status> {
    tokio::time::timeout(RPC_LIMIT, f)
        .await
        .expect("the daemon answers within the limit")
        .map(tonic::Response::into_inner)
}

async fn await_job(c: &mut Client, job_id: &str, timeout_ms: u64) -> pb::AwaitProofResponse {
    limited(c.await_proof(pb::AwaitProofRequest {
        job_id: job_id.into(),
        timeout_ms,
    }))
    .await
    .unwrap_or_else(|s| panic!("AwaitProof {job_id}: {s}"))
}

async fn run_job(c: &mut Client, input: &ProofInput, request_id: String, plan: Plan) -> Outcome {
    let request = input.request(&request_id);
    let job_id = if plan == Plan::Duplicate {
        let (mut c1, mut c2) = (c.clone(), c.clone());
        let (a, b) = tokio::join!(
            limited(c1.submit_proof(request.clone())),
            limited(c2.submit_proof(request))
        );
        let (a, b) = (a.unwrap().job_id, b.unwrap().job_id);
        assert_eq!(a, b, "{request_id}: one request id, one job");
        a
    } else {
        limited(c.submit_proof(request)).await.unwrap().job_id
    };
    match plan {
        Plan::Cancel(after_ms) => {
            tokio::time::sleep(Duration::from_millis(after_ms)).await;
            limited(c.cancel_proof(pb::CancelProofRequest {
                job_id: job_id.clone(),
            }))
            .await
            .unwrap();
        }
        Plan::AwaitTimeout => {
            let first = await_job(c, &job_id, 1).await;
            let s = first.status();
            assert!(
                s == pb::ProofStatus::Timeout || s == pb::ProofStatus::Completed,
                "{job_id}: {s:?}"
            );
        }
        Plan::Plain | Plan::Duplicate => {}
    }
    let r = await_job(c, &job_id, 0).await;
    Outcome {
        plan,
        job_id,
        status: r.status(),
        proof: r.proof,
    }
}

/// A malformed request or a question about an unknown job: the daemon must answer with the
/// named error code and keep serving.
async fn garbage(c: &mut Client, input: &ProofInput, rng: &mut impl Rng) -> Code {
    let mut r = input.request("garbage");
    let (got, expected) = match rng.gen_range(0..8) {
        // One field of the submit made malformed: refused as invalid.
        broken @ 0..=5 => {
            match broken {
                0 => r.proof_kind = 99,
                1 => {
                    r.vanilla_proofs.clear();
                    r.vanilla_proof.clear();
                }
                2 => r.randomness = vec![7; 3],
                3 => r.sector_size = 12345,
                4 => r.vanilla_proofs = vec![b"not bincode".to_vec()],
                _ => r.priority = 17,
            }
            (
                limited(c.submit_proof(r)).await.err(),
                Code::InvalidArgument,
            )
        }
        6 => {
            let req = pb::AwaitProofRequest {
                job_id: "no-such-job".into(),
                timeout_ms: 0,
            };
            (limited(c.await_proof(req)).await.err(), Code::NotFound)
        }
        _ => {
            let req = pb::CancelProofRequest {
                job_id: "999999999".into(),
            };
            (limited(c.cancel_proof(req)).await.err(), Code::NotFound)
        }
    };
    let status = got.expect("garbage is refused");
    assert_eq!(status.code(), expected, "{}", status.message());
    assert!(!status.message().is_empty());
    expected
}

/// Shared by a run's clients: jobs finished (for the RSS samples) and garbage refused.
#[derive(Default)]
struct Counters {
    finished: Arc<AtomicUsize>,
    rejected: Arc<AtomicUsize>,
}

/// `jobs` valid jobs from [`CLIENTS`] clients, each with a random plan, and garbage requests
/// in between; every outcome, in no particular order.
async fn drive(
    client: &Client,
    input: &Arc<ProofInput>,
    prefix: &str,
    jobs: usize,
    counters: &Counters,
) -> Vec<Outcome> {
    let next = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client_no| {
            let (mut c, input, next) = (client.clone(), input.clone(), next.clone());
            let (finished, rejected) = (counters.finished.clone(), counters.rejected.clone());
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                let seed = client_no as u64 + prefix.len() as u64 * 1000;
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let mut outcomes = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= jobs {
                        return outcomes;
                    }
                    if rng.gen_bool(0.3) {
                        garbage(&mut c, &input, &mut rng).await;
                        rejected.fetch_add(1, Ordering::SeqCst);
                    }
                    let plan = Plan::pick(&mut rng);
                    outcomes.push(run_job(&mut c, &input, format!("{prefix}-{i}"), plan).await);
                    finished.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for c in clients {
        outcomes.extend(c.await.unwrap());
    }
    outcomes
}

fn mean(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 / v.len().max(1) as f64
}

/// `ZKFORGE_SOAK_JOBS`, else `default`.
fn job_count(default: usize) -> usize {
    std::env::var("ZKFORGE_SOAK_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_many_small_proofs_with_cancels_duplicates_timeouts_and_garbage() {
    soak(job_count(CI_JOBS)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full soak: 1000 proofs, 35 minutes on 2 cores; run by hand (docs/testing.md)"]
async fn soak_a_thousand_jobs_rss_within_5_percent() {
    soak(job_count(FULL_JOBS)).await;
}

async fn soak(jobs: usize) {
    let params = common::params_2kib(ProofKind::WinningPost);
    let fx = tempfile::tempdir().unwrap();
    let manifest = fixtures::make(2048, fx.path(), 71).unwrap();
    let work = tempfile::tempdir().unwrap();
    let daemon = DaemonProcess::start(
        &params,
        &work.path().join("zkforge.sock"),
        &work.path().join("daemon.log"),
        &[],
    );
    let input = Arc::new(
        ProofInput::load(&InputSpec::from_fixtures(ProofType::WinningPost, fx.path())).unwrap(),
    );
    let client = connect(&daemon.addr(), Duration::from_secs(10))
        .await
        .unwrap();

    // Warm-up outside the measured run: the key loaded, then the same mix of jobs and garbage
    // from every client (threads, allocator arenas and buffers reach their working size). Two
    // rounds of the clients: after one (8 jobs), a CI run's RSS still rose for another 8 jobs
    // and then stayed flat (157 → 216 → 227 MiB by tenths), a working set settling inside the
    // short run's measured window, not a leak.
    limited(client.clone().preload_srs(pb::PreloadSrsRequest {
        circuit_id: "winning-post-2KiB".into(),
    }))
    .await
    .unwrap();
    let warm = Counters::default();
    let warm_up = drive(&client, &input, "warm", WARM_UP_JOBS, &warm).await;
    let warm_completed = warm_up
        .iter()
        .filter(|o| o.status == pb::ProofStatus::Completed)
        .count();

    // RSS samples, each with the number of jobs finished when it was taken.
    let counters = Counters::default();
    let finished = counters.finished.clone();
    let samples = Arc::new(Mutex::new(Vec::<(usize, u64)>::new()));
    let pid = daemon.child.id();
    let sampler = {
        let (finished, samples) = (finished.clone(), samples.clone());
        tokio::spawn(async move {
            loop {
                if let Some(kib) = common::rss_kib(pid) {
                    let done = finished.load(Ordering::SeqCst);
                    samples.lock().unwrap().push((done, kib));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };

    let start = Instant::now();
    let outcomes = drive(&client, &input, "soak", jobs, &counters).await;
    let wall = start.elapsed();
    sampler.abort();

    // Every valid job ended once, as asked.
    assert_eq!(outcomes.len(), jobs, "no job lost");
    let ids: HashSet<&str> = outcomes.iter().map(|o| o.job_id.as_str()).collect();
    assert_eq!(
        ids.len(),
        jobs,
        "one daemon job per request id, none shared"
    );
    let mut by_plan: HashMap<&str, usize> = HashMap::new();
    let (mut completed, mut cancelled) = (0, 0);
    for o in &outcomes {
        *by_plan.entry(o.plan.name()).or_default() += 1;
        match (o.plan, o.status) {
            (_, pb::ProofStatus::Completed) => completed += 1,
            (Plan::Cancel(_), pb::ProofStatus::Cancelled) => cancelled += 1,
            (plan, status) => panic!("job {} ({plan:?}) ended {status:?}", o.job_id),
        }
    }
    // The short run's mix is small: every kind of job and a garbage request must be in it.
    let rejected = counters.rejected.load(Ordering::SeqCst) + warm.rejected.load(Ordering::SeqCst);
    for plan in ["plain", "cancel", "duplicate id", "await timeout"] {
        assert!(by_plan.contains_key(plan), "no {plan} job in {by_plan:?}");
    }
    assert!(rejected > 0, "no garbage request sent");
    let proofs: Vec<Vec<u8>> = outcomes
        .iter()
        .filter(|o| o.status == pb::ProofStatus::Completed)
        .map(|o| o.proof.clone())
        .collect();
    let verified = tokio::task::spawn_blocking(move || {
        proofs
            .iter()
            .filter(|p| manifest.verify_winning_post(p).unwrap())
            .count()
    })
    .await
    .unwrap();
    assert_eq!(verified, completed, "filecoin-proofs accepts every proof");

    // The queue drained and the daemon's counts agree with the clients'.
    let status = limited(client.clone().get_status(pb::GetStatusRequest {}))
        .await
        .unwrap();
    for q in &status.queues {
        assert_eq!((q.pending, q.in_progress), (0, 0), "{q:?}");
    }
    assert_eq!(
        status.total_proofs_completed as usize,
        completed + warm_completed
    );
    assert_eq!(status.total_proofs_failed, 0);

    // Memory: the last 10% of the run against the second 10%. The first tenth still grows as
    // the eight clients' mixes meet for the first time (147 → 167 MiB in one CI run, flat
    // after): growth that stops is a working set, growth that goes on is a leak.
    let samples = samples.lock().unwrap().clone();
    let window = |lo: usize, hi: usize| -> Vec<u64> {
        samples
            .iter()
            .filter(|(done, _)| (lo..hi).contains(done))
            .map(|&(_, kib)| kib)
            .collect()
    };
    let tenth = (jobs / 10).max(1);
    let (first, last) = (window(tenth, 2 * tenth), window(jobs - tenth, jobs + 1));
    assert!(!first.is_empty() && !last.is_empty(), "RSS sampled");
    let (rss_first, rss_last) = (mean(&first), mean(&last));
    let drift = rss_last / rss_first - 1.0;
    let table = format!(
        "| jobs | clients | plain | cancel | duplicate id | await timeout | garbage refused | \
         completed (verified) | cancelled | lost | RSS 2nd 10% | RSS last 10% | drift | wall | proofs/min |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n\
         | {jobs} | {CLIENTS} | {} | {} | {} | {} | {rejected} | {completed} ({verified}) | {cancelled} | 0 | \
         {:.1} MiB | {:.1} MiB | {:+.1}% | {:.0} s | {:.1} |\n",
        by_plan.get("plain").copied().unwrap_or(0),
        by_plan.get("cancel").copied().unwrap_or(0),
        by_plan.get("duplicate id").copied().unwrap_or(0),
        by_plan.get("await timeout").copied().unwrap_or(0),
        rss_first / 1024.0,
        rss_last / 1024.0,
        drift * 100.0,
        wall.as_secs_f64(),
        completed as f64 / wall.as_secs_f64() * 60.0,
    );
    println!("{table}");
    let curve: Vec<String> = (0..10)
        .map(|d| {
            let w = window(d * jobs / 10, (d + 1) * jobs / 10 + usize::from(d == 9));
            format!("{:.1}", mean(&w) / 1024.0)
        })
        .collect();
    println!("RSS by tenth of the jobs (MiB): {}", curve.join(" "));
    if let Ok(path) = std::env::var("ZKFORGE_SOAK_REPORT") {
        std::fs::write(path, &table).unwrap();
    }
    // Each tenth of a short run holds 2 proofs, and RSS swings by several percent within one
    // proof (witness and MSM buffers come and go); its last tenth is also the drain, with fewer
    // than 8 jobs in flight, so RSS falls there (159 → 122 MiB in one CI run). The short run
    // therefore checks for gross growth only, which is what a leak looks like; the full run,
    // whose last tenth is 100 jobs, holds RSS within the 5% of docs/reliability.md either way.
    if jobs >= 500 {
        assert!(
            drift.abs() <= 0.05,
            "RSS moved {:+.1}% (more than 5%) between the second and the last 10% of the jobs:\n{table}",
            drift * 100.0
        );
    } else {
        assert!(
            drift <= 0.20,
            "RSS grew {:+.1}% (more than 20%) between the second and the last 10% of the jobs:\n{table}",
            drift * 100.0
        );
    }
}
