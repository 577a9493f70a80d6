//! The recorded constraints of each kind, made from one challenge (PoRep) or one sector (PoSt)
//! and repeated, or in slices on every core (SnapDeals), equal the recording through every
//! gadget of the blank circuit on one thread, entry for entry
//! (rows, columns, coefficients, densities): the `.r1cs` files and the keys made from them are
//! the same as before.

use std::time::Instant;

use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB, SectorShape8MiB};
use filecoin_proofs::parameters::{
    public_params, window_post_public_params, winning_post_public_params,
};
use filecoin_proofs::{DefaultPieceHasher, MerkleTreeTrait, PoStType, TreeRHasher};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound,
};
use zkforge_filecoin::{porep, post, snap};
use zkforge_groth16::r1cs::record_sliced_in_blocks;
use zkforge_groth16::{ConstraintMatrices, MatrixRecorder};

fn whole_porep<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) -> ConstraintMatrices {
    let pp = public_params::<Tree>(&proof.as_v1_config()).unwrap();
    let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&pp);
    MatrixRecorder::record(circuit).unwrap()
}

fn whole_post<Tree: 'static + MerkleTreeTrait>(proof: RegisteredPoStProof) -> ConstraintMatrices {
    let config = proof.as_v1_config();
    let pp = match proof.typ() {
        PoStType::Winning => winning_post_public_params::<Tree>(&config),
        PoStType::Window => window_post_public_params::<Tree>(&config),
    }
    .unwrap();
    let circuit = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&pp);
    MatrixRecorder::record(circuit).unwrap()
}

/// The product path's recording and the whole one, compared; prints their times.
fn same(
    name: &str,
    ours: impl FnOnce() -> ConstraintMatrices,
    whole: impl FnOnce() -> ConstraintMatrices,
) {
    let t = Instant::now();
    let r = ours();
    let ours_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let w = whole();
    let whole_s = t.elapsed().as_secs_f64();
    println!(
        "{name}: {} constraints, {} non-zeros; ours {ours_s:.2} s, whole {whole_s:.2} s",
        w.num_constraints(),
        w.nonzeros()
    );
    assert!(
        r == w,
        "{name}: the product path's recording differs from the whole one"
    );
}

#[test]
fn porep_recorded_from_one_challenge_equals_the_whole_recording() {
    use RegisteredSealProof::*;
    let cases: [(_, _, fn(_) -> _); 2] = [
        (
            "PoRep 2 KiB",
            StackedDrg2KiBV1_1,
            whole_porep::<SectorShape2KiB>,
        ),
        (
            "PoRep 8 MiB",
            StackedDrg8MiBV1_1,
            whole_porep::<SectorShape8MiB>,
        ),
    ];
    for (name, proof, whole) in cases {
        same(
            name,
            || porep::porep_matrices(proof).unwrap(),
            || whole(proof),
        );
    }
}

#[test]
fn post_recorded_from_one_sector_equals_the_whole_recording() {
    use RegisteredPoStProof::*;
    let cases: [(_, _, fn(_) -> _); 3] = [
        (
            "WindowPoSt 2 KiB",
            StackedDrgWindow2KiBV1_2,
            whole_post::<SectorShape2KiB>,
        ),
        (
            "WinningPoSt 2 KiB",
            StackedDrgWinning2KiBV1,
            whole_post::<SectorShape2KiB>,
        ),
        (
            "WinningPoSt 32 GiB",
            StackedDrgWinning32GiBV1,
            whole_post::<SectorShape32GiB>,
        ),
    ];
    for (name, proof, whole) in cases {
        same(
            name,
            || post::post_matrices(proof).unwrap(),
            || whole(proof),
        );
    }
}

fn blank_snap<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
) -> EmptySectorUpdateCircuit<Tree> {
    let pp = storage_proofs_update::PublicParams::from_sector_size(sector_size);
    <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&pp)
}

/// SnapDeals' challenges differ in their constants, so it is recorded in slices on every core
/// instead of from one part: in blocks of 64 rows over 3 and 8 slices, and as `snap_matrices`
/// records it, the same entry for entry as one thread through every gadget.
#[test]
fn snap_recorded_in_slices_equals_the_whole_recording() {
    let whole = MatrixRecorder::record(blank_snap::<SectorShape2KiB>(2048)).unwrap();
    for slices in [3, 8] {
        let sliced = record_sliced_in_blocks(|| blank_snap::<SectorShape2KiB>(2048), slices, 64);
        assert!(
            sliced.unwrap() == whole,
            "SnapDeals 2 KiB in {slices} slices differs from the whole recording"
        );
    }
    same(
        "SnapDeals 2 KiB",
        || snap::snap_matrices(RegisteredUpdateProof::StackedDrg2KiBV1).unwrap(),
        || whole.clone(),
    );
}

/// The 32 GiB PoRep and WindowPoSt circuits, both ways (by hand: minutes of one core and
/// ~15 GB for the two recordings side by side; docs/perf.md has the figures).
#[test]
#[ignore = "32 GiB: several minutes and ~15 GB; run by hand with --ignored"]
fn thirty_two_gib_recordings_equal_the_whole_ones() {
    same(
        "PoRep 32 GiB",
        || porep::porep_matrices(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap(),
        || whole_porep::<SectorShape32GiB>(RegisteredSealProof::StackedDrg32GiBV1_1),
    );
    same(
        "WindowPoSt 32 GiB",
        || post::post_matrices(RegisteredPoStProof::StackedDrgWindow32GiBV1_2).unwrap(),
        || whole_post::<SectorShape32GiB>(RegisteredPoStProof::StackedDrgWindow32GiBV1_2),
    );
}

/// SHA-256 over everything a recording holds, to compare recordings made on two machines.
fn digest(m: &ConstraintMatrices) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update((m.num_inputs as u64).to_le_bytes());
    h.update((m.num_aux as u64).to_le_bytes());
    for x in [&m.a, &m.b, &m.c] {
        for s in &x.row_starts {
            h.update(s.to_le_bytes());
        }
        for e in &x.entries {
            h.update(e.column.to_le_bytes());
            h.update(e.coeff.to_le_bytes());
        }
    }
    for c in &m.coefficients {
        h.update(c.to_bytes_le());
    }
    for d in [&m.a_aux_density, &m.b_input_density, &m.b_aux_density] {
        for w in d.words() {
            h.update(w.to_le_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The 32 GiB recordings from one part, timed, with their digests (by hand, e.g. on the GPU box:
/// `recording --ignored --exact thirty_two_gib_recordings_timed --nocapture`).
#[test]
#[ignore = "32 GiB: ~20 GB of matrices; run by hand with --ignored"]
fn thirty_two_gib_recordings_timed() {
    let timed = |name: &str, record: &dyn Fn() -> ConstraintMatrices| {
        let t = Instant::now();
        let m = record();
        println!(
            "{name}: {} constraints, {} non-zeros, recorded in {:.2} s, digest {}",
            m.num_constraints(),
            m.nonzeros(),
            t.elapsed().as_secs_f64(),
            digest(&m)
        );
    };
    timed("PoRep 32 GiB", &|| {
        porep::porep_matrices(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap()
    });
    timed("WindowPoSt 32 GiB", &|| {
        post::post_matrices(RegisteredPoStProof::StackedDrgWindow32GiBV1_2).unwrap()
    });
    timed("WinningPoSt 32 GiB", &|| {
        post::post_matrices(RegisteredPoStProof::StackedDrgWinning32GiBV1).unwrap()
    });
    timed("SnapDeals 32 GiB", &|| {
        snap::snap_matrices(RegisteredUpdateProof::StackedDrg32GiBV1).unwrap()
    });
}

/// The 32 GiB SnapDeals circuit in slices against one thread through every gadget, timed,
/// with the digest (by hand, on the GPU box: ~1 minute and ~20 GB).
#[test]
#[ignore = "32 GiB: a minute of one core and ~20 GB; run by hand with --ignored"]
fn thirty_two_gib_snap_in_slices_equals_the_whole_recording() {
    let t = Instant::now();
    let sliced = snap::snap_matrices(RegisteredUpdateProof::StackedDrg32GiBV1).unwrap();
    let sliced_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let whole = MatrixRecorder::record(blank_snap::<SectorShape32GiB>(32 << 30)).unwrap();
    println!(
        "SnapDeals 32 GiB: {} constraints, {} non-zeros; in slices {sliced_s:.2} s on {} \
         threads, whole {:.2} s; digest {}",
        whole.num_constraints(),
        whole.nonzeros(),
        rayon::current_num_threads(),
        t.elapsed().as_secs_f64(),
        digest(&sliced)
    );
    assert!(sliced == whole, "SnapDeals 32 GiB in slices differs");
}
