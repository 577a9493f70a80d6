//! One partition phase by phase, with the fewest vectors live at once: the order a card too
//! small for the key (or for the resident order's 30 GiB partition at 32 GiB) runs. What is
//! live, with D a domain vector, X the aux, X_A and X_B its compactions by density:
//!
//! | phase | live |
//! |---|---|
//! | products | X, inputs, a, b (and a block of the matrices when they stream) |
//! | h step | a, b, c = a∘b (X dropped: it crosses again later) — 3D, the peak |
//! | MSM H | h, and X uploading again beside it on a stream of its own |
//! | MSM L | X |
//! | compactions | X, X_A, X_B, then X dropped |
//! | MSMs A, B_G1, B_G2 | X_A, X_B, then X_B alone |
//!
//! Every MSM runs in chunks (chunks.rs), over resident bases in place or over bases streamed
//! from host memory, so its scratch is a chunk's; two chunk buffers stay beside the scalars
//! through the MSM phase. At 32 GiB the peak is the h step's 12 GiB against the resident
//! order's 29.94 GiB (docs/perf.md "Small cards").

use std::time::Instant;

use zkforge_groth16::{exec::reaper, Evaluations, QuerySums};
use zkforge_groth16::{KeyRef, ProveReport, Scalar, Witness};

use blstrs::G1Affine;
use zkforge_groth16::srs::Query;

use super::chunks::{with_chunked_msms, Bases, G1_LIMBS, G2_LIMBS};
use super::footprint::{self, block_bytes, MARGIN};
use super::items::{AuxQueries, DeviceMatricesOf, InputSums, OnDevice};
use super::timing::phase;
use crate::context::DeviceScalars;
use crate::host::{g1_affine_as_u64, g2_affine_as_u64};
use crate::{CudaDevice, CudaError};

/// The witness's scalars on the device before the kernel lock: the aux and inputs when the
/// device computes a, b, c; a, b, c themselves when synthesis did.
pub(crate) enum PhasedUpload {
    Assignment {
        aux: DeviceScalars,
        public: DeviceScalars,
    },
    Evaluations([DeviceScalars; 3]),
}

pub(crate) fn upload(
    d: &CudaDevice,
    w: &Witness,
    domain: usize,
) -> Result<PhasedUpload, CudaError> {
    Ok(match &w.evaluations {
        Evaluations::Evaluated { a, b, c } => PhasedUpload::Evaluations([
            d.upload_padded(a, domain)?,
            d.upload_padded(b, domain)?,
            d.upload_padded(c, domain)?,
        ]),
        Evaluations::Deferred(_) => PhasedUpload::Assignment {
            aux: d.upload_padded(&w.aux, w.aux.len())?,
            public: d.upload_padded(&w.inputs, w.inputs.len())?,
        },
    })
}

/// The partition's kernels in the phased order, under the kernel lock. `w` is the witness
/// whose `up` was uploaded: its aux crosses again during the MSM phase, and it goes back to
/// the pool once that copy is done.
#[allow(clippy::too_many_arguments)]
pub(crate) fn kernels(
    dev: &CudaDevice,
    key: KeyRef<'_>,
    item: &OnDevice,
    w: Witness,
    up: PhasedUpload,
    inputs: InputSums,
    domain: usize,
    t0: Instant,
    report: &mut ProveReport,
) -> Result<QuerySums, CudaError> {
    let [a, b, c] = match up {
        PhasedUpload::Evaluations(abc) => abc,
        PhasedUpload::Assignment { aux, public } => {
            let [a, b] = phase(dev, "spmv", t0, report, |d| {
                match (&item.matrices, &w.evaluations) {
                    (DeviceMatricesOf::Resident(m), _) => {
                        d.resident_products(m, &public, &aux, domain)
                    }
                    (DeviceMatricesOf::Streamed(s), Evaluations::Deferred(m)) => {
                        d.spmv.streamed_products(&d.core, m, s, &public, &aux, domain)
                    }
                    _ => Err(CudaError::Internal(
                        "deferred evaluations without their matrices on the device".into(),
                    )),
                }
            })?;
            // The aux makes room for c; it crosses again for the MSMs.
            drop((aux, public));
            let c = dev.hadamard(&a, &b)?;
            [a, b, c]
        }
    };
    let h = phase(dev, "ntt", t0, report, |d| d.h_from_device(a, b, c))?;
    let sums = phase(dev, "msm", t0, report, |d| msms(d, key, item, &w, h));
    // The buffers go back to the pool off this thread.
    reaper::drop_later(w);
    let sums = sums?;
    Ok(QuerySums {
        h: sums.h,
        l: sums.l,
        a: sums.a + inputs.a,
        b_g1: sums.b_g1 + inputs.b_g1,
        b_g2: sums.b_g2 + inputs.b_g2,
    })
}

/// The five MSMs in chunks, each over its resident bases or streamed from the key in host
/// memory, the aux uploaded again beside H's.
fn msms<'a>(
    d: &CudaDevice,
    key: KeyRef<'a>,
    item: &'a OnDevice,
    w: &Witness,
    h: DeviceScalars,
) -> Result<QuerySums, CudaError> {
    let host = match key {
        KeyRef::Memory(pk) => Some(AuxQueries::of(
            pk,
            item.inputs.a.len(),
            item.inputs.b_g1.len(),
        )),
        KeyRef::File(_) => None,
    };
    let q = &item.queries;
    let (n_in, b_in) = (item.inputs.a.len(), item.inputs.b_g1.len());
    // A query the plan does not keep resident streams from host memory, or from the key's
    // file when the key stayed there (its decoded form did not fit host memory).
    let streamed = |query: Query, first: usize, host: Option<&'a [u64]>| match (host, key) {
        (Some(words), _) => Bases::Host(words),
        (None, KeyRef::File(file)) => Bases::File { file, query, first },
        (None, KeyRef::Memory(_)) => unreachable!("a decoded key's queries are in host memory"),
    };
    let g1 =
        |r: Option<&'a crate::DeviceBasesG1>, query, first, host: Option<&'a [G1Affine]>| match r {
            Some(r) => (Bases::Device(&r.buf), G1_LIMBS),
            None => (streamed(query, first, host.map(g1_affine_as_u64)), G1_LIMBS),
        };
    let bases = [
        g1(q.h.as_ref(), Query::H, 0, host.as_ref().map(|h| h.h)),
        g1(q.l.as_ref(), Query::L, 0, host.as_ref().map(|h| h.l)),
        g1(
            q.a_aux.as_ref(),
            Query::A,
            n_in,
            host.as_ref().map(|h| h.a_aux),
        ),
        g1(
            q.b_g1_aux.as_ref(),
            Query::BG1,
            b_in,
            host.as_ref().map(|h| h.b_g1_aux),
        ),
        (
            match &q.b_g2_aux {
                Some(r) => Bases::Device(&r.buf),
                None => streamed(
                    Query::BG2,
                    b_in,
                    host.as_ref().map(|h| g2_affine_as_u64(h.b_g2_aux)),
                ),
            },
            G2_LIMBS,
        ),
    ];
    let order: Vec<(&Bases, usize)> = bases.iter().map(|(b, l)| (b, *l)).collect();
    let chunk_bytes = d.msm.stream_chunk * G1_LIMBS * 8;
    // A resident query's MSM may take, for its scratch, whatever of the partition's
    // reservation the vectors live beside it leave (the h step's three vectors are the peak;
    // the MSMs' own phases are below it, H's by a chunk, L's and the others' by much more).
    let s = std::mem::size_of::<Scalar>() as u64;
    let reserved = footprint::phased(
        &key.lengths(),
        &d.msm.options,
        chunk_bytes as u64,
        block_bytes(chunk_bytes as u64),
    ) - MARGIN;
    // The aux crosses again on a stream of its own while H's MSM runs. Whatever happens
    // below, that copy ends before the witness it reads from can go back to the pool.
    let uploader = d.fork()?;
    let aux = uploader.upload_padded(&w.aux, w.aux.len());
    let sums = with_chunked_msms(d, &order, chunk_bytes, &item.file_staging, |chunks| {
        let buffers = chunks.buffer_bytes();
        let room = |live: &[usize]| {
            let live: u64 = live.iter().map(|&n| n as u64 * s).sum();
            reserved.saturating_sub(live + buffers)
        };
        let aux = aux?;
        let at = (0, room(&[h.len, aux.len]));
        let sum_h = chunks.msm_g1(d, at, &bases[0].0, &h)?;
        drop(h);
        let l = chunks.msm_g1(d, (1, room(&[aux.len])), &bases[1].0, &aux)?;
        let a_aux = d.gather_by_density(&aux, &w.a_aux_density)?;
        let b_aux = d.gather_by_density(&aux, &w.b_aux_density)?;
        drop(aux);
        let at = (2, room(&[a_aux.len, b_aux.len]));
        let a = chunks.msm_g1(d, at, &bases[2].0, &a_aux)?;
        drop(a_aux);
        let at = (3, room(&[b_aux.len]));
        Ok(QuerySums {
            h: sum_h,
            l,
            a,
            b_g1: chunks.msm_g1(d, at, &bases[3].0, &b_aux)?,
            b_g2: chunks.msm_g2(d, (4, at.1), &bases[4].0, &b_aux)?,
        })
    });
    uploader.synchronize()?;
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    use zkforge_groth16::{EvaluationSite, PartitionPlan};

    use crate::host::MsmOptions;
    use crate::msm as gpu_msm;
    use crate::placement::tests::porep_32g_lengths as porep_32g;

    #[test]
    fn resident_msms_take_the_room_below_the_peak_and_no_more() {
        use super::super::chunks::resident_chunk;
        let msm = MsmOptions::default();
        let chunk_bytes = (1u64 << 23) * 96;
        let reserved =
            footprint::phased(&porep_32g(), &msm, chunk_bytes, block_bytes(chunk_bytes)) - MARGIN;
        let plan = PartitionPlan::new(&porep_32g(), EvaluationSite::Device);
        let s = 32u64;
        let floor = 1usize << 23;
        for buffers in [0, 2 * chunk_bytes] {
            // H beside the aux, L, A beside B's compaction, then B's G1 and G2.
            let msms = [
                (plan.domain, plan.domain + plan.aux, G1_LIMBS),
                (plan.aux, plan.aux, G1_LIMBS),
                (plan.a_aux, plan.a_aux + plan.b_aux, G1_LIMBS),
                (plan.b_aux, plan.b_aux, G1_LIMBS),
                (plan.b_aux, plan.b_aux, G2_LIMBS),
            ];
            let mut chunks = Vec::new();
            for (n, live, limbs) in msms {
                let room = reserved - live as u64 * s - buffers;
                let points = resident_chunk(n, limbs, room, floor >> (limbs / G1_LIMBS - 1), &msm);
                let scratch = gpu_msm::scratch_bytes(points, 2 * limbs, &msm);
                assert!(scratch <= room || points == floor >> (limbs / G1_LIMBS - 1));
                assert!(live as u64 * s + buffers + scratch <= reserved + MARGIN);
                chunks.push(points);
            }
            println!("buffers {buffers}: chunks {chunks:?}");
            // Every MSM after H's has room for chunks larger than a streamed one.
            assert!(chunks[1..4].iter().all(|&p| p > floor), "{chunks:?}");
        }
    }
}
