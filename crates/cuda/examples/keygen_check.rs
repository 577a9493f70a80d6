//! Key generation on the GPU against the CPU: with one seed the files must be byte-identical.
//!
//! `keygen_check WORKDIR [LOG]`: the 2 KiB PoRep circuit written by both backends and compared
//! byte for byte; then a 2^LOG-constraint synthetic circuit (default 24) written by the GPU,
//! with a sample of points in every run recomputed on the CPU and compared (the whole file on
//! the CPU would take minutes). Prints times; exits non-zero on any difference.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use blstrs::{G1Projective, G2Projective, Scalar};
use group::Curve;
use rand::{Rng, SeedableRng};
use zkforge_circuits::{ProofKind, SyntheticCircuit};
use zkforge_cuda::{CudaDevice, CudaFixedBase};
use zkforge_filecoin::registry;
use zkforge_groth16::generator::{write_params, CpuFixedBase, FixedBaseBackend, PointSink, Setup};
use zkforge_groth16::{ConstraintMatrices, MatrixRecorder};

fn write(
    m: &ConstraintMatrices,
    setup: &Setup,
    backend: &dyn FixedBaseBackend,
    path: &Path,
) -> Result<f64> {
    let t = Instant::now();
    let mut w = std::io::BufWriter::with_capacity(1 << 24, std::fs::File::create(path)?);
    write_params(m, setup, backend, &mut w, path, &())?;
    drop(w);
    Ok(t.elapsed().as_secs_f64())
}

fn first_difference(a: &Path, b: &Path) -> Result<Option<u64>> {
    let (mut fa, mut fb) = (std::fs::File::open(a)?, std::fs::File::open(b)?);
    ensure!(
        fa.metadata()?.len() == fb.metadata()?.len(),
        "{} and {} differ in length",
        a.display(),
        b.display()
    );
    let (mut ba, mut bb) = (vec![0u8; 1 << 24], vec![0u8; 1 << 24]);
    let mut at = 0u64;
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(None);
        }
        fb.read_exact(&mut bb[..n])?;
        if let Some(i) = (0..n).find(|&i| ba[i] != bb[i]) {
            return Ok(Some(at + i as u64));
        }
        at += n as u64;
    }
}

/// The CUDA backend, with `SAMPLES` points of every run recomputed on the CPU.
struct Sampled {
    gpu: CudaFixedBase,
    checked: std::sync::atomic::AtomicU64,
}

const SAMPLES: usize = 256;

impl Sampled {
    fn check(
        &self,
        bytes: &[u8],
        scalars: &[Scalar],
        at: usize,
        point: impl Fn(&Scalar) -> Vec<u8>,
    ) -> Result<()> {
        let size = point(&Scalar::from(1u64)).len();
        let n = bytes.len() / size;
        let mut rng = rand::thread_rng();
        for _ in 0..SAMPLES.min(n) {
            let i = rng.gen_range(0..n);
            let want = point(&scalars[at + i]);
            ensure!(
                bytes[i * size..(i + 1) * size] == want[..],
                "point {} differs between the GPU and the CPU",
                at + i
            );
        }
        self.checked
            .fetch_add(SAMPLES.min(n) as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

impl Sampled {
    /// Forwards the GPU's runs to `sink`, checking samples of each against `point` on the CPU.
    fn forward(
        &self,
        scalars: &[Scalar],
        size: usize,
        run: impl FnOnce(&mut PointSink) -> zkforge_groth16::Result<()>,
        point: impl Fn(&Scalar) -> Vec<u8>,
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()> {
        let mut at = 0;
        run(&mut |bytes| {
            self.check(bytes, scalars, at, &point)
                .map_err(|e| zkforge_groth16::Error::Synthesis(e.to_string()))?;
            at += bytes.len() / size;
            sink(bytes)
        })
    }
}

impl FixedBaseBackend for Sampled {
    fn name(&self) -> &'static str {
        "cuda, sampled against the cpu"
    }

    fn g1(
        &self,
        base: G1Projective,
        s: &[Scalar],
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()> {
        let point = |x: &Scalar| (base * x).to_affine().to_uncompressed().as_ref().to_vec();
        self.forward(s, 96, |sink| self.gpu.g1(base, s, sink), point, sink)
    }

    fn g2(
        &self,
        base: G2Projective,
        s: &[Scalar],
        sink: &mut PointSink,
    ) -> zkforge_groth16::Result<()> {
        let point = |x: &Scalar| (base * x).to_affine().to_uncompressed().as_ref().to_vec();
        self.forward(s, 192, |sink| self.gpu.g2(base, s, sink), point, sink)
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let work = std::path::PathBuf::from(args.next().context("usage: keygen_check WORKDIR [LOG]")?);
    let log: u32 = args.next().map(|v| v.parse()).transpose()?.unwrap_or(24);
    std::fs::create_dir_all(&work)?;
    let seed: u64 = rand::random();
    let setup = Setup::random(&mut rand_chacha::ChaCha20Rng::seed_from_u64(seed));
    let gpu = || -> Result<CudaFixedBase> { Ok(CudaFixedBase::new(CudaDevice::open(0)?)?) };

    let m = registry::matrices(ProofKind::PoRep, 2048)?;
    let (a, b) = (
        work.join("porep-2k.cpu.params"),
        work.join("porep-2k.gpu.params"),
    );
    let cpu_s = write(&m, &setup, &CpuFixedBase, &a)?;
    let gpu_s = write(&m, &setup, &gpu()?, &b)?;
    let diff = first_difference(&a, &b)?;
    println!(
        "keygen 2 KiB PoRep ({} constraints, seed {seed}): cpu {cpu_s:.2} s, gpu {gpu_s:.2} s, \
         {} bytes, identical: {}",
        m.num_constraints(),
        std::fs::metadata(&a)?.len(),
        diff.is_none()
    );
    ensure!(
        diff.is_none(),
        "the GPU file differs from the CPU file at byte {diff:?}"
    );
    std::fs::remove_file(&a)?;
    std::fs::remove_file(&b)?;

    let t = Instant::now();
    let m = MatrixRecorder::record(SyntheticCircuit::new(1 << log, 8, 0.9, seed))?;
    let record_s = t.elapsed().as_secs_f64();
    let sampled = Sampled {
        gpu: gpu()?,
        checked: Default::default(),
    };
    let path = work.join(format!("synthetic-2^{log}.gpu.params"));
    let gpu_s = write(&m, &setup, &sampled, &path)?;
    println!(
        "keygen synthetic 2^{log}: recorded in {record_s:.1} s, gpu {gpu_s:.2} s for {:.2} GB, \
         {} sampled points equal the CPU's",
        std::fs::metadata(&path)?.len() as f64 / 1e9,
        sampled.checked.load(std::sync::atomic::Ordering::Relaxed)
    );
    std::fs::remove_file(&path)?;
    Ok(())
}
