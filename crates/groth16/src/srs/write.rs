//! Writing keys in the layout bellperson reads.

use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A temporary name next to `path` that no other writer uses: `<name>.<pid>-<n>.partial`.
/// Two writers of the same file (two threads, two processes sharing a parameter directory)
/// each write their own temporary file and rename it; a shared name would let one rename the
/// other's file away.
fn temporary_name(path: &Path) -> std::path::PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{n}.partial", std::process::id()));
    path.with_file_name(name)
}

/// Writes through a temporary name and renames, so a crash never leaves a half-written key
/// under the real name and a reader never sees one.
fn write_file(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = temporary_name(path);
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

#[cfg(test)]
mod tests {
    use super::temporary_name;
    use std::path::Path;

    #[test]
    fn temporary_names_are_unique_and_beside_the_file() {
        let p = Path::new("/params/v28-x.params");
        let (a, b) = (temporary_name(p), temporary_name(p));
        assert_ne!(a, b);
        assert_eq!(a.parent(), p.parent());
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("v28-x.params.") && name.ends_with(".partial"),
            "{name}"
        );
    }
}
