//! How one MSM is cut before any launch: window width (a cost model), windows per batch,
//! accumulation chunks, and the device bytes all of it takes (which the VRAM budget reserves).

use super::{Curve, G1, G2};
use crate::host::{Accumulate, MsmOptions};

/// Scalars are below r < 2^255, so 255 bits cover every plain digit; signed digits need one
/// more window bit for the last carry (`windows`).
const SCALAR_BITS: u32 = 255;
/// Buckets per segment in the parallel bucket reduction.
const SEG_BITS: u32 = 5;
/// Most sorted entries one accumulation thread adds (its chunk K), unless the fullest bucket
/// needs more (K ≥ √fullest keeps the chain of chunk heads in bucket_reduce short) ...
pub(super) const CHUNK: u32 = 256;
/// ... and fewest, so small batches still spread over about this many threads.
const MIN_CHUNK: u32 = 16;
const TARGET_THREADS: u64 = 1 << 17;
/// Cap on (window, point) index entries per batch of windows: 2 GiB of u32 (four windows of a
/// 2^27-point MSM per batch: each batch re-reads every scalar to scatter its entries).
const MAX_IDX_ENTRIES: u64 = 1 << 29;
/// Device bytes of bucket sums and chunk heads per batch of windows.
const MAX_BUCKET_BYTES: u64 = 2 << 30;
/// Widest window the cost model may pick (2^21 bucket slots a window when signed).
const MAX_WINDOW_BITS: u32 = 22;
/// Cost of one bucket slot in units of one point entry (its addition, sort and scatter): the
/// slot's two full additions in the running sum and its segment's multiple, at the reduction's
/// lower occupancy. Fitted to the H200 profile at 2^27 (docs/gpu.md: 5.2 ns a slot, 0.56 ns an
/// entry), which makes c = 20 signed the choice there (911.8 ms; c = 22: 1042.6).
const BUCKET_WEIGHT: u64 = 9;
/// Batch-affine accumulation: threads per block, and most chunks one thread walks side by side
/// (the kernel keeps per-chunk bits in 64-bit masks).
pub(super) const AFFINE_BLOCK: u64 = 128;
const AFFINE_MAX_SLOTS: u64 = 64;
/// Least chunk `affine_chunk_len` shortens to.
const AFFINE_MIN_CHUNK: u32 = 64;

/// The windows of one MSM over `tail` scalars other than 0 and 1.
pub(super) struct WindowPlan {
    /// Window width in bits.
    pub c: u32,
    /// log2 of the bucket slots per window.
    pub slot_bits: u32,
    pub windows: u32,
    /// Windows whose buckets one batch fills.
    pub per_batch: u32,
}

impl WindowPlan {
    pub fn new(tail: u64, point_bytes: u64, opts: &MsmOptions) -> Self {
        let c = window_bits(tail, opts);
        Self {
            c,
            slot_bits: slot_bits(c, opts.signed),
            windows: windows(c, opts.signed),
            per_batch: windows_per_batch(tail, c, point_bytes, opts),
        }
    }

    /// Bucket slots of a full batch.
    pub fn batch_slots(&self) -> u64 {
        (self.per_batch as u64) << self.slot_bits
    }

    /// log2 of the buckets per segment of the bucket reduction.
    pub fn segment_bits(&self) -> u32 {
        SEG_BITS.min(self.slot_bits)
    }
}

/// Windows of c bits: plain digits cover 255 bits; signed digits 256, so that the top window
/// has at most c−1 bits and its digit (with the carry from below) fits 2^(c−1) slots.
fn windows(c: u32, signed: bool) -> u32 {
    if signed {
        (SCALAR_BITS + 1).div_ceil(c)
    } else {
        SCALAR_BITS.div_ceil(c)
    }
}

/// Bucket slots per window: |digit| − 1 for signed digits, digit − 1 for plain ones.
fn slot_bits(c: u32, signed: bool) -> u32 {
    c - signed as u32
}

/// Window width minimising tail·windows (every window adds every tail point once) +
/// BUCKET_WEIGHT·slots (bucket reduction) + a serial-chain penalty. The top window holds only
/// 255 − (W−1)·c bits, so its few buckets hold many points each; chunked accumulation splits
/// them, leaving a chain of about 2·√(fullest bucket) additions, weighed like a full wave of
/// parallel ones (~32K threads in flight). (c = 18 plain once made one thread add a third of all
/// points at 2^24, 44 s, before the work was split.)
fn window_bits(tail: u64, opts: &MsmOptions) -> u32 {
    if let Some(c) = opts.window_bits {
        return c.clamp(2 + opts.signed as u32, MAX_WINDOW_BITS);
    }
    (2 + opts.signed as u32..=MAX_WINDOW_BITS)
        .min_by_key(|&c| {
            let w = windows(c, opts.signed) as u64;
            let top_bits = SCALAR_BITS
                .saturating_sub((w as u32 - 1) * c)
                .min(slot_bits(c, opts.signed));
            let fullest = (tail >> top_bits)
                .max(tail >> slot_bits(c, opts.signed))
                .max(1);
            let chain = 2 * (fullest as f64).sqrt() as u64;
            tail * w + BUCKET_WEIGHT * w * (1u64 << slot_bits(c, opts.signed)) + (1 << 15) * chain
        })
        .unwrap()
}

/// Windows per batch: bounded by the index entries and the bucket memory of a batch.
fn windows_per_batch(tail: u64, c: u32, point_bytes: u64, opts: &MsmOptions) -> u32 {
    let nwin = windows(c, opts.signed);
    let per_window = point_bytes * ((1u64 << slot_bits(c, opts.signed)) + tail / CHUNK as u64);
    let by_idx = (MAX_IDX_ENTRIES / tail.max(1)).max(1);
    let by_mem =
        (MAX_BUCKET_BYTES.saturating_sub(point_bytes * TARGET_THREADS) / per_window).max(1);
    opts.windows_per_batch
        .map(u64::from)
        .unwrap_or(by_idx.min(by_mem))
        .clamp(1, nwin as u64) as u32
}

/// Accumulation chunk for a batch of `entries` sorted entries whose fullest bucket holds
/// `fullest`: CHUNK, less for small batches (down to MIN_CHUNK), more for a very full bucket,
/// and at least `opts.min_chunk`.
pub(super) fn chunk_len(entries: u64, fullest: u32, opts: &MsmOptions) -> u32 {
    let k = least_chunk(entries).max(opts.min_chunk);
    k.max((fullest as f64).sqrt() as u32)
}

/// The chunk `chunk_len` never goes below for a batch of `entries`.
fn least_chunk(entries: u64) -> u32 {
    (entries / TARGET_THREADS).clamp(MIN_CHUNK as u64, CHUNK as u64) as u32
}

/// Batch-affine's chunk: `chunk_len`'s, shortened until the `resident` threads walk
/// `opts.affine_slots` chunks each (the step's inversion shared by more additions), never
/// below AFFINE_MIN_CHUNK (each chunk costs a bucket search and a head to fold), √fullest (so
/// no bucket has more heads than that) or `opts.min_chunk`. affine_slots 0 keeps
/// `chunk_len`'s.
pub(super) fn affine_chunk_len(
    entries: u64,
    fullest: u32,
    resident: u64,
    opts: &MsmOptions,
) -> u32 {
    let k = chunk_len(entries, fullest, opts);
    if opts.affine_slots == 0 {
        return k;
    }
    let slots = (opts.affine_slots as u64).min(AFFINE_MAX_SLOTS);
    let short = entries
        .div_ceil(resident.max(1) * slots)
        .max(AFFINE_MIN_CHUNK as u64);
    k.min(short as u32)
        .max(opts.min_chunk)
        .max((fullest as f64).sqrt() as u32)
}

/// Most chunks either accumulation cuts a batch of `entries` sorted entries, or of fewer,
/// into: the least chunk is ⌊entries/TARGET_THREADS⌋ in the middle range (at most 1/16 more
/// chunks than TARGET_THREADS from its rounding), else MIN_CHUNK, CHUNK or AFFINE_MIN_CHUNK,
/// which grow with the entries.
fn max_chunks(entries: u64) -> u64 {
    let least = least_chunk(entries).min(AFFINE_MIN_CHUNK) as u64;
    entries
        .div_ceil(least)
        .max(TARGET_THREADS + TARGET_THREADS / 8)
}

/// Chunk heads a batch of `entries` sorted entries, or of fewer, can produce (one per chunk).
pub(super) fn max_heads(entries: u64) -> u64 {
    max_chunks(entries) + 2
}

/// Chunks one thread walks side by side in batch-affine accumulation of `chunks` chunks, and
/// the threads of the launch (whole blocks): as many slots as it takes to fit the `resident`
/// threads the GPU runs at once, so one wave does it (every thread runs the same steps, so a
/// second, partly filled wave would cost as much as the first).
pub(super) fn affine_launch(chunks: u64, resident: u64) -> (u64, u64) {
    let slots = chunks.div_ceil(resident.max(1)).clamp(1, AFFINE_MAX_SLOTS);
    let threads = chunks.div_ceil(slots).next_multiple_of(AFFINE_BLOCK);
    (slots, threads)
}

/// Device bytes of batch-affine chunk state for a batch of `entries` sorted entries, or of
/// fewer, whatever chunk length `affine_chunk_len` picks (never below the least one, so never
/// more chunks than this): per chunk x, y and a prefix product (three coordinate-field
/// elements, a quarter of an XYZZ point each) and two u32, for every slot of the launch (up to
/// a block's worth of slots past the last chunk).
pub(super) fn affine_state_bytes(entries: u64, point_bytes: u64) -> u64 {
    (max_chunks(entries) + AFFINE_BLOCK * AFFINE_MAX_SLOTS) * (3 * point_bytes / 4 + 8)
}

/// Threads a block of the sum of the bases whose scalar is 1, and partials one block of the
/// reduction after it adds up.
pub(super) const ONES_BLOCK: u64 = 128;
pub(super) const ONES_GROUP: u64 = 256;
/// Most threads that sum runs: one wave on the largest GPUs (132 SMs × 2048 threads is 2^18
/// and 8 Ki more), each leaving an XYZZ partial.
const ONES_MAX_THREADS: u64 = 1 << 18;

/// Threads (whole groups) summing a list of `ones` bases: as many as the GPU runs at once
/// (`resident`), never more than the list has entries; and the groups of their partials.
pub(super) fn ones_launch(ones: u64, resident: u64) -> (u64, u64) {
    let threads = resident
        .min(ONES_MAX_THREADS)
        .min(ones)
        .max(1)
        .next_multiple_of(ONES_GROUP);
    (threads, threads / ONES_GROUP)
}

/// Device bytes of the sum of up to `ones` listed bases: the list, a partial a thread and one
/// a group.
pub(super) fn ones_bytes(ones: u64, point_bytes: u64) -> u64 {
    4 * ones + (ONES_MAX_THREADS + ONES_MAX_THREADS / ONES_GROUP) * point_bytes
}

/// Upper bound on the device bytes `Msm::run` allocates for `n` scalars of a curve whose
/// XYZZ point has `xyzz_limbs` u64 limbs, cut as `opts` cut it (mirrors its sizing; the VRAM
/// budget reserves this, so a configured window width or batch is reserved for too).
pub(crate) fn scratch_bytes(n: usize, xyzz_limbs: usize, opts: &MsmOptions) -> u64 {
    let n = n as u64;
    let point = (xyzz_limbs * 8) as u64;
    let plan = WindowPlan::new(n.max(1), point, opts);
    let nwin = plan.windows as u64;
    let slots = 1u64 << plan.slot_bits;
    let wb = plan.per_batch as u64;
    let nb = plan.batch_slots();
    let heads = max_heads(n * wb);
    let segs = nb >> plan.segment_bits();
    let affine = match opts.accumulate {
        Accumulate::Auto if xyzz_limbs == G1::XYZZ_LIMBS => G1::AFFINE,
        Accumulate::Auto => G2::AFFINE,
        Accumulate::Xyzz => false,
        Accumulate::Affine => true,
    };
    // The converted scalars live through the whole MSM; the buckets' buffers are freed
    // before the sum of the ones allocates its own.
    let buckets = 4 * nwin * slots
        + 4 * n * wb
        + 12 * nb
        + (nb + heads + 2 * segs) * point
        + if affine {
            affine_state_bytes(n * wb, point)
        } else {
            0
        };
    32 * n + buckets.max(ones_bytes(n, point)) + (4 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_choice_avoids_narrow_top_windows() {
        for signed in [false, true] {
            let opts = MsmOptions {
                signed,
                window_bits: None,
                ..MsmOptions::default()
            };
            for log in [10u32, 16, 20, 22, 24, 26, 27] {
                let c = window_bits(1 << log, &opts);
                let w = windows(c, signed);
                let top = SCALAR_BITS.saturating_sub((w - 1) * c);
                assert!(
                    log < 12 || top + 9 >= c,
                    "2^{log} signed={signed}: c={c} leaves {top} top bits"
                );
            }
        }
    }

    #[test]
    fn signed_windows_hold_the_last_carry() {
        for c in 3..=MAX_WINDOW_BITS {
            let w = windows(c, true);
            // The top window's digit is below 2^(255 − (w−1)c) plus a carry: it must fit the
            // 2^(c−1) slots without a window above it.
            assert!(SCALAR_BITS - (w - 1) * c < c, "c={c}");
        }
    }

    #[test]
    fn affine_launch_covers_every_chunk() {
        for chunks in [1u64, 5, 127, 128, 129, 50_000, 1 << 21, 1 << 23] {
            for resident in [128u64, 50_688, 67_584] {
                let (slots, threads) = affine_launch(chunks, resident);
                assert!(slots * threads >= chunks && threads % AFFINE_BLOCK == 0);
                assert!(slots * threads <= chunks + AFFINE_BLOCK * AFFINE_MAX_SLOTS);
                assert!(slots <= AFFINE_MAX_SLOTS);
            }
        }
    }

    #[test]
    fn affine_chunks_give_the_slots_asked_for() {
        // The H MSM's batch of 4 windows of 2^27 on an H200 at 4 blocks an SM.
        let (entries, resident) = (1u64 << 29, 67_584);
        let slots = |affine_slots| {
            let opts = MsmOptions {
                affine_slots,
                ..MsmOptions::default()
            };
            let k = affine_chunk_len(entries, 300, resident, &opts);
            let (slots, threads) = affine_launch(entries.div_ceil(k as u64), resident);
            assert!(threads <= resident, "{affine_slots}: one wave");
            (k, slots)
        };
        assert_eq!(slots(0), (CHUNK, 32));
        assert_eq!(slots(32), (249, 32));
        assert_eq!(slots(64), (125, 64));
        // Never longer than the XYZZ chunk, never below AFFINE_MIN_CHUNK nor √fullest: the
        // H MSM's top window alone (2^27 entries in 2^15 buckets) gets 64, 31 slots.
        let opts = MsmOptions::default();
        assert_eq!(affine_chunk_len(1 << 31, 0, resident, &opts), CHUNK);
        assert_eq!(
            affine_chunk_len(1 << 26, 0, resident, &opts),
            AFFINE_MIN_CHUNK
        );
        assert_eq!(affine_chunk_len(1 << 27, 4200, resident, &opts), 64);
        assert_eq!(affine_chunk_len(1 << 29, 1 << 20, resident, &opts), 1 << 10);
    }

    #[test]
    fn chunks_fit_the_heads_and_state_reserved_for_a_larger_batch() {
        let cuts = [0u32, 32, 64].map(|affine_slots| MsmOptions {
            affine_slots,
            ..MsmOptions::default()
        });
        let sizes = [
            1u64,
            100,
            1 << 20,
            (17 << 17) - 1,
            17 << 17,
            1 << 24,
            1 << 29,
            3 << 28,
        ];
        for (i, &full) in sizes.iter().enumerate() {
            for &entries in &sizes[..=i] {
                for resident in [128u64, 67_584, 270_336] {
                    for opts in &cuts {
                        let xyzz = entries.div_ceil(chunk_len(entries, 0, opts) as u64);
                        let k = affine_chunk_len(entries, 0, resident, opts);
                        let (slots, threads) = affine_launch(entries.div_ceil(k as u64), resident);
                        assert!(xyzz.max(entries.div_ceil(k as u64)) + 2 <= max_heads(full));
                        let state = slots * threads * (3 * 192 / 4 + 8);
                        assert!(
                            state <= affine_state_bytes(full, 192),
                            "{entries} in {full}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn ones_launch_covers_the_list_within_its_reservation() {
        for ones in [1u64, 255, 256, 257, 4097, 1 << 20, 58_566_866, 1 << 27] {
            for resident in [128u64, 50_688, 67_584, 270_336] {
                let (threads, groups) = ones_launch(ones, resident);
                assert!(threads % ONES_GROUP == 0 && threads % ONES_BLOCK == 0);
                assert_eq!(groups * ONES_GROUP, threads);
                assert!(threads <= ONES_MAX_THREADS && threads < ones + ONES_GROUP);
                for point in [192u64, 384] {
                    let used = 4 * ones + (threads + groups) * point;
                    assert!(used <= ones_bytes(ones, point), "{ones} {resident} {point}");
                }
            }
        }
        // One wave of the G1 kernel at 4 blocks an SM on 132 SMs sums PoRep's 58.6 M ones.
        assert_eq!(ones_launch(58_566_866, 132 * 4 * 128), (67_584, 264));
    }

    #[test]
    fn forced_batch_affine_is_reserved_for() {
        // G2 accumulates in XYZZ unless asked: asked, its chunk state must be reserved too.
        let forced = MsmOptions {
            accumulate: Accumulate::Affine,
            ..MsmOptions::default()
        };
        let n = 1 << 20;
        let state = affine_state_bytes(n as u64, 384);
        let xyzz = scratch_bytes(n, 48, &MsmOptions::default());
        assert!(scratch_bytes(n, 48, &forced) >= xyzz + state);
    }

    #[test]
    fn batches_fit_their_buffers() {
        for log in [10u32, 20, 24, 26, 27] {
            let n = 1u64 << log;
            for point in [192u64, 384] {
                let opts = MsmOptions::default();
                let c = window_bits(n, &opts);
                let wb = windows_per_batch(n, c, point, &opts) as u64;
                assert!(wb * n <= MAX_IDX_ENTRIES.max(n));
                assert!(scratch_bytes(n as usize, point as usize / 8, &opts) < 16 << 30);
            }
        }
    }

    #[test]
    fn options_override_the_cut() {
        let n = 1u64 << 20;
        let opts = MsmOptions {
            window_bits: Some(9),
            windows_per_batch: Some(3),
            min_chunk: 200,
            ..MsmOptions::default()
        };
        let plan = WindowPlan::new(n, 192, &opts);
        assert_eq!((plan.c, plan.per_batch), (9, 3));
        assert_eq!(chunk_len(1000, 1, &opts), 200);
        assert_eq!(chunk_len(1000, 1, &MsmOptions::default()), MIN_CHUNK);
    }
}
