//! Where a streamed key's chunks can come from, measured (issue 35): a 32 GiB WindowPoSt key
//! (73 GB) fits neither the H200 box's 64 GiB disk nor, beside its decoded copy, its 125 GiB
//! of memory, and a decoded PoRep key takes 44 GiB of a provider's RAM. Chunks read straight
//! from the key file's pages (decoded on the device, as `key_upload.rs` does) would need no
//! decoded copy. This times, on a file of SIZE GiB in DIR (a tmpfs such as /dev/shm, or a
//! disk's page cache):
//! - the file mapped read-only and page-locked in place (`cuMemHostRegister` with READ_ONLY):
//!   whether the driver takes it, how long it takes, and host-to-device copies from it;
//! - `pread` into two page-locked staging buffers by 1, 4 and 8 threads, each buffer copied to
//!   the device while the other fills;
//! - a page-locked allocation's copies, the link's ceiling.
//!
//! Usage: map_bench DIR [SIZE_GIB (default 8)] — prints a markdown table.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::time::Instant;

use cudarc::driver::{result, sys, CudaContext};

const CHUNK: usize = 512 << 20;

fn gbps(bytes: usize, secs: f64) -> String {
    format!("{:.1}", bytes as f64 / secs / 1e9)
}

/// Seconds to copy `src` to the device in chunks.
fn copies(
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    dev: &mut cudarc::driver::CudaSlice<u8>,
    src: &[u8],
) -> anyhow::Result<f64> {
    let t = Instant::now();
    for c in src.chunks(CHUNK) {
        stream.memcpy_htod(c, &mut dev.slice_mut(..c.len()))?;
    }
    stream.synchronize()?;
    Ok(t.elapsed().as_secs_f64())
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/dev/shm".into());
    let gib: usize = std::env::args().nth(2).map_or(Ok(8), |s| s.parse())?;
    let size = gib << 30;
    let path = std::path::Path::new(&dir).join("zkforge-map-bench.bin");
    {
        let mut f = File::create(&path)?;
        let block: Vec<u8> = (0..CHUNK).map(|i| (i * 2654435761) as u8).collect();
        for _ in 0..size / CHUNK {
            f.write_all(&block)?;
        }
        f.sync_all()?;
    }
    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let mut dev = unsafe { stream.alloc::<u8>(CHUNK) }?;
    println!("| source ({gib} GiB in {dir}) | result | GB/s to the device |");
    println!("|---|---|---|");

    // The link's ceiling: a page-locked allocation.
    let pinned = unsafe { result::malloc_host(CHUNK, 0) }? as *mut u8;
    let host = unsafe { std::slice::from_raw_parts_mut(pinned, CHUNK) };
    host.fill(1);
    let mut copies = |src: &[u8]| copies(&stream, &mut dev, src);
    copies(host)?;
    let s = (0..8).map(|_| copies(host)).sum::<anyhow::Result<f64>>()?;
    println!("| page-locked allocation | | {} |", gbps(8 * CHUNK, s));

    // The file mapped, pages read in, then page-locked in place.
    let file = File::open(&path)?;
    let map = unsafe { memmap2::MmapOptions::new().populate().map(&file) }?;
    let t = Instant::now();
    let r = unsafe {
        sys::cuMemHostRegister_v2(
            map.as_ptr() as *mut std::ffi::c_void,
            map.len(),
            sys::CU_MEMHOSTREGISTER_READ_ONLY | sys::CU_MEMHOSTREGISTER_PORTABLE,
        )
    };
    let reg_ms = t.elapsed().as_secs_f64() * 1e3;
    if r == sys::CUresult::CUDA_SUCCESS {
        copies(&map[..CHUNK])?;
        let s = copies(&map)?;
        println!(
            "| mapped file, registered read-only | {reg_ms:.0} ms to register | {} |",
            gbps(map.len(), s)
        );
        unsafe { sys::cuMemHostUnregister(map.as_ptr() as *mut std::ffi::c_void) };
    } else {
        let s = copies(&map)?;
        println!(
            "| mapped file, registered read-only | refused: {r:?} | pageable: {} |",
            gbps(map.len(), s)
        );
    }
    drop(map);

    // pread into two staging buffers by `threads` readers, each copied while the other fills.
    unsafe { result::free_host(pinned as *mut std::ffi::c_void) }?;
    let staging: Vec<*mut u8> = (0..2)
        .map(|_| unsafe { result::malloc_host(CHUNK, 0) }.map(|p| p as *mut u8))
        .collect::<Result<_, _>>()?;
    for threads in [1usize, 4, 8] {
        let t = Instant::now();
        for (k, offset) in (0..size).step_by(CHUNK).enumerate() {
            let buf = staging[k % 2];
            // The copy out of this buffer two chunks ago is done: the stream is in order and
            // each chunk's copy is synchronized below before the buffer is refilled.
            let part = CHUNK / threads;
            std::thread::scope(|s| {
                for i in 0..threads {
                    let b = buf as usize + i * part;
                    let f = &file;
                    s.spawn(move || {
                        let dst = unsafe { std::slice::from_raw_parts_mut(b as *mut u8, part) };
                        f.read_exact_at(dst, (offset + i * part) as u64)
                            .expect("reading the file");
                    });
                }
            });
            stream.synchronize()?;
            let src = unsafe { std::slice::from_raw_parts(buf, CHUNK) };
            stream.memcpy_htod(src, &mut dev.slice_mut(..CHUNK))?;
        }
        stream.synchronize()?;
        println!(
            "| pread by {threads} thread(s) into page-locked staging | | {} |",
            gbps(size, t.elapsed().as_secs_f64())
        );
    }
    for p in staging {
        unsafe { result::free_host(p as *mut std::ffi::c_void) }?;
    }
    std::fs::remove_file(&path)?;
    Ok(())
}
