//! What a connection can hold: caps, idle and half-sent connections, oversized messages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tonic::Code;
use zkforge_engine::EngineConfig;
use zkforge_server::pb;
use zkforge_server::Limits;

use crate::common::{raw, spawn_http};
use crate::harness::*;

fn short_limits() -> Limits {
    Limits {
        max_connections: 8,
        max_connections_per_client: 8,
        idle_timeout_secs: 1,
        body_timeout_secs: 1,
        max_request_bytes: "2MiB".into(),
        max_receiving_bytes: "3MiB".into(),
        urgent_receiving_bytes: "1MiB".into(),
        ..Default::default()
    }
}

/// Opens as many idle connections as [`short_limits`] allows (8) and checks that one over
/// the cap is accepted and closed at once; the idle ones, still open.
async fn fill_to_the_cap(addr: std::net::SocketAddr) -> Vec<tokio::net::TcpStream> {
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
    idle
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
    let mut idle = fill_to_the_cap(addr).await;
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
    d.answers_then_stop().await;
}

/// An HTTP/2 request to `method` whose gRPC frame announces `announced` bytes, of which only
/// `sent` arrive; returns the grpc-status and message the daemon answers with.
async fn partial_frame(
    addr: std::net::SocketAddr,
    method: &str,
    announced: u32,
    sent: usize,
) -> (String, String) {
    let call = raw::start(addr, method, announced, &vec![0x0a; sent]).await;
    // The body stays open, unfinished, until the answer comes.
    let (status, msg) = raw::answer(call.response, Duration::from_secs(5)).await;
    drop(call.body);
    (status.to_string(), msg)
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
    // Two stalled 1.6 MB bodies at once pass the 2 MiB that bulk requests may hold: the second
    // is not read past the budget, it waits (at most body_timeout) for room, which comes when
    // the first is refused for stalling; then it stalls itself.
    let first = tokio::spawn(partial_frame(addr, "SubmitProof", 2 << 20, 1_600_000));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, msg) = partial_frame(addr, "SubmitProof", 2 << 20, 1_600_000).await;
    let stalled = status == (Code::DeadlineExceeded as i32).to_string() && msg.contains("stalled");
    let no_room = status == (Code::ResourceExhausted as i32).to_string()
        && msg.contains("max_receiving_bytes");
    assert!(stalled || no_room, "{status}: {msg}");
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
    d.answers_then_stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_http_side_closes_half_sent_headers_and_keeps_serving() {
    let (addr, stop, task) = spawn_http(
        Box::new(Gate(Arc::default())),
        short_limits().check().unwrap(),
    )
    .await;
    use tokio::io::AsyncWriteExt;
    // Half a request line, then silence (once: held for 140 s and more).
    let mut half = tokio::net::TcpStream::connect(addr).await.unwrap();
    half.write_all(b"GET /sta").await.unwrap();
    assert!(
        closed_within(&mut half, Duration::from_secs(3)).await,
        "half a header"
    );
    // One over the connection cap is closed at once; a whole request is answered.
    let idle = fill_to_the_cap(addr).await;
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
