//! WinningPoSt, WindowPoSt and SnapDeals of 2 KiB sectors: proofs made by zkforge from Curio's
//! vanilla inputs verify with filecoin-proofs-api's verifiers; bad inputs give clear errors.

mod common;

use zkforge_filecoin::post::{post_circuits, prover_id_from_miner, PostRequest};
use zkforge_filecoin::snap::{snap_circuits, SnapRequest};
use zkforge_filecoin::{PartitionedCircuit, ProofKind};
use zkforge_fixtures::{read_base64_list, unhex32, Manifest};

fn prove(kind: ProofKind, circuits: Box<dyn PartitionedCircuit>) -> Vec<u8> {
    assert_eq!(circuits.kind(), kind);
    common::prove(circuits, 5)
}

fn post_request(dir: &std::path::Path, m: &Manifest, window: bool) -> PostRequest {
    let p = if window {
        m.window_post().unwrap()
    } else {
        m.winning_post().unwrap()
    };
    common::post_request(dir, m, p)
}

fn snap_request(dir: &std::path::Path, m: &Manifest) -> SnapRequest {
    let s = m.snap().unwrap();
    SnapRequest {
        registered_proof: s.registered_proof,
        vanilla_proofs: read_base64_list(&std::fs::read(dir.join(&s.vanilla)).unwrap()).unwrap(),
        comm_r_old: unhex32(&s.comm_r_old).unwrap(),
        comm_r_new: unhex32(&s.comm_r_new).unwrap(),
        comm_d_new: unhex32(&s.comm_d_new).unwrap(),
    }
}

#[test]
fn winning_post_verifies_with_filecoin_proofs() {
    let (dir, m) = common::sector(21);
    let circuits = post_circuits(post_request(dir.path(), &m, false)).unwrap();
    let proof = prove(ProofKind::WinningPost, circuits);
    assert!(m.verify_winning_post(&proof).unwrap());
    let mut bad = proof.clone();
    bad[60] ^= 1;
    assert!(!m.verify_winning_post(&bad).unwrap_or(false));
}

#[test]
fn window_post_partition_verifies_with_filecoin_proofs() {
    let (dir, m) = common::sector(22);
    let circuits = post_circuits(post_request(dir.path(), &m, true)).unwrap();
    assert_eq!(circuits.kind(), ProofKind::WindowPost);
    let proof = prove(ProofKind::WindowPost, circuits);
    assert!(m.verify_window_post(&proof).unwrap());
}

#[test]
fn snap_deals_verifies_with_filecoin_proofs() {
    let (dir, m) = common::sector(23);
    let circuits = snap_circuits(snap_request(dir.path(), &m)).unwrap();
    let partitions = circuits.partitions();
    let proof = prove(ProofKind::SnapDeals, circuits);
    assert_eq!(proof.len(), 192 * partitions);
    assert!(m.verify_snap(&proof).unwrap());
}

#[test]
fn bad_post_and_snap_inputs_are_named_errors() {
    let (dir, m) = common::sector(24);
    let err = |r: anyhow::Result<Box<dyn PartitionedCircuit>>| match r {
        Ok(_) => panic!("bad input accepted"),
        Err(e) => format!("{e:#}"),
    };

    let mut req = post_request(dir.path(), &m, false);
    req.vanilla_proofs[0].truncate(10);
    assert!(err(post_circuits(req)).contains("vanilla proof 0 is not a StackedDrgWinning2KiBV1"));

    let mut req = post_request(dir.path(), &m, false);
    req.vanilla_proofs.clear();
    assert!(err(post_circuits(req)).contains("no vanilla proofs"));

    let mut req = post_request(dir.path(), &m, false);
    req.partition_index = 3;
    assert!(err(post_circuits(req)).contains("single partition"));

    let mut req = snap_request(dir.path(), &m);
    req.vanilla_proofs.push(vec![1, 2, 3]);
    assert!(err(snap_circuits(req)).contains("needs 1 partition proofs, the request has 2"));

    let mut req = snap_request(dir.path(), &m);
    req.comm_r_new = [0xff; 32];
    assert!(err(snap_circuits(req)).contains("comm_r_new"));
}

#[test]
fn prover_id_is_the_id_address_payload() {
    assert_eq!(prover_id_from_miner(1000)[..3], [0xe8, 0x07, 0x00]);
    assert_eq!(prover_id_from_miner(5)[..2], [5, 0]);
}
