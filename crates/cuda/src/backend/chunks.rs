//! MSMs in chunks, over bases resident on the device, streamed from host memory, or streamed
//! from the key's file.
//!
//! A streamed query is cut into chunks of `stream_chunk` G1 points' bytes (half as many G2
//! points). A thread of its own fills two device buffers by turns, in the order the MSMs read
//! the chunks, on a stream of its own: chunk i + 1 is copied (and, from the file, read and
//! decoded) while chunk i's MSM computes, so the link's time hides behind the kernels, and the
//! next MSM's first chunk is already there when the last one ends. A buffer goes back to the
//! filler once the MSM that read it has returned (it reads its window sums back, so its kernels
//! have ended).
//!
//! - From host memory: the engine page-locks a streamed key (`KeyPlacement::pin_key`), so the
//!   copies run at the link's pinned rate; from pageable memory they are correct, only slower.
//! - From the file, where the decoded key does not fit host memory (`KeyPlacement::
//!   streaming_from_file`): a chunk's encoded points are read in pieces into page-locked
//!   staging (two slots of `PIECE_BYTES`, by `READ_THREADS` threads, kept with the item for
//!   its next partitions), each piece copied into the buffer and decoded there in place (an
//!   encoded point is as long as a decoded one; each thread of the kernel reads its point
//!   before writing it), the curve checks included. The next piece is read while the last
//!   one copies.
//!
//! A resident query is summed in place, in chunks as large as the room its caller gives the
//! MSM's scratch (`resident_chunk`): each MSM's scratch is then bounded whatever the query's
//! length, which is what lets the phased order (phased.rs) keep its footprint small, and the
//! fewer the chunks the less the fixed cost of each (its bucket reduction and readback).
//!
//! Each chunk is a complete MSM; the sums of a query's chunks are added on the host.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use cudarc::driver::{CudaSlice, DevicePtrMut, PushKernelArg};
use group::Group;
use zkforge_groth16::srs::Query;
use zkforge_groth16::ParamsFile;

use crate::context::{grid, DeviceScalars};
use crate::decode::damaged_key;
use crate::host::MsmOptions;
use crate::msm::{Curve, G1, G2};
use crate::pinned::PinnedBuffer;
use crate::{CudaDevice, CudaError};

/// u64 limbs of one affine point.
pub(crate) const G1_LIMBS: usize = 12;
pub(crate) const G2_LIMBS: usize = 24;

/// One query's bases: on the device, in host memory (u64 limbs, `limbs` a point), or in the
/// key's file (points `first..` of `query`).
pub(crate) enum Bases<'a> {
    Device(&'a CudaSlice<u64>),
    Host(&'a [u64]),
    File {
        file: &'a ParamsFile,
        query: Query,
        first: usize,
    },
}

/// Where a streamed chunk's points come from.
enum Source<'a> {
    Host(&'a [u64]),
    File {
        file: &'a ParamsFile,
        query: Query,
        first: usize,
    },
}

/// One chunk of a streamed query: which query (its index in the list), its points, and
/// where they come from.
struct Chunk<'a> {
    query: usize,
    points: usize,
    limbs: usize,
    source: Source<'a>,
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

/// Threads that read from a key's file, in pieces (here and in key_upload.rs). Their own pool: in the daemon the key
/// is staged while the first partitions are synthesized on every core, and reads queued on
/// rayon's global pool waited behind synthesis (47 GB at 4.1 GB/s on the H200 box, issue 24).
pub(crate) const READ_THREADS: usize = 8;

/// Bytes of one staging slot for chunks read from the file: 2M G1 or 1M G2 points.
const PIECE_BYTES: usize = 192 << 20;

/// Page-locked host bytes a GPU holds to stream a key from its file: two staging slots for
/// each of the two partitions that may be in flight.
pub(crate) const FILE_STAGING_BYTES: u64 = 4 * PIECE_BYTES as u64;

/// Staging slots kept between partitions (allocating 384 MiB of page-locked memory costs
/// tens of milliseconds): at most two pairs, one per partition in flight.
#[derive(Default)]
pub(crate) struct StagingPool(std::sync::Mutex<Vec<[PinnedBuffer; 2]>>);

impl StagingPool {
    fn take(&self) -> Result<[PinnedBuffer; 2], CudaError> {
        let pooled = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match pooled {
            Some(pair) => Ok(pair),
            None => Ok([
                PinnedBuffer::new(PIECE_BYTES)?,
                PinnedBuffer::new(PIECE_BYTES)?,
            ]),
        }
    }

    fn give_back(&self, pair: [PinnedBuffer; 2]) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(pair);
    }
}

/// The consumer's side of a partition's streamed chunks: buffers come full from the filler
/// thread and go back empty.
pub(crate) struct ChunkedMsms {
    /// Each streamed chunk's query and points, in order.
    chunks: Vec<(usize, usize)>,
    full: Option<Receiver<Result<CudaSlice<u64>, CudaError>>>,
    empty: Option<SyncSender<CudaSlice<u64>>>,
    /// The next chunk an MSM reads.
    next_read: usize,
    /// u64 words in a chunk (a buffer's length).
    chunk_words: usize,
}

/// Runs `f` with the MSMs of `queries` (each with its limbs a point) in chunks of
/// `chunk_bytes`, in the order `f` will sum them; the filler thread runs only when something
/// streams. `f`'s error comes first; an error of the filler's own (a read or a decode) is the
/// result where `f` succeeded.
pub(crate) fn with_chunked_msms<R>(
    dev: &CudaDevice,
    queries: &[(&Bases<'_>, usize)],
    chunk_bytes: usize,
    staging: &StagingPool,
    f: impl FnOnce(&mut ChunkedMsms) -> Result<R, CudaError>,
) -> Result<R, CudaError> {
    let chunk_words = (chunk_bytes / 8).max(G2_LIMBS);
    let chunks = streamed_chunks(queries, chunk_words);
    let mut msms = ChunkedMsms {
        chunks: chunks.iter().map(|c| (c.query, c.points)).collect(),
        full: None,
        empty: None,
        next_read: 0,
        chunk_words,
    };
    if msms.chunks.is_empty() {
        return f(&mut msms);
    }
    let copier = dev.fork()?;
    // SAFETY: a buffer is read only after the filler wrote it.
    let buffers = [
        unsafe { dev.core.stream.alloc::<u64>(chunk_words) }?,
        unsafe { dev.core.stream.alloc::<u64>(chunk_words) }?,
    ];
    // The filler's stream may use them once their stream-ordered allocation is done.
    dev.synchronize()?;
    let (empty_tx, empty_rx) = sync_channel(2);
    let (full_tx, full_rx) = sync_channel(2);
    for b in buffers {
        let _ = empty_tx.send(b);
    }
    msms.full = Some(full_rx);
    msms.empty = Some(empty_tx);
    let chunks = &chunks;
    std::thread::scope(|s| {
        let filler = std::thread::Builder::new()
            .name("msm-chunks".into())
            .spawn_scoped(s, || fill(&copier, chunks, staging, empty_rx, full_tx))
            .map_err(|e| CudaError::Internal(format!("chunk filler thread: {e}")))?;
        let result = f(&mut msms);
        // Closing our ends stops the filler at its next buffer.
        msms.full = None;
        msms.empty = None;
        let filled = filler
            .join()
            .unwrap_or_else(|_| Err(CudaError::Internal("the chunk filler panicked".into())));
        // The MSMs' own error first: a failed fill reaches them through the channel with its
        // kind; the filler's own adds what the MSMs could not see (a refused point).
        result.and_then(|r| filled.map(|()| r))
    })
}

/// The chunks of the host and file queries among `queries`, in order.
fn streamed_chunks<'a>(queries: &[(&Bases<'a>, usize)], chunk_words: usize) -> Vec<Chunk<'a>> {
    let mut chunks = Vec::new();
    for (query, &(bases, limbs)) in queries.iter().enumerate() {
        let per = chunk_points(chunk_words, limbs);
        match bases {
            Bases::Device(_) => {}
            Bases::Host(words) => chunks.extend(words.chunks(per * limbs).map(|w| Chunk {
                query,
                points: w.len() / limbs,
                limbs,
                source: Source::Host(w),
            })),
            Bases::File {
                file,
                query: q,
                first,
            } => {
                let len = file.section(*q).len.saturating_sub(*first);
                chunks.extend((0..len).step_by(per).map(|at| Chunk {
                    query,
                    points: per.min(len - at),
                    limbs,
                    source: Source::File {
                        file,
                        query: *q,
                        first: first + at,
                    },
                }));
            }
        }
    }
    chunks
}

/// Page-locked staging of chunks read from the file: two slots, each free again once the
/// copy out of it has run.
struct FileStaging {
    slots: [PinnedBuffer; 2],
    copied: [Option<cudarc::driver::CudaEvent>; 2],
    readers: rayon::ThreadPool,
    /// One decode verdict per piece (u64::MAX: every point good), and each piece's query and
    /// first point, for the error that names a refused point.
    verdicts: CudaSlice<u64>,
    pieces: Vec<(Query, usize)>,
}

/// Pieces of `PIECE_BYTES` the file's chunks are staged in.
fn pieces_of(chunks: &[Chunk<'_>]) -> usize {
    chunks
        .iter()
        .filter(|c| matches!(c.source, Source::File { .. }))
        .map(|c| c.points.div_ceil(PIECE_BYTES / (c.limbs * 8)))
        .sum()
}

/// The filler: each chunk into an empty buffer, handed over full, until the chunks or the
/// consumer end. Reading the next chunk from the file overlaps the MSM over the last one.
fn fill(
    copier: &CudaDevice,
    chunks: &[Chunk<'_>],
    pool: &StagingPool,
    empty: Receiver<CudaSlice<u64>>,
    full: SyncSender<Result<CudaSlice<u64>, CudaError>>,
) -> Result<(), CudaError> {
    copier.core.ctx.bind_to_thread()?;
    let mut staging = None;
    let pieces = pieces_of(chunks);
    if pieces > 0 {
        staging = Some(FileStaging {
            slots: pool.take()?,
            copied: [None, None],
            pieces: Vec::with_capacity(pieces),
            readers: rayon::ThreadPoolBuilder::new()
                .num_threads(READ_THREADS)
                .thread_name(|i| format!("chunk-read-{i}"))
                .build()
                .map_err(|e| CudaError::Internal(format!("chunk reader threads: {e}")))?,
            verdicts: copier.core.stream.clone_htod(&vec![u64::MAX; pieces])?,
        });
    }
    let mut failure = None;
    for chunk in chunks {
        let Ok(mut buf) = empty.recv() else { break };
        let filled = match (&chunk.source, staging.as_mut()) {
            (Source::Host(host), _) => copier
                .core
                .stream
                .memcpy_htod(*host, &mut buf.slice_mut(..chunk.points * chunk.limbs))
                .map_err(CudaError::from),
            (Source::File { .. }, Some(st)) => stage_from_file(copier, &mut buf, chunk, st),
            (Source::File { .. }, None) => {
                unreachable!("staging is made when a chunk reads the file")
            }
        };
        let handed = match filled {
            Ok(()) => full.send(Ok(buf)).is_ok(),
            Err(e) => {
                failure = Some(e.to_string());
                let _ = full.send(Err(e));
                false
            }
        };
        if !handed {
            break;
        }
    }
    copier.synchronize()?;
    let file = chunks.iter().find_map(|c| match c.source {
        Source::File { file, .. } => Some(file),
        Source::Host(_) => None,
    });
    let verdict = match (&staging, file) {
        (Some(st), Some(file)) => decode_verdict(copier, file, st),
        _ => Ok(()),
    };
    if let Some(st) = staging {
        pool.give_back(st.slots);
    }
    match failure {
        Some(e) => Err(CudaError::Internal(e)),
        None => verdict,
    }
}

/// Reads `chunk`'s encoded points from the file in pieces through the staging slots, each
/// copied into `buf` and decoded there, each piece's verdict its own. Returns once the last
/// piece's copy and decode are queued on the copier's stream.
fn stage_from_file(
    copier: &CudaDevice,
    buf: &mut CudaSlice<u64>,
    chunk: &Chunk<'_>,
    st: &mut FileStaging,
) -> Result<(), CudaError> {
    let Source::File { file, query, first } = chunk.source else {
        return Ok(());
    };
    let point_bytes = chunk.limbs * 8;
    let per_piece = PIECE_BYTES / point_bytes;
    let kernel = if chunk.limbs == G2_LIMBS {
        &copier.decode.g2
    } else {
        &copier.decode.g1
    };
    let (base, _written) = buf.device_ptr_mut(&copier.core.stream);
    let mut at = 0;
    while at < chunk.points {
        let n = per_piece.min(chunk.points - at);
        let piece = st.pieces.len();
        let slot = piece % 2;
        st.pieces.push((query, first + at));
        if let Some(e) = st.copied[slot].take() {
            e.synchronize()?;
        }
        // SAFETY: the slot's last copy has completed (above).
        let host = unsafe { st.slots[slot].slice_mut::<u8>(n * point_bytes) };
        st.readers
            .install(|| file.read_encoded(query, first + at, host))
            .map_err(CudaError::Groth16)?;
        let dst = base + (at * point_bytes) as u64;
        // SAFETY: host holds n points' bytes; the buffer has room for the chunk's points.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(dst, &*host, copier.core.stream.cu_stream())
        }?;
        let count = n as u64;
        let mut verdict = st.verdicts.slice_mut(piece..piece + 1);
        let mut b = copier.core.stream.launch_builder(kernel);
        // In place: each thread reads its whole point before writing it.
        b.arg(&dst).arg(&dst).arg(&count).arg(&mut verdict);
        // SAFETY: dst holds `count` encoded points, the kernel's contract.
        unsafe { b.launch(grid(count, 128)) }?;
        st.copied[slot] = Some(copier.core.mark()?);
        at += n;
    }
    Ok(())
}

/// The first point a decode refused, as an error naming it (the kernel reports a piece's
/// smallest refused index, shifted left 8, with the reason).
fn decode_verdict(
    copier: &CudaDevice,
    file: &ParamsFile,
    st: &FileStaging,
) -> Result<(), CudaError> {
    let verdicts = copier.core.read_back(&st.verdicts, st.pieces.len())?;
    let refused = verdicts
        .iter()
        .zip(&st.pieces)
        .find(|(&v, _)| v != u64::MAX);
    match refused {
        None => Ok(()),
        Some((&bad, &(query, first))) => Err(damaged_key(file, query, first, bad)),
    }
}

impl ChunkedMsms {
    /// Device bytes of the two chunk buffers (none when nothing streams).
    pub fn buffer_bytes(&self) -> u64 {
        if self.chunks.is_empty() {
            0
        } else {
            2 * self.chunk_words as u64 * 8
        }
    }

    /// The next full buffer, in chunk order.
    fn next_full(&mut self, query: usize) -> Result<(CudaSlice<u64>, usize), CudaError> {
        let points = match self.chunks.get(self.next_read) {
            Some(&(q, points)) if q == query => points,
            _ => {
                return Err(CudaError::Internal(
                    "streamed chunks read out of order".into(),
                ))
            }
        };
        let buf = self
            .full
            .as_ref()
            .and_then(|r| r.recv().ok())
            .unwrap_or_else(|| Err(CudaError::Internal("the chunk filler stopped".into())))?;
        self.next_read += 1;
        Ok((buf, points))
    }

    fn give_back(&self, buf: CudaSlice<u64>) {
        if let Some(empty) = &self.empty {
            // The filler may be done: a buffer it will not need again is simply dropped.
            let _ = empty.send(buf);
        }
    }

    /// Σ scalars[i]·bases[i] over the query `query` (its index in the list given to
    /// `with_chunked_msms`), chunk by chunk on `dev`'s stream; over resident bases in chunks
    /// whose scratch fits `room`.
    fn msm<C: Curve>(
        &mut self,
        dev: &CudaDevice,
        (query, room): (usize, u64),
        bases: &Bases<'_>,
        limbs: usize,
        scalars: &DeviceScalars,
    ) -> Result<C::Proj, CudaError> {
        let n = scalars.len;
        if let Bases::Device(buf) = bases {
            let floor = chunk_points(self.chunk_words, limbs);
            let points = resident_chunk(n, limbs, room, floor, &dev.msm.options);
            return dev.msm.chunked::<C>(&dev.core, buf, limbs, scalars, points);
        }
        let mut acc = C::Proj::identity();
        let mut start = 0;
        while self
            .chunks
            .get(self.next_read)
            .is_some_and(|&(q, _)| q == query)
        {
            let (buf, points) = self.next_full(query)?;
            // Chunks past the scalars (a query longer than the witness) add nothing.
            let len = points.min(n.saturating_sub(start));
            let sum = match len {
                0 => Ok(C::Proj::identity()),
                _ => dev.msm.run_with::<C>(
                    &dev.core,
                    &buf.slice(..len * limbs),
                    len,
                    &scalars.buf.slice(start * 4..(start + len) * 4),
                    len,
                    &dev.msm.options,
                ),
            };
            self.give_back(buf);
            acc += sum?;
            start += points;
        }
        if start < n {
            return Err(CudaError::Invalid(format!(
                "{n} scalars but only {start} bases"
            )));
        }
        Ok(acc)
    }

    /// The MSM of query `query` (its index in the list) over G1 bases, with `room` bytes for
    /// a resident query's scratch.
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
