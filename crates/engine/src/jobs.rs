//! The job table: every job by id and by client request id, until its result expires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::config::EngineConfig;
use crate::job::{Job, JobId};

#[derive(Default)]
pub(crate) struct Jobs {
    pub by_id: HashMap<JobId, Arc<Job>>,
    pub by_request: HashMap<String, JobId>,
    pub next_id: JobId,
}

impl Jobs {
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
