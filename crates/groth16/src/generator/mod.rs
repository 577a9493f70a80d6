//! Random (test-only) Groth16 keys for a circuit, in bellperson's construction: a trusted
//! setup with known toxic waste, so never for production proofs.
//!
//! Fast where bellperson is slow: the R1CS is recorded once, the QAP polynomials are evaluated
//! at τ through one inverse NTT, and every point comes from fixed-base window tables with
//! batch normalisation on all cores.

mod assembly;
mod fixed_base;
mod tiled;

pub use tiled::tiled_key_for;

use bellpepper_core::{Circuit, ConstraintSystem};
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

use self::assembly::{Entry, KeyAssembly};
use self::fixed_base::FixedBase;
use crate::poly::{inverse, Domain, Twiddles};
use crate::synthesis::Density;
use crate::{ProvingKey, Result, VerifyingKey};

/// Progress of a key generation, in points computed (a G2 point counts as 3).
pub trait GenProgress: Sync {
    fn start(&self, _total: u64) {}
    fn advance(&self, _done: u64) {}
}

impl GenProgress for () {}

/// The toxic waste of the setup.
struct Trapdoor {
    alpha: Scalar,
    beta: Scalar,
    gamma_inv: Scalar,
    delta_inv: Scalar,
    tau: Scalar,
}

/// Generates random keys for `circuit`, readable by bellperson and filecoin-proofs.
pub fn generate_random_keys<C: Circuit<Scalar>>(
    circuit: C,
    rng: &mut (impl RngCore + ?Sized),
    progress: &dyn GenProgress,
) -> Result<ProvingKey> {
    let mut asm = KeyAssembly::default();
    asm.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut asm)?;
    let asm = asm.finish();
    let domain = Domain::for_len(asm.num_constraints)?;

    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let (delta, gamma) = (nonzero(rng), nonzero(rng));
    let t = Trapdoor {
        alpha: nonzero(rng),
        beta: nonzero(rng),
        gamma_inv: gamma.invert().unwrap(),
        delta_inv: delta.invert().unwrap(),
        tau: nonzero(rng),
    };

    let (h, lagrange) = h_and_lagrange(&domain, &t);
    let q = QueryScalars::new(&asm, &lagrange, &t);

    let b_count = q.b.len() as u64;
    let g1_count = (h.len() + q.l.len() + q.a.len() + q.ic.len()) as u64 + b_count;
    progress.start(g1_count + 3 * b_count);
    let tick = |n: u64| progress.advance(n);
    let tick3 = |n: u64| progress.advance(3 * n);

    let t0 = std::time::Instant::now();
    let (t1, t2) = rayon::join(|| FixedBase::new(g1), || FixedBase::new(g2));
    tracing::debug!(ms = t0.elapsed().as_millis() as u64, "fixed-base tables");
    let vk = VerifyingKey {
        alpha_g1: (g1 * t.alpha).to_affine(),
        beta_g1: (g1 * t.beta).to_affine(),
        beta_g2: (g2 * t.beta).to_affine(),
        gamma_g2: (g2 * gamma).to_affine(),
        delta_g1: (g1 * delta).to_affine(),
        delta_g2: (g2 * delta).to_affine(),
        ic: t1.mul_all(&q.ic, &tick),
    };
    Ok(ProvingKey {
        vk,
        h: t1.mul_all(&h, &tick),
        l: t1.mul_all(&q.l, &tick),
        a: t1.mul_all(&q.a, &tick),
        b_g1: t1.mul_all(&q.b, &tick),
        b_g2: t2.mul_all(&q.b, &tick3),
    })
}

fn nonzero(rng: &mut (impl RngCore + ?Sized)) -> Scalar {
    loop {
        let s = Scalar::random(&mut *rng);
        if !s.is_zero_vartime() {
            return s;
        }
    }
}

/// The h query scalars τ^i·Z(τ)/δ (i < n − 1) and the Lagrange basis evaluated at τ.
fn h_and_lagrange(domain: &Domain, t: &Trapdoor) -> (Vec<Scalar>, Vec<Scalar>) {
    const CHUNK: usize = 1 << 14;
    let mut powers = vec![Scalar::ZERO; domain.n];
    powers
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(k, chunk)| {
            let mut p = t.tau.pow_vartime([(k * CHUNK) as u64]);
            for v in chunk {
                *v = p;
                p *= t.tau;
            }
        });
    let z_tau = t.tau.pow_vartime([domain.n as u64]) - Scalar::ONE;
    let h_coeff = z_tau * t.delta_inv;
    let h = powers[..domain.n - 1]
        .par_iter()
        .map(|p| *p * h_coeff)
        .collect();
    // L_j(τ) = (1/n) Σ_i τ^i ω^{-ij}: an inverse NTT of the powers of τ.
    inverse(&mut powers, &Twiddles::inverse(domain), domain);
    (h, powers)
}

/// The scalars each query's points are made from.
struct QueryScalars {
    ic: Vec<Scalar>,
    l: Vec<Scalar>,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
}

impl QueryScalars {
    fn new(asm: &KeyAssembly, lagrange: &[Scalar], t: &Trapdoor) -> Self {
        let eval = |m: &[Vec<Entry>; 2], kind: usize, len: usize| {
            let mut out = vec![Scalar::ZERO; len];
            for e in &m[kind] {
                out[e.var as usize] += e.coeff * lagrange[e.row as usize];
            }
            out
        };
        let (n_in, n_aux) = (asm.num_inputs, asm.num_aux);
        let (at_in, at_aux) = (eval(&asm.a, 0, n_in), eval(&asm.a, 1, n_aux));
        let (bt_in, bt_aux) = (eval(&asm.b, 0, n_in), eval(&asm.b, 1, n_aux));
        let (ct_in, ct_aux) = (eval(&asm.c, 0, n_in), eval(&asm.c, 1, n_aux));

        let combine = |at: &[Scalar], bt: &[Scalar], ct: &[Scalar], inv: Scalar| -> Vec<Scalar> {
            (0..at.len())
                .map(|i| (t.beta * at[i] + t.alpha * bt[i] + ct[i]) * inv)
                .collect()
        };
        let select = |v: &[Scalar], d: &Density| -> Vec<Scalar> {
            v.iter()
                .zip(d.iter())
                .filter(|(_, m)| *m)
                .map(|(s, _)| *s)
                .collect()
        };

        let mut a = at_in.clone();
        a.extend(select(&at_aux, &asm.a_aux_density));
        let mut b = select(&bt_in, &asm.b_input_density);
        b.extend(select(&bt_aux, &asm.b_aux_density));
        Self {
            ic: combine(&at_in, &bt_in, &ct_in, t.gamma_inv),
            l: combine(&at_aux, &bt_aux, &ct_aux, t.delta_inv),
            a,
            b,
        }
    }
}

#[cfg(test)]
mod tests;
