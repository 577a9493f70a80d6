//! PoRep C2 of 2 KiB sectors: our proofs verify with filecoin-proofs, match bellperson's bytes
//! for the same r and s, and bad inputs fail with errors that say what is wrong.
//!
//! A 2 KiB PoRep C2 costs tens of seconds on 2 cores, and the key (about 1 GB) takes seconds to
//! read: the binary makes one proof, by the product path, and its tests share it
//! ([`proof`]). filecoin-proofs verifies it, bellperson's reference prover reproduces its
//! bytes from the other C1 format, and the two formats are held to one parsed C1.

mod common;

use std::sync::OnceLock;

use bellperson::groth16 as bp;
use blstrs::Bls12;
use rand_core::SeedableRng;
use zkforge_filecoin::porep;
use zkforge_fixtures::Manifest;
use zkforge_groth16::{ProofRandomness, ReadOptions};

fn read(dir: &std::path::Path, name: &std::path::Path) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

/// The seed of the shared proof's randomness: the engine draws r, then s, from it (a seeded
/// job), as [`ProofRandomness::random`] does for bellperson's proof.
const PROOF_SEED: u64 = 2;

/// A sealed 2 KiB sector's public values and its C1 in both formats (sealed once for the
/// binary; the files are read into memory and the directory removed).
struct Sector {
    m: Manifest,
    wrapper: Vec<u8>,
    raw: Vec<u8>,
}

fn sector() -> &'static Sector {
    static SECTOR: OnceLock<Sector> = OnceLock::new();
    SECTOR.get_or_init(|| {
        let (fixture, m) = common::sector(11);
        Sector {
            wrapper: read(fixture.path(), &m.c1_wrapper),
            raw: read(fixture.path(), &m.c1_raw),
            m,
        }
    })
}

/// One proof of the sector's wrapper C1 through the engine, the one proving pipeline (the
/// native assignment, a, b, c from the recorded matrices, the self-check), r and s drawn from
/// [`PROOF_SEED`]; made once for the tests of this binary (they wait for one another here).
fn proof() -> &'static [u8] {
    static PROOF: OnceLock<Vec<u8>> = OnceLock::new();
    PROOF.get_or_init(|| {
        let c1 = porep::parse_c1(&sector().wrapper).unwrap();
        let circuits = porep::porep_circuits(c1).unwrap();
        assert_eq!(circuits.partitions(), 1);
        let proof = common::prove(circuits, PROOF_SEED);
        assert_eq!(proof.len(), 192);
        proof
    })
}

#[test]
fn proofs_from_both_c1_formats_verify_with_filecoin_proofs() {
    let (s, proof) = (sector(), proof());
    // Both formats parse to the same C1, value for value: the circuits, hence the proof for a
    // given r and s, are the same whichever format Curio sends.
    let as_json = |bytes: &[u8]| serde_json::to_vec(&porep::parse_c1(bytes).unwrap()).unwrap();
    assert!(
        as_json(&s.wrapper) == as_json(&s.raw),
        "Curio's wrapper and the raw SealCommitPhase1Output parse to different C1s"
    );
    assert!(
        s.m.verify_porep(proof).unwrap(),
        "verify_seal accepts the proof"
    );
    let mut bad = proof.to_vec();
    bad[10] ^= 1;
    assert!(
        !s.m.verify_porep(&bad).unwrap_or(false),
        "a damaged proof is rejected"
    );
}

/// bellperson's prover on the gadget circuit of the raw C1, with the r and s the shared proof
/// drew: the same 192 bytes. One comparison of a real Filecoin circuit (the reference prover
/// takes ~18 s at 2 KiB); synthetic shapes are compared in groth16/tests/bellperson_compat.rs.
#[test]
fn proof_bytes_equal_bellperson_for_the_same_randomness() {
    let (dir, id) = common::porep_params();
    let params = {
        let bytes = std::fs::read(id.params_path(&dir)).unwrap();
        bp::Parameters::<Bls12>::read(&bytes[..], false).unwrap()
    };
    let c1 = porep::parse_c1(&sector().raw).unwrap();
    let circuit = porep::PoRepCircuits::<filecoin_proofs::SectorShape2KiB>::new(c1)
        .unwrap()
        .circuit(0)
        .unwrap();
    let rnd = ProofRandomness::random(&mut rand_chacha::ChaCha20Rng::seed_from_u64(PROOF_SEED));
    let theirs = bp::create_proof(circuit, &params, rnd.r, rnd.s).unwrap();
    let mut their_bytes = Vec::new();
    theirs.write(&mut their_bytes).unwrap();
    // Ours, made meanwhile on the other test thread (or now).
    assert_eq!(proof(), their_bytes.as_slice());
}

#[test]
fn bad_inputs_fail_with_errors_that_name_the_problem() {
    let (dir, _) = common::porep_params();
    let (fixture, m) = common::sector(13);
    let wrapper = read(fixture.path(), &m.c1_wrapper);
    let raw = read(fixture.path(), &m.c1_raw);
    let err = |bytes: &[u8]| match porep::parse_c1(bytes) {
        Ok(_) => panic!("bad input accepted"),
        Err(e) => format!("{e:#}"),
    };

    assert!(err(&wrapper[..wrapper.len() / 2]).contains("not valid JSON"));
    assert!(
        err(b"{\"SectorNum\":1,\"Phase1Out\":\"!!!not base64\",\"SectorSize\":2048}")
            .contains("base64")
    );
    let mut v: serde_json::Value = serde_json::from_slice(&wrapper).unwrap();
    v["SectorSize"] = 8_388_608u64.into();
    assert!(err(&serde_json::to_vec(&v).unwrap()).contains("SectorSize 8388608 does not match"));
    assert!(err(b"{\"hello\":1}").contains("neither a C1 wrapper nor a SealCommitPhase1Output"));

    // A 2 KiB C1 relabelled as 8 MiB: the vanilla proofs give it away.
    let mut v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    v["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let c1 = porep::parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    let msg = format!("{:#}", porep::porep_circuits(c1).err().unwrap());
    assert!(
        msg.contains("do not verify against its public values"),
        "{msg}"
    );

    // A damaged vanilla proof is caught before synthesis.
    let mut v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    v["comm_r"][3] = 7.into();
    let c1 = porep::parse_c1(&serde_json::to_vec(&v).unwrap()).unwrap();
    let msg = format!("{:#}", porep::porep_circuits(c1).err().unwrap());
    assert!(
        msg.contains("do not verify against its public values"),
        "{msg}"
    );

    // Parameters missing for the circuit: the error names the file and how to make it.
    let c1 = porep::parse_c1(&raw).unwrap();
    let circuits = porep::porep_circuits(c1).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let msg = format!(
        "{:#}",
        circuits
            .params_id()
            .load(empty.path(), ReadOptions::default())
            .unwrap_err()
    );
    assert!(
        msg.contains("missing parameters for porep-2KiB") && msg.contains(".params"),
        "{msg}"
    );
    assert!(circuits.params_id().params_path(&dir).exists());
}
