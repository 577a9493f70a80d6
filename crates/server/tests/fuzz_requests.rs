//! Fuzzed SubmitProofRequests: every field drawn from valid values, edge values and garbage
//! (proof kinds, sector sizes, registered_proof numbers, priorities, partition indices and
//! sector numbers over their whole range with the edges, empty and garbage payloads,
//! real payloads of the wrong kind, C1 outputs of the synthetic and NI-PoRep types, short and
//! long byte fields), converted the way the daemon
//! does (`request::circuits`, then the priority), plus circuit ids and job ids. Every case is
//! accepted or refused with INVALID_ARGUMENT and a message (an NI-PoRep C1 always refused: it
//! needs aggregation); never a panic, an allocation sized by the input, or a slow case. A few hundred of them then go over gRPC to a running daemon,
//! which answers each with a named code and keeps serving.

#[path = "../../groth16/tests/support/fuzz.rs"]
mod fuzz;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use tonic::Code;
use zkforge_engine::{Engine, EngineConfig, ParamsDir};
use zkforge_filecoin::registered_proof::{
    non_interactive_seal_proof_for, synthetic_seal_proof_for,
};
use zkforge_filecoin::ProofKind;
use zkforge_fixtures::{self as fixtures, read_base64_list};
use zkforge_groth16::CpuBackend;
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};
use zkforge_server::{parse_circuit_id, request, Access, Listen, Running};

#[global_allocator]
static ALLOC: fuzz::Recording = fuzz::Recording;

/// The real payloads of a sealed 2 KiB sector, to mix (rightly or wrongly) into requests, and
/// the C1 outputs of two more sectors sealed as synthetic PoRep and as NI-PoRep.
struct Payloads {
    c1: Vec<u8>,
    synthetic_c1: Vec<u8>,
    ni_c1: Vec<u8>,
    post_json: Vec<u8>,
    post: Vec<Vec<u8>>,
    snap: Vec<Vec<u8>>,
    randomness: Vec<u8>,
    comm: Vec<u8>,
}

fn payloads() -> (tempfile::TempDir, Payloads) {
    let dir = tempfile::tempdir().unwrap();
    let m = fixtures::make(2048, dir.path(), 91).unwrap();
    let read = |p: &std::path::Path| std::fs::read(dir.path().join(p)).unwrap();
    let post_json = read(&m.winning_post().unwrap().vanilla);
    let other_c1 = |proof, name: &str| {
        let out = dir.path().join(name);
        let m = fixtures::make_porep(proof, &out, 92).unwrap();
        std::fs::read(out.join(&m.c1_wrapper)).unwrap()
    };
    let p = Payloads {
        c1: read(&m.c1_wrapper),
        synthetic_c1: other_c1(synthetic_seal_proof_for(2048).unwrap(), "synthetic"),
        ni_c1: other_c1(non_interactive_seal_proof_for(2048).unwrap(), "ni"),
        post: read_base64_list(&post_json).unwrap(),
        post_json,
        snap: read_base64_list(&read(&m.snap().unwrap().vanilla)).unwrap(),
        randomness: fixtures::unhex32(&m.winning_post().unwrap().randomness)
            .unwrap()
            .to_vec(),
        comm: fixtures::unhex32(&m.snap().unwrap().comm_r_new)
            .unwrap()
            .to_vec(),
    };
    (dir, p)
}

/// Which payload a byte field gets.
#[derive(Clone, Copy, Debug)]
enum Pick {
    Empty,
    Garbage,
    C1,
    SyntheticC1,
    NiC1,
    PostJson,
    Truncated,
}

#[derive(Clone, Copy, Debug)]
enum PickList {
    Empty,
    Post,
    Snap,
    Garbage,
    ManyEmpty,
    /// One past the most entries any request may carry (a full WindowPoSt partition).
    OverTheBound,
}

/// A request, as choices to be filled from the payloads.
#[derive(Clone, Debug)]
struct Shape {
    request_id: String,
    proof_kind: i32,
    sector_size: u64,
    registered_proof: u64,
    priority: i32,
    vanilla_proof: Pick,
    vanilla_proofs: PickList,
    sector_number: u64,
    miner_id: u64,
    randomness: (usize, bool),
    partition_index: u32,
    comms: [(usize, bool); 3],
    garbage: Vec<u8>,
}

fn shape() -> impl Strategy<Value = Shape> {
    let kind = prop_oneof![0i32..=5, Just(-1), Just(i32::MAX), any::<i32>()];
    let size = prop_oneof![
        Just(0u64),
        Just(2048),
        Just(8 << 20),
        Just(512 << 20),
        Just(32 << 30),
        Just(64 << 30),
        Just(u64::MAX),
        any::<u64>(),
    ];
    let pick = prop_oneof![
        Just(Pick::Empty),
        Just(Pick::Garbage),
        Just(Pick::C1),
        Just(Pick::SyntheticC1),
        Just(Pick::NiC1),
        Just(Pick::PostJson),
        Just(Pick::Truncated),
    ];
    let list = prop_oneof![
        Just(PickList::Empty),
        Just(PickList::Post),
        Just(PickList::Snap),
        Just(PickList::Garbage),
        Just(PickList::ManyEmpty),
        Just(PickList::OverTheBound),
    ];
    // Every numeric field over its whole range, with its edges and the bounds the daemon
    // checks (partition_index: a deadline's 3,000 partitions).
    let deadline = zkforge_filecoin::MAX_PARTITIONS_PER_DEADLINE as u32;
    let partition_index = prop_oneof![
        0u32..4,
        Just(1),
        Just(deadline - 1),
        Just(deadline),
        Just(deadline + 1),
        Just(u32::MAX),
        any::<u32>(),
    ];
    // 0..=19 are ffi's seal proof numbers (10..=14 synthetic, 15..=19 NI-PoRep), 0..=14 its
    // PoSt ones, 0..=4 its update ones.
    let registered = prop_oneof![
        3 => Just(0u64),
        2 => 0u64..21,
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ];
    let u64_edges = || prop_oneof![Just(0u64), Just(1), Just(u64::MAX), any::<u64>()];
    // A byte field: its length (32 is right) and whether it holds the real value.
    let field = (
        prop_oneof![Just(32usize), Just(0), 0usize..70],
        any::<bool>(),
    );
    (
        (
            ".{0,20}",
            kind,
            size,
            registered,
            prop_oneof![-2i32..7, Just(i32::MIN), Just(i32::MAX)],
        ),
        (
            pick,
            list,
            (u64_edges(), u64_edges()),
            field.clone(),
            partition_index,
        ),
        (
            [field.clone(), field.clone(), field],
            prop::collection::vec(any::<u8>(), 0..300),
        ),
    )
        .prop_map(
            |(
                (request_id, proof_kind, sector_size, registered_proof, priority),
                (
                    vanilla_proof,
                    vanilla_proofs,
                    (sector_number, miner_id),
                    randomness,
                    partition_index,
                ),
                (comms, garbage),
            )| Shape {
                request_id,
                proof_kind,
                sector_size,
                registered_proof,
                priority,
                vanilla_proof,
                vanilla_proofs,
                sector_number,
                miner_id,
                randomness,
                partition_index,
                comms,
                garbage,
            },
        )
}

fn bytes_field((len, real): (usize, bool), value: &[u8], garbage: &[u8]) -> Vec<u8> {
    let source = if real { value } else { garbage };
    source.iter().copied().cycle().take(len).collect()
}

fn build(s: &Shape, p: &Payloads) -> pb::SubmitProofRequest {
    let g = if s.garbage.is_empty() {
        &[0u8][..]
    } else {
        &s.garbage[..]
    };
    pb::SubmitProofRequest {
        request_id: s.request_id.clone(),
        proof_kind: s.proof_kind,
        sector_size: s.sector_size,
        registered_proof: s.registered_proof,
        priority: s.priority,
        vanilla_proof: match s.vanilla_proof {
            Pick::Empty => Vec::new(),
            Pick::Garbage => s.garbage.clone(),
            Pick::C1 => p.c1.clone(),
            Pick::SyntheticC1 => p.synthetic_c1.clone(),
            Pick::NiC1 => p.ni_c1.clone(),
            Pick::PostJson => p.post_json.clone(),
            Pick::Truncated => p.c1[..p.c1.len() / 2].to_vec(),
        },
        vanilla_proofs: match s.vanilla_proofs {
            PickList::Empty => Vec::new(),
            PickList::Post => p.post.clone(),
            PickList::Snap => p.snap.clone(),
            PickList::Garbage => vec![s.garbage.clone(); 3],
            PickList::ManyEmpty => vec![Vec::new(); 1000],
            PickList::OverTheBound => {
                vec![Vec::new(); zkforge_server::codec::max_vanilla_entries() + 1]
            }
        },
        sector_number: s.sector_number,
        miner_id: s.miner_id,
        randomness: bytes_field(s.randomness, &p.randomness, g),
        partition_index: s.partition_index,
        comm_r_old: bytes_field(s.comms[0], &p.comm, g),
        comm_r_new: bytes_field(s.comms[1], &p.comm, g),
        comm_d_new: bytes_field(s.comms[2], &p.comm, g),
    }
}

/// What the daemon does with a request before queueing it.
#[allow(clippy::result_large_err)] // tonic's Status, as the daemon returns it
fn convert(r: &pb::SubmitProofRequest) -> Result<(), tonic::Status> {
    let circuits = request::circuits(r.clone())?;
    request::priority_of(r.priority, circuits.kind())?;
    Ok(())
}

#[test]
fn fuzzed_requests_are_accepted_or_refused_by_name() {
    let (_dir, p) = payloads();
    let limits = fuzz::Limits {
        allocation: 64 << 20,
        time: Duration::from_secs(10),
    };
    fuzz::run_target(
        "SubmitProofRequest fields",
        shape(),
        limits,
        |s| match convert(&build(&s, &p)) {
            Ok(()) if matches!(s.vanilla_proof, Pick::NiC1) && s.proof_kind == 1 => {
                Err("an NI-PoRep C1 was accepted".into())
            }
            Ok(()) => Ok(true),
            Err(st) if st.code() == Code::InvalidArgument && !st.message().is_empty() => Ok(false),
            Err(st) => Err(format!("{:?}: {}", st.code(), st.message())),
        },
    );

    let small = fuzz::Limits {
        allocation: 1 << 20,
        time: Duration::from_secs(1),
    };
    let ids = prop_oneof![
        (
            prop_oneof![
                "porep",
                "snap",
                "wpost",
                "window-post",
                "winning",
                "winning-post",
                ".{0,8}"
            ],
            prop_oneof![
                "2KiB",
                "8MiB",
                "512MiB",
                "32GiB",
                "64GiB",
                "32g",
                "64g",
                "[0-9]{1,12}[a-zA-Z]{0,4}"
            ],
        )
            .prop_map(|(k, s)| format!("{k}-{s}")),
        ".{0,24}",
    ];
    fuzz::run_target(
        "circuit ids",
        ids,
        small,
        |id: String| match parse_circuit_id(&id) {
            Ok((_, size)) if size > 0 => Ok(true),
            Ok(other) => Err(format!("{id:?} parsed to {other:?}")),
            Err(e) if !e.to_string().is_empty() => Ok(false),
            Err(_) => Err("an error without a message".into()),
        },
    );
    let small = fuzz::Limits {
        allocation: 1 << 20,
        time: Duration::from_secs(1),
    };
    fuzz::run_target(
        "request kinds and priorities",
        (
            prop_oneof![-2i32..8, any::<i32>()],
            prop_oneof![-2i32..8, any::<i32>()],
        ),
        small,
        |(k, pr)| {
            let kind = request::kind_of(k);
            match (kind, request::priority_of(pr, ProofKind::PoRep)) {
                (Ok(_), _) if !(1..=4).contains(&k) => Err(format!("kind {k} accepted")),
                (_, Ok(_)) if !(0..=4).contains(&pr) => Err(format!("priority {pr} accepted")),
                (Err(st), _) | (_, Err(st)) if st.code() != Code::InvalidArgument => {
                    Err(format!("{st}"))
                }
                (k, pr) => Ok(k.is_ok() && pr.is_ok()),
            }
        },
    );
}

/// The cases the fuzzer above draws among others, each asserted: a synthetic PoRep C1 under
/// its own number (10) or none is taken, under the interactive number (5) refused as a
/// mismatch; an NI-PoRep C1 is refused naming its type and the missing aggregation, whatever
/// number it comes with.
#[test]
fn synthetic_porep_is_taken_and_ni_porep_refused_by_name() {
    let (_dir, p) = payloads();
    let porep = |c1: &[u8], registered_proof: u64| pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        registered_proof,
        vanilla_proof: c1.to_vec(),
        ..Default::default()
    };
    for number in [10, 0] {
        convert(&porep(&p.synthetic_c1, number)).unwrap();
    }
    let st = convert(&porep(&p.synthetic_c1, 5)).unwrap_err();
    assert!(st.message().contains("does not match"), "{}", st.message());
    for number in [15, 0] {
        let st = convert(&porep(&p.ni_c1, number)).unwrap_err();
        assert_eq!(st.code(), Code::InvalidArgument);
        for words in [
            "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
            "aggregation is not supported",
        ] {
            assert!(st.message().contains(words), "{}", st.message());
        }
    }
}

#[test]
fn fuzzed_requests_over_grpc_get_named_answers_and_the_daemon_keeps_serving() {
    // Not while a target above records allocations: this test's would count.
    let _alone = fuzz::exclusive();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(over_grpc());
}

/// A request the daemon queued ends FAILED, named, for want of parameters: not a hang.
async fn fails_for_want_of_parameters(
    c: &mut ProvingEngineClient<tonic::transport::Channel>,
    job_id: String,
) {
    let a = c
        .await_proof(pb::AwaitProofRequest {
            job_id,
            timeout_ms: 60_000,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(a.status(), pb::ProofStatus::Failed, "{a:?}");
    assert!(
        a.error_message.contains("missing parameters"),
        "{}",
        a.error_message
    );
}

async fn over_grpc() {
    let (_dir, p) = payloads();
    // No parameters: a request that passes conversion is queued and its job fails, named.
    let params = tempfile::tempdir().unwrap();
    let engine = Engine::start(
        EngineConfig {
            synthesis_workers: 1,
            ..Default::default()
        },
        Arc::new(CpuBackend::new()),
        Box::new(ParamsDir(params.path().to_path_buf())),
    )
    .unwrap();
    let sock_dir = tempfile::tempdir().unwrap();
    let sock = sock_dir.path().join("d.sock");
    let server = Running::start(
        Arc::new(engine),
        Listen::Unix(sock.clone()),
        Access::default(),
    )
    .await
    .unwrap();
    let channel = tonic::transport::Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let sock = sock.clone();
            async move {
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                    tokio::net::UnixStream::connect(sock).await?,
                ))
            }
        }))
        .await
        .unwrap();
    let mut c = ProvingEngineClient::new(channel);

    let mut runner = TestRunner::deterministic();
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..300 {
        let s = shape().new_tree(&mut runner).unwrap().current();
        match c.submit_proof(build(&s, &p)).await {
            Ok(r) => {
                assert!(
                    !(matches!(s.vanilla_proof, Pick::NiC1) && s.proof_kind == 1),
                    "an NI-PoRep C1 was queued: {s:?}"
                );
                accepted += 1;
                fails_for_want_of_parameters(&mut c, r.into_inner().job_id).await;
            }
            Err(st) => {
                refused += 1;
                assert_eq!(st.code(), Code::InvalidArgument, "{}: {s:?}", st.message());
                assert!(!st.message().is_empty());
            }
        }
    }
    // A valid request among them: queued, then FAILED for want of parameters, named.
    let valid = pb::SubmitProofRequest {
        proof_kind: pb::ProofKind::WinningPost as i32,
        sector_size: 2048,
        vanilla_proofs: p.post.clone(),
        randomness: p.randomness.clone(),
        ..Default::default()
    };
    let job_id = c.submit_proof(valid).await.unwrap().into_inner().job_id;
    fails_for_want_of_parameters(&mut c, job_id).await;
    println!("gRPC: 300 fuzzed requests, {accepted} queued, {refused} refused");
    assert!(refused > 0);
    // A small RPC's message is at most 64 KiB: a longer job id is refused as it arrives.
    let st = c
        .await_proof(pb::AwaitProofRequest {
            job_id: "x".repeat(100_000),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::ResourceExhausted, "{}", st.message());
    // Errors quoting a long client string stay within what an HTTP/2 header carries.
    let long = "x".repeat(60_000);
    let st = c
        .await_proof(pb::AwaitProofRequest {
            job_id: long.clone(),
            timeout_ms: 1,
        })
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::NotFound, "{}", st.message());
    let st = c
        .preload_srs(pb::PreloadSrsRequest {
            circuit_id: long.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument, "{}", st.message());
    let mut r = build(&shape().new_tree(&mut runner).unwrap().current(), &p);
    r.proof_kind = 1;
    r.vanilla_proof = format!("{{\"registered_proof\": \"{long}\"}}").into_bytes();
    let st = c.submit_proof(r).await.unwrap_err();
    assert_eq!(st.code(), Code::InvalidArgument, "{}", st.message());
    assert!(st.message().len() < 2048, "{} bytes", st.message().len());
    // Still serving.
    c.get_status(pb::GetStatusRequest {}).await.unwrap();
    server.stop().await.unwrap();
}
