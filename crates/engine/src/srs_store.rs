//! Parameter sets loaded once, shared by reference, kept resident, evicted least recently used
//! when the memory budget needs room and nobody uses them.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use zkforge_circuits::ParamsId;
use zkforge_groth16::ProvingKey;

use crate::budget::{MemoryBudget, Reservation};
use crate::engine::ParamsSource;

/// A proving key in memory, with the budget it holds until the last user lets go.
pub(crate) struct Resident {
    pub pk: ProvingKey,
    reservation: Reservation,
}

impl Resident {
    /// Budget bytes the key holds.
    pub fn bytes(&self) -> u64 {
        self.reservation.bytes()
    }
}

enum Slot {
    Loading,
    Ready {
        key: Arc<Resident>,
        last_used: Instant,
    },
}

/// A loaded parameter set, as status reports it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LoadedSrs {
    pub circuit_id: String,
    pub bytes: u64,
    /// Jobs holding it right now.
    pub ref_count: usize,
}

pub(crate) struct SrsStore {
    source: Box<dyn ParamsSource>,
    budget: Arc<MemoryBudget>,
    slots: Mutex<HashMap<ParamsId, Slot>>,
    loaded: Condvar,
}

impl SrsStore {
    pub fn new(source: Box<dyn ParamsSource>, budget: Arc<MemoryBudget>) -> Self {
        Self {
            source,
            budget,
            slots: Mutex::default(),
            loaded: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ParamsId, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key for `id`, loading it if needed (one load at a time per set; others wait for it).
    /// Returns whether this call loaded it.
    pub fn get(&self, id: &ParamsId) -> Result<(Arc<Resident>, bool)> {
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

        let loaded = self.load(id);
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

    fn load(&self, id: &ParamsId) -> Result<Arc<Resident>> {
        let bytes = self.source.size_hint(id)?;
        let reservation = self.make_room(id, bytes)?;
        let pk = self.source.load(id)?;
        Ok(Arc::new(Resident { pk, reservation }))
    }

    /// Reserves `bytes`, evicting unused sets (least recently used first) and then waiting for
    /// partitions in flight to release memory.
    fn make_room(&self, id: &ParamsId, bytes: u64) -> Result<Reservation> {
        if bytes > self.budget.total() {
            bail!(
                "parameters {} need {bytes} bytes, more than the whole memory budget ({} bytes)",
                id.circuit_id(),
                self.budget.total()
            );
        }
        loop {
            if let Some(r) = self.budget.try_reserve(bytes) {
                return Ok(r);
            }
            if !self.evict_least_recently_used() {
                if let Some(r) = self
                    .budget
                    .reserve_or(bytes, Duration::from_millis(50), || true)
                {
                    return Ok(r);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn evict_least_recently_used(&self) -> bool {
        let mut slots = self.lock();
        let victim = slots
            .iter()
            .filter_map(|(id, s)| match s {
                Slot::Ready { key, last_used } if Arc::strong_count(key) == 1 => {
                    Some((*last_used, id.clone()))
                }
                _ => None,
            })
            .min()
            .map(|(_, id)| id);
        match victim {
            Some(id) => {
                tracing::info!(circuit = %id.circuit_id(), "evicting unused parameters for room");
                slots.remove(&id);
                true
            }
            None => false,
        }
    }

    /// Drops the set from the store; its memory returns when the last job using it finishes.
    /// Returns the bytes it held, if it was loaded.
    pub fn evict(&self, id: &ParamsId) -> Option<u64> {
        let mut slots = self.lock();
        match slots.remove(id) {
            Some(Slot::Ready { key, .. }) => Some(key.pk.heap_bytes() as u64),
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
                    bytes: key.pk.heap_bytes() as u64,
                    ref_count: Arc::strong_count(key) - 1,
                }),
                Slot::Loading => None,
            })
            .collect();
        out.sort_by(|a, b| a.circuit_id.cmp(&b.circuit_id));
        out
    }
}
