//! Page-locking witness buffers, measured (issue 24). A 32 GiB PoRep partition's aux is ~4 GiB;
//! at start the engine used to pin 8 such buffers up front (19.5 s on the H200 box), because a
//! `cuMemHostRegister` holds the driver, and so every other thread's kernel launches, while it
//! runs. This times one buffer's registration three ways, and what a registration does to
//! kernels running beside it:
//! - fresh: registered as allocated (the driver faults in every page itself);
//! - pool: `ScalarPool::take`, the product path (pages faulted in by the rayon threads first,
//!   transparent huge pages asked for, then registered);
//! - written: every page written by one thread first (a buffer synthesis already filled);
//! - beside kernels: a 2^24 NTT loop on its own stream, its slowest iteration while the main
//!   thread registers a buffer each way, against its median alone;
//! - h2d of the buffer, pinned against pageable.
//!
//! Usage: pin_bench [GIB (default 4)] [OUT_FILE]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use blstrs::Scalar;
use ff::Field;
use zkforge_cuda::{CudaBackend, CudaDevice, NttDirection};
use zkforge_groth16::{ProverBackend, ScalarPool};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Registration of a buffer `how`, returning the buffer (held, so that the pool makes the next
/// one fresh) and the milliseconds it took.
fn register(pool: &ScalarPool, scalars: usize, how: &str) -> (Vec<Scalar>, f64) {
    let t = Instant::now();
    let v = match how {
        "pool" => {
            pool.expect(scalars);
            pool.take()
        }
        "fresh" | "written" => {
            let mut v: Vec<Scalar> = Vec::with_capacity(scalars);
            if how == "written" {
                v.resize(scalars, Scalar::ZERO);
                v.clear();
            }
            let t = Instant::now();
            // `give` pins a buffer it has not seen; `take` hands the same one back.
            pool.give(v);
            let took = ms(t);
            let v = pool.take();
            assert!(pool.is_pinned(&v), "{how}: registered");
            return (v, took);
        }
        _ => unreachable!(),
    };
    assert!(
        pool.is_pinned(&v) && v.capacity() >= scalars,
        "{how}: registered"
    );
    (v, ms(t))
}

/// Slowest and median iteration (device events) of an NTT loop on `dev` while `during` runs
/// on this thread.
fn beside_kernels(dev: &CudaDevice, during: impl FnOnce()) -> (f32, f32) {
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let dev = dev.fork().expect("a second stream");
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut data = dev
                .upload_scalars(&vec![Scalar::ONE; 1 << 24])
                .expect("upload");
            let mut times = Vec::new();
            while !stop.load(Ordering::SeqCst) || times.len() < 20 {
                let (r, t) = dev
                    .timed(|d| d.ntt_resident(&mut data, NttDirection::Forward, false))
                    .expect("events");
                r.expect("ntt");
                times.push(t);
            }
            times
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(500));
    during();
    std::thread::sleep(std::time::Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let mut times = worker.join().expect("ntt loop");
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (times[times.len() - 1], times[times.len() / 2])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let gib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(4);
    let scalars = (gib << 30) / std::mem::size_of::<Scalar>();
    let backend = CudaBackend::open(0).expect("a GPU");
    let pool = backend.scalar_pool().expect("the CUDA backend pools");
    let dev = backend.device();
    let mut rows = vec![format!(
        "| {gib} GiB buffer on {} | ms |\n|---|---|",
        dev.name()
    )];
    let mut held = Vec::new();
    for how in ["fresh", "pool", "written"] {
        let (v, took) = register(&pool, scalars, how);
        rows.push(format!("| register: {how} | {took:.1} |"));
        held.push(v);
    }
    for how in ["fresh", "pool"] {
        let mut took = 0.0;
        let (worst, median) = beside_kernels(dev, || {
            let (v, t) = register(&pool, scalars, how);
            took = t;
            held.push(v);
        });
        rows.push(format!(
            "| NTT 2^24 beside a {how} registration ({took:.1} ms): slowest / median | {worst:.1} / {median:.1} |"
        ));
    }
    let mut pinned = held.pop().expect("a pinned buffer");
    pinned.resize(scalars, Scalar::ONE);
    let pageable = vec![Scalar::ONE; scalars];
    for (name, v) in [("pinned", &pinned), ("pageable", &pageable)] {
        let mut times: Vec<f32> = (0..4)
            .map(|_| {
                dev.timed(|d| d.upload_scalars(v).expect("h2d"))
                    .expect("events")
                    .1
            })
            .collect();
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        rows.push(format!("| h2d {name}, median of 4 | {:.1} |", times[2]));
    }
    let table = rows.join("\n");
    println!("{table}");
    if let Some(out) = args.get(2) {
        std::fs::write(out, table + "\n").expect("writing the table");
    }
}
