//! Benchmark partitions shaped like a 32 GiB PoRep partition, replaying one prepared witness:
//! "synthesis" is a parallel copy into the engine's (pinned) buffers, so a run measures the
//! proving pipeline rather than circuit code.

use std::sync::Arc;

use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use rayon::prelude::*;
use zkforge_groth16::{Density, Evaluations, Witness};

/// The witness shape of a real PoRep partition (cuzk's measurement of 32 GiB: 130,278,869
/// constraints, 328 inputs, 130,169,893 aux; A-aux density 99.7%, B-aux 25.4%, B-input 1/328;
/// about 90% of the aux values are 0 or 1), scaled to a domain of 2^log_size.
pub fn porep_shaped_witness(log_size: u32, seed: u64) -> Witness {
    const INPUTS: usize = 328;
    let n = 1usize << log_size;
    let constraints = (n as f64 * (130_278_869.0 / (1u64 << 27) as f64)) as usize;
    let aux = constraints - constraints / 1000;
    let random_vec = |len: usize, salt: u64, ones_zeros: f64| -> Vec<Scalar> {
        (0..len)
            .into_par_iter()
            .chunks(1 << 14)
            .flat_map_iter(|chunk| {
                let mut rng = ChaCha8Rng::seed_from_u64(seed ^ salt ^ chunk[0] as u64);
                let out: Vec<Scalar> = chunk
                    .iter()
                    .map(|_| {
                        let u = rng.next_u64() as f64 / u64::MAX as f64;
                        if u < ones_zeros / 2.0 {
                            Scalar::ZERO
                        } else if u < ones_zeros {
                            Scalar::ONE
                        } else {
                            Scalar::random(&mut rng)
                        }
                    })
                    .collect();
                out
            })
            .collect()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut density = |len: usize, fraction: f64| {
        let mut d = Density::with_capacity(len);
        for _ in 0..len {
            d.push((rng.next_u64() as f64 / u64::MAX as f64) < fraction);
        }
        d
    };
    let a_aux_density = density(aux, 0.997);
    let b_aux_density = density(aux, 0.254);
    let mut b_input_density = Density::with_capacity(INPUTS);
    for i in 0..INPUTS {
        b_input_density.push(i == 0);
    }
    let mut w = Witness::default();
    w.evaluations = Evaluations::Evaluated {
        a: random_vec(constraints + INPUTS, 1, 0.5),
        b: random_vec(constraints + INPUTS, 2, 0.5),
        c: random_vec(constraints + INPUTS, 3, 0.5),
    };
    w.aux = random_vec(aux, 4, 0.9);
    w.inputs = random_vec(INPUTS, 5, 0.0);
    w.inputs[0] = Scalar::ONE;
    w.a_aux_density = a_aux_density;
    w.b_input_density = b_input_density;
    w.b_aux_density = b_aux_density;
    w
}

/// A job of `partitions` copies of one prepared witness.
#[derive(Clone)]
pub struct ReplayJob {
    template: Arc<Witness>,
    partitions: usize,
    params_id: crate::ParamsId,
}

impl ReplayJob {
    pub fn new(template: Arc<Witness>, partitions: usize, stem: &str) -> Self {
        Self {
            template,
            partitions,
            params_id: crate::ParamsId {
                kind: crate::ProofKind::PoRep,
                sector_size: 0,
                stem: stem.into(),
            },
        }
    }
}

impl crate::PartitionedCircuit for ReplayJob {
    fn params_id(&self) -> &crate::ParamsId {
        &self.params_id
    }

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn synthesize(&self, _k: usize) -> anyhow::Result<Witness> {
        Ok(self.template.copy_pooled())
    }

    fn public_inputs(&self, _k: usize) -> anyhow::Result<Vec<Scalar>> {
        Ok(self.template.inputs[1..].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PartitionedCircuit;
    use rand_chacha::ChaCha20Rng;
    use zkforge_groth16::exec::pool::with_pool;
    use zkforge_groth16::generator::tiled_key_for;
    use zkforge_groth16::{prover, verify::verify, CpuBackend, ProofRandomness, ScalarPool};

    #[test]
    fn porep_shape_matches_the_measured_densities() {
        let w = porep_shaped_witness(16, 1);
        let aux = w.aux.len() as f64;
        let frac = |n: usize| n as f64 / aux;
        assert!((frac(w.a_aux_density.count()) - 0.997).abs() < 0.01);
        assert!((frac(w.b_aux_density.count()) - 0.254).abs() < 0.01);
        assert_eq!((w.inputs.len(), w.b_input_density.count()), (328, 1));
        let bits = w
            .aux
            .iter()
            .filter(|x| **x == Scalar::ZERO || **x == Scalar::ONE);
        assert!((frac(bits.count()) - 0.9).abs() < 0.01);
        let rows = w.num_constraints();
        assert!(rows <= 1 << 16 && rows > (1 << 16) * 9 / 10);
    }

    #[test]
    fn replayed_partitions_equal_the_template_and_prove_with_a_tiled_key() {
        let w = Arc::new(porep_shaped_witness(16, 2));
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let pk = tiled_key_for(&w, &mut rng).unwrap();
        pk.check_fits(&w).unwrap();
        let job = ReplayJob::new(w.clone(), 2, "t");
        let pool = ScalarPool::new(None, usize::MAX);
        let copy = with_pool(Some(pool.clone()), || job.synthesize(1)).unwrap();
        assert_eq!(copy, *w);
        assert!(copy.recycle.0.is_some(), "drawn from the installed pool");
        let proof = prover::prove(
            &CpuBackend::new(),
            &pk,
            copy,
            ProofRandomness::random(&mut rng),
        )
        .unwrap();
        // A tiled key has no trapdoor behind it: its proofs must never verify.
        assert!(!verify(&pk.vk, &proof, &job.public_inputs(0).unwrap()).unwrap());
        assert!(
            pool.idle_bytes() > 0,
            "the copy's buffers went back to the pool"
        );
    }
}
