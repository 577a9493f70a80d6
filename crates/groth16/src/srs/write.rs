//! Writing keys in the layout bellperson reads.

use std::io::{BufWriter, Write};
use std::path::Path;

use super::codec::{encode_all, Encoded};
use super::{ProvingKey, VerifyingKey};
use crate::{Error, Result};

fn vector<P: Encoded, W: Write>(w: &mut W, points: &[P]) -> std::io::Result<()> {
    let len = u32::try_from(points.len())
        .map_err(|_| std::io::Error::other("a query holds more than 2^32 points"))?;
    w.write_all(&len.to_be_bytes())?;
    w.write_all(&encode_all(points))
}

impl VerifyingKey {
    pub fn write<W: Write>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(self.alpha_g1.to_uncompressed().as_ref())?;
        w.write_all(self.beta_g1.to_uncompressed().as_ref())?;
        w.write_all(self.beta_g2.to_uncompressed().as_ref())?;
        w.write_all(self.gamma_g2.to_uncompressed().as_ref())?;
        w.write_all(self.delta_g1.to_uncompressed().as_ref())?;
        w.write_all(self.delta_g2.to_uncompressed().as_ref())?;
        vector(w, &self.ic)
    }

    pub fn write_file(&self, path: &Path) -> Result<()> {
        write_file(path, |w| self.write(w))
    }
}

impl ProvingKey {
    pub fn write<W: Write>(&self, w: &mut W) -> std::io::Result<()> {
        self.vk.write(w)?;
        vector(w, &self.h)?;
        vector(w, &self.l)?;
        vector(w, &self.a)?;
        vector(w, &self.b_g1)?;
        vector(w, &self.b_g2)
    }

    pub fn write_file(&self, path: &Path) -> Result<()> {
        write_file(path, |w| self.write(w))
    }
}

/// Writes through a temporary name and renames, so a crash never leaves a half-written key
/// under the real name.
fn write_file(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = path.with_extension(format!(
        "{}.partial",
        path.extension().and_then(|e| e.to_str()).unwrap_or("tmp")
    ));
    let run = || -> std::io::Result<()> {
        let mut w = BufWriter::with_capacity(1 << 22, std::fs::File::create(&tmp)?);
        body(&mut w)?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    run().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}
