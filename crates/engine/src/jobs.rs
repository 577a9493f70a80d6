//! The job table: every job by id and by client request id, until its result expires.
//!
//! A request id is scoped by proof kind: Curio's ids are predictable (`porep-<miner>-<sector>`),
//! so one kind's submission must not be able to take another kind's id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use zkforge_circuits::ProofKind;

use crate::config::EngineConfig;
use crate::job::{Job, JobId};

#[derive(Default)]
pub(crate) struct Jobs {
    pub by_id: HashMap<JobId, Arc<Job>>,
    /// The job a (kind, request id) names now: the latest submission's, once an ended job
    /// was started again under it.
    pub by_request: HashMap<(ProofKind, String), JobId>,
    pub next_id: JobId,
}

impl Jobs {
    /// The job `request_id` names for `kind`, if it is still known.
    pub fn by_request(&self, kind: ProofKind, request_id: &str) -> Option<&Arc<Job>> {
        // A borrowed key would need a second map type; ids are at most 256 bytes.
        let id = self.by_request.get(&(kind, request_id.to_string()))?;
        self.by_id.get(id)
    }

    /// Forgets finished jobs past the result TTL or beyond `result_max`, oldest first.
    pub fn prune(&mut self, cfg: &EngineConfig) {
        let ttl = Duration::from_secs(cfg.result_ttl_secs);
        let mut finished: Vec<(Instant, JobId)> = self
            .by_id
            .values()
            .filter_map(|j| j.lock().finished_at.map(|t| (t, j.id)))
            .collect();
        finished.sort();
        let excess = finished.len().saturating_sub(cfg.result_max);
        let drop_ids: Vec<JobId> = finished
            .iter()
            .enumerate()
            .filter(|(i, (t, _))| *i < excess || t.elapsed() > ttl)
            .map(|(_, (_, id))| *id)
            .collect();
        for id in drop_ids {
            self.by_id.remove(&id);
        }
        let by_id = &self.by_id;
        self.by_request.retain(|_, id| by_id.contains_key(id));
    }
}

#[derive(Default)]
pub(crate) struct JobTable(Mutex<Jobs>);

impl JobTable {
    pub fn lock(&self) -> MutexGuard<'_, Jobs> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, id: JobId) -> Option<Arc<Job>> {
        self.lock().by_id.get(&id).cloned()
    }

    pub fn all(&self) -> Vec<Arc<Job>> {
        self.lock().by_id.values().cloned().collect()
    }
}
