//! The daemon over real sockets with a tonic client: a PoRep proved over TCP and a WinningPoSt
//! over a unix socket verify with filecoin-proofs; Submit+Await, timeouts, cancel, unknown ids,
//! a request_id where a job id is expected (cuzk's), status counted in jobs, cuzk's metric
//! names, preload/evict, and bad requests that leave the daemon serving.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use tonic::transport::{Channel, Endpoint};
use tonic::Code;
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_filecoin::{params, ProofKind};
use zkforge_fixtures::{self as fixtures, Manifest};
use zkforge_groth16::CpuBackend;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::{Access, Listen, Running};

use common::{await_proof, spawn_http};

/// The shared test-parameter directory (generated on first use, as the other test suites do).
fn param_dir() -> PathBuf {
    let dir = params::zkforge_cache_dir().join("params");
    // filecoin-proofs reads this once, at its first use.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
    // The unix socket test proves a WinningPoSt: the transport is what it checks, and a 2 KiB
    // PoRep costs a minute of the 2-core CI machine.
    for kind in [ProofKind::PoRep, ProofKind::WinningPost] {
        params::ensure_test_params(kind, 2048, &dir, &()).unwrap();
    }
    dir
}

/// GetStatus, which must answer.
async fn get_status(c: &mut ProvingEngineClient<Channel>) -> pb::GetStatusResponse {
    c.get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner()
}

/// PreloadSRS of `circuit_id`: the call's own result, as refusals are checked too.
async fn preload(
    c: &mut ProvingEngineClient<Channel>,
    circuit_id: &str,
) -> Result<pb::PreloadSrsResponse, tonic::Status> {
    c.preload_srs(pb::PreloadSrsRequest {
        circuit_id: circuit_id.into(),
    })
    .await
    .map(tonic::Response::into_inner)
}

/// A daemon on the CPU backend with the shared test parameters.
async fn start_daemon(listen: Listen) -> Running {
    let engine = Engine::start(
        EngineConfig {
            synthesis_workers: 1,
            ..Default::default()
        },
        Arc::new(CpuBackend::new()),
        Box::new(ParamsDir(param_dir())),
    )
    .unwrap();
    Running::start(Arc::new(engine), listen, Access::default())
        .await
        .unwrap()
}

fn porep_request(dir: &std::path::Path, m: &Manifest, id: &str) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        vanilla_proof: std::fs::read(dir.join(&m.c1_wrapper)).unwrap(),
        ..Default::default()
    }
}

/// Prove of `request`: COMPLETED, and filecoin-proofs (`verify`) accepts the proof.
async fn prove_and_verify(
    c: &mut ProvingEngineClient<Channel>,
    request: pb::SubmitProofRequest,
    verify: impl Fn(&[u8]) -> anyhow::Result<bool>,
) -> pb::AwaitProofResponse {
    let r = c
        .prove(pb::ProveRequest {
            submit: Some(request),
        })
        .await
        .unwrap()
        .into_inner()
        .result
        .unwrap();
    assert_eq!(
        r.status,
        pb::ProofStatus::Completed as i32,
        "{}",
        r.error_message
    );
    assert!(
        verify(&r.proof).unwrap(),
        "filecoin-proofs accepts the daemon's proof"
    );
    r
}

async fn tcp_client(addr: std::net::SocketAddr) -> ProvingEngineClient<Channel> {
    ProvingEngineClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prove_over_tcp_and_the_rpcs_around_it() {
    // filecoin-proofs reads FIL_PROOFS_PARAMETER_CACHE once, at its first use: set it first.
    param_dir();
    let fx = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, fx.path(), 31).unwrap();
    let daemon = start_daemon("127.0.0.1:0".parse().unwrap()).await;
    let addr = daemon.addr;
    let mut c = tcp_client(addr.unwrap()).await;
    let channel = Endpoint::try_from(format!("http://{}", addr.unwrap()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "cuzk.v1.ProvingEngine".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        serving,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );

    // Garbage first: a clear error, and the daemon keeps serving.
    let mut bad = porep_request(fx.path(), &m, "garbage");
    bad.vanilla_proof = b"{not json".to_vec();
    let err = c.submit_proof(bad).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(
        err.message().contains("not valid JSON"),
        "{}",
        err.message()
    );
    let mut huge = porep_request(fx.path(), &m, "huge");
    huge.vanilla_proof = vec![b' '; 257 << 20];
    let err = c.submit_proof(huge).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{}", err.message());
    let mut wrong_kind = porep_request(fx.path(), &m, "kind");
    wrong_kind.proof_kind = 9;
    assert_eq!(
        c.submit_proof(wrong_kind).await.unwrap_err().code(),
        Code::InvalidArgument
    );

    let sector_1 = porep_request(fx.path(), &m, "sector-1");
    let r = prove_and_verify(&mut c, sector_1, |p| m.verify_porep(p)).await;
    assert!(r.total_ms >= r.gpu_compute_ms);

    // Submit + Await, with a timeout first.
    let job = c
        .submit_proof(porep_request(fx.path(), &m, "sector-2"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let again = c
        .submit_proof(porep_request(fx.path(), &m, "sector-2"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    assert_eq!(job, again, "same request id, same job");
    let status = get_status(&mut c).await;
    let porep = status
        .queues
        .iter()
        .find(|q| q.proof_kind == "porep-c2")
        .unwrap();
    assert_eq!(
        porep.pending + porep.in_progress,
        1,
        "the submitted job shows in the queues"
    );
    let early = await_proof(&mut c, &job, 1).await;
    assert_eq!(early.status, pb::ProofStatus::Timeout as i32);
    // cuzk's job id is the request_id: it names the job too.
    let done = await_proof(&mut c, "sector-2", 0).await;
    assert_eq!(done.status, pb::ProofStatus::Completed as i32);
    assert_eq!(done.job_id, "sector-2");
    assert!(m.verify_porep(&done.proof).unwrap());

    // Cancel (by the request_id), unknown ids; the job's number alone names nothing.
    let job = c
        .submit_proof(porep_request(fx.path(), &m, "sector-3"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let number = job.split('-').next().unwrap().to_string();
    let guessed = c
        .cancel_proof(pb::CancelProofRequest { job_id: number })
        .await
        .unwrap_err();
    assert_eq!(guessed.code(), Code::NotFound, "{}", guessed.message());
    c.cancel_proof(pb::CancelProofRequest {
        job_id: "sector-3".into(),
    })
    .await
    .unwrap();
    let r = await_proof(&mut c, &job, 0).await;
    assert_eq!(r.status, pb::ProofStatus::Cancelled as i32);
    let e = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "424242".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(
        c.cancel_proof(pb::CancelProofRequest { job_id: "x".into() })
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );

    // Parameters: loaded by the jobs, evicted, preloaded again.
    let status = get_status(&mut c).await;
    assert_eq!(status.total_proofs_completed, 2);
    assert!(status
        .loaded_srs
        .iter()
        .any(|s| s.circuit_id == "porep-2KiB"));
    let ev = c
        .evict_srs(pb::EvictSrsRequest {
            circuit_id: "porep-2k".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(ev.was_loaded && ev.freed_bytes > 0);
    let status = get_status(&mut c).await;
    assert!(status.loaded_srs.is_empty());
    let pre = preload(&mut c, "porep-2k").await.unwrap();
    assert!(!pre.already_loaded);
    let pre = preload(&mut c, "porep-2k").await.unwrap();
    assert!(pre.already_loaded);
    let bad = preload(&mut c, "porep-3k").await.unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument);

    let metrics = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    assert!(
        metrics.contains("zkforge_jobs_total{outcome=\"completed\"} 2"),
        "{metrics}"
    );

    // One request_id under two proof kinds names two jobs: awaiting or cancelling it is an
    // error naming both; each job answers to its job_id.
    let submit = |r: pb::SubmitProofRequest| {
        let mut c = c.clone();
        async move { c.submit_proof(r).await.unwrap().into_inner().job_id }
    };
    let porep = submit(porep_request(fx.path(), &m, "dup")).await;
    let winning = submit(common::winning_post_request(fx.path(), &m, "dup")).await;
    let awaited = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "dup".into(),
            timeout_ms: 0,
        })
        .await
        .unwrap_err();
    let cancelled = c
        .cancel_proof(pb::CancelProofRequest {
            job_id: "dup".into(),
        })
        .await
        .unwrap_err();
    for e in [awaited, cancelled] {
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        let msg = e.message();
        assert!(
            msg.contains("names 2 jobs") && msg.contains(&porep) && msg.contains(&winning),
            "{msg}"
        );
    }
    c.cancel_proof(pb::CancelProofRequest {
        job_id: porep.clone(),
    })
    .await
    .unwrap();
    assert_eq!(
        await_proof(&mut c, &porep, 0).await.status,
        pb::ProofStatus::Cancelled as i32
    );
    let won = await_proof(&mut c, &winning, 0).await;
    assert_eq!(won.status, pb::ProofStatus::Completed as i32);
    assert!(m.verify_winning_post(&won.proof).unwrap());

    // cuzk's metric names, counting jobs as cuzk does.
    let metrics = c
        .get_metrics(pb::GetMetricsRequest {})
        .await
        .unwrap()
        .into_inner()
        .prometheus_text;
    for sample in [
        "cuzk_proofs_completed_total 3\n",
        "cuzk_proofs_failed_total 0\n",
        "cuzk_proofs_completed{proof_kind=\"porep_c2\"} 2\n",
        "cuzk_proofs_completed{proof_kind=\"winning_post\"} 1\n",
        "cuzk_proof_duration_seconds_count{proof_kind=\"porep_c2\"} 2\n",
        "cuzk_queue_depth 0\n",
        "cuzk_running_jobs 0\n",
        "cuzk_gpu_workers 0\n",
    ] {
        assert!(metrics.contains(sample), "no {sample:?} in\n{metrics}");
    }
    daemon.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prove_over_a_unix_socket() {
    param_dir();
    let fx = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, fx.path(), 32).unwrap();
    let sock_dir = tempfile::tempdir().unwrap();
    let path = sock_dir.path().join("run/zkforge.sock");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, b"stale").unwrap();
    let daemon = start_daemon(Listen::Unix(path.clone())).await;
    let p = path.clone();
    let channel = Endpoint::try_from("http://localhost")
        .unwrap()
        .connect_with_connector(tower::service_fn(move |_| {
            let p = p.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(p).await?,
                ))
            }
        }))
        .await
        .unwrap();
    let mut c = ProvingEngineClient::new(channel);
    let request = common::winning_post_request(fx.path(), &m, "unix");
    prove_and_verify(&mut c, request, |p| m.verify_winning_post(p)).await;
    daemon.stop().await.unwrap();
}

/// A raw HTTP/1.1 GET on loopback: the body of the response.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_status_and_metrics() {
    let (addr, stop, task) = spawn_http(
        Box::new(ParamsDir(tempfile::tempdir().unwrap().keep())),
        Default::default(),
    )
    .await;
    let metrics = http_get(addr, "/metrics").await;
    assert!(
        metrics.contains("zkforge_memory_budget_bytes 1073741824"),
        "{metrics}"
    );
    let status = http_get(addr, "/status").await;
    let body = &status[status.find("\r\n\r\n").unwrap() + 4..];
    let json: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(json["memory_budget_bytes"], 1073741824u64);
    assert_eq!(json["backend"], "cpu");
    assert!(
        json["workers"].is_array() && json["partitions"].is_array(),
        "{json}"
    );
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
