//! A synthetic circuit of chosen size and witness shape, for tests and benchmarks.
//!
//! Filecoin's PoRep witness is ~90% bits, A is nearly dense and B touches a quarter of the aux
//! variables. This family reproduces such shapes: each constraint defines one new aux variable:
//! a bit (`v·v = v`), a shifted copy of an earlier variable (`(x + c)·1 = v`, random-valued),
//! or a product with a random-valued variable (`x·y = v`). Each public input is copied into the
//! witness through one constraint, half of them through B.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticCircuit {
    /// Constraints defined by the circuit (the prover adds one per public input on top).
    pub constraints: usize,
    /// Public inputs besides the constant ONE.
    pub public_inputs: usize,
    /// Fraction of aux variables that are bits (0 or 1).
    pub bit_fraction: f64,
    /// Seed of every value and wiring choice: equal seeds give equal circuits and witnesses.
    pub seed: u64,
}

impl SyntheticCircuit {
    pub fn new(constraints: usize, public_inputs: usize, bit_fraction: f64, seed: u64) -> Self {
        Self {
            constraints,
            public_inputs,
            bit_fraction,
            seed,
        }
    }

    /// A file stem naming this circuit's keys: equal stems, equal circuits.
    pub fn stem(&self) -> String {
        let bits = (self.bit_fraction * 1000.0).round() as u64;
        format!(
            "synthetic-c{}-i{}-b{bits}-s{}",
            self.constraints, self.public_inputs, self.seed
        )
    }

    /// The public input values (without ONE), as a verifier needs them.
    pub fn public_values(&self) -> Vec<Scalar> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        (0..self.public_inputs)
            .map(|_| Scalar::random(&mut rng))
            .collect()
    }

    fn is_bit(&self, rng: &mut ChaCha8Rng) -> bool {
        (rng.next_u64() as f64 / u64::MAX as f64) < self.bit_fraction
    }
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let inputs = self.public_values();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x5eed_c1c0);
        let mut vars: Vec<(Variable, Scalar)> = Vec::with_capacity(self.constraints + 1);

        for (i, x) in inputs.iter().enumerate() {
            let input = cs.alloc_input(|| format!("input {i}"), || Ok(*x))?;
            let copy = cs.alloc(|| format!("copy {i}"), || Ok(*x))?;
            if i % 2 == 0 {
                cs.enforce(
                    || "copy",
                    |lc| lc + input,
                    |lc| lc + CS::one(),
                    |lc| lc + copy,
                );
            } else {
                cs.enforce(
                    || "copy",
                    |lc| lc + CS::one(),
                    |lc| lc + input,
                    |lc| lc + copy,
                );
            }
            vars.push((copy, *x));
        }

        // Wires of random value, to feed products that stay random.
        let mut dense: Vec<(Variable, Scalar)> = vars.clone();
        let remaining = self.constraints.saturating_sub(self.public_inputs);
        for k in 0..remaining {
            let pick = |rng: &mut ChaCha8Rng, from: &[(Variable, Scalar)]| {
                from[rng.next_u64() as usize % from.len()]
            };
            if vars.is_empty() || self.is_bit(&mut rng) {
                let bit = if rng.next_u32() & 1 == 1 {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                };
                let v = cs.alloc(|| format!("bit {k}"), || Ok(bit))?;
                cs.enforce(|| "boolean", |lc| lc + v, |lc| lc + v, |lc| lc + v);
                vars.push((v, bit));
            } else if !dense.is_empty() && rng.next_u32() % 4 == 0 {
                let (x, xv) = pick(&mut rng, &vars);
                let (y, yv) = pick(&mut rng, &dense);
                let value = xv * yv;
                let v = cs.alloc(|| format!("product {k}"), || Ok(value))?;
                cs.enforce(|| "product", |lc| lc + x, |lc| lc + y, |lc| lc + v);
                vars.push((v, value));
            } else {
                let (x, xv) = pick(&mut rng, &vars);
                let shift = Scalar::random(&mut rng);
                let value = xv + shift;
                let v = cs.alloc(|| format!("shift {k}"), || Ok(value))?;
                cs.enforce(
                    || "shift",
                    |lc| lc + x + (shift, CS::one()),
                    |lc| lc + CS::one(),
                    |lc| lc + v,
                );
                vars.push((v, value));
                dense.push((v, value));
            }
        }
        Ok(())
    }
}

/// A request of several identical synthetic partitions, for engine tests and benchmarks:
/// optionally slow to synthesize, optionally failing at one partition.
#[derive(Clone, Debug)]
pub struct SyntheticJob {
    pub circuit: SyntheticCircuit,
    pub partitions: usize,
    /// Extra time each synthesis takes, to model Filecoin's slow synthesis.
    pub synthesis_delay: std::time::Duration,
    /// Synthesis of this partition fails.
    pub fail_partition: Option<usize>,
    params_id: crate::ParamsId,
}

impl SyntheticJob {
    pub fn new(circuit: SyntheticCircuit, partitions: usize, kind: crate::ProofKind) -> Self {
        let stem = circuit.stem();
        let params_id = crate::ParamsId {
            kind,
            sector_size: 0,
            stem,
        };
        Self {
            circuit,
            partitions,
            synthesis_delay: Default::default(),
            fail_partition: None,
            params_id,
        }
    }
}

impl SyntheticJob {
    /// The configured slowness and failure of partition `k`'s synthesis.
    fn delay_or_fail(&self, k: usize) -> anyhow::Result<()> {
        std::thread::sleep(self.synthesis_delay);
        anyhow::ensure!(
            self.fail_partition != Some(k),
            "synthetic failure in partition {k}"
        );
        Ok(())
    }
}

impl crate::PartitionedCircuit for SyntheticJob {
    fn params_id(&self) -> &crate::ParamsId {
        &self.params_id
    }

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn synthesize(&self, k: usize) -> anyhow::Result<zkforge_groth16::Witness> {
        self.delay_or_fail(k)?;
        Ok(zkforge_groth16::synthesize(self.circuit.clone())?)
    }

    fn record_matrices(&self) -> anyhow::Result<Option<zkforge_groth16::ConstraintMatrices>> {
        Ok(Some(zkforge_groth16::MatrixRecorder::record(
            self.circuit.clone(),
        )?))
    }

    fn assign(
        &self,
        k: usize,
        matrices: std::sync::Arc<zkforge_groth16::ConstraintMatrices>,
    ) -> anyhow::Result<zkforge_groth16::Witness> {
        self.delay_or_fail(k)?;
        Ok(zkforge_groth16::assign(self.circuit.clone(), matrices)?)
    }

    fn public_inputs(&self, _k: usize) -> anyhow::Result<Vec<Scalar>> {
        Ok(self.circuit.public_values())
    }
}
