//! Where a partition's proof randomness (r, s) comes from.

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;
use zkforge_groth16::ProofRandomness;

/// How the r and s of a job's partitions are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Randomness {
    /// From the prover thread's generator, seeded by the operating system: what every client
    /// request gets (a proof's zero knowledge rests on r and s being secret and fresh).
    #[default]
    Entropy,
    /// Partition k's r and s are the k-th pair drawn, r then s, from ChaCha20 seeded with
    /// this: reproducible proofs, for tests and benchmarks that compare bytes with a
    /// reference prover drawing the same way, whatever order the partitions are proved in.
    Seeded(u64),
}

impl Randomness {
    /// Partition `k`'s r and s; `rng` is the prover thread's generator.
    pub(crate) fn for_partition(self, k: usize, rng: &mut ChaCha20Rng) -> ProofRandomness {
        match self {
            Randomness::Entropy => ProofRandomness::random(rng),
            Randomness::Seeded(seed) => {
                let mut seeded = ChaCha20Rng::seed_from_u64(seed);
                let mut pair = ProofRandomness::random(&mut seeded);
                for _ in 0..k {
                    pair = ProofRandomness::random(&mut seeded);
                }
                pair
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_job_draws_its_partitions_pairs_in_order_from_the_seed() {
        let mut thread = ChaCha20Rng::seed_from_u64(99);
        let mut reference = ChaCha20Rng::seed_from_u64(7);
        // As a prover drawing r, then s, partition after partition from one generator.
        let expected: Vec<_> = (0..4)
            .map(|_| ProofRandomness::random(&mut reference))
            .collect();
        // Asked in any order, each partition gets its own pair.
        for k in [2, 0, 3, 1] {
            assert_eq!(
                Randomness::Seeded(7).for_partition(k, &mut thread),
                expected[k]
            );
        }
        // From entropy, two draws differ.
        let a = Randomness::Entropy.for_partition(0, &mut thread);
        let b = Randomness::Entropy.for_partition(0, &mut thread);
        assert_ne!(a, b);
    }
}
