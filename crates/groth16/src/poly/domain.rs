//! The multiplicative subgroup of size 2^k that Groth16 evaluates its polynomials on.

use blstrs::Scalar;
use ff::{Field, PrimeField};

use crate::{Error, Result};

/// A radix-2 evaluation domain: size `n = 2^log_n` and its primitive root of unity, chosen as
/// bellperson chooses them (`ROOT_OF_UNITY` squared down to order n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    pub log_n: u32,
    pub n: usize,
    pub omega: Scalar,
    pub omega_inv: Scalar,
    pub n_inv: Scalar,
}

impl Domain {
    /// The smallest domain holding `len` evaluations.
    pub fn for_len(len: usize) -> Result<Self> {
        let log_n = len.max(1).next_power_of_two().trailing_zeros();
        Self::with_log(log_n)
    }

    pub fn with_log(log_n: u32) -> Result<Self> {
        if log_n >= Scalar::S {
            return Err(Error::DomainTooLarge { log2: log_n });
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_n..Scalar::S {
            omega = omega.square();
        }
        let n = 1usize << log_n;
        Ok(Self {
            log_n,
            n,
            omega,
            omega_inv: omega.invert().unwrap(),
            n_inv: Scalar::from(n as u64).invert().unwrap(),
        })
    }

    /// The coset shift g (the field's multiplicative generator, 7).
    pub fn coset_shift() -> Scalar {
        Scalar::MULTIPLICATIVE_GENERATOR
    }

    /// Z(g)^-1 where Z(x) = x^n - 1 vanishes on the domain: the division by Z on the coset.
    pub fn vanishing_inverse_on_coset(&self) -> Scalar {
        let z = Self::coset_shift().pow_vartime([self.n as u64]) - Scalar::ONE;
        z.invert().unwrap()
    }
}
