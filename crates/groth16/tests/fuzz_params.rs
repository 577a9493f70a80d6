//! Fuzzed `.params` and `.vk` files: a tiny synthetic circuit's key, truncated, bit-flipped,
//! with section counts rewritten (wrong, huge), bytes cut out or appended. Every case is refused
//! with a `MalformedParams` error naming the file, or parses to the original key; a changed key
//! that still parses never yields a proof its own verifying key accepts. No panic, no allocation
//! sized by a count in the file (the counts are checked against the bytes left first), no case
//! slower than a second.

#[path = "support/fuzz.rs"]
mod fuzz;

use std::path::Path;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{
    prover, synthesize, verify::verify, CpuBackend, Error, ProofRandomness, ProvingKey,
    ReadOptions, VerifyingKey,
};

#[global_allocator]
static ALLOC: fuzz::Recording = fuzz::Recording;

#[derive(Clone, Debug)]
enum Mutation {
    Truncate(Index),
    FlipBit(Index, u8),
    /// Rewrites the count of section `Index` (vk.ic, h, l, a, b_g1, b_g2).
    Count(Index, u32),
    /// Writes a big-endian u32 anywhere.
    Word(Index, u32),
    Cut(Index, Index),
    Append(Vec<u8>),
}

fn count() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(u32::MAX),
        Just(0x7fff_ffff),
        Just(1 << 24),
        0u32..64,
        any::<u32>(),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (any::<Index>(), count()).prop_map(|(i, c)| Mutation::Count(i, c)),
        (any::<Index>(), count()).prop_map(|(i, c)| Mutation::Word(i, c)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Cut(a, b)),
        prop::collection::vec(any::<u8>(), 1..200).prop_map(Mutation::Append),
    ]
}

/// Where each section's u32 count sits in a `.params` file of `pk`.
fn count_offsets(pk: &ProvingKey) -> Vec<usize> {
    let vk_points = 3 * 96 + 3 * 192;
    let mut at = vk_points;
    let mut out = vec![at];
    at += 4 + 96 * pk.vk.ic.len();
    for (len, size) in [
        (pk.h.len(), 96),
        (pk.l.len(), 96),
        (pk.a.len(), 96),
        (pk.b_g1.len(), 96),
        (pk.b_g2.len(), 192),
    ] {
        out.push(at);
        at += 4 + size * len;
    }
    out
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation, counts: &[usize]) {
    let put = |bytes: &mut Vec<u8>, at: usize, v: u32| {
        if at + 4 <= bytes.len() {
            bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
    };
    match m {
        Mutation::Truncate(i) => bytes.truncate(i.index(bytes.len() + 1)),
        Mutation::FlipBit(i, bit) if !bytes.is_empty() => {
            let at = i.index(bytes.len());
            bytes[at] ^= 1 << bit;
        }
        Mutation::Count(i, v) => put(bytes, counts[i.index(counts.len())], *v),
        Mutation::Word(i, v) if !bytes.is_empty() => put(bytes, i.index(bytes.len()), *v),
        Mutation::Cut(a, b) if !bytes.is_empty() => {
            let (a, b) = (a.index(bytes.len()), b.index(bytes.len()));
            bytes.drain(a.min(b)..a.max(b));
        }
        Mutation::Append(extra) => bytes.extend_from_slice(extra),
        _ => {}
    }
}

/// A refusal must be the parser's named error, pointing at the file.
fn named(e: &Error, origin: &Path) -> Result<bool, String> {
    match e {
        Error::MalformedParams { path, what } if path == origin && !what.is_empty() => Ok(false),
        other => Err(format!("not a named MalformedParams error: {other:?}")),
    }
}

/// A key that parsed but differs from the original must not produce a proof that its own
/// verifying key accepts (the engine checks every proof against the key it was made with).
fn no_wrong_proof(pk: &ProvingKey, circuit: &SyntheticCircuit) -> Result<(), String> {
    let w = synthesize(circuit.clone()).map_err(|e| e.to_string())?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let proof = match prover::prove(&CpuBackend::new(), pk, w, ProofRandomness::random(&mut rng)) {
        Ok(p) => p,
        Err(_) => return Ok(()),
    };
    match verify(&pk.vk, &proof, &circuit.public_values()) {
        Ok(true) => Err("a changed key produced a proof its verifying key accepts".into()),
        _ => Ok(()),
    }
}

fn limits() -> fuzz::Limits {
    fuzz::Limits {
        allocation: 1 << 20,
        time: Duration::from_secs(1),
    }
}

#[test]
fn fuzzed_params_and_vk_files_are_refused_by_name_or_read_whole() {
    let circuit = SyntheticCircuit::new(12, 2, 0.5, 3);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let pk = generate_random_keys(circuit.clone(), &mut rng, &()).unwrap();
    let mut original = Vec::new();
    pk.write(&mut original).unwrap();
    let mut vk_original = Vec::new();
    pk.vk.write(&mut vk_original).unwrap();
    let counts = count_offsets(&pk);
    let origin = Path::new("fuzzed.params");

    let mutations = || prop::collection::vec(mutation(), 1..4);
    let params = (mutations(), any::<bool>());
    fuzz::run_target(".params", params, limits(), |(ms, check_subgroup)| {
        let mut bytes = original.clone();
        for m in &ms {
            apply(&mut bytes, m, &counts);
        }
        let opts = ReadOptions { check_subgroup };
        match ProvingKey::from_bytes(&bytes, origin, opts) {
            Err(e) => named(&e, origin),
            Ok(read) if read == pk => Ok(true),
            Ok(read) => no_wrong_proof(&read, &circuit).map(|()| true),
        }
    });

    fuzz::run_target(".vk", mutations(), limits(), |ms| {
        let mut bytes = vk_original.clone();
        for m in &ms {
            apply(&mut bytes, m, &counts[..1]);
        }
        match VerifyingKey::from_bytes(&bytes, origin) {
            Err(e) => named(&e, origin),
            Ok(read) if read == pk.vk => Ok(true),
            // A changed verifying key must still refuse a proof made for the original one.
            Ok(read) => {
                let w = synthesize(circuit.clone()).map_err(|e| e.to_string())?;
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
                let proof = prover::prove(
                    &CpuBackend::new(),
                    &pk,
                    w,
                    ProofRandomness::random(&mut rng),
                )
                .map_err(|e| e.to_string())?;
                match verify(&read, &proof, &circuit.public_values()) {
                    Ok(true) => Err("a changed verifying key accepts the proof".into()),
                    _ => Ok(true),
                }
            }
        }
    });
}
