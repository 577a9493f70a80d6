//! The eight RPCs of `cuzk.v1.ProvingEngine`, each a thin translation onto the engine.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};
use zkforge_engine::{Engine, JobOutcome, JobRequest, JobResult, Priority};
use zkforge_filecoin::registry;

use crate::pb::{self, proving_engine_server::ProvingEngine};
use crate::request::bounded;
use crate::{metrics, parse_circuit_id, request};

/// The service; cheap to clone, all clones share one engine.
#[derive(Clone)]
pub struct ProvingService {
    engine: Arc<Engine>,
}

impl ProvingService {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Runs blocking engine work off the async executor.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Engine) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || f(&engine))
            .await
            .map_err(|e| Status::internal(format!("engine task failed: {e}")))?
    }

    async fn submit(&self, r: pb::SubmitProofRequest) -> Result<pb::SubmitProofResponse, Status> {
        let circuits = request::circuits(&r)?;
        let kind = circuits.kind();
        let priority = Priority::from_wire(r.priority, kind).ok_or_else(|| {
            Status::invalid_argument(format!("priority {} is not 0..=4", r.priority))
        })?;
        let request_id = (!r.request_id.is_empty()).then(|| r.request_id.clone());
        let id = self
            .blocking(move |e| {
                e.submit(JobRequest {
                    request_id,
                    circuits,
                    priority: Some(priority),
                })
                .map_err(|e| Status::unavailable(format!("{e:#}")))
            })
            .await?;
        Ok(pb::SubmitProofResponse {
            job_id: id.to_string(),
            queue_position: 0,
            assigned_gpu: 0,
        })
    }

    async fn wait(
        &self,
        job_id: String,
        timeout_ms: u64,
    ) -> Result<pb::AwaitProofResponse, Status> {
        let id: u64 = job_id
            .parse()
            .map_err(|_| Status::not_found(bounded(format!("unknown job id {job_id:?}"))))?;
        let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms));
        let result = self
            .blocking(move |e| {
                e.wait(id, timeout)
                    .map_err(|e| Status::not_found(format!("{e:#}")))
            })
            .await?;
        Ok(match result {
            Some(r) => await_response(r),
            None => pb::AwaitProofResponse {
                job_id,
                status: pb::ProofStatus::Timeout as i32,
                error_message: format!("no result within {timeout_ms} ms"),
                ..Default::default()
            },
        })
    }
}

fn await_response(r: JobResult) -> pb::AwaitProofResponse {
    let t = r.timings;
    let mut out = pb::AwaitProofResponse {
        job_id: r.id.to_string(),
        queue_wait_ms: t.queue_wait_ms as u64,
        srs_load_ms: t.srs_load_ms as u64,
        synthesis_ms: t.synthesis_wall_ms as u64,
        gpu_compute_ms: t.prove_ms as u64,
        total_ms: t.total_ms as u64,
        ..Default::default()
    };
    match r.outcome {
        JobOutcome::Completed(proof) => {
            out.status = pb::ProofStatus::Completed as i32;
            out.proof = proof;
        }
        JobOutcome::Failed(msg) => {
            out.status = pb::ProofStatus::Failed as i32;
            out.error_message = msg;
        }
        JobOutcome::Cancelled => out.status = pb::ProofStatus::Cancelled as i32,
    }
    out
}

fn params_id(circuit_id: &str) -> Result<zkforge_filecoin::ParamsId, Status> {
    let (kind, size) = parse_circuit_id(circuit_id)
        .map_err(|e| Status::invalid_argument(bounded(format!("{e:#}"))))?;
    registry::params_id(kind, size).map_err(|e| Status::invalid_argument(format!("{e:#}")))
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
        let r = req.into_inner();
        Ok(Response::new(self.wait(r.job_id, r.timeout_ms).await?))
    }

    async fn prove(
        &self,
        req: Request<pb::ProveRequest>,
    ) -> Result<Response<pb::ProveResponse>, Status> {
        let submit = req
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("submit is required"))?;
        let job = self.submit(submit).await?;
        let result = self.wait(job.job_id, 0).await?;
        Ok(Response::new(pb::ProveResponse {
            result: Some(result),
        }))
    }

    async fn cancel_proof(
        &self,
        req: Request<pb::CancelProofRequest>,
    ) -> Result<Response<pb::CancelProofResponse>, Status> {
        let job_id = req.into_inner().job_id;
        let id: u64 = job_id
            .parse()
            .map_err(|_| Status::not_found(bounded(format!("unknown job id {job_id:?}"))))?;
        let was_running = self
            .blocking(move |e| {
                e.cancel(id)
                    .map_err(|e| Status::not_found(format!("{e:#}")))
            })
            .await?;
        Ok(Response::new(pb::CancelProofResponse { was_running }))
    }

    async fn get_status(
        &self,
        _: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let s = self.blocking(|e| Ok(e.status())).await?;
        Ok(Response::new(metrics::status_response(&s)))
    }

    async fn get_metrics(
        &self,
        _: Request<pb::GetMetricsRequest>,
    ) -> Result<Response<pb::GetMetricsResponse>, Status> {
        let s = self.blocking(|e| Ok(e.status())).await?;
        Ok(Response::new(pb::GetMetricsResponse {
            prometheus_text: metrics::prometheus(&s),
        }))
    }

    async fn preload_srs(
        &self,
        req: Request<pb::PreloadSrsRequest>,
    ) -> Result<Response<pb::PreloadSrsResponse>, Status> {
        let id = params_id(&req.into_inner().circuit_id)?;
        let (already_loaded, ms) = self
            .blocking(move |e| {
                e.preload(&id)
                    .map_err(|e| Status::failed_precondition(format!("{e:#}")))
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
        let id = params_id(&req.into_inner().circuit_id)?;
        let freed = self.blocking(move |e| Ok(e.evict(&id))).await?;
        Ok(Response::new(pb::EvictSrsResponse {
            was_loaded: freed.is_some(),
            freed_bytes: freed.unwrap_or(0),
        }))
    }
}
