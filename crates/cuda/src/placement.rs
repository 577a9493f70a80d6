//! A GPU's placement plans: what this backend can run, and the facts of the card it was opened
//! on, handed to the one cost model (`zkforge_groth16::prover::placement`). `Gpu::on_device`
//! follows the plan; the engine reads it to size the key's host form, logs it when the key
//! loads, and /status shows it. Built without the `cuda` feature too, so that CI checks the
//! decisions on a machine without a GPU.

use zkforge_groth16::prover::placement::{
    Choices, Item, KeyPlacement, NoPlacement, Placement, PlacementInputs, QueryPoints,
    ResidentTimes, WorkingSet,
};
use zkforge_groth16::{EvaluationSite, PartitionPlan, QueryLengths, Scalar};

use crate::options::Residency;

/// Host-to-device copy rates of one GPU, bytes a second, measured when it is opened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CopyRates {
    /// From page-locked memory: the witness's buffers, and a streamed key's points.
    pub pinned: f64,
    /// From pageable memory (a key the engine could not page-lock is copied at this rate).
    pub pageable: f64,
}

/// What a plan on one GPU is made from besides the key.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuFacts {
    /// Device bytes the backend may use (VRAM free at start less `gpu.vram_margin`).
    pub budget: u64,
    pub rates: CopyRates,
    pub residency: Residency,
    /// Bases per streamed chunk (`gpu.stream_chunk`).
    pub stream_chunk: usize,
    /// The resident set forced by `CudaOptions::resident_items` (checks, benchmarks).
    pub forced: Option<Vec<Item>>,
}

/// One key, cut at its circuit's inputs, as a plan needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyShape {
    pub lengths: QueryLengths,
    /// Public inputs, and those of them that are B-dense (0, 0 before the circuit is known).
    pub inputs: (usize, usize),
    /// Device bytes of the circuit's recorded matrices; None: none known, a, b, c are uploaded.
    pub matrices_bytes: Option<u64>,
    /// Device bytes one partition reserves in each order the backend runs (`Order`).
    pub partition_bytes: OrderBytes,
}

/// How a partition's device work is ordered: the two working sets this backend runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Every scalar of the partition on the device at once, each MSM over its whole query
    /// (backend/partition.rs): the fastest, for a key and matrices resident.
    Resident,
    /// Phase by phase, the fewest vectors live at once, every MSM in chunks over resident or
    /// streamed bases (backend/phased.rs): any placement, a third of the room.
    Phased,
}

impl Order {
    /// In the order of the model's working sets.
    const ALL: [Order; 2] = [Order::Resident, Order::Phased];

    /// The order a plan's working set is.
    pub fn of(plan: &Placement) -> Self {
        Self::ALL[plan.working_set]
    }
}

/// Device bytes of one partition in each order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderBytes {
    pub resident: u64,
    pub phased: u64,
}

impl OrderBytes {
    pub fn of(&self, order: Order) -> u64 {
        match order {
            Order::Resident => self.resident,
            Order::Phased => self.phased,
        }
    }
}

impl KeyShape {
    /// Device bytes of the key's aux-side bases (the input-side prefixes stay on the host).
    pub fn bases_bytes(&self) -> u64 {
        self.points().bytes()
    }

    fn points(&self) -> QueryPoints {
        QueryPoints::aux_side(&self.lengths, self.inputs.0, self.inputs.1)
    }
}

/// The placements this backend runs, by `residency`: in `auto` any of the key's queries and
/// the matrices resident (the rest streamed), in `vram` all of them, in `host` none of the
/// queries; or the one set `forced`. Up to two partitions in flight, each making its own
/// passes over streamed chunks.
fn choices(residency: Residency, forced: Option<&Vec<Item>>) -> Choices {
    let everything = Item::ALL.to_vec();
    Choices {
        resident_sets: match (residency, forced) {
            (_, Some(set)) => vec![set.clone()],
            (Residency::Auto, None) => Vec::new(),
            (Residency::Vram, None) => vec![everything],
            (Residency::Host, None) => vec![vec![Item::Matrices], vec![]],
        },
        max_in_flight: 2,
        shared_passes: false,
    }
}

/// The model's inputs for `key` on a GPU with `facts`.
pub fn inputs(facts: &GpuFacts, key: &KeyShape) -> PlacementInputs {
    let site = match key.matrices_bytes {
        Some(_) => EvaluationSite::Device,
        None => EvaluationSite::Host,
    };
    let partition = PartitionPlan::new(&key.lengths, site);
    // What crosses PCIe for a partition whatever the placement: its aux assignment and
    // inputs, and a, b, c where the device does not compute them.
    let abc = match site {
        EvaluationSite::Device => 0,
        _ => 3 * partition.domain,
    };
    let scalar = std::mem::size_of::<Scalar>() as u64;
    let uploaded = (partition.aux + partition.inputs + abc) as u64 * scalar;
    let points = key.points();
    let working_set = |order| match order {
        Order::Resident => WorkingSet {
            name: "every scalar resident",
            peak_bytes: key.partition_bytes.resident,
            extra_h2d_bytes: 0,
            streams_items: false,
        },
        // The aux crosses again while H's MSM runs (it is dropped for the h step).
        Order::Phased => WorkingSet {
            name: "phased",
            peak_bytes: key.partition_bytes.phased,
            extra_h2d_bytes: partition.aux as u64 * scalar,
            streams_items: true,
        },
    };
    PlacementInputs {
        vram_budget: facts.budget,
        witness_bytes_per_s: facts.rates.pinned,
        // The engine page-locks what a plan streams (KeyPlacement::pin_key).
        stream_bytes_per_s: facts.rates.pinned,
        queries: points,
        // A recording streamed or not: with none, there are no matrices to place.
        matrices_bytes: key.matrices_bytes.unwrap_or(0),
        witness_bytes: uploaded,
        working_sets: Order::ALL.map(working_set).to_vec(),
        kernels: ResidentTimes::scaled(&points, partition.domain as u64),
        stream_chunk_bytes: facts.stream_chunk_bytes(),
        // The chunk buffers are part of the phased order's peak.
        stream_buffer_bytes: 0,
        partitions_per_proof: 1,
        choices: choices(facts.residency, facts.forced.as_ref()),
    }
}

impl GpuFacts {
    /// Bytes of one streamed chunk: `stream_chunk` G1 points.
    pub fn stream_chunk_bytes(&self) -> u64 {
        (self.stream_chunk * 96) as u64
    }
}

/// Where `key` goes on a GPU with `facts`, or what each placement would need.
pub fn plan(facts: &GpuFacts, key: &KeyShape) -> Result<Placement, NoPlacement> {
    inputs(facts, key).plan()
}

/// What the engine is told of a key from each device's plan: it stays in its file when every
/// plan keeps it resident (uploaded through `staging_bytes` of page-locked staging a GPU), and
/// what any plan streams is page-locked in host memory, or, where that does not fit the host,
/// read from the file through `file_staging_bytes` more a GPU.
pub fn key_placement(
    devices: Vec<Placement>,
    staging_bytes: u64,
    file_staging_bytes: u64,
) -> KeyPlacement {
    let key_in_file = devices.iter().all(Placement::keeps_key_resident);
    let streams = |i| devices.iter().any(|p| p.streamed.contains(&i));
    let gpus = devices.len() as u64;
    KeyPlacement {
        key_in_file,
        pin_key: Item::QUERIES.into_iter().any(streams),
        pin_matrices: streams(Item::Matrices),
        host_overhead_bytes: if key_in_file { staging_bytes * gpus } else { 0 },
        file_streaming_bytes: Some((staging_bytes + file_staging_bytes) * gpus),
        devices,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    /// A 32 GiB PoRep key's lengths.
    pub(crate) fn porep_32g_lengths() -> QueryLengths {
        QueryLengths {
            ic: 328,
            h: (1 << 27) - 1,
            l: 130_169_893,
            a: 129_779_711,
            b_g1: 33_063_482,
            b_g2: 33_063_482,
        }
    }

    /// A 32 GiB PoRep key as the backend sizes it: a partition reserving 29.94 GiB in the
    /// resident order (all its scalars and the largest MSM's scratch) and 12.06 GiB phased
    /// (backend/phased.rs checks that figure), 6.84 GiB of matrices.
    fn porep_32g() -> KeyShape {
        KeyShape {
            lengths: porep_32g_lengths(),
            inputs: (328, 328),
            matrices_bytes: Some(6_840 * GIB / 1000),
            partition_bytes: OrderBytes {
                resident: 29_940 * GIB / 1000,
                phased: 12 * GIB + (64 << 20),
            },
        }
    }

    /// A card with `free_gib` free at start (the budget: less the 2 GiB margin), a PCIe 5 link.
    fn card(free_gib: u64, residency: Residency) -> GpuFacts {
        GpuFacts {
            budget: (free_gib - 2) * GIB,
            rates: CopyRates {
                pinned: 55.4e9,
                pageable: 6.3e9,
            },
            residency,
            stream_chunk: 1 << 23,
            forced: None,
        }
    }

    #[test]
    fn the_full_card_keeps_the_key_resident_with_two_partitions_as_before() {
        let p = plan(&card(141, Residency::Auto), &porep_32g()).unwrap();
        assert!(p.keeps_key_resident(), "{p}");
        assert_eq!(Order::of(&p), Order::Resident, "{p}");
        assert_eq!(p.partitions_in_flight, 2, "{p}");
        assert_eq!(p.h2d_bytes_per_partition, 32 * (130_169_893 + 328));
    }

    #[test]
    fn every_card_from_16_gib_gets_a_phased_plan_that_fits() {
        // 16 and 24 GiB hold one phased partition (12.06 GiB) beside what stays resident.
        for (free, matrices_resident, in_flight) in [(16, false, 1), (24, true, 1), (48, true, 1)] {
            let facts = card(free, Residency::Auto);
            let p = plan(&facts, &porep_32g()).unwrap();
            assert_eq!(Order::of(&p), Order::Phased, "{free} GiB: {p}");
            assert!(p.vram_bytes <= facts.budget, "{free} GiB: {p}");
            assert_eq!(
                p.resident.contains(&Item::Matrices),
                matrices_resident,
                "{free} GiB: {p}"
            );
            assert_eq!(p.partitions_in_flight, in_flight, "{free} GiB: {p}");
            // Within what resolves issue 35 at 55 GB/s (35, 25, 20 s a proof of 10 partitions).
            let bar = match free {
                16 => 3.5,
                24 => 2.5,
                _ => 2.0,
            };
            assert!(p.gpu_s_per_partition <= bar, "{free} GiB: {p}");
        }
        // At 48 GiB some queries stay resident: the ones whose copies cost most beyond their
        // kernels (L and A: 0/1 scalars, short MSMs).
        let p = plan(&card(48, Residency::Auto), &porep_32g()).unwrap();
        assert!(
            p.resident.contains(&Item::L) || p.resident.contains(&Item::A),
            "{p}"
        );
    }

    #[test]
    fn a_slower_link_costs_more_and_still_fits() {
        for free in [16, 24, 48] {
            let fast = plan(&card(free, Residency::Auto), &porep_32g()).unwrap();
            let pcie4 = GpuFacts {
                rates: CopyRates {
                    pinned: 25e9,
                    pageable: 6.3e9,
                },
                ..card(free, Residency::Auto)
            };
            let slow = plan(&pcie4, &porep_32g()).unwrap();
            assert!(
                slow.gpu_s_per_partition > fast.gpu_s_per_partition,
                "{slow} / {fast}"
            );
            assert!(slow.vram_bytes <= pcie4.budget);
        }
    }

    #[test]
    fn a_12_gib_card_is_refused_with_what_each_placement_needs() {
        let msg = plan(&card(12, Residency::Auto), &porep_32g())
            .unwrap_err()
            .to_string();
        for part in [
            "44.11 GiB of bases",
            "6.84 GiB of matrices",
            "partitions of 12.06 GiB each",
            "12.06 GiB with everything streamed from host memory",
            "budget is 10.00 GiB",
        ] {
            assert!(msg.contains(part), "{part:?} missing: {msg}");
        }
        // params_residency = "vram" on a 24 GiB card: only the resident need is named.
        let msg = plan(&card(24, Residency::Vram), &porep_32g())
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("with everything resident") && !msg.contains("streamed"),
            "{msg}"
        );
    }

    #[test]
    fn host_residency_keeps_no_query_resident() {
        let p = plan(&card(141, Residency::Host), &porep_32g()).unwrap();
        assert!(Item::QUERIES.iter().all(|i| p.streamed.contains(i)), "{p}");
        assert_eq!(Order::of(&p), Order::Phased);
    }

    #[test]
    fn the_engine_pins_what_any_device_streams() {
        let full = plan(&card(141, Residency::Auto), &porep_32g()).unwrap();
        let small = plan(&card(16, Residency::Auto), &porep_32g()).unwrap();
        let k = key_placement(vec![full.clone()], 1 << 20, 1 << 21);
        assert!(k.key_in_file && !k.pin_key && !k.pin_matrices);
        assert_eq!(k.host_overhead_bytes, 1 << 20);
        let k = key_placement(vec![full, small], 1 << 20, 1 << 21);
        assert!(!k.key_in_file && k.pin_key && k.pin_matrices);
        assert_eq!(k.host_overhead_bytes, 0);
        assert!(!k.streams_from_file());
        // Where the decoded key does not fit the host: read from the file through staging
        // for the upload and for the chunks, on each of the two GPUs; the matrices are still
        // page-locked.
        let f = k.streaming_from_file().unwrap();
        assert!(f.key_in_file && !f.pin_key && f.pin_matrices && f.streams_from_file());
        assert_eq!(f.host_overhead_bytes, 2 * (1 << 20) + 2 * (1 << 21));
    }

    /// Prints the plans of docs/perf.md's table: `cargo test --release -p zkforge-cuda --lib
    /// plans_table -- --ignored --nocapture`.
    #[test]
    #[ignore = "prints docs/perf.md's table of this backend's plans"]
    fn plans_table() {
        println!("| VRAM free | pinned link | s/proof (10 partitions) | plan |");
        println!("|---|---|---|---|");
        for free in [12, 16, 24, 48, 80, 141] {
            for pinned in [55.4e9, 25.0e9] {
                let facts = GpuFacts {
                    rates: CopyRates {
                        pinned,
                        pageable: 6.3e9,
                    },
                    ..card(free, Residency::Auto)
                };
                let (s, plan) = match plan(&facts, &porep_32g()) {
                    Ok(p) => (
                        format!("{:.1}", 10.0 * p.gpu_s_per_partition),
                        format!("{:?}: {p}", Order::of(&p)),
                    ),
                    Err(e) => ("—".into(), format!("refused: {e}")),
                };
                println!("| {free} GiB | {:.1} GB/s | {s} | {plan} |", pinned / 1e9);
            }
        }
    }
}
