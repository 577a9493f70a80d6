//! Reading gigabytes from a file with several threads at once.
//!
//! A start reads a 32 GiB PoRep key (47 GB) and its recorded matrices (6.8 GB) from the page
//! cache. One thread copies that at a few GB/s and, into fresh memory, also takes every page
//! fault; pieces read side by side by the threads of the current rayon pool go at the memory's
//! speed, each thread faulting in the pages it writes.

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::fs::FileExt;

use rayon::prelude::*;

/// Bytes one thread reads at a time: large enough that a read is mostly copying.
const PIECE_BYTES: usize = 8 << 20;

/// Reads exactly `buf.len()` bytes at `offset`, in pieces on the current rayon pool when the
/// buffer holds more than one.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    if buf.len() <= PIECE_BYTES {
        return file.read_exact_at(buf, offset);
    }
    buf.par_chunks_mut(PIECE_BYTES)
        .enumerate()
        .try_for_each(|(i, piece)| file.read_exact_at(piece, offset + (i * PIECE_BYTES) as u64))
}

/// Values that any bytes make valid and that have no padding: a vector of them can be filled
/// straight from a file.
///
/// # Safety
/// Implement only for types of that kind (integers, `#[repr(C)]` structs of integers).
pub(crate) unsafe trait Plain: Copy + Send + Sync {}

// SAFETY: integers: every bit pattern is a value, no padding.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for u8 {}

/// `len` values of `T` read from `file` at `offset` (little-endian layout as in memory).
pub(crate) fn read_vec_at<T: Plain>(file: &File, offset: u64, len: usize) -> io::Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    let mut v: Vec<T> = Vec::with_capacity(len);
    let spare = &mut v.spare_capacity_mut()[..len];
    // Each piece is zeroed (so that a byte view of it is initialised) and read by one thread:
    // the zeroing faults the piece's pages in on the thread that then copies into them.
    let per_piece = (PIECE_BYTES / size).max(1);
    spare
        .par_chunks_mut(per_piece)
        .enumerate()
        .try_for_each(|(i, piece)| {
            let bytes = std::mem::size_of_val(piece);
            let raw = piece.as_mut_ptr() as *mut MaybeUninit<u8>;
            // SAFETY: `raw` covers exactly the piece's `bytes`; writing zeros to MaybeUninit
            // memory is always sound, and afterwards every byte is initialised.
            let piece_bytes = unsafe {
                std::ptr::write_bytes(raw, 0, bytes);
                std::slice::from_raw_parts_mut(raw as *mut u8, bytes)
            };
            file.read_exact_at(piece_bytes, offset + (i * per_piece * size) as u64)
        })?;
    // SAFETY: the first `len` values were written in full above (any bytes are a valid T).
    unsafe { v.set_len(len) };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn parallel_reads_match_the_file_at_any_offset_and_length() {
        // Three pieces and a tail, so every piece boundary and the short last piece are read.
        let bytes: Vec<u8> = (0..3 * PIECE_BYTES + 12_345)
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let f = file_of(&bytes);
        for (offset, len) in [
            (0, bytes.len()),
            (7, 2 * PIECE_BYTES + 1),
            (100, 10),
            (bytes.len() - 4, 4),
        ] {
            let mut buf = vec![0u8; len];
            read_exact_at(&f, &mut buf, offset as u64).unwrap();
            assert_eq!(
                buf,
                bytes[offset..offset + len],
                "offset {offset}, len {len}"
            );
        }
        let words: Vec<u64> = read_vec_at(&f, 3, (bytes.len() - 3) / 8).unwrap();
        for (i, w) in words.iter().enumerate() {
            let at = 3 + 8 * i;
            assert_eq!(
                *w,
                u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
            );
        }
    }

    #[test]
    fn a_short_file_is_an_error_not_a_partial_read() {
        let f = file_of(&vec![1u8; PIECE_BYTES + 10]);
        let mut buf = vec![0u8; PIECE_BYTES + 11];
        let e = read_exact_at(&f, &mut buf, 0).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // A vector that would end 2 bytes past the end of the file.
        assert!(read_vec_at::<u32>(&f, 12, PIECE_BYTES / 4).is_err());
    }
}
