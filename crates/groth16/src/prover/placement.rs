//! The placement cost model, the one owner of where a key and its partitions go on a GPU:
//! from the VRAM it has, the host-to-device copy rates measured on it, the key's query
//! sizes, the partition's working sets and the kernel time of a partition whose key is
//! resident, which of the five queries (and the recorded matrices) stay resident, which are
//! streamed from host memory, how many partitions are in flight and whether they share each
//! pass over a streamed chunk; and what that costs: GPU seconds a partition, bytes over PCIe
//! a partition, seconds a proof. A backend gives it the placements it can run ([`Choices`])
//! and follows the plan; the engine reads it ([`KeyPlacement`]) to size the key's host form.
//!
//! The model, per partition, with w the witness's copy rate and r a streamed chunk's:
//! - a resident item costs its kernel time c; a streamed one max(c, bytes/r) plus one chunk's
//!   copy before its first kernel (chunks double-buffered, so a streamed MSM computes what a
//!   resident one does); with k partitions sharing each pass, bytes/(k·r) and the fill
//!   shared;
//! - one partition in flight: the kernel side, plus the witness's upload (and whatever the
//!   working set uploads again) at w, which nothing overlaps;
//! - two in flight: each one's uploads overlap the other's kernels, so a partition takes the
//!   longer of its kernel side and all its bytes over the link.
//!
//! Every choice is tried (resident sets × working sets × partitions in flight × sharing): the
//! cheapest that fits the VRAM wins; ties go to fewer bytes over PCIe, then to fewer items
//! streamed. Largest benefit first
//! falls out of it: the queries whose copy costs most beyond their kernels (L and A, nearly
//! all 0/1 scalars, 12.5 GB each) are kept before H, whose 775 ms of kernels hide its copy at
//! 25 GB/s already.

use std::fmt;

use crate::QueryLengths;

/// What can be resident or streamed: the key's five aux-side queries and the matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    H,
    L,
    A,
    BG1,
    BG2,
    /// The recorded constraint matrices (streamed: read chunk by chunk by the products).
    Matrices,
}

impl Item {
    pub const ALL: [Item; 6] = [
        Item::H,
        Item::L,
        Item::A,
        Item::BG1,
        Item::BG2,
        Item::Matrices,
    ];

    /// The key's five queries: what a resident key holds.
    pub const QUERIES: [Item; 5] = [Item::H, Item::L, Item::A, Item::BG1, Item::BG2];

    pub fn name(self) -> &'static str {
        match self {
            Item::H => "h",
            Item::L => "l",
            Item::A => "a",
            Item::BG1 => "b_g1",
            Item::BG2 => "b_g2",
            Item::Matrices => "matrices",
        }
    }
}

/// Points in each aux-side query of a key (inputs' prefixes stay on the host).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryPoints {
    pub h: u64,
    pub l: u64,
    pub a: u64,
    pub b_g1: u64,
    pub b_g2: u64,
}

impl QueryPoints {
    /// The aux side of a key of these lengths whose circuit has `n_in` public inputs, `b_in`
    /// of them B-dense (0, 0 before the circuit is known: a few hundred points more).
    pub fn aux_side(lengths: &QueryLengths, n_in: usize, b_in: usize) -> Self {
        Self {
            h: lengths.h as u64,
            l: lengths.l as u64,
            a: lengths.a.saturating_sub(n_in) as u64,
            b_g1: lengths.b_g1.saturating_sub(b_in) as u64,
            b_g2: lengths.b_g2.saturating_sub(b_in) as u64,
        }
    }

    /// Device bytes of all five queries.
    pub fn bytes(&self) -> u64 {
        (self.h + self.l + self.a + self.b_g1) * G1_BYTES + self.b_g2 * G2_BYTES
    }
}

/// Device bytes of a G1 and a G2 base (blst affine).
const G1_BYTES: u64 = 96;
const G2_BYTES: u64 = 192;

/// Kernel seconds of one partition whose key and matrices are resident, by phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidentTimes {
    pub spmv: f64,
    pub ntt: f64,
    pub h: f64,
    pub l: f64,
    pub a: f64,
    pub b_g1: f64,
    pub b_g2: f64,
}

/// The 32 GiB PoRep partition [`ResidentTimes::porep_32g`] was measured on: its aux-side
/// points and its domain.
const POREP_32G: (QueryPoints, u64) = (
    QueryPoints {
        h: (1 << 27) - 1,
        l: 130_169_893,
        a: 129_779_383,
        b_g1: 33_063_154,
        b_g2: 33_063_154,
    },
    1 << 27,
);

impl ResidentTimes {
    /// A 32 GiB PoRep partition on the H200 (docs/perf.md, issue 20 step 9, medians of 60
    /// partitions): spmv 12.0 ms, ntt 279.2 ms, msm 956.8 ms of which H ~775 ms; the other
    /// four MSMs' 181.8 ms split by points, a G2 point weighing three G1 points (they were
    /// not timed apart through the daemon).
    fn measured() -> Self {
        let rest = 0.1818;
        let weights = [130.17, 129.78, 33.06, 3.0 * 33.06];
        let share = |w: f64| rest * w / weights.iter().sum::<f64>();
        Self {
            spmv: 0.012,
            ntt: 0.2792,
            h: 0.775,
            l: share(weights[0]),
            a: share(weights[1]),
            b_g1: share(weights[2]),
            b_g2: share(weights[3]),
        }
    }

    /// The measured 32 GiB PoRep partition, scaled so that its phases add up to `kernel_s`.
    pub fn porep_32g(kernel_s: f64) -> Self {
        Self::measured().scaled_by(kernel_s / Self::measured().total())
    }

    /// Any key's partition, each phase of the measured PoRep partition scaled by its size:
    /// an MSM by its points, the NTT and the products by the domain. The H200's rates: on a
    /// slower card every kernel is slower, copies hide behind them better, and the plan errs
    /// towards keeping more resident.
    pub fn scaled(points: &QueryPoints, domain: u64) -> Self {
        let (p, d) = POREP_32G;
        let m = Self::measured();
        let by = |x: u64, of: u64| x as f64 / of as f64;
        Self {
            spmv: m.spmv * by(domain, d),
            ntt: m.ntt * by(domain, d),
            h: m.h * by(points.h, p.h),
            l: m.l * by(points.l, p.l),
            a: m.a * by(points.a, p.a),
            b_g1: m.b_g1 * by(points.b_g1, p.b_g1),
            b_g2: m.b_g2 * by(points.b_g2, p.b_g2),
        }
    }

    fn scaled_by(&self, k: f64) -> Self {
        Self {
            spmv: self.spmv * k,
            ntt: self.ntt * k,
            h: self.h * k,
            l: self.l * k,
            a: self.a * k,
            b_g1: self.b_g1 * k,
            b_g2: self.b_g2 * k,
        }
    }

    pub fn total(&self) -> f64 {
        self.spmv + self.ntt + self.h + self.l + self.a + self.b_g1 + self.b_g2
    }

    fn of(&self, item: Item) -> f64 {
        match item {
            Item::H => self.h,
            Item::L => self.l,
            Item::A => self.a,
            Item::BG1 => self.b_g1,
            Item::BG2 => self.b_g2,
            Item::Matrices => self.spmv,
        }
    }
}

/// One way to order a partition's device work: the device bytes live at its peak (the key's
/// resident items and stream buffers aside), and the bytes it copies to the device beyond the
/// witness (buffers dropped and uploaded again, or parked in host memory).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkingSet {
    pub name: &'static str,
    pub peak_bytes: u64,
    pub extra_h2d_bytes: u64,
    /// The order runs with items streamed; false: only with every item resident (it holds
    /// no room for chunks, or reads a query's bases in place).
    pub streams_items: bool,
}

/// The placements a backend can run, which the model picks among.
#[derive(Clone, Debug, PartialEq)]
pub struct Choices {
    /// The resident sets it can run, each the items kept in VRAM; empty: any subset.
    pub resident_sets: Vec<Vec<Item>>,
    /// Most partitions in flight on one device.
    pub max_in_flight: u32,
    /// Whether the partitions in flight can share each pass over a streamed chunk.
    pub shared_passes: bool,
}

impl Choices {
    /// Every placement the model knows.
    pub fn any() -> Self {
        Self {
            resident_sets: Vec::new(),
            max_in_flight: 2,
            shared_passes: true,
        }
    }

    fn resident_sets(&self) -> Vec<Vec<Item>> {
        if !self.resident_sets.is_empty() {
            return self.resident_sets.clone();
        }
        (0..1u32 << Item::ALL.len())
            .map(|mask| {
                Item::ALL
                    .into_iter()
                    .enumerate()
                    .filter(|(k, _)| mask & (1 << k) != 0)
                    .map(|(_, i)| i)
                    .collect()
            })
            .collect()
    }
}

/// What the model is given.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementInputs {
    /// Device bytes the backend may use: VRAM free at start less the margin.
    pub vram_budget: u64,
    /// Host-to-device rate of the witness's uploads (from page-locked buffers), measured on
    /// this GPU, bytes a second.
    pub witness_bytes_per_s: f64,
    /// Host-to-device rate of a streamed item's chunks, measured on this GPU for the host
    /// memory they are copied from (page-locked, or pageable), bytes a second.
    pub stream_bytes_per_s: f64,
    pub queries: QueryPoints,
    /// The recorded matrices on the device.
    pub matrices_bytes: u64,
    /// Bytes of a partition's witness that cross PCIe whatever the placement (aux, inputs).
    pub witness_bytes: u64,
    /// The partition's working sets the backend can run.
    pub working_sets: Vec<WorkingSet>,
    pub kernels: ResidentTimes,
    /// Bytes of one streamed chunk: copied before its first kernel can start.
    pub stream_chunk_bytes: u64,
    /// Device bytes streaming takes beside the working set (its chunk buffers); 0 where the
    /// chunks live in the working set's room.
    pub stream_buffer_bytes: u64,
    /// Partitions in a proof (10 for PoRep; 1 where the backend does not know).
    pub partitions_per_proof: u32,
    pub choices: Choices,
}

/// The model's decision and prediction.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    pub resident: Vec<Item>,
    pub streamed: Vec<Item>,
    /// Index into the inputs' `working_sets`.
    pub working_set: usize,
    pub partitions_in_flight: u32,
    /// The partitions in flight run their MSMs over each streamed chunk together.
    pub shared_passes: bool,
    /// Device bytes the plan holds at its peak.
    pub vram_bytes: u64,
    pub h2d_bytes_per_partition: u64,
    pub gpu_s_per_partition: f64,
    pub s_per_proof: f64,
    pub partitions_per_proof: u32,
}

impl Placement {
    /// All five of the key's queries stay in VRAM.
    pub fn keeps_key_resident(&self) -> bool {
        Item::QUERIES.iter().all(|i| self.resident.contains(i))
    }
}

/// Nothing fits: what each placement the backend can run needs with one partition in
/// flight, and the budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoPlacement {
    pub bases_bytes: u64,
    pub matrices_bytes: u64,
    /// The leanest working set's peak.
    pub partition_bytes: u64,
    /// Each resident set the backend can run, as words, with the device bytes it needs.
    pub needs: Vec<(String, u64)>,
    pub vram_budget: u64,
}

impl NoPlacement {
    /// The least any placement needs.
    pub fn least_bytes(&self) -> u64 {
        self.needs.iter().map(|(_, b)| *b).min().unwrap_or(0)
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// A resident set in words: "everything resident", "the matrices resident, the key streamed
/// from host memory", "h, l resident, the rest streamed".
fn describe(resident: &[Item]) -> String {
    let names = |items: &[Item]| {
        items
            .iter()
            .map(|i| i.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match resident {
        [] => "everything streamed from host memory".into(),
        _ if Item::ALL.iter().all(|i| resident.contains(i)) => "everything resident".into(),
        [Item::Matrices] => "the matrices resident, the key streamed from host memory".into(),
        _ => format!("{} resident, the rest streamed", names(resident)),
    }
}

impl fmt::Display for NoPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ways: Vec<String> = self
            .needs
            .iter()
            .map(|(how, bytes)| format!("{} with {how}", gib(*bytes)))
            .collect();
        write!(f, "the key's {} of bases", gib(self.bases_bytes))?;
        // Before its first load a key's matrices are not read yet: they are left out.
        if self.matrices_bytes > 0 {
            write!(f, " and {} of matrices", gib(self.matrices_bytes))?;
        }
        write!(
            f,
            ", with partitions of {} each, need {} (one partition in flight); the device's \
             budget is {}",
            gib(self.partition_bytes),
            ways.join(", or "),
            gib(self.vram_budget)
        )
    }
}

impl PlacementInputs {
    /// Device bytes of `item` when resident.
    pub fn bytes(&self, item: Item) -> u64 {
        let q = &self.queries;
        match item {
            Item::H => q.h * G1_BYTES,
            Item::L => q.l * G1_BYTES,
            Item::A => q.a * G1_BYTES,
            Item::BG1 => q.b_g1 * G1_BYTES,
            Item::BG2 => q.b_g2 * G2_BYTES,
            Item::Matrices => self.matrices_bytes,
        }
    }

    /// Whether the working set runs with `resident` (and the rest streamed).
    fn runs(&self, resident: &[Item], working_set: usize) -> bool {
        self.working_sets[working_set].streams_items
            || Item::ALL.iter().all(|i| resident.contains(i))
    }

    /// Device bytes a candidate holds at its peak.
    fn vram(&self, resident: &[Item], working_set: usize, in_flight: u32) -> u64 {
        let streams = Item::ALL.iter().any(|i| !resident.contains(i));
        resident.iter().map(|&i| self.bytes(i)).sum::<u64>()
            + in_flight as u64 * self.working_sets[working_set].peak_bytes
            + if streams { self.stream_buffer_bytes } else { 0 }
    }

    /// The cost of one candidate, or None when it does not fit.
    fn evaluate(
        &self,
        resident: &[Item],
        working_set: usize,
        in_flight: u32,
        shared: bool,
    ) -> Option<Placement> {
        let vram = self.vram(resident, working_set, in_flight);
        if vram > self.vram_budget || !self.runs(resident, working_set) {
            return None;
        }
        let streamed: Vec<Item> = Item::ALL
            .into_iter()
            .filter(|i| !resident.contains(i))
            .collect();
        let ws = &self.working_sets[working_set];
        let (w, r) = (self.witness_bytes_per_s, self.stream_bytes_per_s);
        let sharers = if shared { in_flight as f64 } else { 1.0 };
        let fill = self.stream_chunk_bytes as f64 / r / sharers;
        let streamed_bytes = streamed.iter().map(|&i| self.bytes(i)).sum::<u64>() as f64 / sharers;
        let kernel_side = self.kernels.ntt
            + Item::ALL
                .iter()
                .map(|&i| {
                    let c = self.kernels.of(i);
                    if resident.contains(&i) {
                        c
                    } else {
                        c.max(self.bytes(i) as f64 / r / sharers) + fill
                    }
                })
                .sum::<f64>();
        let own = self.witness_bytes + ws.extra_h2d_bytes;
        let gpu_s = if in_flight == 1 {
            kernel_side + own as f64 / w
        } else {
            kernel_side.max(own as f64 / w + streamed_bytes / r)
        };
        Some(Placement {
            resident: resident.to_vec(),
            streamed,
            working_set,
            partitions_in_flight: in_flight,
            shared_passes: shared,
            vram_bytes: vram,
            h2d_bytes_per_partition: own + streamed_bytes as u64,
            gpu_s_per_partition: gpu_s,
            s_per_proof: gpu_s * self.partitions_per_proof as f64,
            partitions_per_proof: self.partitions_per_proof,
        })
    }

    /// The cheapest plan among the backend's choices that fits, or what each would need.
    pub fn plan(&self) -> Result<Placement, NoPlacement> {
        let sets = self.choices.resident_sets();
        let mut best: Option<Placement> = None;
        for resident in &sets {
            for ws in 0..self.working_sets.len() {
                for in_flight in 1..=self.choices.max_in_flight.max(1) {
                    let share = self.choices.shared_passes && in_flight > 1;
                    for shared in [false, true].into_iter().filter(|&s| !s || share) {
                        let Some(p) = self.evaluate(resident, ws, in_flight, shared) else {
                            continue;
                        };
                        // Ties go to fewer bytes over PCIe, then to fewer items streamed
                        // (an empty item costs nothing either way).
                        let cost = |p: &Placement| {
                            (
                                p.gpu_s_per_partition,
                                p.h2d_bytes_per_partition,
                                p.streamed.len(),
                            )
                        };
                        let better = best.as_ref().is_none_or(|b| cost(&p) < cost(b));
                        if better {
                            best = Some(p);
                        }
                    }
                }
            }
        }
        best.ok_or_else(|| self.no_placement(&sets))
    }

    fn no_placement(&self, sets: &[Vec<Item>]) -> NoPlacement {
        // Each resident set with the leanest working set that runs with it.
        let leanest = |s: &[Item]| {
            (0..self.working_sets.len())
                .filter(|&w| self.runs(s, w))
                .min_by_key(|&w| self.working_sets[w].peak_bytes)
        };
        let mut needs: Vec<(String, u64)> = sets
            .iter()
            .filter_map(|s| Some((describe(s), self.vram(s, leanest(s)?, 1))))
            .collect();
        // With any subset allowed, the extremes say it all.
        if self.choices.resident_sets.is_empty() && !needs.is_empty() {
            needs.sort_by_key(|(_, b)| *b);
            needs = vec![needs[0].clone(), needs[needs.len() - 1].clone()];
            needs.reverse();
        }
        NoPlacement {
            bases_bytes: self.queries.bytes(),
            matrices_bytes: self.matrices_bytes,
            partition_bytes: self
                .working_sets
                .iter()
                .map(|w| w.peak_bytes)
                .min()
                .unwrap_or(0),
            needs,
            vram_budget: self.vram_budget,
        }
    }
}

impl fmt::Display for Placement {
    /// One line for a start-up log: "resident h, b_g2; streamed l, a, b_g1, matrices; ...".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |items: &[Item]| {
            if items.is_empty() {
                "nothing".to_string()
            } else {
                items
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        write!(
            f,
            "resident {}; streamed {}; {} partition(s) in flight{}; {:.2} GiB of VRAM; \
             {:.1} GB over PCIe and {:.2} s of GPU a partition",
            names(&self.resident),
            names(&self.streamed),
            self.partitions_in_flight,
            if self.shared_passes {
                " sharing each streamed pass"
            } else {
                ""
            },
            self.vram_bytes as f64 / (1u64 << 30) as f64,
            self.h2d_bytes_per_partition as f64 / 1e9,
            self.gpu_s_per_partition,
        )?;
        if self.partitions_per_proof > 1 {
            write!(f, "; {:.1} s a proof", self.s_per_proof)?;
        }
        Ok(())
    }
}

/// Where one key goes on a backend's devices, decided before the key is read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyPlacement {
    /// The key stays in its file: what a device keeps resident is uploaded from there, and
    /// what it streams (see `streaming_from_file`) is read from there at every partition.
    pub key_in_file: bool,
    /// Some device streams the key's queries from host memory: the engine page-locks its
    /// decoded points, so that chunks are copied at the link's pinned rate.
    pub pin_key: bool,
    /// Some device streams the recorded matrices from host memory: page-locked likewise.
    pub pin_matrices: bool,
    /// Host bytes the backend holds for the key beyond its host form (page-locked staging
    /// for uploads from the file); the engine reserves them with the key.
    pub host_overhead_bytes: u64,
    /// Host bytes the backend would hold to stream the key's queries straight from its file
    /// (page-locked staging, every device), where it can: the engine's way out when the
    /// decoded key does not fit host memory beside the rest.
    pub file_streaming_bytes: Option<u64>,
    /// One plan per device, in `devices()` order; none for the CPU.
    pub devices: Vec<Placement>,
}

impl KeyPlacement {
    /// This placement with the queries the devices stream read from the key's file chunk by
    /// chunk (and decoded there) instead of from a decoded copy in host memory; None where
    /// the backend cannot. Slower than page-locked host memory by the file's read rate; the
    /// host holds only staging.
    pub fn streaming_from_file(&self) -> Option<Self> {
        if self.key_in_file {
            return Some(self.clone());
        }
        Some(Self {
            key_in_file: true,
            pin_key: false,
            host_overhead_bytes: self.file_streaming_bytes?,
            ..self.clone()
        })
    }

    /// True when some device streams queries from the key's file.
    pub fn streams_from_file(&self) -> bool {
        self.key_in_file && !self.devices.iter().all(Placement::keeps_key_resident)
    }
}

#[cfg(test)]
mod tests;
