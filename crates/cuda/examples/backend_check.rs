//! Full proofs on the GPU against the CPU backend: for the same r and s the proof bytes must be
//! equal, on fresh synthetic circuits and on 2 KiB PoRep, WinningPoSt, WindowPoSt and SnapDeals
//! fixtures (made on the spot); the GPU proofs must verify (filecoin-proofs for the Filecoin
//! ones). `backend_check WORKDIR` — prints a table, exits non-zero on any mismatch.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use rand::SeedableRng;
use zkforge_circuits::{PartitionedCircuit, ProofKind, SyntheticCircuit};
use zkforge_cuda::CudaBackend;
use zkforge_filecoin::fixtures::{self, read_base64_list, unhex32, Manifest};
use zkforge_filecoin::{params, post, registry, snap};
use zkforge_groth16::generator::generate_random_keys;
use zkforge_groth16::{prover, verify::verify, CpuBackend, ProofRandomness, ProvingKey, Witness};

fn compare(
    name: &str,
    gpu: &CudaBackend,
    pk: &ProvingKey,
    w: Witness,
    inputs: &[blstrs::Scalar],
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Vec<u8>> {
    let rnd = ProofRandomness::random(rng);
    let t = Instant::now();
    let cpu_proof = prover::prove(&CpuBackend::new(), pk, w.clone(), rnd)?;
    let cpu_s = t.elapsed().as_secs_f64();
    // Twice on the GPU: the first run uploads the bases.
    let gpu_proof = prover::prove(gpu, pk, w.clone(), rnd)?;
    let t = Instant::now();
    let again = prover::prove(gpu, pk, w, rnd)?;
    let gpu_s = t.elapsed().as_secs_f64();
    let same = cpu_proof == gpu_proof && gpu_proof == again;
    let ok = verify(&pk.vk, &gpu_proof, inputs)?;
    println!(
        "{name:<28} cpu {cpu_s:>8.3} s   gpu {gpu_s:>8.3} s   bytes equal: {same}   verifies: {ok}"
    );
    ensure!(
        same && ok,
        "{name}: GPU proof differs from the CPU proof or does not verify"
    );
    Ok(gpu_proof.to_bytes().to_vec())
}

fn filecoin(
    kind: ProofKind,
    circuits: Box<dyn PartitionedCircuit>,
    dir: &std::path::Path,
    gpu: &CudaBackend,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Vec<u8>> {
    let id = registry::params_id(kind, 2048)?;
    if !id.params_path(dir).exists() {
        let t = Instant::now();
        let pk = registry::random_keys(kind, 2048, rng, &())?;
        params::write(&id, &pk, dir, true)?;
        println!(
            "{:<28} params generated in {:.1} s",
            id.circuit_id(),
            t.elapsed().as_secs_f64()
        );
    }
    let pk = id.load(dir, Default::default())?;
    let mut out = Vec::new();
    for k in 0..circuits.partitions() {
        let w = circuits.synthesize(k)?;
        let name = format!("{} partition {k}", id.circuit_id());
        out.extend(compare(
            &name,
            gpu,
            &pk,
            w,
            &circuits.public_inputs(k)?,
            rng,
        )?);
    }
    Ok(out)
}

fn main() -> Result<()> {
    let work = PathBuf::from(
        std::env::args()
            .nth(1)
            .context("usage: backend_check WORKDIR")?,
    );
    let params_dir = work.join("params");
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params_dir);
    let gpu = CudaBackend::open(0)?;
    println!("device: {}", gpu.device().name());
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();

    for (log, bits) in [(10u32, 0.9), (14, 0.5), (16, 0.9), (18, 0.9), (20, 0.9)] {
        let c = SyntheticCircuit::new(1 << log, 6, bits, rand::random());
        let pk = generate_random_keys(c.clone(), &mut rng, &())?;
        let w = zkforge_groth16::synthesize(c.clone())?;
        compare(
            &format!("synthetic 2^{log} bits {bits}"),
            &gpu,
            &pk,
            w,
            &c.public_values(),
            &mut rng,
        )?;
    }

    let fx = work.join("fixtures");
    let m: Manifest = fixtures::make(2048, &fx, rand::random())?;
    let c1 = zkforge_filecoin::porep::parse_c1(&std::fs::read(fx.join(&m.c1_wrapper))?)?;
    let porep = filecoin(
        ProofKind::PoRep,
        zkforge_filecoin::porep::porep_circuits(c1)?,
        &params_dir,
        &gpu,
        &mut rng,
    )?;
    ensure!(
        m.verify_porep(&porep)?,
        "filecoin-proofs rejects the GPU PoRep proof"
    );

    let vanilla = |p: &std::path::Path| -> Result<Vec<Vec<u8>>> {
        read_base64_list(&std::fs::read(fx.join(p))?)
    };
    for (kind, p) in [
        (ProofKind::WinningPost, &m.winning_post),
        (ProofKind::WindowPost, &m.window_post),
    ] {
        let req = post::PostRequest {
            registered_proof: p.registered_proof,
            randomness: unhex32(&p.randomness)?,
            prover_id: unhex32(&m.prover_id)?,
            vanilla_proofs: vanilla(&p.vanilla)?,
            partition_index: 0,
        };
        let proof = filecoin(kind, post::post_circuits(req)?, &params_dir, &gpu, &mut rng)?;
        let ok = if kind == ProofKind::WinningPost {
            m.verify_winning_post(&proof)?
        } else {
            m.verify_window_post(&proof)?
        };
        ensure!(ok, "filecoin-proofs rejects the GPU {kind} proof");
    }
    let s = &m.snap;
    let req = snap::SnapRequest {
        registered_proof: s.registered_proof,
        vanilla_proofs: vanilla(&s.vanilla)?,
        comm_r_old: unhex32(&s.comm_r_old)?,
        comm_r_new: unhex32(&s.comm_r_new)?,
        comm_d_new: unhex32(&s.comm_d_new)?,
    };
    let proof = filecoin(
        ProofKind::SnapDeals,
        snap::snap_circuits(req)?,
        &params_dir,
        &gpu,
        &mut rng,
    )?;
    ensure!(
        m.verify_snap(&proof)?,
        "filecoin-proofs rejects the GPU SnapDeals proof"
    );
    println!("all GPU proofs equal the CPU proofs and verify with filecoin-proofs");
    Ok(())
}
