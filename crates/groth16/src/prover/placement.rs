//! The placement cost model: for one GPU, from the VRAM it has, the host-to-device copy rate
//! measured on it, the key's query sizes, the partition's working sets and the kernel time of
//! a partition whose key is resident, which of the five queries (and the recorded matrices)
//! stay resident, which are streamed from page-locked host memory, how many partitions are in
//! flight and whether they share each pass over a streamed chunk; and what that costs: GPU
//! seconds a partition, bytes over PCIe a partition, seconds a proof.
//!
//! The model, per partition, with r the copy rate:
//! - a resident item costs its kernel time c; a streamed one max(c, bytes/r) plus one chunk's
//!   copy before its first kernel (chunks double-buffered, buckets accumulated across chunks,
//!   so a streamed MSM computes what a resident one does); with k partitions sharing each pass,
//!   bytes/(k·r) and the fill shared;
//! - one partition in flight: the kernel side, plus the witness's upload (and whatever the
//!   working set uploads again), which nothing overlaps;
//! - two in flight: each one's uploads overlap the other's kernels, so a partition takes the
//!   longer of its kernel side and all its bytes over the link.
//!
//! Every combination is tried (2^6 resident sets × working sets × 1 or 2 in flight × sharing):
//! the cheapest that fits the VRAM wins; ties go to fewer bytes over PCIe. Largest benefit
//! first falls out of it: the queries whose copy costs most beyond their kernels (L and A,
//! nearly all 0/1 scalars, 12.5 GB each) are kept before H, whose 775 ms of kernels hide its
//! copy at 25 GB/s already.

use std::fmt;

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

impl ResidentTimes {
    /// A 32 GiB PoRep partition on the H200 (docs/perf.md, issue 20 step 9, medians of 60
    /// partitions): spmv 12.0 ms, ntt 279.2 ms, msm 956.8 ms of which H ~775 ms; the other
    /// four MSMs' 181.8 ms split by points, a G2 point weighing three G1 points (they were
    /// not timed apart through the daemon) — scaled so that the phases add up to `kernel_s`.
    pub fn porep_32g(kernel_s: f64) -> Self {
        let rest = 0.1818;
        let weights = [130.17, 129.78, 33.06, 3.0 * 33.06];
        let share = |w: f64| rest * w / weights.iter().sum::<f64>();
        let measured = Self {
            spmv: 0.012,
            ntt: 0.2792,
            h: 0.775,
            l: share(weights[0]),
            a: share(weights[1]),
            b_g1: share(weights[2]),
            b_g2: share(weights[3]),
        };
        let scale = kernel_s / measured.total();
        Self {
            spmv: measured.spmv * scale,
            ntt: measured.ntt * scale,
            h: measured.h * scale,
            l: measured.l * scale,
            a: measured.a * scale,
            b_g1: measured.b_g1 * scale,
            b_g2: measured.b_g2 * scale,
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
}

/// What the model is given.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementInputs {
    /// Device bytes the backend may use: VRAM free at start less the margin.
    pub vram_budget: u64,
    /// Host-to-device copy rate from page-locked memory, measured on this GPU, bytes a second.
    pub h2d_bytes_per_s: f64,
    pub queries: QueryPoints,
    /// The recorded matrices on the device.
    pub matrices_bytes: u64,
    /// Bytes of a partition's witness that cross PCIe whatever the placement (aux, inputs).
    pub witness_bytes: u64,
    /// The partition's working sets the backend can run.
    pub working_sets: Vec<WorkingSet>,
    pub kernels: ResidentTimes,
    /// Bytes of one streamed chunk; two are in flight (double buffering).
    pub stream_chunk_bytes: u64,
    /// Partitions in a proof (10 for PoRep).
    pub partitions_per_proof: u32,
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
}

/// Nothing fits: the least any plan needs (everything streamed, the leanest working set, one
/// partition), and the budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoPlacement {
    pub least_bytes: u64,
    pub vram_budget: u64,
}

impl fmt::Display for NoPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        write!(
            f,
            "no placement fits: the leanest (every query and the matrices streamed, one \
             partition) needs {:.2} GiB of device memory, the budget is {:.2} GiB",
            gib(self.least_bytes),
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

    /// The cost of one candidate, or None when it does not fit.
    fn evaluate(
        &self,
        resident: &[Item],
        working_set: usize,
        in_flight: u32,
        shared: bool,
    ) -> Option<Placement> {
        let streamed: Vec<Item> = Item::ALL
            .into_iter()
            .filter(|i| !resident.contains(i))
            .collect();
        let ws = &self.working_sets[working_set];
        let buffers = if streamed.is_empty() {
            0
        } else {
            2 * self.stream_chunk_bytes
        };
        let vram = resident.iter().map(|&i| self.bytes(i)).sum::<u64>()
            + in_flight as u64 * ws.peak_bytes
            + buffers;
        if vram > self.vram_budget {
            return None;
        }
        let r = self.h2d_bytes_per_s;
        let sharers = if shared { in_flight as f64 } else { 1.0 };
        let fill = self.stream_chunk_bytes as f64 / r / sharers;
        let streamed_bytes: u64 = streamed.iter().map(|&i| self.bytes(i)).sum();
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
        let h2d = own + (streamed_bytes as f64 / sharers) as u64;
        let gpu_s = if in_flight == 1 {
            kernel_side + own as f64 / r
        } else {
            kernel_side.max(h2d as f64 / r)
        };
        Some(Placement {
            resident: resident.to_vec(),
            streamed,
            working_set,
            partitions_in_flight: in_flight,
            shared_passes: shared,
            vram_bytes: vram,
            h2d_bytes_per_partition: h2d,
            gpu_s_per_partition: gpu_s,
            s_per_proof: gpu_s * self.partitions_per_proof as f64,
        })
    }

    /// The cheapest plan that fits, or what the leanest would need.
    pub fn plan(&self) -> Result<Placement, NoPlacement> {
        let mut best: Option<Placement> = None;
        for mask in 0..1u32 << Item::ALL.len() {
            let resident: Vec<Item> = Item::ALL
                .into_iter()
                .enumerate()
                .filter(|(k, _)| mask & (1 << k) != 0)
                .map(|(_, i)| i)
                .collect();
            for ws in 0..self.working_sets.len() {
                for (in_flight, shared) in [(1, false), (2, false), (2, true)] {
                    let Some(p) = self.evaluate(&resident, ws, in_flight, shared) else {
                        continue;
                    };
                    let better = best.as_ref().is_none_or(|b| {
                        (p.gpu_s_per_partition, p.h2d_bytes_per_partition)
                            < (b.gpu_s_per_partition, b.h2d_bytes_per_partition)
                    });
                    if better {
                        best = Some(p);
                    }
                }
            }
        }
        best.ok_or_else(|| NoPlacement {
            least_bytes: self
                .working_sets
                .iter()
                .map(|w| w.peak_bytes)
                .min()
                .unwrap_or(0)
                + 2 * self.stream_chunk_bytes,
            vram_budget: self.vram_budget,
        })
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
             {:.1} GB over PCIe and {:.2} s of GPU a partition; {:.1} s a proof",
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
            self.s_per_proof
        )
    }
}

#[cfg(test)]
mod tests;
