//! A hostile-but-local client against the daemon (issue 22): one test per way a client once
//! aborted or wedged it, and per bound it checks. After each, the daemon is alive, answers
//! GetStatus within a second, and this process's peak memory moved by no more than the bound
//! the test states. Loopback only; each test bounded in time.
//!
//! Jobs that must stay unfinished wait on a [`GatedSource`]: their parameter load blocks until
//! the test opens the gate, then fails, so nothing here needs proving keys.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::io::AsyncReadExt;
use tonic::transport::Channel;
use tonic::Code;
use zkforge_engine::{Engine, EngineConfig, ParamsSource};
use zkforge_filecoin::fixtures::{self, read_base64_list, Manifest};
use zkforge_filecoin::{ParamsId, MAX_PARTITIONS_PER_DEADLINE};
use zkforge_groth16::{CpuBackend, LoadedKey, QueryLengths};
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::{Access, Limits, Running};

/// Parameters that never arrive: a load blocks until the gate opens, then fails.
#[derive(Default)]
struct GatedSource {
    open: Mutex<bool>,
    changed: Condvar,
}

impl GatedSource {
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }
}

struct Gate(Arc<GatedSource>);

impl ParamsSource for Gate {
    fn lengths(&self, _: &ParamsId) -> anyhow::Result<QueryLengths> {
        Ok(QueryLengths {
            ic: 2,
            h: 15,
            l: 16,
            a: 16,
            b_g1: 16,
            b_g2: 16,
        })
    }

    fn load(&self, id: &ParamsId, _: bool) -> anyhow::Result<LoadedKey> {
        let mut open = self.0.open.lock().unwrap();
        while !*open {
            open = self.0.changed.wait(open).unwrap();
        }
        anyhow::bail!("{} withheld by the test", id.circuit_id())
    }
}

/// A daemon on loopback with `limits`, its engine configured by `engine`.
struct Daemon {
    running: Option<Running>,
    gate: Arc<GatedSource>,
}

impl Daemon {
    async fn start(limits: Limits, engine: EngineConfig) -> Self {
        let gate = Arc::new(GatedSource::default());
        let engine = Arc::new(
            Engine::start(
                EngineConfig {
                    synthesis_workers: 2,
                    memory_budget: "1GiB".into(),
                    ..engine
                },
                Arc::new(CpuBackend::new()),
                Box::new(Gate(gate.clone())),
            )
            .unwrap(),
        );
        let running = Running::start_limited(
            engine,
            "127.0.0.1:0".parse().unwrap(),
            Access::default(),
            limits.check().unwrap(),
        )
        .await
        .unwrap();
        Self {
            running: Some(running),
            gate,
        }
    }

    fn addr(&self) -> std::net::SocketAddr {
        self.running.as_ref().unwrap().addr.unwrap()
    }

    async fn client(&self) -> ProvingEngineClient<Channel> {
        ProvingEngineClient::connect(format!("http://{}", self.addr()))
            .await
            .unwrap()
            .max_encoding_message_size(usize::MAX)
    }

    /// Alive and answering: a fresh connection's GetStatus within a second.
    async fn answers(&self) {
        let t = Instant::now();
        let mut c = self.client().await;
        tokio::time::timeout(
            Duration::from_secs(1),
            c.get_status(pb::GetStatusRequest {}),
        )
        .await
        .expect("GetStatus answered within a second")
        .expect("GetStatus succeeded");
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    async fn stop(mut self) {
        self.gate.release();
        self.running.take().unwrap().stop().await.unwrap();
    }
}

/// This process's peak resident memory (VmHWM), in bytes.
fn peak_rss() -> u64 {
    zkforge_engine::process_memory().1
}

/// Threads of this process now.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// A sealed 2 KiB sector's client inputs (made once per test, under a second).
fn sector(dir: &Path) -> Manifest {
    fixtures::make(2048, dir, 7).unwrap()
}

fn window_post_request(dir: &Path, m: &Manifest) -> pb::SubmitProofRequest {
    let p = m.window_post().unwrap();
    pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WindowPostPartition as i32,
        sector_size: 2048,
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap()).unwrap(),
        randomness: fixtures::unhex32(&p.randomness).unwrap().to_vec(),
        partition_index: p.partition_index as u32,
        ..Default::default()
    }
}

fn winning_post_request(dir: &Path, m: &Manifest, id: &str) -> pb::SubmitProofRequest {
    let p = m.winning_post().unwrap();
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: pb::ProofKind::WinningPost as i32,
        sector_size: 2048,
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&p.vanilla)).unwrap()).unwrap(),
        randomness: fixtures::unhex32(&p.randomness).unwrap().to_vec(),
        ..Default::default()
    }
}

fn assert_refused(
    r: Result<tonic::Response<pb::SubmitProofResponse>, tonic::Status>,
    code: Code,
    text: &str,
) {
    let e = r.expect_err("refused");
    assert_eq!(e.code(), code, "{}", e.message());
    assert!(
        e.message().contains(text),
        "{:?} lacks {text:?}",
        e.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_window_post_partition_index_past_a_deadline_is_refused_before_it_sizes_anything() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let before = peak_rss();
    // Once: u32::MAX made a 343 GB allocation (SIGABRT), 10^8 one of 7.6 GB.
    let deadline = MAX_PARTITIONS_PER_DEADLINE as u32;
    for index in [deadline, deadline + 1, 1 << 23, 100_000_000, u32::MAX] {
        let mut r = window_post_request(dir.path(), &m);
        r.partition_index = index;
        let t = Instant::now();
        assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "partition");
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "{index}: {:?}",
            t.elapsed()
        );
    }
    // The last partition a deadline has is a valid index: the request is checked further (its
    // vanilla proofs are for partition 0's challenges) but sizes nothing from the index.
    let mut r = window_post_request(dir.path(), &m);
    r.partition_index = deadline - 1;
    let _ = c.submit_proof(r).await;
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 64 << 20, "peak memory grew {grew} bytes");
    d.answers().await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn floods_of_vanilla_proofs_are_refused_before_they_are_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    // 3M empty entries: 6 MB on the wire, 72 MB as decoded Vec headers. Built before the
    // baseline so that only the daemon's side counts.
    let mut flood = window_post_request(dir.path(), &m);
    flood.vanilla_proofs = vec![Vec::new(); 3_000_000];
    let mut copies = window_post_request(dir.path(), &m);
    let one = copies.vanilla_proofs[0].clone();
    copies.vanilla_proofs = vec![one; 35_000];
    let mut json = window_post_request(dir.path(), &m);
    json.vanilla_proofs.clear();
    json.vanilla_proof = format!("[{}\"\"]", "\"\",".repeat(3_000_000)).into_bytes();
    let before = peak_rss();
    assert_refused(
        c.submit_proof(flood).await,
        Code::InvalidArgument,
        "vanilla_proofs has 3000000 entries",
    );
    let grew = peak_rss().saturating_sub(before);
    // The 6 MB message arrives once and is scanned, never decoded into 72 MB of headers.
    assert!(grew < 48 << 20, "peak memory grew {grew} bytes");
    // 35,000 real proofs (each message ~100 MB, so no memory bound here): counted before any
    // is decoded (once: 4.8 s of decoding first).
    let t = Instant::now();
    assert_refused(c.submit_proof(copies).await, Code::InvalidArgument, "35000");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "counted before decoding: {:?}",
        t.elapsed()
    );
    let t = Instant::now();
    assert_refused(
        c.submit_proof(json).await,
        Code::InvalidArgument,
        "vanilla_proof",
    );
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "counted while read: {:?}",
        t.elapsed()
    );
    d.answers().await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hundreds_of_waiting_clients_hold_no_threads() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let job = c
        .submit_proof(winning_post_request(dir.path(), &m, ""))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let before = threads();
    // 600 waits without a timeout over 4 connections (256 streams each at most).
    let mut waits = Vec::new();
    for k in 0..600 {
        if k % 150 == 0 {
            c = d.client().await;
        }
        let mut c = c.clone();
        let job = job.clone();
        waits.push(tokio::spawn(async move {
            c.await_proof(pb::AwaitProofRequest {
                job_id: job,
                timeout_ms: 0,
            })
            .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        waits.iter().all(|w| !w.is_finished()),
        "the job is still running"
    );
    let grew = threads().saturating_sub(before);
    assert!(grew < 16, "600 waiting clients took {grew} threads");
    d.answers().await;
    // A wait with a timeout answers TIMEOUT on time, even now.
    let t = Instant::now();
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: job.clone(),
            timeout_ms: 200,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(r.status, pb::ProofStatus::Timeout as i32);
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    // The clients leave; then the job ends and nothing was waiting on a thread.
    for w in &waits {
        w.abort();
    }
    d.gate.release();
    let done = c
        .await_proof(pb::AwaitProofRequest {
            job_id: job,
            timeout_ms: 10_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        done.status,
        pb::ProofStatus::Failed as i32,
        "{}",
        done.error_message
    );
    assert!(
        done.error_message.contains("withheld by the test"),
        "{}",
        done.error_message
    );
    d.answers().await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_ids_are_bounded_and_not_reused_for_another_request() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let max = zkforge_engine::MAX_REQUEST_ID_BYTES;
    let before = peak_rss();
    for len in [max + 1, 1 << 20] {
        let r = winning_post_request(dir.path(), &m, &"r".repeat(len));
        assert_refused(
            c.submit_proof(r).await,
            Code::InvalidArgument,
            "request_id is",
        );
    }
    assert!(peak_rss().saturating_sub(before) < 32 << 20);
    let id = "w".repeat(max);
    let first = c
        .submit_proof(winning_post_request(dir.path(), &m, &id))
        .await
        .unwrap()
        .into_inner();
    let again = c
        .submit_proof(winning_post_request(dir.path(), &m, &id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        first.job_id, again.job_id,
        "the same request again is the same job"
    );
    // The same id for another request: refused, not silently the old job.
    let mut other = window_post_request(dir.path(), &m);
    other.request_id = id;
    assert_refused(
        c.submit_proof(other).await,
        Code::AlreadyExists,
        "different payload",
    );
    d.answers().await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_queue_answers_resource_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let config = EngineConfig {
        max_queued_jobs: 2,
        ..Default::default()
    };
    let d = Daemon::start(Limits::default(), config).await;
    let mut c = d.client().await;
    for k in 0..2 {
        let r = c
            .submit_proof(winning_post_request(dir.path(), &m, &format!("j{k}")))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(r.assigned_gpu, "", "the CPU backend has no GPU");
        assert!(r.queue_position <= k, "{r:?}");
    }
    let third = c
        .submit_proof(winning_post_request(dir.path(), &m, "j2"))
        .await;
    assert_refused(third, Code::ResourceExhausted, "engine.max_queued_jobs");
    d.answers().await;
    d.stop().await;

    // Bytes held by queued requests: a limit below one request's size refuses it.
    let config = EngineConfig {
        max_queued_request_bytes: "1KiB".into(),
        ..Default::default()
    };
    let d = Daemon::start(Limits::default(), config).await;
    let mut c = d.client().await;
    let r = c
        .submit_proof(winning_post_request(dir.path(), &m, "big"))
        .await;
    assert_refused(
        r,
        Code::ResourceExhausted,
        "engine.max_queued_request_bytes",
    );
    d.answers().await;
    d.stop().await;
}

fn short_limits() -> Limits {
    Limits {
        max_connections: 8,
        max_connections_per_client: 8,
        idle_timeout_secs: 1,
        body_timeout_secs: 1,
        max_request_bytes: "2MiB".into(),
        max_receiving_bytes: "3MiB".into(),
        ..Default::default()
    }
}

/// Reads until the peer closes or `within` passes; true when it closed.
async fn closed_within(s: &mut tokio::net::TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn connections_are_capped_and_idle_ones_closed() {
    let d = Daemon::start(short_limits(), EngineConfig::default()).await;
    let addr = d.addr();
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // One over the cap is accepted and closed at once.
    let mut over = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_within(&mut over, Duration::from_millis(500)).await,
        "over the cap"
    );
    // Idle ones (nothing sent, or half a preface) are closed after the idle timeout.
    use tokio::io::AsyncWriteExt;
    idle[0].write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
    for s in &mut idle {
        assert!(
            closed_within(s, Duration::from_secs(3)).await,
            "idle connection"
        );
    }
    // A request in flight keeps its connection past the idle timeout.
    let mut c = d.client().await;
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "999".into(),
            timeout_ms: 10,
        })
        .await;
    assert_eq!(r.unwrap_err().code(), Code::NotFound);
    d.answers().await;
    d.stop().await;
}

/// An HTTP/2 request to `method` whose gRPC frame announces `announced` bytes, of which only
/// `sent` arrive; returns the grpc-status and message the daemon answers with.
async fn partial_frame(
    addr: std::net::SocketAddr,
    method: &str,
    announced: u32,
    sent: usize,
) -> (String, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let req = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/cuzk.v1.ProvingEngine/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(req, false).unwrap();
    let mut frame = vec![0u8];
    frame.extend_from_slice(&announced.to_be_bytes());
    frame.extend(std::iter::repeat_n(0x0a, sent));
    body.send_data(Bytes::from(frame), false).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(5), response)
        .await
        .expect("an answer within 5 s")
        .unwrap();
    let header = |h: &http::HeaderMap, k: &str| h.get(k).map(|v| v.to_str().unwrap().to_string());
    if let Some(status) = header(response.headers(), "grpc-status") {
        let msg = header(response.headers(), "grpc-message").unwrap_or_default();
        return (status, msg);
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let _ = chunk;
    }
    let trailers = body.trailers().await.unwrap().unwrap_or_default();
    (
        header(&trailers, "grpc-status").unwrap_or_default(),
        header(&trailers, "grpc-message").unwrap_or_default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn half_sent_and_oversized_messages_are_refused_and_freed() {
    let d = Daemon::start(short_limits(), EngineConfig::default()).await;
    let addr = d.addr();
    // A frame announcing more than the method takes is refused from its length prefix.
    let (status, msg) = partial_frame(addr, "SubmitProof", 250 << 20, 1 << 20).await;
    assert_eq!(
        status,
        (Code::ResourceExhausted as i32).to_string(),
        "{msg}"
    );
    // A frame within the limit, half sent, then silence: refused after body_timeout.
    let t = Instant::now();
    let (status, msg) = partial_frame(addr, "SubmitProof", 2 << 20, 1 << 20).await;
    assert_eq!(status, (Code::DeadlineExceeded as i32).to_string(), "{msg}");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    // GetStatus takes 64 KiB at most: refused as soon as more arrives.
    let (status, msg) = partial_frame(addr, "GetStatus", 10 << 20, 1 << 20).await;
    assert_eq!(
        status,
        (Code::ResourceExhausted as i32).to_string(),
        "{msg}"
    );
    // Two stalled 1.5 MB bodies at once pass the 3 MiB receiving budget: the second is refused.
    let first = tokio::spawn(partial_frame(addr, "SubmitProof", 2 << 20, 1_600_000));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, msg) = partial_frame(addr, "SubmitProof", 2 << 20, 1_600_000).await;
    assert_eq!(
        status,
        (Code::ResourceExhausted as i32).to_string(),
        "{msg}"
    );
    assert!(msg.contains("max_receiving_bytes"), "{msg}");
    let (status, _) = first.await.unwrap();
    assert_eq!(status, (Code::DeadlineExceeded as i32).to_string());
    // The budget came back: a whole 1.5 MB message is received (and refused for its content).
    let mut c = d.client().await;
    let r = pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        vanilla_proof: vec![b' '; 1_500_000],
        ..Default::default()
    };
    assert_refused(
        c.submit_proof(r).await,
        Code::InvalidArgument,
        "vanilla_proof",
    );
    d.answers().await;
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_http_side_closes_half_sent_headers_and_keeps_serving() {
    let engine = Arc::new(
        Engine::start(
            EngineConfig {
                memory_budget: "1GiB".into(),
                ..Default::default()
            },
            Arc::new(CpuBackend::new()),
            Box::new(Gate(Arc::default())),
        )
        .unwrap(),
    );
    let (ready, bound) = tokio::sync::oneshot::channel();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(zkforge_server::serve_http(
        engine,
        "127.0.0.1:0".parse().unwrap(),
        short_limits().check().unwrap(),
        move |a| {
            let _ = ready.send(a);
        },
        async {
            let _ = stopped.await;
        },
    ));
    let addr = bound.await.unwrap();
    use tokio::io::AsyncWriteExt;
    // Half a request line, then silence (once: held for 140 s and more).
    let mut half = tokio::net::TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET /sta").await.unwrap();
    assert!(
        closed_within(&mut half, Duration::from_secs(3)).await,
        "half a header"
    );
    // One over the connection cap is closed at once; a whole request is answered.
    let mut idle = Vec::new();
    for _ in 0..8 {
        idle.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut over = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_within(&mut over, Duration::from_millis(500)).await,
        "over the cap"
    );
    drop(idle);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    tokio::time::timeout(Duration::from_secs(1), s.read_to_string(&mut body))
        .await
        .expect("answered within a second")
        .unwrap();
    assert!(body.contains("zkforge_memory_budget_bytes"), "{body}");
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_wire_fields_must_agree_with_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let m = sector(dir.path());
    let d = Daemon::start(Limits::default(), EngineConfig::default()).await;
    let mut c = d.client().await;
    let wrapper = std::fs::read(dir.path().join(&m.c1_wrapper)).unwrap();
    let sector_num = serde_json::from_slice::<serde_json::Value>(&wrapper).unwrap()["SectorNum"]
        .as_u64()
        .unwrap();
    let porep = |f: fn(&mut pb::SubmitProofRequest)| {
        let mut r = pb::SubmitProofRequest {
            proof_kind: pb::ProofKind::PorepSealCommit as i32,
            vanilla_proof: wrapper.clone(),
            ..Default::default()
        };
        f(&mut r);
        r
    };
    // The C1 is StackedDrg2KiBV1_1 (ffi number 5).
    assert_refused(
        c.submit_proof(porep(|r| r.registered_proof = 8)).await,
        Code::InvalidArgument,
        "registered_proof 8 does not match",
    );
    assert_refused(
        c.submit_proof(porep(|r| r.sector_size = 8 << 20)).await,
        Code::InvalidArgument,
        "sector_size 8388608",
    );
    let mut r = porep(|_| {});
    r.sector_number = sector_num + 1;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "SectorNum");
    let mut r = porep(|r| {
        r.registered_proof = 5;
        r.sector_size = 2048;
    });
    r.sector_number = sector_num;
    c.submit_proof(r)
        .await
        .expect("agreeing fields are accepted");
    // PoSt: the number must be of the request's kind and agree with sector_size.
    let mut r = winning_post_request(dir.path(), &m, "");
    r.registered_proof = 13; // StackedDrgWindow32GiBV1_2
    assert_refused(
        c.submit_proof(r).await,
        Code::InvalidArgument,
        "is not a winning-post proof type",
    );
    let mut r = winning_post_request(dir.path(), &m, "");
    r.registered_proof = 3; // StackedDrgWinning32GiBV1, but sector_size says 2 KiB
    assert_refused(
        c.submit_proof(r).await,
        Code::InvalidArgument,
        "does not match registered_proof 3",
    );
    // A 2 KiB sector's proofs presented as a 32 GiB request (the type chosen by the number).
    let mut r = winning_post_request(dir.path(), &m, "");
    r.sector_size = 0;
    r.registered_proof = 3;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "32GiB");
    // WinningPoSt: sector_number must be the proven sector.
    let mut r = winning_post_request(dir.path(), &m, "");
    r.sector_number = 1 << 40;
    assert_refused(c.submit_proof(r).await, Code::InvalidArgument, "sector");
    d.answers().await;
    d.stop().await;
}
