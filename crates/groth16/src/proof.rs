//! The Groth16 proof and its 192-byte encoding: A (G1) ‖ B (G2) ‖ C (G1), compressed.

use blstrs::{G1Affine, G2Affine};
use group::GroupEncoding;

use crate::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    pub a: G1Affine,
    pub b: G2Affine,
    pub c: G1Affine,
}

impl Proof {
    pub const BYTES: usize = 192;

    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut out = [0u8; Self::BYTES];
        out[..48].copy_from_slice(self.a.to_bytes().as_ref());
        out[48..144].copy_from_slice(self.b.to_bytes().as_ref());
        out[144..].copy_from_slice(self.c.to_bytes().as_ref());
        out
    }

    /// Decodes and subgroup-checks a proof; the identity is refused, as bellperson does.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != Self::BYTES {
            return Err(Error::MalformedProof(format!(
                "expected {} bytes, got {}",
                Self::BYTES,
                bytes.len()
            )));
        }
        let g1 = |b: &[u8], name: &str| -> Result<G1Affine> {
            let mut repr = <G1Affine as GroupEncoding>::Repr::default();
            repr.as_mut().copy_from_slice(b);
            let p: Option<G1Affine> = G1Affine::from_bytes(&repr).into();
            let p = p.ok_or_else(|| Error::MalformedProof(format!("{name} is not a G1 point")))?;
            if bool::from(group::prime::PrimeCurveAffine::is_identity(&p)) {
                return Err(Error::MalformedProof(format!(
                    "{name} is the point at infinity"
                )));
            }
            Ok(p)
        };
        let mut repr = <G2Affine as GroupEncoding>::Repr::default();
        repr.as_mut().copy_from_slice(&bytes[48..144]);
        let b: Option<G2Affine> = G2Affine::from_bytes(&repr).into();
        let b = b.ok_or_else(|| Error::MalformedProof("B is not a G2 point".into()))?;
        if bool::from(group::prime::PrimeCurveAffine::is_identity(&b)) {
            return Err(Error::MalformedProof("B is the point at infinity".into()));
        }
        Ok(Proof {
            a: g1(&bytes[..48], "A")?,
            b,
            c: g1(&bytes[144..], "C")?,
        })
    }
}
