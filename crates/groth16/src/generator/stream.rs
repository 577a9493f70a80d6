//! Random keys written as they are made: the `.params` layout streamed query by query, so a
//! 47 GB key never sits in memory whole.

use std::io::Write;
use std::path::Path;

use blstrs::{G1Affine, G2Affine};
use group::Curve;

use super::points::{FixedBaseBackend, PointSink};
use super::scalars::{h_and_lagrange, QueryScalars};
use super::{GenProgress, Setup};
use crate::poly::Domain;
use crate::r1cs::ConstraintMatrices;
use crate::srs::codec::Encoded;
use crate::{Error, Result, VerifyingKey};

/// Points in one query as the file's u32 length prefix, or an error naming the query.
fn length_prefix(name: &str, len: usize) -> Result<[u8; 4]> {
    u32::try_from(len)
        .map(u32::to_be_bytes)
        .map_err(|_| Error::Synthesis(format!("query {name} would hold {len} points, over 2^32")))
}

/// Writes random keys for the circuit `m` in the `.params` layout to `out` (named `origin` in
/// errors) and returns the verifying key. The setup fixes every byte: equal setups and
/// matrices give equal files whatever the backend.
pub fn write_params(
    m: &ConstraintMatrices,
    setup: &Setup,
    backend: &dyn FixedBaseBackend,
    out: &mut dyn Write,
    origin: &Path,
    progress: &dyn GenProgress,
) -> Result<VerifyingKey> {
    let domain = Domain::for_len(m.num_constraints())?;
    let t = std::time::Instant::now();
    let (h, lagrange) = h_and_lagrange(&domain, setup);
    let q = QueryScalars::new(m, &lagrange, setup);
    drop(lagrange);
    tracing::debug!(ms = t.elapsed().as_millis() as u64, "key scalars");

    let b = q.b.len() as u64;
    progress.start((h.len() + q.l.len() + q.a.len() + q.ic.len()) as u64 + 4 * b);
    let io = |e| Error::io(origin, e);
    let mut write = |bytes: &[u8]| out.write_all(bytes).map_err(io);

    let s = setup;
    let (g1, g2) = (s.g1, s.g2);
    let mut ic = Vec::new();
    backend.g1(g1, &q.ic, &mut |bytes| {
        ic.extend_from_slice(bytes);
        Ok(())
    })?;
    progress.advance(q.ic.len() as u64);
    let ic = crate::srs::codec::decode_all::<G1Affine>(&ic, false, true)
        .map_err(|bad| Error::Synthesis(format!("generated ic[{}]: {}", bad.index, bad.reason)))?;
    let vk = VerifyingKey {
        alpha_g1: (g1 * s.alpha).to_affine(),
        beta_g1: (g1 * s.beta).to_affine(),
        beta_g2: (g2 * s.beta).to_affine(),
        gamma_g2: (g2 * s.gamma).to_affine(),
        delta_g1: (g1 * s.delta).to_affine(),
        delta_g2: (g2 * s.delta).to_affine(),
        ic,
    };
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes).map_err(io)?;
    write(&vk_bytes)?;

    let query = |name: &str, scalars: &[_], g2_points: bool, write: &mut PointSink| {
        write(&length_prefix(name, scalars.len())?)?;
        let (size, weight) = if g2_points {
            (G2Affine::BYTES, 3)
        } else {
            (G1Affine::BYTES, 1)
        };
        let mut sink = |bytes: &[u8]| {
            write(bytes)?;
            progress.advance(weight * (bytes.len() / size) as u64);
            Ok(())
        };
        if g2_points {
            backend.g2(g2, scalars, &mut sink)
        } else {
            backend.g1(g1, scalars, &mut sink)
        }
    };
    query("h", &h, false, &mut write)?;
    drop(h);
    query("l", &q.l, false, &mut write)?;
    query("a", &q.a, false, &mut write)?;
    query("b_g1", &q.b, false, &mut write)?;
    query("b_g2", &q.b, true, &mut write)?;
    Ok(vk)
}

/// Writes `.params` and `.vk` files for `m` (see [`write_params`]); each appears under its
/// name only when complete.
pub fn write_params_files(
    m: &ConstraintMatrices,
    setup: &Setup,
    backend: &dyn FixedBaseBackend,
    params: &Path,
    vk_path: &Path,
    progress: &dyn GenProgress,
) -> Result<VerifyingKey> {
    let tmp = crate::exec::tmpfile::beside(params);
    let run = || -> Result<VerifyingKey> {
        let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 24, file);
        let vk = write_params(m, setup, backend, &mut w, params, progress)?;
        let file = w
            .into_inner()
            .map_err(|e| Error::io(params, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(params, e))?;
        vk.write_file(vk_path)?;
        std::fs::rename(&tmp, params).map_err(|e| Error::io(params, e))?;
        Ok(vk)
    };
    run().inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
