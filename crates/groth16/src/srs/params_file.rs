//! A `.params` file left on disk: its verifying key decoded, its five queries located but not
//! read, for a backend that uploads points straight from the file to a device (a 32 GiB PoRep
//! key is 47 GB: holding it in host memory as well as in VRAM would not fit the machine).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use std::mem::MaybeUninit;

use blstrs::{G1Affine, G2Affine};
use rayon::prelude::*;

use super::codec::{decode_all, decode_point, Encoded};
use super::{ProvingKey, QueryLengths, VerifyingKey};
use crate::{Error, Result};

/// The five point queries of a proving key, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Query {
    H,
    L,
    A,
    BG1,
    BG2,
}

impl Query {
    pub const ALL: [Query; 5] = [Query::H, Query::L, Query::A, Query::BG1, Query::BG2];

    pub fn name(self) -> &'static str {
        match self {
            Query::H => "h",
            Query::L => "l",
            Query::A => "a",
            Query::BG1 => "b_g1",
            Query::BG2 => "b_g2",
        }
    }

    /// Bytes of one point in the file.
    pub fn point_bytes(self) -> usize {
        match self {
            Query::BG2 => G2Affine::BYTES,
            _ => G1Affine::BYTES,
        }
    }
}

/// Where one query's points are in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    pub offset: u64,
    pub len: usize,
}

/// A proving key's file, opened and checked for layout, its points not yet read.
#[derive(Debug)]
pub struct ParamsFile {
    path: PathBuf,
    file: File,
    bytes: u64,
    pub vk: VerifyingKey,
    sections: [Section; 5],
}

impl ParamsFile {
    /// Opens `path`, decodes the verifying key and locates the queries; the layout must
    /// account for every byte of the file.
    pub fn open(path: &Path) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len();
        let bad = |what: String| Error::malformed(path, what);
        // The vk is at most a few hundred KB plus ic; read it through a bounded prefix.
        let mut at = 0u64;
        let read_u32 = |at: u64, what: &str| -> Result<u32> {
            let mut b = [0u8; 4];
            file.read_exact_at(&mut b, at)
                .map_err(|_| bad(format!("truncated in {what}: no length at offset {at}")))?;
            Ok(u32::from_be_bytes(b))
        };
        // alpha_g1, beta_g1, beta_g2, gamma_g2, delta_g1, delta_g2.
        let fixed = 3 * G1Affine::BYTES as u64 + 3 * G2Affine::BYTES as u64;
        let ic_len = read_u32(fixed, "vk.ic")? as u64;
        let vk_bytes = fixed + 4 + ic_len * G1Affine::BYTES as u64;
        if vk_bytes > bytes {
            return Err(bad(format!(
                "truncated in vk.ic: the header at offset {fixed} says {ic_len} points ({} \
                 bytes) from offset {}, the file has {bytes} bytes",
                ic_len * G1Affine::BYTES as u64,
                fixed + 4
            )));
        }
        let mut head = vec![0u8; vk_bytes as usize];
        file.read_exact_at(&mut head, 0).map_err(io)?;
        let vk = VerifyingKey::from_bytes(&head, path)?;
        at += vk_bytes;
        let mut sections = [Section { offset: 0, len: 0 }; 5];
        for (q, s) in Query::ALL.iter().zip(sections.iter_mut()) {
            let len = read_u32(at, q.name())? as u64;
            let size = len * q.point_bytes() as u64;
            at += 4;
            if at + size > bytes {
                return Err(bad(format!(
                    "truncated in {}: the header at offset {} says {len} points ({size} bytes) \
                     from offset {at}, only {} bytes left",
                    q.name(),
                    at - 4,
                    bytes - at
                )));
            }
            *s = Section {
                offset: at,
                len: len as usize,
            };
            at += size;
        }
        if at != bytes {
            return Err(bad(format!(
                "{} unexpected bytes after the last section (offset {at})",
                bytes - at
            )));
        }
        Ok(Self {
            path: path.to_path_buf(),
            file,
            bytes,
            vk,
            sections,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Device, inode, size and modification time: equal while the file is the same file,
    /// unchanged (what a device cache of its points is keyed by).
    pub fn identity(&self) -> (u64, u64, u64, i64, i64) {
        use std::os::unix::fs::MetadataExt;
        match self.file.metadata() {
            Ok(m) => (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()),
            Err(_) => (0, 0, self.bytes, 0, 0),
        }
    }

    /// The file's size.
    pub fn file_bytes(&self) -> u64 {
        self.bytes
    }

    pub fn section(&self, q: Query) -> Section {
        self.sections[q as usize]
    }

    /// The byte offset of point `index` of query `q` in the file: what an error about a point
    /// names, so that the damage can be found with a hex dump.
    pub fn point_offset(&self, q: Query, index: usize) -> u64 {
        self.section(q).offset + (index * q.point_bytes()) as u64
    }

    pub fn lengths(&self) -> QueryLengths {
        let len = |q| self.section(q).len;
        QueryLengths {
            ic: self.vk.ic.len(),
            h: len(Query::H),
            l: len(Query::L),
            a: len(Query::A),
            b_g1: len(Query::BG1),
            b_g2: len(Query::BG2),
        }
    }

    /// Reads the encoded points `first .. first + out.len() / point_bytes` of query `q`.
    pub fn read_encoded(&self, q: Query, first: usize, out: &mut [u8]) -> Result<()> {
        let s = self.section(q);
        let size = q.point_bytes();
        let count = out.len() / size;
        if !out.len().is_multiple_of(size) || first + count > s.len {
            return Err(Error::malformed(
                &self.path,
                format!(
                    "{}: points {first}..{} of {}",
                    q.name(),
                    first + count,
                    s.len
                ),
            ));
        }
        let at = s.offset + (first * size) as u64;
        crate::exec::bulk_read::read_exact_at(&self.file, out, at).map_err(|e| {
            // The file was checked to hold every point at open: it shrank or the disk failed.
            Error::malformed(
                &self.path,
                format!(
                    "reading {} points {first}..{} at offset {at} ({} bytes): {e}",
                    q.name(),
                    first + count,
                    out.len()
                ),
            )
        })
    }

    /// Decodes points `first .. first + count` of a G1 query (small ranges: the input side).
    pub fn g1_points(&self, q: Query, first: usize, count: usize) -> Result<Vec<G1Affine>> {
        self.points(q, first, count)
    }

    /// Decodes points `first .. first + count` of `b_g2`.
    pub fn g2_points(&self, first: usize, count: usize) -> Result<Vec<G2Affine>> {
        self.points(Query::BG2, first, count)
    }

    fn points<P: Encoded>(&self, q: Query, first: usize, count: usize) -> Result<Vec<P>> {
        let mut bytes = vec![0u8; count * P::BYTES];
        self.read_encoded(q, first, &mut bytes)?;
        decode_all(&bytes, false, false).map_err(|bad| {
            let index = first + bad.index;
            Error::malformed(
                &self.path,
                format!(
                    "{}[{index}] at offset {}: {}",
                    q.name(),
                    self.point_offset(q, index),
                    bad.reason
                ),
            )
        })
    }

    /// Reads and decodes the whole key into memory (`opts` as for [`ProvingKey::read_file`]).
    ///
    /// Read a piece at a time with `pread`, not mapped: a mapped 47 GB key decoded into 44 GiB
    /// would have both in this process's RSS at the end of the read (the file's pages
    /// reclaimable, but counted against a memory cgroup and in VmHWM), and the memory budget
    /// counts only the decoded points. Read, the file's pages stay in the page cache, outside
    /// the process; each decoding thread holds one piece of encoded bytes.
    pub fn decode(&self, opts: super::ReadOptions) -> Result<ProvingKey> {
        Ok(ProvingKey {
            vk: self.vk.clone(),
            h: self.decode_query(Query::H, opts)?,
            l: self.decode_query(Query::L, opts)?,
            a: self.decode_query(Query::A, opts)?,
            b_g1: self.decode_query(Query::BG1, opts)?,
            b_g2: self.decode_query(Query::BG2, opts)?,
        })
    }

    /// Every point of query `q`, decoded by the threads of the current rayon pool, a piece of
    /// [`DECODE_PIECE_POINTS`] each, straight into the key's vector.
    fn decode_query<P: Encoded>(&self, q: Query, opts: super::ReadOptions) -> Result<Vec<P>> {
        let len = self.section(q).len;
        let mut points: Vec<P> = Vec::with_capacity(len);
        points.spare_capacity_mut()[..len]
            .par_chunks_mut(DECODE_PIECE_POINTS)
            .enumerate()
            .try_for_each_init(Vec::new, |encoded: &mut Vec<u8>, (k, piece)| {
                let first = k * DECODE_PIECE_POINTS;
                encoded.resize(piece.len() * P::BYTES, 0);
                self.read_encoded(q, first, encoded)?;
                self.decode_piece(q, first, encoded, piece, opts)
            })?;
        // SAFETY: every one of the `len` points was written by its piece above (an error in
        // any piece returned before this).
        unsafe { points.set_len(len) };
        Ok(points)
    }

    fn decode_piece<P: Encoded>(
        &self,
        q: Query,
        first: usize,
        encoded: &[u8],
        out: &mut [MaybeUninit<P>],
        opts: super::ReadOptions,
    ) -> Result<()> {
        for (i, (slot, bytes)) in out
            .iter_mut()
            .zip(encoded.chunks_exact(P::BYTES))
            .enumerate()
        {
            let point =
                decode_point(bytes, first + i, opts.check_subgroup, false).map_err(|bad| {
                    Error::malformed(
                        &self.path,
                        format!(
                            "{}[{}] at offset {}: {}",
                            q.name(),
                            bad.index,
                            self.point_offset(q, bad.index),
                            bad.reason
                        ),
                    )
                })?;
            slot.write(point);
        }
        Ok(())
    }
}

/// Points one decoding thread reads at a time: 384 KiB of G1, 768 KiB of G2 (16 threads hold
/// at most 12 MiB of encoded bytes, outside the memory budget), large enough that a read is
/// mostly copying (a 47 GB key is 120,000 reads).
const DECODE_PIECE_POINTS: usize = 1 << 12;
