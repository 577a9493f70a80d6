//! Fixed-base scalar multiplication with window tables: each product costs ⌈255/w⌉ mixed
//! additions instead of a full double-and-add.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::{prime::PrimeCurveAffine, Curve, Group};
use rayon::prelude::*;

const WINDOW: usize = 10;
const WINDOWS: usize = 255usize.div_ceil(WINDOW);

/// `table[w][k - 1] = k · 2^(w·WINDOW) · base` for k in 1..2^WINDOW, in affine form.
pub(super) struct FixedBase<C: TableCurve> {
    table: Vec<Vec<C::Affine>>,
}

/// The curve operations the table needs, for G1 and G2.
pub(super) trait TableCurve: Group<Scalar = Scalar> + Send + Sync + Copy {
    type Affine: Copy + Send + Sync;
    fn affine_identity() -> Self::Affine;
    fn add_affine(acc: &mut Self, p: &Self::Affine);
    fn normalize(proj: &[Self], out: &mut [Self::Affine]);
}

macro_rules! table_curve {
    ($proj:ty, $aff:ty) => {
        impl TableCurve for $proj {
            type Affine = $aff;
            fn affine_identity() -> $aff {
                <$aff as PrimeCurveAffine>::identity()
            }
            fn add_affine(acc: &mut Self, p: &$aff) {
                *acc += p;
            }
            fn normalize(proj: &[Self], out: &mut [$aff]) {
                <$proj as Curve>::batch_normalize(proj, out);
            }
        }
    };
}

table_curve!(G1Projective, G1Affine);
table_curve!(G2Projective, G2Affine);

impl<C: TableCurve> FixedBase<C> {
    pub fn new(base: C) -> Self {
        let table = (0..WINDOWS)
            .into_par_iter()
            .map(|w| {
                let mut unit = base;
                for _ in 0..w * WINDOW {
                    unit = unit.double();
                }
                let mut row = Vec::with_capacity((1 << WINDOW) - 1);
                let mut acc = unit;
                for _ in 1..1usize << WINDOW {
                    row.push(acc);
                    acc += unit;
                }
                let mut affine = vec![C::affine_identity(); row.len()];
                C::normalize(&row, &mut affine);
                affine
            })
            .collect();
        Self { table }
    }

    pub fn mul(&self, scalar: &Scalar) -> C {
        let bytes = scalar.to_bytes_le();
        let mut acc = C::identity();
        for (w, row) in self.table.iter().enumerate() {
            let digit = window(&bytes, w * WINDOW);
            if digit != 0 {
                C::add_affine(&mut acc, &row[digit - 1]);
            }
        }
        acc
    }

    /// `scalars[i] · base` for all i, in affine form.
    pub fn mul_all(&self, scalars: &[Scalar], progress: &(dyn Fn(u64) + Sync)) -> Vec<C::Affine> {
        const CHUNK: usize = 1 << 14;
        let mut out = vec![C::affine_identity(); scalars.len()];
        out.par_chunks_mut(CHUNK)
            .zip(scalars.par_chunks(CHUNK))
            .for_each(|(out, scalars)| {
                let proj: Vec<C> = scalars.iter().map(|s| self.mul(s)).collect();
                C::normalize(&proj, out);
                progress(scalars.len() as u64);
            });
        out
    }
}

/// The WINDOW-bit digit of a little-endian scalar starting at `bit`.
fn window(bytes: &[u8; 32], bit: usize) -> usize {
    let mut v = 0usize;
    for i in 0..WINDOW {
        let b = bit + i;
        if b < 256 {
            v |= ((bytes[b / 8] >> (b % 8)) as usize & 1) << i;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand_core::SeedableRng;

    #[test]
    fn table_products_equal_plain_multiplication() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let g1 = G1Projective::random(&mut rng);
        let g2 = G2Projective::random(&mut rng);
        let (t1, t2) = (FixedBase::new(g1), FixedBase::new(g2));
        let mut scalars: Vec<Scalar> = (0..50).map(|_| Scalar::random(&mut rng)).collect();
        scalars.extend([Scalar::ZERO, Scalar::ONE, -Scalar::ONE]);
        let a1 = t1.mul_all(&scalars, &|_| ());
        let a2 = t2.mul_all(&scalars, &|_| ());
        for (i, s) in scalars.iter().enumerate() {
            assert_eq!(a1[i], (g1 * s).to_affine());
            assert_eq!(a2[i], (g2 * s).to_affine());
        }
    }
}
