//! Admission: what a submission may add to the queue, and the `request_id` rules. A client
//! that submits faster than the GPUs prove meets a clear refusal (the server answers
//! RESOURCE_EXHAUSTED, which cuzk's clients retry) instead of growing the daemon's memory.
//!
//! Two rules shape it, both from how Curio drives a prover:
//! - **A retry is a resubmission.** Curio's scheduler answers any failure by submitting the
//!   same `request_id` and payload again (PoRep up to 10 times). A job that ended FAILED or
//!   CANCELLED is therefore started again; a COMPLETED one returns its proof; an unfinished
//!   one is the same job. A different payload under an id whose job has ended replaces it (a
//!   new C1 for the same sector after a reorg); under an unfinished job it is refused.
//! - **Urgent work is never refused for bulk load.** An urgent job has room of its own: Low
//!   and Normal jobs are counted against `max_queued_jobs` with every unfinished job; High
//!   jobs against `max_urgent_jobs` with the High and Critical ones only; Critical jobs
//!   against `max_urgent_jobs` with the Critical ones only. However many PoRep jobs are queued,
//!   a WinningPoSt (tried once: a refusal is a lost block) finds room.

use zkforge_circuits::ProofKind;

use crate::config::EngineConfig;
use crate::job::{Job, JobId, JobOutcome, Priority};
use crate::jobs::Jobs;

/// Longest `request_id` kept: ids are idempotency keys (UUIDs, "porep-<miner>-<sector>"), and
/// each is held until its result expires.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// Why a submission was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubmitError {
    #[error(
        "the daemon holds {unfinished} unfinished{class} jobs, its limit ({knob} = {limit}); \
         submit again when some have finished"
    )]
    TooManyJobs {
        class: &'static str,
        knob: &'static str,
        unfinished: usize,
        limit: usize,
    },
    #[error(
        "unfinished{class} jobs hold {held} bytes of requests and this one is {bytes}: more \
         than engine.max_queued_request_bytes ({limit}); submit again when some have finished"
    )]
    TooManyBytes {
        class: &'static str,
        held: u64,
        bytes: u64,
        limit: u64,
    },
    #[error(
        "request_id {request_id:?} is job {job}, still running with a different payload: use a \
         new request_id for a new request, or submit this one again once that job has ended"
    )]
    RequestIdReused { request_id: String, job: JobId },
    #[error("request_id is {len} bytes; at most {MAX_REQUEST_ID_BYTES}")]
    RequestIdTooLong { len: usize },
    #[error("the request has no partitions")]
    NoPartitions,
    #[error(
        "the host leaves the daemon {limit} bytes of memory, below engine.memory_floor \
         ({floor}), which is kept for WindowPoSt and WinningPoSt: bulk work is refused until \
         other processes free memory; submit again later"
    )]
    HostMemoryBelowFloor { limit: u64, floor: u64 },
}

impl SubmitError {
    /// True when the refusal is about load, not the request: the same request may succeed
    /// later.
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            Self::TooManyJobs { .. }
                | Self::TooManyBytes { .. }
                | Self::HostMemoryBelowFloor { .. }
        )
    }
}

/// What a submission resolves to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// The id's job, unfinished or completed, for the same payload: answer with it.
    Existing(JobId),
    /// A new job, with room for it; it takes over the id from the ended job it names, if any.
    New { replaces: Option<JobId> },
}

/// A submission as admission sees it.
pub(crate) struct Candidate<'a> {
    pub kind: ProofKind,
    pub priority: Priority,
    pub request_id: Option<&'a str>,
    /// `None` from in-process callers: the same id is then the same request.
    pub digest: Option<[u8; 32]>,
    pub bytes: u64,
}

/// Decides what `c` resolves to under the id rules and the room of its priority class.
pub(crate) fn admit(
    jobs: &Jobs,
    config: &EngineConfig,
    c: &Candidate<'_>,
) -> Result<Admission, SubmitError> {
    let mut replaces = None;
    if let Some(r) = c.request_id {
        if r.len() > MAX_REQUEST_ID_BYTES {
            return Err(SubmitError::RequestIdTooLong { len: r.len() });
        }
        if let Some(job) = jobs.by_request(c.kind, r) {
            match resubmission(job, c.digest) {
                Resubmission::Same => return Ok(Admission::Existing(job.id)),
                Resubmission::Conflict => {
                    return Err(SubmitError::RequestIdReused {
                        request_id: r.to_string(),
                        job: job.id,
                    })
                }
                Resubmission::Restart => replaces = Some(job.id),
            }
        }
    }
    check_room(jobs, config, c.priority, c.bytes)?;
    Ok(Admission::New { replaces })
}

/// Whether a job of `priority` carrying `bytes` of request finds room now: the check a server
/// makes before it spends a parse worker on a request (and [`admit`] makes again after).
pub(crate) fn check_room(
    jobs: &Jobs,
    config: &EngineConfig,
    priority: Priority,
    bytes: u64,
) -> Result<(), SubmitError> {
    let room = Room::of(priority, config);
    let counted: Vec<&Job> = jobs
        .by_id
        .values()
        .filter(|j| !j.stopped() && j.priority >= room.from)
        .map(|j| &**j)
        .collect();
    if counted.len() >= room.limit {
        return Err(SubmitError::TooManyJobs {
            class: room.name,
            knob: room.knob,
            unfinished: counted.len(),
            limit: room.limit,
        });
    }
    let limit = config.max_queued_request_bytes();
    let held: u64 = counted.iter().map(|j| j.input_bytes).sum();
    if held.saturating_add(bytes) > limit {
        return Err(SubmitError::TooManyBytes {
            class: room.name,
            held,
            bytes,
            limit,
        });
    }
    Ok(())
}

/// The room a job is counted in: an urgent one ([`Priority::is_urgent`]) with the unfinished
/// jobs at least as urgent as it, against `engine.max_urgent_jobs`, so that no amount of bulk
/// work (nor of High work, for a Critical job) takes its room; any other with every unfinished
/// job, against `engine.max_queued_jobs`.
struct Room {
    /// The least priority counted.
    from: Priority,
    limit: usize,
    knob: &'static str,
    /// How refusals name the jobs counted (" high-priority jobs"); empty for all jobs.
    name: &'static str,
}

impl Room {
    fn of(priority: Priority, config: &EngineConfig) -> Self {
        if !priority.is_urgent() {
            return Self {
                from: Priority::Low,
                limit: config.max_queued_jobs,
                knob: "engine.max_queued_jobs",
                name: "",
            };
        }
        Self {
            from: priority,
            limit: config.max_urgent_jobs,
            knob: "engine.max_urgent_jobs",
            name: match priority {
                Priority::Critical => " critical",
                _ => " high-priority",
            },
        }
    }
}

enum Resubmission {
    /// The same request: its job stands (unfinished, or completed with its proof).
    Same,
    /// Another request under the id of a job still running.
    Conflict,
    /// The id's job ended without a proof, or with a proof of another payload: start anew.
    Restart,
}

fn resubmission(job: &Job, digest: Option<[u8; 32]>) -> Resubmission {
    let same = match (job.payload_digest, digest) {
        (Some(a), Some(b)) => a == b,
        // An in-process caller gives no digest: same id, same request.
        _ => true,
    };
    // The outcome under the job's lock: `stopped()` turns true a moment before it is set.
    match (&job.lock().outcome, same) {
        (None, true) | (Some(JobOutcome::Completed(_)), true) => Resubmission::Same,
        (None, false) => Resubmission::Conflict,
        (Some(_), _) => Resubmission::Restart,
    }
}

/// Whether a resubmission of `job`'s id may resolve to `job` itself, needing no room: the job
/// is unfinished, or COMPLETED (its proof answers a retry). A FAILED or CANCELLED job's
/// resubmission is a new job.
pub(crate) fn resolves_without_work(job: &Job) -> bool {
    matches!(job.lock().outcome, None | Some(JobOutcome::Completed(_)))
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
