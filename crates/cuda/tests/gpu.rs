//! GPU correctness at small sizes; skips (and says why) when there is no GPU or driver.

#[path = "../examples/common/mod.rs"]
mod common;

use common::*;
use zkforge_cuda::{CudaDevice, CudaError, NttDirection};

fn device() -> Option<CudaDevice> {
    if !CudaDevice::available() {
        eprintln!(
            "skipping GPU test: no CUDA device or driver (built with cuda: {})",
            zkforge_cuda::built_with_cuda()
        );
        return None;
    }
    Some(CudaDevice::open(0).expect("a GPU is reported but cannot be opened"))
}

#[test]
fn unavailable_is_an_error_not_a_panic() {
    if CudaDevice::available() {
        return;
    }
    match CudaDevice::open(0) {
        Err(CudaError::NotBuilt) | Err(CudaError::NoDriver) | Err(CudaError::Driver(_)) => {}
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("opened a device that is not available"),
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
fn gpu_matches_cpu() {
    let Some(dev) = device() else { return };
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
