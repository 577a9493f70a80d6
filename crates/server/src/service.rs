//! The eight RPCs of `cuzk.v1.ProvingEngine`, each a thin translation onto the engine.
//!
//! No RPC holds a thread while it waits: AwaitProof and Prove await the job's completion as a
//! future (a client that leaves drops it), each holding a waiter's place of its client
//! (`waiters`: a cap refused at once, never a queue), parsing a request (C1 JSON, vanilla proofs) runs on
//! the blocking pool through the parse gate (`limits.parse_workers`, urgent requests first and
//! `urgent_parse_workers` for them alone), and status calls answer from the async threads in
//! microseconds whatever is being parsed. A request the queue has no room for is refused
//! before it is parsed. Job ids on the wire are capabilities (`job_token`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tonic::{Code, Request, Response, Status};
use zkforge_engine::{
    Engine, FailureKind, JobId, JobOutcome, JobRequest, JobResult, Randomness, SubmitError,
    MAX_REQUEST_ID_BYTES,
};
use zkforge_filecoin::{registry, ParamsId};

use crate::drain::{draining, Drain};
use crate::job_token::JobTokens;
use crate::limits::Checked;
use crate::listener::ConnInfo;
use crate::parse_gate::ParseGate;
use crate::pb::{self, proving_engine_server::ProvingEngine};
use crate::request::payload_digest;
use crate::status::{self, failure, with_failure_code};
use crate::waiters::{WaiterSlot, Waiters};
use crate::{metrics, parse_circuit_id, request};

/// Parameter loads (PreloadSRS) at once on the blocking pool; more wait without a thread.
const LOAD_WORKERS: usize = 2;

/// The service; cheap to clone, all clones share one engine.
#[derive(Clone)]
pub struct ProvingService {
    engine: Arc<Engine>,
    parsing: Arc<ParseGate>,
    loading: Arc<Semaphore>,
    waiters: Arc<Waiters>,
    tokens: Arc<JobTokens>,
    drain: Drain,
    /// What SubmitProof says of the GPU: its ordinal when there is exactly one, else empty
    /// (partitions go to whichever GPU frees up first; the CPU backend has none).
    assigned_gpu: String,
}

impl ProvingService {
    /// A service parsing at most `limits.parse_workers` requests at once, and
    /// `urgent_parse_workers` more urgent ones, holding each client to its waiter caps; it
    /// refuses new work once `drain` has started.
    pub fn new(engine: Arc<Engine>, limits: &Checked, drain: Drain) -> Self {
        let devices = engine.status().devices;
        let assigned_gpu = match devices.as_slice() {
            [one] => one.info.ordinal.to_string(),
            _ => String::new(),
        };
        Self {
            engine,
            parsing: ParseGate::new(limits.parse_workers, limits.urgent_parse_workers),
            loading: Arc::new(Semaphore::new(LOAD_WORKERS)),
            waiters: Waiters::new(limits),
            tokens: Arc::new(JobTokens::new()),
            drain,
            assigned_gpu,
        }
    }

    /// Runs `f` on the blocking pool, holding `permit` until it returns.
    async fn blocking<T: Send + 'static, P: Send + 'static>(
        permit: P,
        f: impl FnOnce() -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f()
        })
        .await
        .map_err(|e| failure(FailureKind::Internal, format!("request task failed: {e}")))?
    }

    /// The job a wire id names, or, as cuzk's job id is the request_id, the one job a
    /// request_id names (ids are scoped by proof kind: one under several kinds is ambiguous,
    /// and the error names each job). A request_id is the submitter's own name, so whoever
    /// knows it can await or cancel the job, as in cuzk; job ids stay capabilities
    /// (`job_token`). NOT_FOUND for any other string.
    fn job_of(&self, job_id: &str) -> Result<JobId, Status> {
        if let Some(job) = self.tokens.job(job_id) {
            return Ok(job);
        }
        match self.engine.jobs_named(job_id).as_slice() {
            [(_, job)] => Ok(*job),
            [] => Err(status::not_found(format!(
                "unknown job id {job_id:?} (a job is named by the job_id its submission \
                 returned, or by its request_id)"
            ))),
            several => {
                let jobs: Vec<String> = several
                    .iter()
                    .map(|(kind, job)| format!("{} job {}", kind, self.tokens.id(*job)))
                    .collect();
                Err(failure(
                    FailureKind::InvalidInput,
                    format!(
                        "request_id {job_id:?} names {} jobs, one per proof kind: {}; name one \
                         by its job_id",
                        several.len(),
                        jobs.join(", ")
                    ),
                ))
            }
        }
    }

    /// Runs `f` on the engine and the parameter set `circuit_id` names, on the blocking pool
    /// with the other key loads and evictions: loading or freeing a 47 GB key takes a while,
    /// not on an async thread.
    async fn on_key<T: Send + 'static>(
        &self,
        circuit_id: &str,
        f: impl FnOnce(&Engine, &ParamsId) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let id = params_id(circuit_id)?;
        let engine = self.engine.clone();
        let permit = self
            .loading
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| failure(FailureKind::Unavailable, "the daemon is stopping"))?;
        Self::blocking(permit, move || f(&engine, &id)).await
    }

    async fn submit(&self, r: pb::SubmitProofRequest) -> Result<pb::SubmitProofResponse, Status> {
        if self.drain.is_draining() {
            return Err(draining());
        }
        let request_id = (!r.request_id.is_empty()).then(|| r.request_id.clone());
        if let Some(id) = &request_id {
            if id.len() > MAX_REQUEST_ID_BYTES {
                return Err(submit_status(SubmitError::RequestIdTooLong {
                    len: id.len(),
                }));
            }
        }
        let (kind, priority) = request::kind_and_priority(r.proof_kind, r.priority)?;
        let input_bytes = prost::Message::encoded_len(&r) as u64;
        // No parse worker is spent on a request the queue has no room for.
        self.engine
            .check_room(kind, priority, request_id.as_deref(), input_bytes)
            .map_err(submit_status)?;
        // Parsing and checking a 32 GiB C1 takes seconds of CPU: on the blocking pool, a
        // bounded number at once, urgent requests first.
        let permit = self.parsing.acquire(priority).await;
        let (circuits, digest) = Self::blocking(permit, move || {
            let digest = request_id_digest(&r);
            Ok((request::circuits(r)?, digest))
        })
        .await?;
        if self.drain.is_draining() {
            return Err(draining());
        }
        let id = self
            .engine
            .submit(JobRequest {
                request_id,
                circuits,
                priority: Some(priority),
                input_bytes,
                payload_digest: digest,
                randomness: Randomness::Entropy,
            })
            .map_err(submit_status)?;
        Ok(pb::SubmitProofResponse {
            job_id: self.tokens.id(id),
            queue_position: self
                .engine
                .queue_position(id)
                .map_or(0, |p| p.min(u32::MAX as usize) as u32),
            assigned_gpu: self.assigned_gpu.clone(),
        })
    }

    /// The job's answer, and the code of its failure when it ended FAILED or CANCELLED. The
    /// caller's waiter place (`slot`; else one is taken here for the job's urgency) is held
    /// until the answer is sent or the client leaves.
    async fn wait(
        &self,
        conn: Option<&ConnInfo>,
        slot: Option<WaiterSlot>,
        job_id: String,
        timeout_ms: u64,
    ) -> Result<(pb::AwaitProofResponse, Option<Code>), Status> {
        let id = self.job_of(&job_id)?;
        let watch = self
            .engine
            .watch(id)
            .map_err(|e| status::not_found(format!("{e:#}")))?;
        let _slot = match slot {
            Some(slot) => slot,
            None => self.waiters.enter(conn, watch.priority())?,
        };
        let finished = watch.finished();
        let result = match timeout_ms {
            0 => Some(finished.await),
            ms => tokio::time::timeout(Duration::from_millis(ms), finished)
                .await
                .ok(),
        };
        Ok(match result {
            Some(Some(r)) => await_response(r, job_id),
            Some(None) => {
                let msg = format!("job {id} ended without a result");
                return Err(failure(FailureKind::Internal, msg));
            }
            None => (
                pb::AwaitProofResponse {
                    job_id,
                    status: pb::ProofStatus::Timeout as i32,
                    error_message: format!("no result within {timeout_ms} ms"),
                    ..Default::default()
                },
                None,
            ),
        })
    }
}

/// The digest that makes a reused `request_id` with another payload detectable.
fn request_id_digest(r: &pb::SubmitProofRequest) -> Option<[u8; 32]> {
    (!r.request_id.is_empty()).then(|| payload_digest(r))
}

fn submit_status(e: SubmitError) -> Status {
    match e {
        e if e.is_busy() => failure(FailureKind::NoRoom, e),
        // Not a failure: the id names another payload's job.
        SubmitError::RequestIdReused { .. } => status::already_exists(e),
        e => failure(FailureKind::InvalidInput, e),
    }
}

/// The cuzk.v1 answer for a job that ended, and the code of its failure (FAILED: its kind's;
/// CANCELLED), whose message is the answer's `error_message`, bounded as a Status's is.
fn await_response(r: JobResult, job_id: String) -> (pb::AwaitProofResponse, Option<Code>) {
    let t = r.timings;
    let mut out = pb::AwaitProofResponse {
        job_id,
        queue_wait_ms: t.queue_wait_ms as u64,
        srs_load_ms: t.srs_load_ms as u64,
        synthesis_ms: t.synthesis_wall_ms as u64,
        // Device-timed work only; 0 (unset) on the CPU backend, which has no GPU.
        gpu_compute_ms: t.device_ms as u64,
        total_ms: t.total_ms as u64,
        ..Default::default()
    };
    let code = match r.outcome {
        JobOutcome::Completed(proof) => {
            out.status = pb::ProofStatus::Completed as i32;
            out.proof = proof;
            None
        }
        JobOutcome::Failed(f) => {
            let st = status::of(&f);
            out.status = pb::ProofStatus::Failed as i32;
            out.error_message = st.message().to_string();
            Some(st.code())
        }
        JobOutcome::Cancelled => {
            out.status = pb::ProofStatus::Cancelled as i32;
            Some(status::code(FailureKind::Cancelled))
        }
    };
    (out, code)
}

fn params_id(circuit_id: &str) -> Result<ParamsId, Status> {
    let invalid = |e: anyhow::Error| failure(FailureKind::InvalidInput, format!("{e:#}"));
    let (kind, size) = parse_circuit_id(circuit_id).map_err(invalid)?;
    registry::params_id(kind, size).map_err(invalid)
}

#[tonic::async_trait]
impl ProvingEngine for ProvingService {
    async fn submit_proof(
        &self,
        req: Request<pb::SubmitProofRequest>,
    ) -> Result<Response<pb::SubmitProofResponse>, Status> {
        Ok(Response::new(self.submit(req.into_inner()).await?))
    }

    async fn await_proof(
        &self,
        req: Request<pb::AwaitProofRequest>,
    ) -> Result<Response<pb::AwaitProofResponse>, Status> {
        let conn = req.extensions().get::<ConnInfo>().cloned();
        let r = req.into_inner();
        let (answer, code) = self
            .wait(conn.as_ref(), None, r.job_id, r.timeout_ms)
            .await?;
        Ok(with_failure_code(Response::new(answer), code))
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let conn = req.extensions().get::<ConnInfo>().cloned();
        let submit = req
            .into_inner()
            .submit
            .ok_or_else(|| failure(FailureKind::InvalidInput, "submit is required"))?;
        // The waiter's place first: a Prove that could not wait submits nothing.
        let (_, priority) = request::kind_and_priority(submit.proof_kind, submit.priority)?;
        let slot = self.waiters.enter(conn.as_ref(), priority)?;
        let job = self.submit(submit).await?;
        let (result, code) = self.wait(conn.as_ref(), Some(slot), job.job_id, 0).await?;
        let answer = pb::ProveResponse {
            result: Some(result),
        };
        Ok(with_failure_code(Response::new(answer), code))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let id = self.job_of(&req.into_inner().job_id)?;
        let was_running = self
            .engine
            .cancel(id)
            .map_err(|e| status::not_found(format!("{e:#}")))?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        Ok(Response::new(metrics::status_response(
            &self.engine.status(),
        )))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        // zkforge's families, then cuzk's names for a dashboard built on cuzk.
        let status = self.engine.status();
        let mut prometheus_text = metrics::prometheus(&status);
        prometheus_text.push_str(&metrics::cuzk_exposition(&status));
        Ok(Response::new(pb::GetMetricsResponse { prometheus_text }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let (already_loaded, ms) = self
            .on_key(&req.into_inner().circuit_id, |engine, id| {
                // Missing parameters: FAILED_PRECONDITION, as always; no room: RESOURCE_EXHAUSTED.
                engine.preload(id).map_err(|f| status::of(&f))
            })
            .await?;
        Ok(Response::new(pb::PreloadSrsResponse {
            already_loaded,
            load_time_ms: ms as u64,
        }))
    }

    async fn evict_srs(
        &self,
        req: Request<pb::EvictSrsRequest>,
    ) -> Result<Response<pb::EvictSrsResponse>, Status> {
        let freed = self
            .on_key(&req.into_inner().circuit_id, |engine, id| {
                Ok(engine.evict(id))
            })
            .await?;
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded: freed.is_some(),
            freed_bytes: freed.unwrap_or(0),
        }))
    }
}
