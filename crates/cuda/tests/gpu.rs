//! GPU correctness at small sizes. The GPU test is `#[ignore]`d, so a machine without a GPU
//! reports it as ignored, never as a pass that checked nothing; scripts/gpu-check.sh runs it
//! with `--include-ignored` on the device, where it must find the GPU.

#[path = "../examples/common/mod.rs"]
mod common;

use common::*;
use zkforge_cuda::{CudaDevice, CudaError, NttDirection};

#[test]
fn a_device_opens_or_is_a_named_error() {
    match (CudaDevice::available(), CudaDevice::open(0)) {
        (true, Ok(_)) => {}
        (false, Err(CudaError::NotBuilt | CudaError::NoDriver | CudaError::Driver(_))) => {}
        (available, Err(e)) => panic!("available: {available}, open failed: {e}"),
        (false, Ok(_)) => panic!("opened a device that is not available"),
    }
}

#[test]
fn cpu_reference_ntt_round_trips() {
    let x = random_scalars(1 << 8, 1);
    for coset in [false, true] {
        let mut y = x.clone();
        zkforge_cuda::host::cpu_ntt(&mut y, NttDirection::Forward, coset);
        zkforge_cuda::host::cpu_ntt(&mut y, NttDirection::Inverse, coset);
        assert_eq!(x, y);
    }
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu-check.sh runs it with --include-ignored"]
fn gpu_matches_cpu() {
    let dev = CudaDevice::open(0).unwrap_or_else(|e| {
        panic!(
            "no GPU to check (built with cuda: {}): {e}",
            zkforge_cuda::built_with_cuda()
        )
    });
    let (_, seed) = fresh_rng();
    eprintln!("seed {seed}");
    let mut res = Vec::new();
    check_ntt(&dev, 10, seed, &mut res);
    check_ntt(&dev, 16, seed, &mut res);
    check_h(&dev, 10, seed, &mut res);
    for n in [1usize, 2, 3, 1000] {
        check_msm_g1(&dev, n, &["random", "edge", "bits", "same"], seed, &mut res);
        check_msm_g2(&dev, n, &["random", "edge"], seed, &mut res);
    }
    check_msm_prefix(&dev, seed, &mut res);
    let bad: Vec<_> = res
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.name.clone())
        .collect();
    assert!(bad.is_empty(), "failed: {bad:?}");
}

#[test]
fn cpu_reference_matches_definitions() {
    use blstrs::Scalar;
    use ff::{Field, PrimeField};
    let log_n = 6;
    let n = 1usize << log_n;
    let x = random_scalars(n, 2);
    let w = zkforge_cuda::host::omega(log_n);
    assert_eq!(w.pow_vartime([n as u64]), Scalar::ONE);
    assert_ne!(w.pow_vartime([(n / 2) as u64]), Scalar::ONE);
    for coset in [false, true] {
        let mut y = x.clone();
        zkforge_cuda::host::cpu_ntt(&mut y, NttDirection::Forward, coset);
        let g = if coset {
            Scalar::MULTIPLICATIVE_GENERATOR
        } else {
            Scalar::ONE
        };
        for i in [0, 1, 5, n - 1] {
            assert_eq!(y[i], eval_poly(&x, g * w.pow_vartime([i as u64])));
        }
    }
    // h·Z = A·B − C as polynomials, checked at a random point.
    // Only a satisfied system (a·b = c on the domain) makes A·B − C divisible by Z.
    let (a, b) = (random_scalars(n, 3), random_scalars(n, 4));
    let c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
    let h = cpu_h(&a, &b, &c);
    let interp = |v: &[Scalar]| {
        let mut p = v.to_vec();
        zkforge_cuda::host::cpu_ntt(&mut p, NttDirection::Inverse, false);
        p
    };
    let z = Scalar::from(123456789u64);
    let (pa, pb, pc) = (interp(&a), interp(&b), interp(&c));
    let lhs = eval_poly(&h, z) * (z.pow_vartime([n as u64]) - Scalar::ONE);
    let rhs = eval_poly(&pa, z) * eval_poly(&pb, z) - eval_poly(&pc, z);
    assert_eq!(lhs, rhs);
}

#[test]
fn handles_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CudaDevice>();
    send_sync::<zkforge_cuda::DeviceBasesG1>();
    send_sync::<zkforge_cuda::DeviceBasesG2>();
    send_sync::<zkforge_cuda::DeviceScalars>();
}
