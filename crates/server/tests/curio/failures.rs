//! What a client is told of a failure (issue 37): a job this machine has no room for, a job
//! whose parameters are missing, a bad request, each with its kind's gRPC code and a bounded
//! message. A FAILED job is answered FAILED in the response as cuzk.v1 says, its code in the
//! `zkforge-failure-code` header; a refused call is that code itself.

use tonic::transport::Channel;
use tonic::{Code, Response};
use zkforge_engine::EngineConfig;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::status::FAILURE_CODE_HEADER;

use crate::daemon::{Setup, TestDaemon};
use crate::requests::Sector;

/// The bound on a Status's message, with room for the "… (n more bytes)" that says so.
const BOUNDED: usize = 1024 + 32;

async fn client(d: &TestDaemon) -> ProvingEngineClient<Channel> {
    ProvingEngineClient::connect(format!("http://{}", d.tcp()))
        .await
        .unwrap()
}

/// `Prove` with `submit`, which must fail: its FAILED answer and the code its header gives.
async fn prove_failed(
    c: &mut ProvingEngineClient<Channel>,
    submit: pb::SubmitProofRequest,
) -> (pb::AwaitProofResponse, Code) {
    let prove = pb::ProveRequest {
        submit: Some(submit),
    };
    failed(c.prove(prove).await.unwrap())
}

/// The FAILED answer of `Prove` and the code its header gives.
fn failed(r: Response<pb::ProveResponse>) -> (pb::AwaitProofResponse, Code) {
    let code = r
        .metadata()
        .get(FAILURE_CODE_HEADER)
        .expect("a failed job's answer names its code")
        .to_str()
        .unwrap()
        .parse::<i32>()
        .unwrap();
    let answer = r.into_inner().result.unwrap();
    assert_eq!(answer.status, pb::ProofStatus::Failed as i32, "{answer:?}");
    assert!(answer.proof.is_empty());
    (answer, Code::from(code))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_no_room_is_resource_exhausted_and_a_bad_request_invalid_argument() {
    let sector = Sector::new(37);
    // 1 MiB of host memory: no 2 KiB parameter set and a partition fit beside each other.
    let d = TestDaemon::start(Setup {
        engine: EngineConfig {
            synthesis_workers: 1,
            memory_budget: "1MiB".into(),
            ..Default::default()
        },
        ..Setup::default()
    })
    .await;
    let mut c = client(&d).await;
    let (answer, code) = prove_failed(&mut c, sector.winning_post()).await;
    assert_eq!(code, Code::ResourceExhausted, "{}", answer.error_message);
    assert!(
        answer.error_message.contains("engine.memory_budget"),
        "{}",
        answer.error_message
    );
    assert!(answer.error_message.len() <= BOUNDED);
    // The job's AwaitProof answers the same.
    let again = c
        .await_proof(pb::AwaitProofRequest {
            job_id: answer.job_id.clone(),
            timeout_ms: 0,
        })
        .await
        .unwrap();
    assert_eq!(again.metadata().get(FAILURE_CODE_HEADER).unwrap(), "8");
    assert_eq!(again.into_inner().error_message, answer.error_message);
    // Loading the set ahead is refused for the same reason, with the same code.
    let st = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: "winning-post-2k".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::ResourceExhausted, "{}", st.message());
    assert!(
        st.message().contains("engine.memory_budget"),
        "{}",
        st.message()
    );

    // A bad request is refused before it is a job: INVALID_ARGUMENT, whatever its size.
    let mut bad = sector.winning_post();
    bad.request_id.clear();
    bad.vanilla_proofs = vec![vec![b'{'; 1 << 20]];
    let st = c.submit_proof(bad).await.unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument, "{}", st.message());
    assert!(st.message().len() <= BOUNDED, "{}", st.message().len());
    // Each was answered, none of them proved: nothing is left behind.
    assert_eq!(d.engine.status().completed, 0);
    d.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_parameters_are_missing_is_failed_precondition_with_its_message_bounded() {
    let sector = Sector::new(38);
    // A parameter directory whose path alone is longer than a Status's message may be: the
    // failure names it.
    let root = tempfile::tempdir().unwrap();
    let deep = (0..12).fold(root.path().to_path_buf(), |p, i| {
        p.join(format!("{i:02}{}", "p".repeat(150)))
    });
    std::fs::create_dir_all(&deep).unwrap();
    let d = TestDaemon::start(Setup {
        params: Some(deep.clone()),
        ..Setup::default()
    })
    .await;
    let mut c = client(&d).await;
    let (answer, code) = prove_failed(&mut c, sector.winning_post()).await;
    let msg = &answer.error_message;
    assert_eq!(code, Code::FailedPrecondition, "{msg}");
    assert!(msg.contains("missing parameters"), "{msg}");
    assert!(msg.len() <= BOUNDED, "{}", msg.len());
    assert!(msg.ends_with("more bytes)"), "{msg}");
    d.stop().await;
}
