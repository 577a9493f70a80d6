//! Sparse PoRep fixtures: a sparse 2 KiB C1 proves and verify_seal accepts it, the labeling
//! code reproduces a real seal's labels, a 32 GiB C1 passes the self-check and builds its
//! circuits, the bytes depend only on the seed, and tampering is caught with a named error.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use blstrs::Scalar as Fr;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonDomain;
use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB};
use filecoin_proofs::parameters::public_params;
use filecoin_proofs::pieces::zero_padding;
use filecoin_proofs::{PaddedBytesAmount, UnpaddedBytesAmount};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use serde_json::Value;
use storage_proofs_core::merkle::MerkleProofTrait;
use zkforge_filecoin::{porep, PartitionedCircuit, ProofKind};
use zkforge_fixtures::sparse::{self, labels, ChallengeCheck, ColumnRole, SelfCheckError};
use zkforge_fixtures::{self as fixtures, Sealing};
use zkforge_groth16::ReadOptions;

const SIZE_32G: u64 = 32 << 30;
const ALL: [ProofKind; 4] = [
    ProofKind::PoRep,
    ProofKind::WinningPost,
    ProofKind::WindowPost,
    ProofKind::SnapDeals,
];

fn read(dir: &Path, name: &Path) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

#[test]
fn sparse_2kib_c1_proves_and_verify_seal_accepts_it() {
    let (dir, id) = common::porep_params();
    let _pk = id.load(&dir, ReadOptions::default()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let m =
        fixtures::make_sparse(common::SIZE_2K, out.path(), 21, &[ProofKind::PoRep], &()).unwrap();
    assert_eq!(m.sealing, Sealing::Sparse);
    // Kinds left out are absent, and asking for one names it.
    assert!(m.winning_post.is_none() && m.window_post.is_none() && m.snap.is_none());
    let err = format!("{:#}", m.winning_post().unwrap_err());
    assert!(
        err.contains("2KiB sparse fixtures hold no WinningPoSt inputs"),
        "{err}"
    );

    // Both formats hold the same C1 output; prove it once.
    let c1 = porep::parse_c1(&read(out.path(), &m.c1_wrapper)).unwrap();
    let raw = porep::parse_c1(&read(out.path(), &m.c1_raw)).unwrap();
    assert_eq!(
        serde_json::to_vec(&c1).unwrap(),
        serde_json::to_vec(&raw).unwrap()
    );
    let circuits = porep::porep_circuits(c1).unwrap();
    let proof = common::prove(circuits, 3);
    assert!(
        m.verify_porep(&proof).unwrap(),
        "verify_seal accepts the proof of a sparse C1"
    );
    let mut bad = proof.clone();
    bad[100] ^= 1;
    assert!(!m.verify_porep(&bad).unwrap_or(false));
    // The manifest round-trips.
    assert_eq!(fixtures::load(out.path()).unwrap(), m);
}

/// Labels of a real 2 KiB seal's cache, one store per layer.
fn real_label(cache: &Path, node: u32, layer: usize) -> Fr {
    let store = std::fs::read(cache.join(format!("sc-02-data-layer-{layer}.dat"))).unwrap();
    let at = node as usize * 32;
    Fr::from_repr_vartime(store[at..at + 32].try_into().unwrap()).unwrap()
}

/// The labeling proofs of a C1 output's JSON as parent lists.
fn labeling_parents(proof: &Value) -> Vec<Vec<Fr>> {
    proof["labeling_proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lp| {
            lp["parents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| Fr::from(serde_json::from_value::<PoseidonDomain>(p.clone()).unwrap()))
                .collect()
        })
        .collect()
}

#[test]
fn labeling_reproduces_a_real_seal() {
    let (sector, m) = common::sector(22);
    let raw = read(sector.path(), &m.c1_raw);
    let c1 = porep::parse_c1(&raw).unwrap();
    // The self-check holds for a really sealed sector too.
    sparse::check_c1(&c1).unwrap();

    let config = c1.registered_proof.as_v1_config();
    let pp = public_params::<SectorShape2KiB>(&config).unwrap();
    let replica_id = c1.replica_id;
    let challenges =
        labels::challenges(&pp, replica_id, c1.seed, usize::from(config.partitions)).unwrap();
    let json: Value = serde_json::from_slice(&raw).unwrap();
    let real_proofs = &json["vanilla_proofs"]["StackedDrg2KiBV1"];
    let vanilla: Vec<Vec<storage_proofs_porep::stacked::Proof<SectorShape2KiB, _>>> =
        c1.vanilla_proofs.clone().try_into().unwrap();
    for (k, cs) in challenges.iter().enumerate() {
        let opened: Vec<u32> = vanilla[k]
            .iter()
            .map(|p| p.comm_d_proofs.path_index() as u32)
            .collect();
        assert_eq!(cs, &opened, "partition {k}: the sealer's challenges");
    }

    // Free labels = the sealer's labels: the computed challenge labels must equal its labels.
    let cache = sector.path().join("sector/cache");
    let distinct: BTreeSet<u32> = challenges.iter().flatten().copied().collect();
    let labeled =
        labels::label_challenges(&pp.graph, pp.num_layers, &replica_id, &distinct, &|n, l| {
            real_label(&cache, n, l)
        })
        .unwrap();
    for &c in &distinct {
        for layer in 1..=pp.num_layers {
            assert_eq!(
                labeled.columns.column(c)[layer - 1],
                real_label(&cache, c, layer),
                "node {c}, layer {layer}"
            );
        }
    }
    // And the parents fed to each label, in the sealer's order, equal its labeling proofs'.
    for (k, cs) in challenges.iter().enumerate() {
        for (i, c) in cs.iter().enumerate() {
            let parents = &labeled.parents[c];
            let theirs = labeling_parents(&real_proofs[k][i]);
            for layer in 1..=pp.num_layers {
                assert_eq!(
                    labeled.columns.label_parents(parents, layer),
                    theirs[layer - 1],
                    "challenge {c}, layer {layer}"
                );
            }
        }
    }
}

#[test]
fn sparse_32gib_c1_passes_the_self_check_and_builds_its_circuits() {
    let made = sparse::make_c1(SIZE_32G, 1, &()).unwrap();
    assert_eq!(made.stats.challenges, 180);
    // Data is all zeros: comm_d is the empty sector's (filecoin-proofs' zero padding).
    let empty = zero_padding(UnpaddedBytesAmount::from(PaddedBytesAmount(SIZE_32G))).unwrap();
    assert_eq!(made.c1.comm_d, empty.commitment);
    let raw = serde_json::to_vec(&made.c1).unwrap();
    drop(made);
    // make_c1 ran the self-check; building the circuits runs storage-proofs' verifier again on
    // what was parsed back.
    let c1 = porep::parse_c1(&raw).unwrap();
    let circuits = porep::PoRepCircuits::<SectorShape32GiB>::new(c1).unwrap();
    assert_eq!(circuits.partitions(), 10);
    for k in 0..10 {
        circuits.circuit(k).unwrap();
    }
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let files = |seed: u64| {
        let out = tempfile::tempdir().unwrap();
        let m = fixtures::make_sparse(common::SIZE_2K, out.path(), seed, &ALL, &()).unwrap();
        [
            &m.c1_raw,
            &m.c1_wrapper,
            &m.winning_post().unwrap().vanilla,
            &m.window_post().unwrap().vanilla,
            &m.snap().unwrap().vanilla,
            Path::new(fixtures::MANIFEST),
        ]
        .map(|file| read(out.path(), file))
    };
    let a = files(5);
    assert!(a == files(5), "seed 5 twice");
    let b = files(6);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_ne!(x, y, "file {i} with seeds 5 and 6");
    }
}

/// A sparse 2 KiB C1 as JSON, changed by `edit`, then self-checked.
fn check_tampered(edit: impl FnOnce(&mut Value)) -> SelfCheckError {
    let made = sparse::make_c1(common::SIZE_2K, 9, &()).unwrap();
    let mut json = serde_json::to_value(&made.c1).unwrap();
    edit(&mut json["vanilla_proofs"]["StackedDrg2KiBV1"][0][0]);
    let c1: SealCommitPhase1Output = serde_json::from_value(json).unwrap();
    let err = sparse::check_c1(&c1).unwrap_err();
    err.downcast::<SelfCheckError>()
        .unwrap_or_else(|e| panic!("not a named self-check error: {e:#}"))
}

fn challenge_check(err: SelfCheckError) -> ChallengeCheck {
    match err {
        SelfCheckError::Challenge {
            partition: 0,
            index: 0,
            check,
            ..
        } => check,
        other => panic!("expected a failure of partition 0, challenge 0: {other}"),
    }
}

#[test]
fn tampered_sparse_c1_is_rejected_with_a_named_error() {
    // One row of a parent column: its hash no longer opens against comm_c.
    let err = check_tampered(|p| {
        let rows = &mut p["replica_column_proofs"]["drg_parents"][2]["column"]["rows"];
        rows[0] = rows[1].clone();
    });
    assert!(err.to_string().contains("DRG parent 2's column"), "{err}");
    assert_eq!(
        challenge_check(err),
        ChallengeCheck::ColumnLeaf {
            column: ColumnRole::Drg(2)
        }
    );

    // A tree_d sibling: storage-proofs' verify_all_partitions does not hash that path.
    let err = check_tampered(|p| {
        let path = &mut p["comm_d_proofs"]["data"]["Single"]["path"]["path"];
        path[3]["hashes"][0] = path[4]["hashes"][0].clone();
    });
    assert_eq!(challenge_check(err), ChallengeCheck::TreeDPath);

    // A labeling proof's parent: the vanilla verifier never compares them with the columns.
    let err = check_tampered(|p| {
        let parents = &mut p["labeling_proofs"][1]["parents"];
        parents[7] = parents[8].clone();
    });
    assert_eq!(
        challenge_check(err),
        ChallengeCheck::LabelingParents { layer: 2 }
    );

    // A missing expander parent column: the vanilla verifier pairs parents by zip.
    let err = check_tampered(|p| {
        p["replica_column_proofs"]["exp_parents"]
            .as_array_mut()
            .unwrap()
            .pop();
    });
    assert_eq!(
        challenge_check(err),
        ChallengeCheck::ParentColumnCount { drg: 6, exp: 7 }
    );
}

#[test]
fn every_sector_size_makes_a_checked_c1() {
    // 2 KiB, 8 MiB and 512 MiB: 2 layers, 1 partition; 64 GiB: 11 layers, 10 partitions, an
    // 8-8-2 tree. make_c1 self-checks each; the small ones also build their circuits.
    for (size, partitions, layers) in [
        (2048u64, 1usize, 2usize),
        (8 << 20, 1, 2),
        (512 << 20, 1, 2),
        (64 << 30, 10, 11),
    ] {
        let made = sparse::make_c1(size, 2, &()).unwrap();
        assert_eq!(
            made.stats.labels_computed,
            made.stats.distinct_challenges * layers
        );
        let c1 = porep::parse_c1(&serde_json::to_vec(&made.c1).unwrap()).unwrap();
        assert_eq!(u64::from(c1.registered_proof.sector_size()), size);
        assert_eq!(made.stats.partitions, partitions);
        if size < SIZE_32G {
            assert_eq!(porep::porep_circuits(c1).unwrap().partitions(), partitions);
        }
    }
}
