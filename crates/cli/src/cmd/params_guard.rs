//! `daemon.verify_params`: the daemon's parameter source with every set's files held to the
//! published table (`zkforge_filecoin::param_digest`) before its first use. The preload thread
//! checks its sets before loading each; a job whose set is not checked yet checks it on its own
//! load (or waits for the check under way), so no proof is made with a key that failed.
//! Verdicts are kept per file identity (device, inode, size, mtime): a set evicted and loaded
//! again is not hashed again, a file replaced on disk is.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use anyhow::Result;
use zkforge_engine::ParamsSource;
use zkforge_filecoin::param_digest::{self, Manifest, Verdict};
use zkforge_filecoin::ParamsId;
use zkforge_groth16::{LoadedKey, QueryLengths};

type FileId = (u64, u64, u64, i64, i64);

fn file_id(path: &Path) -> Option<FileId> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

enum Slot {
    Checking,
    /// The identities of the files checked and why the set is refused, if it is.
    Done {
        files: Vec<Option<FileId>>,
        refusal: Option<String>,
    },
}

/// The verdicts, shared by the preload thread and the engine's loads.
pub struct ParamsGuard {
    dir: PathBuf,
    slots: Mutex<HashMap<ParamsId, Slot>>,
    done: Condvar,
}

impl ParamsGuard {
    pub fn new(dir: PathBuf) -> Arc<Self> {
        Arc::new(Self {
            dir,
            slots: Mutex::default(),
            done: Condvar::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ParamsId, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Checks the set's `.params` (and `.vk`, when there is one) unless its files were checked
    /// as they are now; waits for a check of the same set under way. Errs, naming the file
    /// and both digests, when the set is refused. A set without a `.params` passes: the load
    /// says it is missing, with the command that makes one.
    pub fn check(&self, id: &ParamsId) -> Result<()> {
        let paths = [id.params_path(&self.dir), id.vk_path(&self.dir)];
        if !paths[0].exists() {
            return Ok(());
        }
        let ids: Vec<_> = paths.iter().map(|p| file_id(p)).collect();
        let mut slots = self.lock();
        loop {
            match slots.get(id) {
                Some(Slot::Checking) => {
                    slots = self.done.wait(slots).unwrap_or_else(|e| e.into_inner());
                }
                Some(Slot::Done { files, refusal }) if *files == ids => {
                    return match refusal {
                        Some(why) => Err(anyhow::anyhow!("{why}")),
                        None => Ok(()),
                    };
                }
                _ => break,
            }
        }
        slots.insert(id.clone(), Slot::Checking);
        drop(slots);
        // Whatever happens below, the slot leaves Checking: waiters never hang on it.
        let mut reset = SlotReset {
            guard: self,
            id,
            outcome: Slot::Done {
                files: ids.clone(),
                refusal: Some("daemon.verify_params: the check of this set stopped".into()),
            },
        };
        let refusal = self.verify(id, &paths);
        reset.outcome = Slot::Done {
            files: ids,
            refusal: refusal.clone(),
        };
        drop(reset);
        match refusal {
            Some(why) => Err(anyhow::anyhow!("{why}")),
            None => Ok(()),
        }
    }

    /// Hashes the set's files; why the set is refused, if it is.
    fn verify(&self, id: &ParamsId, paths: &[PathBuf; 2]) -> Option<String> {
        let table = Manifest::published();
        let refuse = |why: String| {
            Some(format!(
                "daemon.verify_params: refusing {}: {why}",
                id.circuit_id()
            ))
        };
        for (i, path) in paths.iter().enumerate() {
            if i == 1 && !path.exists() {
                // The daemon proves and self-checks with the .params alone.
                tracing::warn!(file = %path.display(), "no .vk beside the parameters: not checked");
                continue;
            }
            let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
            tracing::info!(circuit = %id.circuit_id(), file = %path.display(), bytes, "verifying parameters");
            let t = Instant::now();
            let c = match param_digest::check_file(path, table, &mut |_| {}) {
                Ok(c) => c,
                Err(e) => return refuse(format!("{e:#}")),
            };
            let secs = t.elapsed().as_secs_f64();
            let mb_s = (c.bytes as f64 / 1e6 / secs.max(1e-9)) as u64;
            match &c.verdict {
                Verdict::Ok => tracing::info!(
                    circuit = %id.circuit_id(), file = %c.name, digest = %c.digest, secs, mb_s,
                    "parameters verified: as published"
                ),
                Verdict::TestKey => tracing::warn!(
                    circuit = %id.circuit_id(), file = %c.name, digest = %c.digest, secs, mb_s,
                    "parameters verified against their test-key record: a zkforge test key, not \
                     the published parameters (its proofs pass the self-check, not the chain)"
                ),
                Verdict::NotInTable => {
                    return refuse(format!(
                        "{}: not in {} and no test-key record: it cannot be verified (digest {})",
                        path.display(),
                        table.source(),
                        c.digest
                    ))
                }
                Verdict::Mismatch { .. } => {
                    return refuse(c.problem().unwrap_or_default());
                }
            }
        }
        None
    }
}

/// Puts the slot's outcome in place and wakes the waiters when dropped, also by a panic.
struct SlotReset<'a> {
    guard: &'a ParamsGuard,
    id: &'a ParamsId,
    outcome: Slot,
}

impl Drop for SlotReset<'_> {
    fn drop(&mut self) {
        let outcome = std::mem::replace(&mut self.outcome, Slot::Checking);
        self.guard.lock().insert(self.id.clone(), outcome);
        self.guard.done.notify_all();
    }
}

/// A parameter directory's source behind a [`ParamsGuard`]: what the engine loads from with
/// verify_params on.
pub struct GuardedParams {
    pub guard: Arc<ParamsGuard>,
    pub inner: Box<dyn ParamsSource>,
}

impl ParamsSource for GuardedParams {
    // The engine asks for the lengths before reserving memory for the load: the check (and any
    // wait for it) happens here, holding no memory; `load` then finds the verdict made.
    fn lengths(&self, id: &ParamsId) -> Result<QueryLengths> {
        self.guard.check(id)?;
        self.inner.lengths(id)
    }

    fn load(&self, id: &ParamsId, in_file: bool) -> Result<LoadedKey> {
        self.guard.check(id)?;
        self.inner.load(id, in_file)
    }

    fn matrices_cache(&self, id: &ParamsId) -> Option<PathBuf> {
        self.inner.matrices_cache(id)
    }
}
