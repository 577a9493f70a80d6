//! Reading `.params` and `.vk` files: memory-mapped, validated, decoded in parallel.

use std::fs::File;
use std::path::Path;

use blstrs::{G1Affine, G2Affine};
use memmap2::Mmap;

use super::codec::{decode_all, Encoded};
use super::{ProvingKey, VerifyingKey};
use crate::{Error, Result};

/// How strictly points are checked while reading.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadOptions {
    /// Also check that every point lies in the prime-order subgroup (slow: about as long as
    /// decoding again). Points are always checked to be on the curve.
    pub check_subgroup: bool,
}

/// Walks the sections of a parameter file, naming each one in errors.
struct Cursor<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    at: usize,
    opts: ReadOptions,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, len: usize, section: &str) -> Result<&'a [u8]> {
        let available = self.bytes.len() - self.at;
        if len > available {
            return Err(Error::malformed(
                self.path,
                format!(
                    "truncated in {section}: needs {len} bytes at offset {}, only {available} left",
                    self.at
                ),
            ));
        }
        let out = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(out)
    }

    fn point<P: Encoded>(&mut self, section: &str) -> Result<P> {
        let at = self.at;
        let bytes = self.take(P::BYTES, section)?;
        P::decode(bytes, true).ok_or_else(|| {
            Error::malformed(
                self.path,
                format!(
                    "{section} at offset {at}: not a valid {} point (off the curve, outside \
                     the subgroup or bad flag bits)",
                    P::NAME
                ),
            )
        })
    }

    fn vector<P: Encoded>(&mut self, section: &str, allow_identity: bool) -> Result<Vec<P>> {
        let header_at = self.at;
        let len = u32::from_be_bytes(self.take(4, section)?.try_into().unwrap()) as usize;
        // u64: a corrupt count times 192 must not wrap on any target.
        let size = len as u64 * P::BYTES as u64;
        let left = (self.bytes.len() - self.at) as u64;
        if size > left {
            return Err(Error::malformed(
                self.path,
                format!(
                    "truncated in {section}: the header at offset {header_at} says {len} {} \
                     points ({size} bytes) from offset {}, only {left} bytes left",
                    P::NAME,
                    self.at,
                ),
            ));
        }
        let first = self.at;
        let bytes = self.take(size as usize, section)?;
        decode_all(bytes, self.opts.check_subgroup, allow_identity).map_err(|bad| {
            Error::malformed(
                self.path,
                format!(
                    "{section}[{}] at offset {}: {}",
                    bad.index,
                    first + bad.index * P::BYTES,
                    bad.reason
                ),
            )
        })
    }

    fn verifying_key(&mut self) -> Result<VerifyingKey> {
        Ok(VerifyingKey {
            alpha_g1: self.point("vk.alpha_g1")?,
            beta_g1: self.point("vk.beta_g1")?,
            beta_g2: self.point("vk.beta_g2")?,
            gamma_g2: self.point("vk.gamma_g2")?,
            delta_g1: self.point("vk.delta_g1")?,
            delta_g2: self.point("vk.delta_g2")?,
            ic: self.vector("vk.ic", true)?,
        })
    }

    fn finish(&self) -> Result<()> {
        match self.bytes.len() - self.at {
            0 => Ok(()),
            extra => Err(Error::malformed(
                self.path,
                format!(
                    "{extra} unexpected bytes after the last section (offset {})",
                    self.at
                ),
            )),
        }
    }
}

fn map(path: &Path) -> Result<Mmap> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: parameter files are not modified while zkforge runs; a concurrent writer would
    // at worst make decoding fail with an error.
    unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))
}

impl VerifyingKey {
    /// Reads a `.vk` file.
    pub fn read_file(path: &Path) -> Result<Self> {
        let mmap = map(path)?;
        Self::from_bytes(&mmap, path)
    }

    /// Parses a verifying key; `origin` names the source in errors.
    pub fn from_bytes(bytes: &[u8], origin: &Path) -> Result<Self> {
        let mut c = Cursor {
            path: origin,
            bytes,
            at: 0,
            opts: ReadOptions::default(),
        };
        let vk = c.verifying_key()?;
        c.finish()?;
        Ok(vk)
    }
}

impl ProvingKey {
    /// Reads a `.params` file.
    pub fn read_file(path: &Path, opts: ReadOptions) -> Result<Self> {
        let mmap = map(path)?;
        Self::from_bytes(&mmap, path, opts)
    }

    /// Parses a proving key; `origin` names the source in errors.
    pub fn from_bytes(bytes: &[u8], origin: &Path, opts: ReadOptions) -> Result<Self> {
        let mut c = Cursor {
            path: origin,
            bytes,
            at: 0,
            opts,
        };
        let vk = c.verifying_key()?;
        let pk = ProvingKey {
            vk,
            h: c.vector::<G1Affine>("h", false)?,
            l: c.vector::<G1Affine>("l", false)?,
            a: c.vector::<G1Affine>("a", false)?,
            b_g1: c.vector::<G1Affine>("b_g1", false)?,
            b_g2: c.vector::<G2Affine>("b_g2", false)?,
        };
        c.finish()?;
        Ok(pk)
    }
}
