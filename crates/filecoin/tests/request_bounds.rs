//! The protocol's bounds on a request (crates/filecoin/src/limits.rs), at their edges: a
//! partition index or a vanilla proof count out of range is a named error before anything is
//! decoded or sized from it; proofs of another sector size, randomness or sector are refused at
//! submission; a PoSt partition's public inputs are computed from its own sectors and equal
//! storage-proofs' on the deadline's list. Sparse 2 KiB inputs: no parameters needed.

use std::time::{Duration, Instant};

use base64::Engine as _;
use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{self, FallbackPoStCompound, PublicSector};
use zkforge_filecoin::post::{post_circuits, PostRequest};
use zkforge_filecoin::post_partition::partition_public_inputs;
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::{
    decode_base64_list, max_vanilla_proofs, PartitionedCircuit, ProofKind,
    MAX_PARTITIONS_PER_DEADLINE,
};
use zkforge_fixtures::sparse::{make_post, make_snap, KeyedFr, SparsePost, SparseSnap};

use RegisteredPoStProof::{
    StackedDrgWindow2KiBV1, StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1,
};

/// A refusal must come at once: it is decided before any proof is decoded or verified.
const QUICK: Duration = Duration::from_secs(2);

fn prover_id() -> [u8; 32] {
    KeyedFr::new(b"bounds prover", 1).bytes(0)
}

fn request(made: &SparsePost, partition_index: usize) -> PostRequest {
    made.request(prover_id(), partition_index)
}

fn snap_request(made: &SparseSnap, as_proof: RegisteredUpdateProof, copies: usize) -> SnapRequest {
    SnapRequest {
        registered_proof: as_proof,
        vanilla_proofs: vec![made.vanilla[0].clone(); copies],
        comm_r_old: made.comm_r_old,
        comm_r_new: made.comm_r_new,
        comm_d_new: made.comm_d_new,
    }
}

/// The error of a refused request, timed: it must come within [`QUICK`].
fn refused(
    what: &str,
    build: impl FnOnce() -> anyhow::Result<Box<dyn PartitionedCircuit>>,
) -> String {
    let started = Instant::now();
    let result = build();
    let took = started.elapsed();
    let err = match result {
        Ok(_) => panic!("{what}: accepted"),
        Err(e) => format!("{e:#}"),
    };
    assert!(took < QUICK, "{what}: refused after {took:?}: {err}");
    println!("{what}: refused in {took:?}: {err}");
    err
}

fn assert_names(err: &str, parts: &[&str]) {
    for part in parts {
        assert!(err.contains(part), "{err:?} does not name {part:?}");
    }
}

fn window(proof: RegisteredPoStProof, sectors: usize) -> SparsePost {
    make_post(proof, sectors, prover_id(), 9, &()).unwrap()
}

#[test]
fn partition_public_inputs_equal_storage_proofs_on_the_deadline_list() {
    type Tree = SectorShape2KiB;
    let keys = KeyedFr::new(b"public inputs", 2);
    let sector = |i: u64| PublicSector {
        id: (1000 + 7 * i).into(),
        comm_r: PoseidonDomain::from(Scalar::from(keys.bytes(i)[0] as u64 + (i << 8))),
    };
    let randomness = PoseidonDomain::from(Scalar::from(0x5eed_u64));
    let deadline: Vec<_> = (0..7).map(sector).collect();
    let storage_proofs = |pp: &fallback::PublicParams, sectors: &[_], k| {
        let inputs = fallback::PublicInputs {
            randomness,
            prover_id: randomness,
            sectors: sectors.to_vec(),
            k: Some(k),
        };
        FallbackPoStCompound::<Tree>::generate_public_inputs(&inputs, pp, Some(k)).unwrap()
    };

    for proof in [StackedDrgWindow2KiBV1, StackedDrgWindow2KiBV1_2] {
        let pp = window_post_public_params::<Tree>(&proof.as_v1_config()).unwrap();
        let n = pp.sector_count;
        assert_eq!(n, 2, "2 KiB WindowPoSt partitions hold 2 sectors");
        // Partitions 0, 1, 2 full; partition 3 short (7 sectors = 2 + 2 + 2 + 1).
        for k in 0..4 {
            let own = &deadline[k * n..((k + 1) * n).min(deadline.len())];
            let ours = partition_public_inputs::<Tree>(&pp, &randomness, own, k).unwrap();
            let theirs = storage_proofs(&pp, &deadline[..(k * n + own.len())], k);
            assert_eq!(
                ours,
                theirs,
                "{proof:?}, partition {k} of {} sectors",
                own.len()
            );
            assert_eq!(ours.len(), n * (1 + pp.challenge_count));
        }
        // Before ApiVersion 1.2 the challenges depend on the partition: the test can tell.
        let own = &deadline[..n];
        let at = |k| partition_public_inputs::<Tree>(&pp, &randomness, own, k).unwrap();
        assert_eq!(
            at(0) == at(1),
            proof == StackedDrgWindow2KiBV1_2,
            "{proof:?}"
        );
    }

    // WinningPoSt: its sector once per challenge, as filecoin-proofs' verifier lists it.
    let pp = winning_post_public_params::<Tree>(&StackedDrgWinning2KiBV1.as_v1_config()).unwrap();
    let listed = vec![sector(3); pp.sector_count];
    let ours = partition_public_inputs::<Tree>(&pp, &randomness, &listed, 0).unwrap();
    assert_eq!(ours, storage_proofs(&pp, &listed, 0));

    // Nothing is sized by the partition index; one past any sector index is a named error.
    let err = partition_public_inputs::<Tree>(&pp, &randomness, &listed, usize::MAX / 2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("beyond any sector index"), "{err}");
}

#[test]
fn window_post_partition_index_is_bounded_by_the_deadline() {
    assert_eq!(MAX_PARTITIONS_PER_DEADLINE, 3000);
    let v1_2 = window(StackedDrgWindow2KiBV1_2, 2);
    let bound = MAX_PARTITIONS_PER_DEADLINE;
    for k in [0, 1, bound - 1] {
        // ApiVersion 1.2 challenges do not depend on the partition: accepted at any index.
        let c = post_circuits(request(&v1_2, k)).unwrap_or_else(|e| panic!("k = {k}: {e:#}"));
        assert_eq!(c.public_inputs(0).unwrap().len(), 2 * 11);
    }
    for k in [bound, bound + 1, u32::MAX as usize, usize::MAX] {
        let err = refused(&format!("k = {k}"), || post_circuits(request(&v1_2, k)));
        assert_names(
            &err,
            &[&format!("partition_index {k} is out of range"), "3000"],
        );
    }

    // ApiVersion 1.0: the sparse proofs were made for partition 0; at partition 1 their
    // challenges differ, and the vanilla check says so at submission.
    let v1 = window(StackedDrgWindow2KiBV1, 2);
    post_circuits(request(&v1, 0)).unwrap();
    let err = refused("a V1 partition-0 proof as partition 1", || {
        post_circuits(request(&v1, 1))
    });
    assert_names(&err, &["partition 1", "does not verify"]);
}

#[test]
fn winning_post_partition_index_must_be_zero() {
    let made = make_post(StackedDrgWinning2KiBV1, 1, prover_id(), 9, &()).unwrap();
    post_circuits(request(&made, 0)).unwrap();
    for k in [1, 2, u32::MAX as usize, usize::MAX] {
        let err = refused(&format!("WinningPoSt k = {k}"), || {
            post_circuits(request(&made, k))
        });
        assert_names(&err, &[&format!("partition_index {k}"), "single partition"]);
    }
}

#[test]
fn vanilla_proof_counts_are_checked_before_decoding() {
    let made = window(StackedDrgWindow2KiBV1_2, 2);
    let bound = max_vanilla_proofs(ProofKind::WindowPost, 2048).unwrap();
    assert_eq!(bound, 2);
    let with = |count: usize| PostRequest {
        vanilla_proofs: (0..count).map(|i| made.vanilla[i % 2].clone()).collect(),
        ..request(&made, 0)
    };
    // 1 (a short partition) and the bound are accepted.
    for count in [1, bound] {
        post_circuits(with(count)).unwrap_or_else(|e| panic!("{count} proofs: {e:#}"));
    }
    let err = refused("no proofs", || post_circuits(with(0)));
    assert_names(&err, &["no vanilla proofs", "1 to 2"]);
    // 35,000 real proofs took 4.8 s to decode before this count was checked.
    for count in [bound + 1, 35_000] {
        let err = refused(&format!("{count} proofs"), || post_circuits(with(count)));
        assert_names(
            &err,
            &["at most 2 sectors", &format!("has {count} vanilla proofs")],
        );
    }
    // Undecodable entries beyond the bound: the count is what refuses them.
    let junk = PostRequest {
        vanilla_proofs: vec![Vec::new(); 1_000_000],
        ..request(&made, 0)
    };
    let err = refused("a million empty proofs", || post_circuits(junk));
    assert_names(&err, &["has 1000000 vanilla proofs"]);

    let winning = make_post(StackedDrgWinning2KiBV1, 1, prover_id(), 9, &()).unwrap();
    for count in [0, 2, 1000] {
        let req = PostRequest {
            vanilla_proofs: vec![winning.vanilla[0].clone(); count],
            ..request(&winning, 0)
        };
        let err = refused(&format!("WinningPoSt with {count} proofs"), || {
            post_circuits(req)
        });
        assert!(err.contains("exactly 1"), "{err}");
    }

    let snap = make_snap(RegisteredUpdateProof::StackedDrg2KiBV1, 4, &()).unwrap();
    snap_circuits(snap_request(&snap, snap.registered_proof, 1)).unwrap();
    for count in [0, 2, 100_000] {
        let req = snap_request(&snap, snap.registered_proof, count);
        let err = refused(&format!("SnapDeals with {count} proofs"), || {
            snap_circuits(req)
        });
        assert_names(
            &err,
            &[&format!(
                "needs 1 partition proofs, the request has {count}"
            )],
        );
    }
}

#[test]
fn a_2kib_window_post_presented_as_32gib_is_refused_naming_the_size() {
    let made = window(StackedDrgWindow2KiBV1_2, 2);
    let req = PostRequest {
        registered_proof: RegisteredPoStProof::StackedDrgWindow32GiBV1_2,
        ..request(&made, 0)
    };
    let err = refused("2 KiB as 32 GiB", || post_circuits(req));
    assert_names(&err, &["vanilla proof 0", "32GiB"]);
}

#[test]
fn snap_2kib_proofs_presented_as_larger_sectors_are_refused() {
    use RegisteredUpdateProof::*;
    let made = make_snap(StackedDrg2KiBV1, 4, &()).unwrap();
    for (as_proof, partitions, size) in [
        (StackedDrg8MiBV1, 4, "8MiB"),
        (StackedDrg512MiBV1, 16, "512MiB"),
        (StackedDrg32GiBV1, 16, "32GiB"),
        (StackedDrg64GiBV1, 16, "64GiB"),
    ] {
        // With the 2 KiB count, the count is the mismatch.
        let err = refused(&format!("{as_proof:?}"), || {
            snap_circuits(snap_request(&made, as_proof, 1))
        });
        assert_names(
            &err,
            &[&format!(
                "needs {partitions} partition proofs, the request has 1"
            )],
        );
        // With the right count, the proofs' shape is.
        let req = snap_request(&made, as_proof, partitions);
        let err = refused(&format!("{as_proof:?} x{partitions}"), || {
            snap_circuits(req)
        });
        assert!(
            err.contains(&format!("a {size} sector's has"))
                || err.contains(&format!("not a {as_proof:?}")),
            "{as_proof:?}: {err}"
        );
    }
}

#[test]
fn post_and_snap_proofs_for_other_public_values_are_refused_at_parse() {
    let made = window(StackedDrgWindow2KiBV1_2, 2);
    let mut req = request(&made, 0);
    req.randomness[0] ^= 1;
    let err = refused("other randomness", || post_circuits(req));
    assert_names(&err, &["vanilla proof 0", "does not verify"]);

    let winning = make_post(StackedDrgWinning2KiBV1, 1, prover_id(), 9, &()).unwrap();
    let mut req = request(&winning, 0);
    req.randomness[3] ^= 4;
    let err = refused("other randomness", || post_circuits(req));
    assert_names(&err, &["does not verify"]);

    let snap = make_snap(RegisteredUpdateProof::StackedDrg2KiBV1, 4, &()).unwrap();
    let mut req = snap_request(&snap, snap.registered_proof, 1);
    req.comm_d_new[0] ^= 1;
    let err = refused("other comm_d_new", || snap_circuits(req));
    assert_names(&err, &["partition proof 0 does not verify"]);
}

#[test]
fn winning_post_sector_number_must_match_its_proof() {
    let made = make_post(StackedDrgWinning2KiBV1, 1, prover_id(), 9, &()).unwrap();
    let id = made.sectors[0].0;
    let with = |sector_number| PostRequest {
        sector_number,
        ..request(&made, 0)
    };
    post_circuits(with(Some(id))).unwrap();
    post_circuits(with(None)).unwrap();
    let err = refused("another sector", || post_circuits(with(Some(id + 1))));
    assert_names(
        &err,
        &[
            &format!("sector_number {}", id + 1),
            &format!("sector {id}"),
        ],
    );

    // WindowPoSt ignores it: a partition holds many sectors.
    let window = window(StackedDrgWindow2KiBV1_2, 2);
    let req = PostRequest {
        sector_number: Some(12345),
        ..request(&window, 0)
    };
    post_circuits(req).unwrap();
}

#[test]
fn base64_list_longer_than_its_bound_is_refused_before_decoding() {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let list = |entries: &[String]| serde_json::to_vec(entries).unwrap();
    let good: Vec<String> = (0..3u8).map(|i| b64(&[i; 5])).collect();
    assert_eq!(decode_base64_list(&list(&good), 3).unwrap()[2], vec![2; 5]);
    assert_eq!(decode_base64_list(b"[]", 0).unwrap().len(), 0);

    let err = format!("{:#}", decode_base64_list(&list(&good), 2).unwrap_err());
    assert_names(&err, &["more than 2 entries", "before decoding any"]);
    // Entries that are not base64: refused for the count, so none was decoded.
    let bad = vec!["not base64!".to_string(); 4];
    let err = format!("{:#}", decode_base64_list(&list(&bad), 3).unwrap_err());
    assert_names(&err, &["more than 3 entries"]);
    let err = format!("{:#}", decode_base64_list(&list(&bad), 4).unwrap_err());
    assert_names(&err, &["entry 0 is not valid base64"]);

    // A list of ten million empty strings against the WindowPoSt bound: refused at once.
    let bound = max_vanilla_proofs(ProofKind::WindowPost, 32 << 30).unwrap();
    let mut huge = b"[".to_vec();
    huge.extend(std::iter::repeat_n(&b"\"\","[..], 10_000_000).flatten());
    huge.extend(b"\"\"]");
    let started = Instant::now();
    let err = format!("{:#}", decode_base64_list(&huge, bound).unwrap_err());
    assert!(started.elapsed() < QUICK, "took {:?}", started.elapsed());
    assert_names(&err, &[&format!("more than {bound} entries")]);

    // JSON escapes are read as the text they stand for.
    let escaped = br#"["AQI\u003d", "\/w=="]"#;
    let decoded = decode_base64_list(escaped, 2).unwrap();
    assert_eq!(decoded, vec![vec![1, 2], vec![255]]);
    for not_a_list in [&b"{}"[..], b"\"AQ==\"", b"[1]", b"[\"AQ==\"] x"] {
        let err = format!("{:#}", decode_base64_list(not_a_list, 5).unwrap_err());
        assert_names(&err, &["expected a JSON array of base64 strings"]);
    }
}

#[test]
fn max_vanilla_proofs_per_kind_and_size() {
    let gib32 = 32 << 30;
    assert_eq!(
        max_vanilla_proofs(ProofKind::WindowPost, gib32).unwrap(),
        2349
    );
    assert_eq!(
        max_vanilla_proofs(ProofKind::WindowPost, 64 << 30).unwrap(),
        2300
    );
    assert_eq!(
        max_vanilla_proofs(ProofKind::WinningPost, gib32).unwrap(),
        1
    );
    assert_eq!(max_vanilla_proofs(ProofKind::SnapDeals, gib32).unwrap(), 16);
    assert_eq!(
        max_vanilla_proofs(ProofKind::SnapDeals, 8 << 20).unwrap(),
        4
    );
    assert_eq!(max_vanilla_proofs(ProofKind::PoRep, gib32).unwrap(), 0);
    assert_eq!(max_vanilla_proofs(ProofKind::WindowPost, 2048).unwrap(), 2);
    assert_eq!(max_vanilla_proofs(ProofKind::SnapDeals, 2048).unwrap(), 1);
    for kind in [
        ProofKind::PoRep,
        ProofKind::WindowPost,
        ProofKind::WinningPost,
        ProofKind::SnapDeals,
    ] {
        let err = max_vanilla_proofs(kind, 4096).unwrap_err().to_string();
        assert!(
            err.contains("unsupported sector size 4096"),
            "{kind}: {err}"
        );
    }
}

#[test]
fn c1_formats_are_told_apart_and_refused_by_name() {
    let out = tempfile::tempdir().unwrap();
    let m = zkforge_fixtures::make_sparse(2048, out.path(), 5, &[], &()).unwrap();
    let read = |p: &std::path::Path| std::fs::read(out.path().join(p)).unwrap();
    let (wrapper, raw) = (read(&m.c1_wrapper), read(&m.c1_raw));
    let parse = |bytes: &[u8]| zkforge_filecoin::porep::parse_c1(bytes);
    let from_wrapper = serde_json::to_vec(&parse(&wrapper).unwrap()).unwrap();
    assert_eq!(
        from_wrapper,
        serde_json::to_vec(&parse(&raw).unwrap()).unwrap()
    );

    let err = |bytes: &[u8]| match parse(bytes) {
        Ok(_) => panic!("accepted"),
        Err(e) => format!("{e:#}"),
    };
    let mut trailing = raw.clone();
    trailing.extend(b" {}");
    let deep = [vec![b'['; 100_000], vec![b']'; 100_000]].concat();
    for bad in [
        &raw[..raw.len() / 2],
        &trailing,
        &deep,
        b"",
        b"{\"Phase1Out\":",
    ] {
        assert_names(&err(bad), &["C1 input is not valid JSON"]);
    }
    for other in [
        &b"{\"hello\":1}"[..],
        b"[1, 2]",
        b"42",
        b"\"text\"",
        b"null",
    ] {
        assert_names(
            &err(other),
            &["neither a C1 wrapper nor a SealCommitPhase1Output"],
        );
    }
    let outer: serde_json::Value = serde_json::from_slice(&wrapper).unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut w = outer.clone();
        w[key] = value;
        serde_json::to_vec(&w).unwrap()
    };
    assert_names(
        &err(&with("Phase1Out", "!!!".into())),
        &["Phase1Out is not valid base64"],
    );
    assert_names(
        &err(&with("SectorSize", 8_388_608.into())),
        &["SectorSize 8388608 does not match"],
    );
    assert_names(
        &err(&with("SectorNum", "one".into())),
        &["C1 wrapper JSON needs SectorNum"],
    );
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    assert_names(
        &err(&with("Phase1Out", b64(b"{}").into())),
        &["Phase1Out does not decode to a SealCommitPhase1Output"],
    );
    // A key spelled with a JSON escape is the same key.
    let escaped = String::from_utf8(wrapper.clone())
        .unwrap()
        .replace("\"Phase1Out\"", "\"Phase1\\u004fut\"");
    assert!(escaped.contains("u004f"));
    parse(escaped.as_bytes()).unwrap();
}
