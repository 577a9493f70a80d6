//! Parameter sets loaded once, shared by reference, kept resident, evicted least recently used
//! when the memory budget needs room and nobody uses them. A set is the proving key (decoded,
//! or left in its file for a backend that uploads it) and the circuit's recorded matrices.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use zkforge_circuits::{cached_matrices, ParamsId, PartitionedCircuit};
use zkforge_groth16::exec::eviction::{least_recently_used, Evictable};
use zkforge_groth16::prover::placement::KeyPlacement;
use zkforge_groth16::{
    ConstraintMatrices, EvaluationSite, G1Affine, LoadedKey, MatricesShape, PartitionPlan,
    ProverBackend, QueryLengths, Urgency,
};

use crate::budget::{MemoryBudget, Reservation};
use crate::failure::{Failure, FailureKind};
use crate::params_source::ParamsSource;
use crate::pinned::{key_regions, matrix_regions, PinnedHostForm};

/// A parameter set in memory, with the budget it holds until the last user lets go.
pub(crate) struct Resident {
    /// The key's points and the matrices page-locked while a device streams them; declared
    /// first, so that they are unpinned before the memory below is freed.
    _pinned: Option<PinnedHostForm>,
    pub key: LoadedKey,
    /// The circuit's constraints, when it has a recording: partitions are then assigned and
    /// their a, b, c computed by the prover.
    pub matrices: Option<Arc<ConstraintMatrices>>,
    /// What each partition of this key holds, and where its a, b, c are computed.
    pub plan: PartitionPlan,
    /// Where the backend's devices keep the key and its partitions.
    pub placement: KeyPlacement,
    reservations: Vec<Reservation>,
}

impl Resident {
    /// Budget bytes the set holds: the key's host memory and the matrices.
    pub fn bytes(&self) -> u64 {
        self.reservations.iter().map(Reservation::bytes).sum()
    }
}

enum Slot {
    Loading,
    Ready {
        key: Arc<Resident>,
        last_used: Instant,
    },
}

/// Idle when no job holds the set (the store's own reference is the only one).
impl Evictable for Slot {
    type Stamp = Instant;
    fn idle_since(&self) -> Option<Instant> {
        match self {
            Slot::Ready { key, last_used } if Arc::strong_count(key) == 1 => Some(*last_used),
            _ => None,
        }
    }
}

/// A loaded parameter set, as status reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedSrs {
    pub circuit_id: String,
    pub bytes: u64,
    /// Jobs holding it right now.
    pub ref_count: usize,
    /// "memory" (decoded on the host) or "file" (read by the backend into its devices).
    pub key_form: String,
    /// Where the key's points are now.
    pub tier: KeyTier,
    /// Each device's placement plan for it, in words (docs/operations.md, "Placement").
    pub placement: Vec<String>,
}

/// Where a resident parameter set's key points are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyTier {
    /// In device memory: a proof starts on its kernels.
    Device,
    /// Decoded in host memory: a GPU proof reads the points from there.
    Host,
    /// Located in its file only: the first proof reads it (from the page cache, or the disk).
    File,
}

pub(crate) struct SrsStore {
    source: Box<dyn ParamsSource>,
    budget: Arc<MemoryBudget>,
    backend: Arc<dyn ProverBackend>,
    slots: Mutex<HashMap<ParamsId, Slot>>,
    loaded: Condvar,
}

/// Bytes recorded matrices take per constraint, before a recording says exactly: Filecoin's
/// circuits average 5.6 non-zeros per row (8 bytes each) plus three row starts.
const MATRIX_BYTES_PER_ROW_ESTIMATE: u64 = 60;

impl SrsStore {
    pub fn new(
        source: Box<dyn ParamsSource>,
        budget: Arc<MemoryBudget>,
        backend: Arc<dyn ProverBackend>,
    ) -> Self {
        Self {
            source,
            budget,
            backend,
            slots: Mutex::default(),
            loaded: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ParamsId, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set for `id`, loading it if needed (one load at a time per set; others wait for it).
    /// `circuit` records the matrices when no cached recording exists (without it, e.g. for a
    /// preload, only a cached recording is used). A load takes memory by `urgency` (see
    /// [`MemoryBudget::waiter`]): an urgent job's parameters go before less urgent partitions.
    /// Returns whether this call loaded it.
    pub fn get(
        &self,
        id: &ParamsId,
        circuit: Option<&dyn PartitionedCircuit>,
        urgency: Urgency,
    ) -> Result<(Arc<Resident>, bool)> {
        let mut slots = self.lock();
        loop {
            match slots.get_mut(id) {
                Some(Slot::Ready { key, last_used }) => {
                    *last_used = Instant::now();
                    return Ok((key.clone(), false));
                }
                Some(Slot::Loading) => {
                    slots = self.loaded.wait(slots).unwrap_or_else(|e| e.into_inner());
                }
                None => break,
            }
        }
        slots.insert(id.clone(), Slot::Loading);
        drop(slots);

        let loaded = self.load(id, circuit, urgency);
        let mut slots = self.lock();
        let out = match loaded {
            Ok(key) => {
                slots.insert(
                    id.clone(),
                    Slot::Ready {
                        key: key.clone(),
                        last_used: Instant::now(),
                    },
                );
                Ok((key, true))
            }
            Err(e) => {
                slots.remove(id);
                Err(e)
            }
        };
        drop(slots);
        self.loaded.notify_all();
        out
    }

    /// Where the backend would put the set `id`, from its key's lengths and its recording's
    /// header (nothing large read): what the daemon prints at start, the plan its first load
    /// then takes. (A circuit not recorded yet is shown with a, b, c computed on the host; its
    /// first load records it, and plans with the recording.)
    ///
    /// The host's budget has its say as in a load: a key too large to stage decoded beside its
    /// matrices and a partition is shown read from its file.
    pub fn placement(&self, id: &ParamsId) -> Result<KeyPlacement> {
        let lengths = self.source.lengths(id)?;
        let shape = self.recorded_shape(id);
        let sizes = self.host_sizes(&lengths, shape.as_ref(), shape.is_some());
        self.place_within_host(&lengths, shape.as_ref(), sizes.matrices, sizes.partition)
            .with_context(|| format!("parameters {}", id.circuit_id()))
    }

    /// [`placement`](Self::placement) as a job's first load decides it, and refused as that
    /// load would refuse it: the key, its matrices (the recording's, else the estimate a
    /// first recording is sized with) and one partition must fit the memory budget. What
    /// `zkforge doctor` reports, before any job is sent.
    pub fn placement_for_a_job(&self, id: &ParamsId) -> Result<KeyPlacement> {
        let lengths = self.source.lengths(id)?;
        let shape = self.recorded_shape(id);
        // A job always brings its circuit, so a load records the matrices if none are cached.
        let sizes = self.host_sizes(&lengths, shape.as_ref(), true);
        let placement = self
            .place_within_host(&lengths, shape.as_ref(), sizes.matrices, sizes.partition)
            .with_context(|| format!("parameters {}", id.circuit_id()))?;
        let key = host_form(&lengths, &placement).1;
        check_host_room(self.budget.total(), key, sizes.matrices, sizes.partition)
            .with_context(|| format!("parameters {}", id.circuit_id()))?;
        Ok(placement)
    }

    /// The shape of the set's cached recording, from its header; None without one (or with a
    /// damaged one, which a load records again).
    fn recorded_shape(&self, id: &ParamsId) -> Option<MatricesShape> {
        let path = self.source.matrices_cache(id)?;
        path.exists()
            .then(|| ConstraintMatrices::read_shape(&path).ok())
            .flatten()
    }

    /// What a set's load is sized with before the matrices are read: their bytes from the
    /// recording's `shape`, an estimate where `has_matrices` says a recording will be made,
    /// else 0; and one partition's host bytes.
    fn host_sizes(
        &self,
        lengths: &QueryLengths,
        shape: Option<&MatricesShape>,
        has_matrices: bool,
    ) -> HostSizes {
        let matrices = match shape {
            Some(s) => s.host_bytes(),
            None if has_matrices => (lengths.h as u64 + 1) * MATRIX_BYTES_PER_ROW_ESTIMATE,
            None => 0,
        };
        let site = EvaluationSite::choose(has_matrices, self.backend.as_ref());
        HostSizes {
            matrices,
            partition: PartitionPlan::new(lengths, site).host_bytes(),
        }
    }

    /// The backend's placement, with the key read from its file instead where a key the devices
    /// stream from host memory would not fit the budget decoded, beside `matrix_bytes` of
    /// matrices and a partition.
    fn place_within_host(
        &self,
        lengths: &QueryLengths,
        matrices: Option<&MatricesShape>,
        matrix_bytes: u64,
        partition: u64,
    ) -> Result<KeyPlacement> {
        let p = self.backend.place(lengths, matrices)?;
        let decoded = host_form(lengths, &p).1;
        let total = self.budget.total();
        Ok(match p.streaming_from_file() {
            Some(f) if check_host_room(total, decoded, matrix_bytes, partition).is_err() => f,
            _ => p,
        })
    }

    /// Loads the set with all of its memory reserved at once: two loads each holding part of
    /// what they need while waiting for the rest would wait for each other forever. The
    /// reservation is sized from what is known before reading (the key's lengths, the
    /// matrices' estimate); if the set turns out larger and the difference is not free at
    /// once, everything is given back and the load starts over with the sizes now known.
    ///
    /// A set that could never be proved here is refused before the key is read: when it and
    /// one partition exceed the memory budget, or (once the matrices, a few seconds' read,
    /// give the device footprint) when the backend's devices cannot hold a partition.
    fn load(
        &self,
        id: &ParamsId,
        circuit: Option<&dyn PartitionedCircuit>,
        urgency: Urgency,
    ) -> Result<Arc<Resident>> {
        let lengths = self.source.lengths(id)?;
        let cache = self.source.matrices_cache(id);
        let has_matrices = circuit.is_some() || cache.as_ref().is_some_and(|p| p.exists());
        let shape = self.recorded_shape(id);
        let HostSizes {
            matrices: mut matrix_bytes,
            partition,
        } = self.host_sizes(&lengths, shape.as_ref(), has_matrices);
        let total = self.budget.total();
        // Errors name the set where they are reported (the job's failure, the preload's log).
        let place = |matrices: Option<&MatricesShape>, matrix_bytes: u64| {
            self.place_within_host(&lengths, matrices, matrix_bytes, partition)
        };
        // A first answer from the lengths and the recording's header sizes the reservation;
        // the matrices read (or recorded) then give the placement the key is loaded with, the
        // same where the header's recording is the one read.
        let mut placement = place(shape.as_ref(), matrix_bytes)?;
        let mut key_bytes = host_form(&lengths, &placement).1;
        check_host_room(total, key_bytes, matrix_bytes, partition)?;
        loop {
            let mut reserved = self.make_room(urgency, key_bytes + matrix_bytes)?;
            let matrices = if has_matrices {
                match circuit {
                    Some(c) => cached_matrices(c, cache.as_deref())?,
                    // A preload has no circuit to record: only a cached recording serves.
                    None => cache
                        .as_deref()
                        .and_then(|p| ConstraintMatrices::read_file(p).ok()),
                }
            } else {
                None
            };
            let recorded = matrices.as_ref().map(ConstraintMatrices::shape);
            let actual_matrices = recorded.as_ref().map_or(0, MatricesShape::host_bytes);
            placement = place(recorded.as_ref(), actual_matrices)?;
            let key = self.source.load(id, placement.key_in_file)?;
            // A source may hand over a decoded key even when the file was preferred (one a
            // benchmark already holds): its bytes count all the same.
            let (form, with_overhead) = host_form(&lengths, &placement);
            let actual_key = (key.host_bytes() as u64).max(form) + (with_overhead - form);
            // An estimate above the real size gives the difference back (the matrices'
            // 60 bytes a row, used before a first recording, is 0.66 GiB above 32 GiB PoRep's).
            reserved.shrink_to(actual_key + actual_matrices);
            let short = (actual_key + actual_matrices).saturating_sub(reserved.bytes());
            let extra = match short {
                0 => None,
                n => match self.budget.waiter(urgency).try_reserve(n) {
                    Some(r) => Some(r),
                    None => {
                        tracing::info!(
                            circuit = %id.circuit_id(),
                            short = n,
                            "parameters larger than estimated: reserving again"
                        );
                        (key_bytes, matrix_bytes) = (actual_key, actual_matrices);
                        continue;
                    }
                },
            };
            tracing::info!(
                circuit = %id.circuit_id(),
                form = match key {
                    LoadedKey::Memory(_) => "memory",
                    LoadedKey::File(_) if placement.streams_from_file() => {
                        "file (streamed from it: the decoded key does not fit the memory budget)"
                    }
                    LoadedKey::File(_) => "file",
                },
                host_bytes = key.host_bytes(),
                "proving key loaded"
            );
            for (device, plan) in placement.devices.iter().enumerate() {
                tracing::info!(circuit = %id.circuit_id(), device, "placement: {plan}");
            }
            let site = EvaluationSite::choose(matrices.is_some(), self.backend.as_ref());
            let pinned = self.pin(id, &placement, &key, matrices.as_ref());
            return Ok(Arc::new(Resident {
                _pinned: pinned,
                plan: PartitionPlan::new(&lengths, site),
                placement,
                key,
                matrices: matrices.map(Arc::new),
                reservations: std::iter::once(reserved).chain(extra).collect(),
            }));
        }
    }

    /// Page-locks what the placement streams from host memory (the set's own memory, already
    /// reserved), when the backend can.
    fn pin(
        &self,
        id: &ParamsId,
        placement: &KeyPlacement,
        key: &LoadedKey,
        matrices: Option<&ConstraintMatrices>,
    ) -> Option<PinnedHostForm> {
        let pinner = self.backend.host_pinner()?;
        let mut regions = Vec::new();
        if placement.pin_key {
            regions.extend(key_regions(key));
        }
        if let (true, Some(m)) = (placement.pin_matrices, matrices) {
            regions.extend(matrix_regions(m));
        }
        (!regions.is_empty()).then(|| PinnedHostForm::pin(pinner, &id.circuit_id(), &regions))
    }

    /// Reserves `bytes`, evicting unused sets (least recently used first) and then waiting for
    /// partitions in flight to release memory, ranked by `urgency` while it waits (not while the
    /// key is read: less urgent work is held back only when memory is what this load lacks). Sets
    /// in use become unused as their partitions finish: less urgent workers hand theirs back
    /// while this waits (see `synthesize_unit`).
    fn make_room(&self, urgency: Urgency, bytes: u64) -> Result<Reservation> {
        if bytes > self.budget.total() {
            return Err(Failure::new(
                FailureKind::NoRoom,
                format!(
                    "the proving key and constraint matrices need {bytes} bytes, more \
                     than the whole memory budget ({} bytes)",
                    self.budget.total()
                ),
            )
            .into());
        }
        let waiter = self.budget.waiter(urgency);
        loop {
            if let Some(r) = waiter.try_reserve(bytes) {
                return Ok(r);
            }
            if self.evict_least_recently_used().is_none() {
                // Wait for one release (or 50 ms), then look for a set to evict again.
                let waited = Cell::new(false);
                let poll = Duration::from_millis(50);
                if let Some(r) = waiter.reserve_or(bytes, poll, || waited.replace(true)) {
                    return Ok(r);
                }
            }
        }
    }

    /// Drops the set no job holds that was used least recently, if any; returns its name.
    pub fn evict_least_recently_used(&self) -> Option<String> {
        let mut slots = self.lock();
        let id = least_recently_used(slots.iter()).cloned()?;
        tracing::info!(circuit = %id.circuit_id(), "evicting unused parameters for room");
        slots.remove(&id);
        Some(id.circuit_id())
    }

    /// Drops the set from the store; its memory returns when the last job using it finishes.
    /// Returns the bytes it held, if it was loaded.
    pub fn evict(&self, id: &ParamsId) -> Option<u64> {
        let mut slots = self.lock();
        match slots.remove(id) {
            Some(Slot::Ready { key, .. }) => Some(key.bytes()),
            Some(loading @ Slot::Loading) => {
                // A load in progress finishes; evicting it is the caller's next step.
                slots.insert(id.clone(), loading);
                None
            }
            None => None,
        }
    }

    pub fn list(&self) -> Vec<LoadedSrs> {
        let mut out: Vec<LoadedSrs> = self
            .lock()
            .iter()
            .filter_map(|(id, s)| match s {
                Slot::Ready { key, .. } => Some(LoadedSrs {
                    circuit_id: id.circuit_id(),
                    bytes: key.bytes(),
                    ref_count: Arc::strong_count(key) - 1,
                    key_form: match key.key {
                        LoadedKey::Memory(_) => "memory".into(),
                        LoadedKey::File(_) => "file".into(),
                    },
                    tier: if self.backend.key_on_device(key.key.as_ref()) {
                        KeyTier::Device
                    } else {
                        match key.key {
                            LoadedKey::Memory(_) => KeyTier::Host,
                            LoadedKey::File(_) => KeyTier::File,
                        }
                    },
                    placement: key
                        .placement
                        .devices
                        .iter()
                        .map(|p| match key.placement.streams_from_file() {
                            // Not from page-locked memory: at the file's read rate.
                            true if !p.keeps_key_resident() => {
                                format!("{p}; streamed queries read from the key's file")
                            }
                            _ => p.to_string(),
                        })
                        .collect(),
                }),
                Slot::Loading => None,
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Host bytes a load is sized with before anything is read.
struct HostSizes {
    /// The recorded matrices' estimate.
    matrices: u64,
    /// One partition's witness buffers.
    partition: u64,
}

/// The key's host form under placement `p`, and that with the placement's host overhead
/// (staging, page-locked buffers).
fn host_form(lengths: &QueryLengths, p: &KeyPlacement) -> (u64, u64) {
    let form = if p.key_in_file {
        // A key left in its file keeps only its verifying key's ic points on the host.
        (lengths.ic * std::mem::size_of::<G1Affine>()) as u64
    } else {
        lengths.decoded_bytes() as u64
    };
    (form, form + p.host_overhead_bytes)
}

/// Refuses a parameter set that, with one of its partitions, could never fit the memory budget
/// (it would wait for memory forever, or fail after its key was read).
fn check_host_room(budget: u64, key: u64, matrices: u64, partition: u64) -> Result<()> {
    let needs = key + matrices + partition;
    if needs > budget {
        let msg = format!(
            "the proving key ({}), its recorded constraint matrices ({}) and one \
             partition ({}) need {} of host memory; the memory budget (engine.memory_budget) is \
             {}",
            gib(key),
            gib(matrices),
            gib(partition),
            gib(needs),
            gib(budget)
        );
        return Err(Failure::new(FailureKind::NoRoom, msg).into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_and_a_partition_beyond_the_budget_are_refused_with_the_numbers() {
        const GIB: u64 = 1 << 30;
        // 32 GiB PoRep streamed: 44.13 GiB of key, 7.50 GiB of matrices (the estimate), a
        // partition of 3.88 GiB, on an 88 GiB budget and on a 54 GiB one.
        let (key, m, p) = (44_130 * GIB / 1000, 7_500 * GIB / 1000, 3_880 * GIB / 1000);
        assert!(check_host_room(88 * GIB, key, m, p).is_ok());
        let msg = check_host_room(54 * GIB, key, m, p)
            .unwrap_err()
            .to_string();
        for part in [
            "44.13 GiB",
            "7.50 GiB",
            "3.88 GiB",
            "55.51 GiB",
            "54.00 GiB",
        ] {
            assert!(msg.contains(part), "{part:?} missing: {msg}");
        }
        assert!(check_host_room(key + m + p, key, m, p).is_ok(), "inclusive");
    }
}
