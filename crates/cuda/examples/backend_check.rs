//! Full proofs on the GPU against the CPU backend: for the same r and s the proof bytes must be
//! equal, on fresh synthetic circuits and on 2 KiB PoRep, WinningPoSt, WindowPoSt and SnapDeals
//! fixtures (made on the spot); the GPU proofs must verify (filecoin-proofs for the Filecoin
//! ones). Each witness is proved three ways on the GPU: a, b, c uploaded; a, b, c computed on
//! the device from the recorded matrices (the product path); and that again with the key
//! uploaded straight from its file. `backend_check WORKDIR` — prints a table, exits non-zero on
//! any mismatch; `backend_check WORKDIR phased` runs only the phased order's checks.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use rand::SeedableRng;
use zkforge_circuits::{PartitionedCircuit, ProofKind, SyntheticCircuit};
use zkforge_cuda::{CudaBackend, CudaOptions, Residency};
use zkforge_filecoin::{params, post, registry, snap};
use zkforge_fixtures::{self as fixtures, read_base64_list, unhex32, Manifest};
use zkforge_groth16::exec::pool::with_pool;
use zkforge_groth16::generator::{generate_random_keys, CpuFixedBase};
use zkforge_groth16::{
    prover, verify::verify, CpuBackend, Dispatch, KeyRef, MatrixRecorder, ParamsFile,
    ProofRandomness, ProveReport, ProverBackend, ProvingKey, Witness,
};

/// One circuit's witness in both forms, and its key in memory and (optionally) on disk.
struct Case<'a> {
    pk: &'a ProvingKey,
    file: Option<&'a ParamsFile>,
    full: Witness,
    deferred: Witness,
}

fn compare(
    name: &str,
    gpu: &CudaBackend,
    case: Case<'_>,
    inputs: &[blstrs::Scalar],
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Vec<u8>> {
    let Case {
        pk,
        file,
        full,
        deferred,
    } = case;
    let rnd = ProofRandomness::random(rng);
    let t = Instant::now();
    let cpu_proof = prover::prove(&CpuBackend::new(), pk, full.clone(), rnd)?;
    let cpu_s = t.elapsed().as_secs_f64();
    // Twice on the GPU: the first run uploads the bases.
    let gpu_proof = prover::prove(gpu, pk, full.clone(), rnd)?;
    let t = Instant::now();
    let again = prover::prove(gpu, pk, full, rnd)?;
    let gpu_s = t.elapsed().as_secs_f64();
    let on_device = prover::prove(gpu, pk, deferred.clone(), rnd)?;
    let t = Instant::now();
    let on_device_again = prover::prove(gpu, pk, deferred.clone(), rnd)?;
    let spmv_s = t.elapsed().as_secs_f64();
    let from_file = match file {
        Some(f) => prover::prove(gpu, KeyRef::File(f), deferred, rnd)? == cpu_proof,
        None => true,
    };
    let same = cpu_proof == gpu_proof
        && gpu_proof == again
        && on_device == cpu_proof
        && on_device_again == cpu_proof;
    let ok = verify(&pk.vk, &gpu_proof, inputs)?;
    println!(
        "{name:<28} cpu {cpu_s:>8.3} s   gpu {gpu_s:>8.3} s   gpu+spmv {spmv_s:>8.3} s   \
         bytes equal: {same}   key from file: {from_file}   verifies: {ok}"
    );
    ensure!(
        same && from_file && ok,
        "{name}: a GPU proof differs from the CPU proof or does not verify"
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
        params::generate(kind, 2048, dir, &CpuFixedBase, None, &())?;
        println!(
            "{:<28} params generated in {:.1} s",
            id.circuit_id(),
            t.elapsed().as_secs_f64()
        );
    }
    let pk = id.load(dir, Default::default())?;
    let file = ParamsFile::open(&id.params_path(dir))?;
    let matrices =
        zkforge_circuits::cached_matrices(circuits.as_ref(), Some(&id.matrices_path(dir)))?
            .context("Filecoin circuits have recordings")?;
    let matrices = std::sync::Arc::new(matrices);
    let mut out = Vec::new();
    for k in 0..circuits.partitions() {
        let case = Case {
            pk: &pk,
            file: Some(&file),
            full: circuits.synthesize(k)?,
            deferred: circuits.assign(k, matrices.clone())?,
        };
        let name = format!("{} partition {k}", id.circuit_id());
        out.extend(compare(&name, gpu, case, &circuits.public_inputs(k)?, rng)?);
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
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    if std::env::args().nth(2).as_deref() == Some("phased") {
        // The phased order's checks alone (a minute), for a run that has other work to do.
        for log in [12u32, 16] {
            let c = SyntheticCircuit::new(1 << log, 6, 0.9, rand::random());
            let pk = generate_random_keys(c.clone(), &mut rng, &())?;
            println!("synthetic 2^{log}:");
            phased_checks(&pk, &c, &mut rng)?;
        }
        println!("phased checks passed");
        return Ok(());
    }
    let gpu = CudaBackend::open(0)?;
    println!("device: {}", gpu.device().name());

    for (log, bits) in [(10u32, 0.9), (14, 0.5), (16, 0.9), (18, 0.9), (20, 0.9)] {
        let c = SyntheticCircuit::new(1 << log, 6, bits, rand::random());
        let pk = generate_random_keys(c.clone(), &mut rng, &())?;
        let matrices = std::sync::Arc::new(MatrixRecorder::record(c.clone())?);
        let case = Case {
            pk: &pk,
            file: None,
            full: zkforge_groth16::synthesize(c.clone())?,
            deferred: zkforge_groth16::assign(c.clone(), matrices)?,
        };
        let name = format!("synthetic 2^{log} bits {bits}");
        compare(&name, &gpu, case, &c.public_values(), &mut rng)?;
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
        (ProofKind::WinningPost, m.winning_post()?),
        (ProofKind::WindowPost, m.window_post()?),
    ] {
        let req = post::PostRequest {
            registered_proof: p.registered_proof,
            randomness: unhex32(&p.randomness)?,
            prover_id: unhex32(&m.prover_id)?,
            vanilla_proofs: vanilla(&p.vanilla)?,
            partition_index: 0,
            sector_number: None,
        };
        let proof = filecoin(kind, post::post_circuits(req)?, &params_dir, &gpu, &mut rng)?;
        let ok = if kind == ProofKind::WinningPost {
            m.verify_winning_post(&proof)?
        } else {
            m.verify_window_post(&proof)?
        };
        ensure!(ok, "filecoin-proofs rejects the GPU {kind} proof");
    }
    let s = m.snap()?;
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
    pipeline_checks(&mut rng)?;
    println!("pipeline checks passed");
    Ok(())
}

/// Proves `w` on `gpu` from two threads at once (pooled, pinned witnesses) and compares each
/// proof with the CPU's for the same r, s.
fn concurrent_equal(
    name: &str,
    gpu: &CudaBackend,
    pk: &ProvingKey,
    c: &SyntheticCircuit,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<()> {
    let pool = gpu.scalar_pool();
    let rnds: Vec<ProofRandomness> = (0..4).map(|_| ProofRandomness::random(rng)).collect();
    let cpu: Vec<_> = rnds
        .iter()
        .map(|r| {
            prover::prove(
                &CpuBackend::new(),
                pk,
                zkforge_groth16::synthesize(c.clone())?,
                *r,
            )
        })
        .collect::<Result<_, _>>()?;
    let t = Instant::now();
    let reports = std::thread::scope(|s| {
        let handles: Vec<_> = rnds
            .iter()
            .map(|r| {
                let pool = pool.clone();
                s.spawn(move || -> Result<_> {
                    let w = with_pool(pool, || zkforge_groth16::synthesize(c.clone()))?;
                    let mut report = ProveReport::default();
                    let p = prover::prove_on(gpu, Dispatch::on(0), pk, w, *r, &mut report)?;
                    Ok((p, report))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Result<Vec<_>>>()
    })?;
    let same = reports.iter().zip(&cpu).all(|((g, _), c)| g == c);
    let phases: Vec<String> = reports[0]
        .1
        .phases
        .iter()
        .map(|p| format!("{} {:.1} ms", p.name, p.duration_ms))
        .collect();
    println!(
        "{name:<28} 4 proofs on 2+ threads in {:.3} s, bytes equal: {same}; phases: {}",
        t.elapsed().as_secs_f64(),
        phases.join(", ")
    );
    ensure!(
        same,
        "{name}: a concurrent GPU proof differs from the CPU proof"
    );
    Ok(())
}

/// The pipeline machinery: concurrent workers with pinned pooled witnesses, streamed bases
/// (small chunks), and a VRAM budget so small that partitions must wait for each other.
fn pipeline_checks(rng: &mut rand_chacha::ChaCha20Rng) -> Result<()> {
    let c = SyntheticCircuit::new(1 << 16, 6, 0.9, rand::random());
    let pk = generate_random_keys(c.clone(), rng, &())?;

    let gpu = CudaBackend::open(0)?;
    concurrent_equal("concurrent, resident", &gpu, &pk, &c, rng)?;
    // Buffers are recycled (and pinned) on the reaper thread: give it a moment.
    let t = Instant::now();
    while gpu.pinned_memory().0 == 0 && t.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    ensure!(
        gpu.pinned_memory().0 > 0,
        "no witness buffer was pinned after recycling"
    );
    concurrent_equal("concurrent, pinned reuse", &gpu, &pk, &c, rng)?;
    drop(gpu);

    let streamed = CudaBackend::with_options(&CudaOptions {
        devices: vec![0],
        residency: Residency::Host,
        stream_chunk: 3000,
        ..Default::default()
    })?;
    concurrent_equal("streamed bases, 3000/chunk", &streamed, &pk, &c, rng)?;
    drop(streamed);
    phased_checks(&pk, &c, rng)?;

    // A budget a little above one partition's footprint: the second worker must wait.
    let probe = CudaBackend::open(0)?;
    let free = probe.devices()[0].memory_free_bytes;
    drop(probe);
    let one = zkforge_cuda::partition_footprint(&pk.lengths(), &Default::default());
    let keys = (pk.heap_bytes() as u64) * 2;
    let tight = CudaBackend::with_options(&CudaOptions {
        devices: vec![0],
        vram_margin: free.saturating_sub(keys + one + one / 4),
        ..Default::default()
    })?;
    concurrent_equal("tight VRAM budget", &tight, &pk, &c, rng)?;
    let d = &tight.devices()[0];
    println!(
        "tight budget: peak {} of {} bytes reserved, params {}",
        d.reserved_peak_bytes, d.budget_bytes, d.residency
    );
    ensure!(
        d.reserved_peak_bytes <= d.budget_bytes,
        "VRAM reservations exceeded the budget"
    );
    Ok(())
}

/// The phased order (backend/phased.rs) under placements forced one after another, chunks
/// of 3000 G1 points (many chunk and matrix-block boundaries): the key's queries streamed from
/// host memory or resident in any mix, the matrices resident or streamed in blocks. Each
/// proves deferred witnesses (a, b, c computed on the device) and full ones (a, b, c
/// uploaded), byte-equal to the CPU's for the same r and s; then with the key left in its
/// file, what the set streams read from the file chunk by chunk and decoded on the device.
fn phased_checks(
    pk: &ProvingKey,
    c: &SyntheticCircuit,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<()> {
    use zkforge_groth16::prover::placement::Item;
    let matrices = std::sync::Arc::new(MatrixRecorder::record(c.clone())?);
    let path = std::env::temp_dir().join(format!("phased-{}.params", rand::random::<u64>()));
    pk.write_file(&path)?;
    let file = ParamsFile::open(&path)?;
    let sets: [(&str, Vec<Item>); 4] = [
        ("everything streamed", vec![]),
        ("key streamed", vec![Item::Matrices]),
        (
            "l, a, matrices resident",
            vec![Item::L, Item::A, Item::Matrices],
        ),
        ("h, b_g2 resident", vec![Item::H, Item::BG2]),
    ];
    for (name, set) in sets {
        let gpu = CudaBackend::with_options(&CudaOptions {
            devices: vec![0],
            stream_chunk: 3000,
            resident_items: Some(set),
            ..Default::default()
        })?;
        let t = Instant::now();
        for deferred in [true, false] {
            let rnd = ProofRandomness::random(rng);
            let witness = || -> Result<Witness> {
                Ok(if deferred {
                    zkforge_groth16::assign(c.clone(), matrices.clone())?
                } else {
                    zkforge_groth16::synthesize(c.clone())?
                })
            };
            let cpu = prover::prove(&CpuBackend::new(), pk, witness()?, rnd)?;
            let mut report = ProveReport::default();
            let gpu_proof =
                prover::prove_on(&gpu, Dispatch::on(0), pk, witness()?, rnd, &mut report)?;
            let again = prover::prove_on(&gpu, Dispatch::on(0), pk, witness()?, rnd, &mut report)?;
            let from_file = prover::prove_on(
                &gpu,
                Dispatch::on(0),
                KeyRef::File(&file),
                witness()?,
                rnd,
                &mut report,
            )?;
            ensure!(
                gpu_proof == cpu && again == cpu,
                "phased, {name} (deferred {deferred}): a GPU proof differs from the CPU proof"
            );
            ensure!(
                from_file == cpu,
                "phased, {name} (deferred {deferred}), the key streamed from its file: the GPU \
                 proof differs from the CPU proof"
            );
        }
        println!(
            "{:<28} phased, deferred and full witnesses, key in memory and in its file, \
             bytes equal: true ({:.3} s)",
            name,
            t.elapsed().as_secs_f64()
        );
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    Ok(())
}
