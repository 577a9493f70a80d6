//! MSMs in chunks, over bases resident on the device or streamed from host memory.
//!
//! A streamed query is cut into chunks of `stream_chunk` G1 points' bytes (half as many G2
//! points). Every chunk of every streamed query of a partition is copied, in the order the
//! MSMs read them, into two device buffers by turns on a stream of its own: the copy of chunk
//! i + 1 runs while chunk i's MSM computes, so the link's time hides behind the kernels, and
//! the next MSM's first chunk is already there when the last one ends. The engine page-locks
//! a streamed key (`KeyPlacement::pin_key`), so the copies run at the link's pinned rate;
//! from pageable memory they are correct, only slower.
//!
//! A resident query is summed in place, in chunks as large as the room its caller gives the
//! MSM's scratch (`resident_chunk`): each MSM's scratch is then bounded whatever the query's
//! length, which is what lets the phased order (phased.rs) keep its footprint small, and the
//! fewer the chunks the less the fixed cost of each (its bucket reduction and readback).
//!
//! Each chunk is a complete MSM; the sums of a query's chunks are added on the host. Every
//! chunk's kernels have ended when its MSM returns (it reads its window sums back), which is
//! what makes a buffer free for the copy after next.

use cudarc::driver::CudaSlice;
use group::Group;

use crate::device::{CudaDevice, DeviceScalars};
use crate::host::MsmOptions;
use crate::msm::{Curve, G1, G2};
use crate::CudaError;

/// u64 limbs of one affine point.
pub(crate) const G1_LIMBS: usize = 12;
pub(crate) const G2_LIMBS: usize = 24;

/// One query's bases: on the device, or in host memory (u64 limbs, `limbs` a point).
pub(crate) enum Bases<'a> {
    Device(&'a CudaSlice<u64>),
    Host(&'a [u64]),
}

/// One chunk of a streamed query: which query, its first point, its points.
struct Chunk<'a> {
    query: usize,
    words: &'a [u64],
}

/// The streamed chunks of a partition's MSMs, two device buffers, and the stream that fills
/// them.
pub(crate) struct ChunkedMsms<'a> {
    copier: CudaDevice,
    buffers: [CudaSlice<u64>; 2],
    chunks: Vec<Chunk<'a>>,
    /// The next chunk whose copy has not been issued, and the next an MSM reads.
    next_copy: usize,
    next_read: usize,
    /// u64 words in a chunk (a buffer's length).
    chunk_words: usize,
}

/// Points of a chunk of `chunk_words` words for a curve of `limbs` limbs a point.
pub(crate) fn chunk_points(chunk_words: usize, limbs: usize) -> usize {
    (chunk_words / limbs).max(1)
}

/// Points a chunk of an MSM over `n` resident bases of `limbs` limbs a point may have so that
/// its scratch fits `room` bytes: the largest power of two that does (the whole MSM when it
/// fits), never fewer than `floor` (the streamed chunk's, which the footprint counts).
pub(crate) fn resident_chunk(
    n: usize,
    limbs: usize,
    room: u64,
    floor: usize,
    msm: &MsmOptions,
) -> usize {
    // The MSM's projective (XYZZ) points are twice the affine ones' limbs.
    let fits = |points: usize| crate::msm::scratch_bytes(points, 2 * limbs, msm) <= room;
    if fits(n) {
        return n.max(1);
    }
    let mut points = floor.max(1);
    while points * 2 < n && fits(points * 2) {
        points *= 2;
    }
    points
}

impl<'a> ChunkedMsms<'a> {
    /// Chunks of `chunk_bytes` over the host queries among `queries` (each with its limbs a
    /// point), in the order they will be summed; buffers are allocated only when something
    /// streams.
    pub fn new(
        dev: &CudaDevice,
        queries: &[(&Bases<'a>, usize)],
        chunk_bytes: usize,
    ) -> Result<Self, CudaError> {
        let chunk_words = (chunk_bytes / 8).max(G2_LIMBS);
        let mut chunks = Vec::new();
        for (query, (bases, limbs)) in queries.iter().enumerate() {
            if let Bases::Host(words) = bases {
                let per = chunk_points(chunk_words, *limbs) * limbs;
                chunks.extend(words.chunks(per).map(|words| Chunk { query, words }));
            }
        }
        let words = if chunks.is_empty() { 1 } else { chunk_words };
        // SAFETY: a buffer is read only where a copy wrote it first.
        let buffers = [unsafe { dev.stream.alloc::<u64>(words) }?, unsafe {
            dev.stream.alloc::<u64>(words)
        }?];
        // The copier's stream may use them once their stream-ordered allocation is done.
        dev.synchronize()?;
        let mut this = Self {
            copier: dev.fork()?,
            buffers,
            chunks,
            next_copy: 0,
            next_read: 0,
            chunk_words,
        };
        this.copy_ahead()?;
        Ok(this)
    }

    /// Issues the copies of the chunk an MSM reads next and the one after it. The buffer of
    /// the one after was last read by the chunk before the next, whose MSM has returned.
    fn copy_ahead(&mut self) -> Result<(), CudaError> {
        while self.next_copy < self.chunks.len() && self.next_copy <= self.next_read + 1 {
            let words = self.chunks[self.next_copy].words;
            let buffer = &mut self.buffers[self.next_copy % 2];
            self.copier
                .stream
                .memcpy_htod(words, &mut buffer.slice_mut(..words.len()))?;
            self.next_copy += 1;
        }
        Ok(())
    }

    /// Device bytes of the two chunk buffers (none when nothing streams).
    pub fn buffer_bytes(&self) -> u64 {
        if self.chunks.is_empty() {
            0
        } else {
            2 * self.chunk_words as u64 * 8
        }
    }

    /// Σ scalars[i]·bases[i] over the query `query` (its index in `new`'s list), chunk by
    /// chunk on `dev`'s stream; over resident bases in chunks whose scratch fits `room`.
    fn msm<C: Curve>(
        &mut self,
        dev: &CudaDevice,
        (query, room): (usize, u64),
        bases: &Bases<'_>,
        limbs: usize,
        scalars: &DeviceScalars,
    ) -> Result<C::Proj, CudaError> {
        let words = match bases {
            Bases::Device(buf) => {
                let floor = chunk_points(self.chunk_words, limbs);
                let points = resident_chunk(scalars.len, limbs, room, floor, &dev.msm);
                return dev.msm_chunked::<C>(buf, limbs, scalars, points);
            }
            Bases::Host(words) => words,
        };
        let n = scalars.len;
        if n * limbs > words.len() {
            return Err(CudaError::Invalid(format!(
                "{n} scalars but only {} bases",
                words.len() / limbs
            )));
        }
        let mut acc = C::Proj::identity();
        let mut start = 0;
        while start < n {
            let points = match self.chunks.get(self.next_read) {
                Some(chunk) if chunk.query == query => chunk.words.len() / limbs,
                _ => {
                    return Err(CudaError::Internal(
                        "streamed chunks read out of order".into(),
                    ))
                }
            };
            self.copy_ahead()?;
            let len = points.min(n - start);
            let buffer = &self.buffers[self.next_read % 2];
            acc += dev.msm_core::<C>(
                &buffer.slice(..len * limbs),
                len,
                &scalars.buf.slice(start * 4..(start + len) * 4),
                len,
            )?;
            start += points;
            self.next_read += 1;
        }
        // Chunks past the scalars (a query longer than the witness) are skipped.
        while self
            .chunks
            .get(self.next_read)
            .is_some_and(|c| c.query == query)
        {
            self.next_read += 1;
        }
        Ok(acc)
    }

    /// The MSM of query `query` (its index in `new`'s list) over G1 bases, with `room` bytes
    /// for a resident query's scratch.
    pub fn msm_g1(
        &mut self,
        dev: &CudaDevice,
        query: (usize, u64),
        bases: &Bases<'_>,
        scalars: &DeviceScalars,
    ) -> Result<blstrs::G1Projective, CudaError> {
        self.msm::<G1>(dev, query, bases, G1_LIMBS, scalars)
    }

    pub fn msm_g2(
        &mut self,
        dev: &CudaDevice,
        query: (usize, u64),
        bases: &Bases<'_>,
        scalars: &DeviceScalars,
    ) -> Result<blstrs::G2Projective, CudaError> {
        self.msm::<G2>(dev, query, bases, G2_LIMBS, scalars)
    }
}
