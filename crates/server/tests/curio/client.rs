//! Curio's client as it really runs (filecoin-project/curio `lib/cuzk/client.go` and its
//! callers): one lazily connected channel with 256 MiB message limits and no keepalive, only
//! the unary `Prove` (and `GetStatus` with a 5 s timeout for backpressure), every error or
//! non-COMPLETED answer a failed task, and harmonytask's retries of a failed task with the
//! same request, its tries per kind and its backoff, min(1 s·2^n, 2 min), scaled down.

use std::path::PathBuf;
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};
use zkforge_server::pb::{self, proving_engine_client::ProvingEngineClient};

/// Where the daemon listens, as Curio's `cuzk.address` names it.
#[derive(Clone, Debug)]
pub enum Address {
    Tcp(std::net::SocketAddr),
    Unix(PathBuf),
}

/// How Curio's scheduler retries a failed task of one kind: `tries` in all, the n-th retry
/// after min(`base`·2^n, `cap`).
#[derive(Clone, Copy, Debug)]
struct Retries {
    pub tries: usize,
    pub base: Duration,
    pub cap: Duration,
}

/// Curio's backoff divided by this: 1 s → 20 ms, 2 min → 2.4 s.
const SCALE: u32 = 50;

impl Retries {
    /// Curio's schedule for `kind`: PoRep 10 tries, SnapDeals 3, WindowPoSt 5, WinningPoSt
    /// one (a WinningPoSt that fails is a lost block), scaled by [`SCALE`].
    fn curio(kind: pb::ProofKind) -> Self {
        let tries = match kind {
            pb::ProofKind::PorepSealCommit => 10,
            pb::ProofKind::SnapDealsUpdate => 3,
            pb::ProofKind::WindowPostPartition => 5,
            pb::ProofKind::WinningPost => 1,
            pb::ProofKind::Unspecified => 1,
        };
        Self {
            tries,
            base: Duration::from_secs(1) / SCALE,
            cap: Duration::from_secs(120) / SCALE,
        }
    }

    fn backoff(&self, retry: usize) -> Duration {
        let factor = 1u32 << retry.min(16);
        (self.base * factor).min(self.cap)
    }
}

/// What a task came to: the proof of its successful try, or none, and every failed try's
/// error as Curio logs it.
#[derive(Debug)]
pub struct TaskOutcome {
    pub proof: Option<Vec<u8>>,
    pub errors: Vec<String>,
}

impl TaskOutcome {
    /// The proof, or a panic listing every try's error.
    pub fn proof(&self) -> &[u8] {
        match &self.proof {
            Some(p) => p,
            None => panic!("Curio's task failed every try: {:#?}", self.errors),
        }
    }
}

/// Curio's `cuzk.Client`; a clone shares its connection, as Curio's tasks share one client.
#[derive(Clone)]
pub struct Curio {
    address: Address,
    svc: Option<ProvingEngineClient<Channel>>,
}

impl Curio {
    /// Connects lazily, on first use, as `grpc.NewClient` does.
    pub fn new(address: Address) -> Self {
        Self { address, svc: None }
    }

    fn svc(&mut self) -> ProvingEngineClient<Channel> {
        let address = self.address.clone();
        self.svc
            .get_or_insert_with(|| {
                let channel = match address {
                    Address::Tcp(a) => Endpoint::from_shared(format!("http://{a}"))
                        .unwrap()
                        .connect_lazy(),
                    Address::Unix(path) => Endpoint::try_from("http://localhost")
                        .unwrap()
                        .connect_with_connector_lazy(tower::service_fn(move |_| {
                            let p = path.clone();
                            async move {
                                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                                    tokio::net::UnixStream::connect(p).await?,
                                ))
                            }
                        })),
                };
                ProvingEngineClient::new(channel)
                    .max_decoding_message_size(256 << 20)
                    .max_encoding_message_size(256 << 20)
            })
            .clone()
    }

    /// `Client.Prove`: the proof's response when COMPLETED, else the error Curio sees.
    pub async fn prove(
        &mut self,
        req: pb::SubmitProofRequest,
    ) -> Result<pb::AwaitProofResponse, String> {
        let resp = self
            .svc()
            .prove(pb::ProveRequest { submit: Some(req) })
            .await
            .map_err(|s| format!("cuzk Prove RPC: {:?}: {}", s.code(), s.message()))?;
        let result = resp
            .into_inner()
            .result
            .ok_or("cuzk Prove returned nil result")?;
        match pb::ProofStatus::try_from(result.status) {
            Ok(pb::ProofStatus::Completed) => Ok(result),
            Ok(pb::ProofStatus::Failed) => {
                Err(format!("cuzk proof failed: {}", result.error_message))
            }
            Ok(pb::ProofStatus::Cancelled) => Err("cuzk proof cancelled".into()),
            Ok(pb::ProofStatus::Timeout) => Err("cuzk proof timed out".into()),
            _ => Err(format!("cuzk proof unknown status: {}", result.status)),
        }
    }

    /// A harmonytask running `req`: tries until one succeeds or its kind's tries ran out,
    /// backing off between them; `after_failure(n, error)` runs after the n-th failed try (the
    /// test's chance to change the world, as an operator would between Curio's retries).
    pub async fn task(
        &mut self,
        req: pb::SubmitProofRequest,
        mut after_failure: impl FnMut(usize, &str),
    ) -> TaskOutcome {
        let kind = pb::ProofKind::try_from(req.proof_kind).unwrap_or(pb::ProofKind::Unspecified);
        let retries = Retries::curio(kind);
        let mut errors = Vec::new();
        for n in 0..retries.tries {
            match self.prove(req.clone()).await {
                Ok(r) if !r.proof.is_empty() => {
                    return TaskOutcome {
                        proof: Some(r.proof),
                        errors,
                    }
                }
                Ok(_) => errors.push("cuzk returned empty proof bytes".into()),
                Err(e) => errors.push(e),
            }
            after_failure(n + 1, errors.last().expect("just pushed"));
            if n + 1 < retries.tries {
                tokio::time::sleep(retries.backoff(n)).await;
            }
        }
        TaskOutcome {
            proof: None,
            errors,
        }
    }

    /// [`Curio::task`] of `req` on a task of its own, nothing changed between tries.
    pub fn spawn_task(&self, req: pb::SubmitProofRequest) -> tokio::task::JoinHandle<TaskOutcome> {
        let mut curio = self.clone();
        tokio::spawn(async move { curio.task(req, |_, _| {}).await })
    }

    /// `Client.GetStatus`, with its 5 s timeout.
    pub async fn get_status(&mut self) -> Result<pb::GetStatusResponse, String> {
        let mut svc = self.svc();
        let call = svc.get_status(pb::GetStatusRequest {});
        match tokio::time::timeout(Duration::from_secs(5), call).await {
            Ok(Ok(r)) => Ok(r.into_inner()),
            Ok(Err(s)) => Err(format!("{:?}: {}", s.code(), s.message())),
            Err(_) => Err("GetStatus: context deadline exceeded (5 s)".into()),
        }
    }
}
