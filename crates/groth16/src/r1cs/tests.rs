use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_core::SeedableRng;
use zkforge_circuits::SyntheticCircuit;

use super::{ConstraintMatrices, MatrixRecorder};
use crate::synthesize;

/// Random linear combinations with arbitrary, repeated, cancelling and ±1 coefficients over
/// inputs and aux in all three matrices.
#[derive(Clone)]
struct MixedCoefficients(u64);

impl Circuit<Scalar> for MixedCoefficients {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(self.0);
        let mut vars = vec![CS::one()];
        for i in 0..5 {
            let x = Scalar::random(&mut rng);
            vars.push(cs.alloc_input(|| format!("in {i}"), || Ok(x))?);
        }
        let few = [
            Scalar::from(3u64),
            -Scalar::from(7u64),
            Scalar::ONE,
            -Scalar::ONE,
        ];
        for i in 0..300 {
            let x = Scalar::random(&mut rng);
            let v = cs.alloc(|| format!("aux {i}"), || Ok(x))?;
            let pick = |k: u64| vars[(k as usize * 7919 + i * 31) % vars.len()];
            let coeff = |k: usize| {
                if k.is_multiple_of(3) {
                    Scalar::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(k as u64))
                } else {
                    few[k % few.len()]
                }
            };
            let (p, q, r) = (pick(1), pick(2), pick(3));
            cs.enforce(
                || "mixed",
                |lc| lc + (coeff(i), p) + (coeff(i + 1), v) + (coeff(i + 2), q),
                // A term that cancels leaves a zero coefficient the recorder must drop.
                |lc| lc + (coeff(i + 3), r) + (Scalar::from(2u64), v) - (Scalar::from(2u64), v),
                |lc| lc + v + (coeff(i + 4), p),
            );
            vars.push(v);
        }
        Ok(())
    }
}

fn evaluated(m: &ConstraintMatrices, inputs: &[Scalar], aux: &[Scalar]) -> [Vec<Scalar>; 3] {
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    m.evaluate(inputs, aux, [&mut a, &mut b, &mut c], None)
        .unwrap();
    [a, b, c]
}

/// The products of the recorded matrices equal the evaluations the reference constraint
/// system makes at every `enforce`, row for row, and the densities match.
fn assert_matches_reference<C: Circuit<Scalar> + Clone>(circuit: C) -> ConstraintMatrices {
    let m = MatrixRecorder::record(circuit.clone()).unwrap();
    let w = synthesize(circuit).unwrap();
    let [a, b, c] = evaluated(&m, &w.inputs, &w.aux);
    assert_eq!(m.num_constraints(), w.num_constraints());
    let [wa, wb, wc] = w.evaluated().unwrap();
    for (name, ours, theirs) in [("a", &a, wa), ("b", &b, wb), ("c", &c, wc)] {
        if let Some(row) = (0..ours.len()).find(|&r| ours[r] != theirs[r]) {
            panic!("{name} differs at row {row}");
        }
    }
    assert_eq!(m.a_aux_density, w.a_aux_density);
    assert_eq!(m.b_input_density, w.b_input_density);
    assert_eq!(m.b_aux_density, w.b_aux_density);
    m.validate().unwrap();
    m
}

#[test]
fn products_equal_the_reference_evaluations() {
    let m = assert_matches_reference(MixedCoefficients(1));
    assert!(
        m.coefficients.len() > 4,
        "arbitrary coefficients are interned"
    );
    // Inputs allocated between aux variables: columns are placed after the final input count.
    assert_matches_reference(SyntheticCircuit::new(3000, 7, 0.85, 5));
}

#[test]
fn files_round_trip_and_damage_is_named() {
    let m = MatrixRecorder::record(MixedCoefficients(2)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.r1cs");
    m.write_file(&path).unwrap();
    assert_eq!(ConstraintMatrices::read_file(&path).unwrap(), m);
    // The header and the B-input density alone give the shape a placement plans with.
    let shape = ConstraintMatrices::read_shape(&path).unwrap();
    assert_eq!(shape, m.shape());
    assert!(
        shape.b_dense_inputs > 0,
        "{shape:?}: the density's offset is exercised"
    );
    assert_eq!(shape.host_bytes(), m.heap_bytes() as u64);

    let bytes = std::fs::read(&path).unwrap();
    let damaged = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        edit(&mut b);
        std::fs::write(&path, &b).unwrap();
        ConstraintMatrices::read_file(&path)
            .unwrap_err()
            .to_string()
    };
    assert!(damaged(&|b| b.truncate(b.len() - 1)).contains("implies"));
    assert!(damaged(&|b| b[0] = b'X').contains("magic"));
    let bad_shape = ConstraintMatrices::read_shape(&path)
        .unwrap_err()
        .to_string();
    assert!(bad_shape.contains("magic"), "{bad_shape}");
    // A huge count in the header is refused before anything is allocated.
    assert!(damaged(&|b| b[16..24].copy_from_slice(&u64::MAX.to_le_bytes())).contains("implies"));
    // The last entry's column pointing past the variables.
    let err = damaged(&|b| {
        let at = b.len() - 8;
        b[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    assert!(err.contains("names column"), "{err}");
}

#[test]
fn a_wrong_assignment_is_refused() {
    let m = MatrixRecorder::record(MixedCoefficients(3)).unwrap();
    let w = synthesize(MixedCoefficients(3)).unwrap();
    let mut a = Vec::new();
    let err = m
        .evaluate(
            &w.inputs,
            &w.aux[1..],
            [&mut a, &mut Vec::new(), &mut Vec::new()],
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("aux variables"), "{err}");
}

/// A prefix (inputs and aux) then `parts` parts that each allocate inputs and aux, use the
/// prefix's variables (marking their densities) and a coefficient of their own; `varying`
/// makes part `k`'s coefficient depend on `k`, so the parts are not identical.
struct PrefixAndParts {
    parts: usize,
    varying: bool,
}

impl Circuit<Scalar> for PrefixAndParts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let p_in = cs.alloc_input(|| "p in", || Ok(Scalar::from(3u64)))?;
        let p_aux = cs.alloc(|| "p aux", || Ok(Scalar::from(5u64)))?;
        cs.enforce(|| "p", |lc| lc + p_in, |lc| lc + CS::one(), |lc| lc + p_aux);
        for k in 0..self.parts {
            let x = cs.alloc(|| "x", || Ok(Scalar::from(2u64)))?;
            let input = cs.alloc_input(|| "part in", || Ok(Scalar::from(4u64)))?;
            let y = cs.alloc(|| "y", || Ok(Scalar::from(8u64)))?;
            let own = Scalar::from(if self.varying { 1000 + k as u64 } else { 77 });
            cs.enforce(
                || "xy",
                |lc| lc + x + (own, p_aux),
                |lc| lc + p_in,
                |lc| lc + y,
            );
            cs.enforce(
                || "in",
                |lc| lc + input,
                |lc| lc + (own, x) - y,
                |lc| lc + p_aux,
            );
        }
        Ok(())
    }
}

#[test]
fn a_circuit_of_identical_parts_is_recorded_from_one_part() {
    for parts in [0, 1, 2, 3, 5, 17] {
        let whole = MatrixRecorder::record(PrefixAndParts {
            parts,
            varying: false,
        })
        .unwrap();
        let repeated = super::record_repeated(
            |k| PrefixAndParts {
                parts: k,
                varying: false,
            },
            parts,
        )
        .unwrap();
        assert_eq!(repeated, whole, "{parts} parts");
    }
    // Parts that differ are noticed (the 2-part check) and recorded whole: still equal.
    let varying = |k| PrefixAndParts {
        parts: k,
        varying: true,
    };
    assert_eq!(
        super::record_repeated(varying, 9).unwrap(),
        MatrixRecorder::record(varying(9)).unwrap()
    );
}

#[test]
fn a_circuit_recorded_in_slices_equals_its_whole_recording() {
    let whole = MatrixRecorder::record(MixedCoefficients(11)).unwrap();
    // Blocks of 16 rows: 19 blocks over 1, 2, 3 and 7 slices; 64 slices leave some empty.
    for slices in [1, 2, 3, 7, 64] {
        let sliced = super::record_sliced_in_blocks(|| MixedCoefficients(11), slices, 16);
        assert_eq!(sliced.unwrap(), whole, "{slices} slices");
    }
    // The public entry point (blocks of 4096 rows: one slice records everything here).
    assert_eq!(
        super::record_sliced(|| MixedCoefficients(11), 4).unwrap(),
        whole
    );
}

#[test]
fn a_fault_in_any_slice_fails_the_sliced_recording() {
    struct UsesMissingAux;
    impl Circuit<Scalar> for UsesMissingAux {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let v = cs.alloc(|| "v", || Ok(Scalar::ONE))?;
            for _ in 0..40 {
                cs.enforce(|| "ok", |lc| lc + v, |lc| lc + v, |lc| lc + v);
            }
            // Row 40, in the third block of 16: aux 1 was never allocated.
            let missing = bellpepper_core::Variable::new_unchecked(bellpepper_core::Index::Aux(1));
            cs.enforce(|| "bad", |lc| lc + missing, |lc| lc, |lc| lc);
            Ok(())
        }
    }
    let err = super::record_sliced_in_blocks(|| UsesMissingAux, 2, 16)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("constraint 40") && err.contains("aux 1"),
        "{err}"
    );
}
