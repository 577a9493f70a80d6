//! Admission: what a submission may add to the queue, and the `request_id` rules. A client
//! that submits faster than the GPUs prove meets a clear refusal (the server answers
//! RESOURCE_EXHAUSTED, which cuzk's clients retry) instead of growing the daemon's memory.

use crate::config::EngineConfig;
use crate::job::{Job, JobId};
use crate::jobs::Jobs;

/// Longest `request_id` kept: ids are idempotency keys (UUIDs, "porep-<miner>-<sector>"), and
/// each is held until its result expires.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// Why a submission was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubmitError {
    #[error(
        "the daemon holds {unfinished} unfinished jobs, its limit (engine.max_queued_jobs = \
         {limit}); submit again when some have finished"
    )]
    TooManyJobs { unfinished: usize, limit: usize },
    #[error(
        "unfinished jobs hold {held} bytes of requests and this one is {bytes}: more than \
         engine.max_queued_request_bytes ({limit}); submit again when some have finished"
    )]
    TooManyBytes { held: u64, bytes: u64, limit: u64 },
    #[error(
        "request_id {request_id:?} is job {job}, submitted with a different payload: use a new \
         request_id for a new request"
    )]
    RequestIdReused { request_id: String, job: JobId },
    #[error("request_id is {len} bytes; at most {MAX_REQUEST_ID_BYTES}")]
    RequestIdTooLong { len: usize },
    #[error("the request has no partitions")]
    NoPartitions,
}

impl SubmitError {
    /// True when the refusal is about load, not the request: the same request may succeed
    /// later.
    pub fn is_busy(&self) -> bool {
        matches!(self, Self::TooManyJobs { .. } | Self::TooManyBytes { .. })
    }
}

/// What the submission of `request_id` (with `digest`, `bytes`) resolves to: an existing job
/// for a known id with the same payload, else room for a new one or a refusal.
pub(crate) fn admit(
    jobs: &Jobs,
    config: &EngineConfig,
    request_id: Option<&str>,
    digest: Option<[u8; 32]>,
    bytes: u64,
) -> Result<Option<JobId>, SubmitError> {
    if let Some(r) = request_id {
        if r.len() > MAX_REQUEST_ID_BYTES {
            return Err(SubmitError::RequestIdTooLong { len: r.len() });
        }
        if let Some(job) = jobs.by_request.get(r).and_then(|id| jobs.by_id.get(id)) {
            return same_payload(job, digest)
                .then_some(Some(job.id))
                .ok_or_else(|| SubmitError::RequestIdReused {
                    request_id: r.to_string(),
                    job: job.id,
                });
        }
    }
    let unfinished: Vec<&Job> = jobs
        .by_id
        .values()
        .filter(|j| !j.stopped())
        .map(|j| &**j)
        .collect();
    if unfinished.len() >= config.max_queued_jobs {
        return Err(SubmitError::TooManyJobs {
            unfinished: unfinished.len(),
            limit: config.max_queued_jobs,
        });
    }
    let limit = config.max_queued_request_bytes();
    let held: u64 = unfinished.iter().map(|j| j.input_bytes).sum();
    if held.saturating_add(bytes) > limit {
        return Err(SubmitError::TooManyBytes { held, bytes, limit });
    }
    Ok(None)
}

/// A resubmission is the same request when both digests agree; a caller that gives no digest
/// (an in-process caller, not the wire) keeps the old behaviour: same id, same job.
fn same_payload(job: &Job, digest: Option<[u8; 32]>) -> bool {
    match (job.payload_digest, digest) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// How many unfinished jobs the scheduler serves before `job`: higher priority first, then
/// older. 0 when it is next or already running.
pub(crate) fn queue_position(jobs: &Jobs, job: &Job) -> usize {
    jobs.by_id
        .values()
        .filter(|j| !j.stopped() && j.id != job.id)
        .filter(|j| {
            (j.priority, std::cmp::Reverse(j.id)) > (job.priority, std::cmp::Reverse(job.id))
        })
        .count()
}
