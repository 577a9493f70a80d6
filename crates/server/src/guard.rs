//! Every gRPC request passes through [`RequestGuardLayer`] before tonic reads its body:
//!
//! - its message may be at most what its method needs ([`Limits::max_request_bytes`] for
//!   SubmitProof and Prove, 64 KiB for the rest), counted as the bytes arrive, so a client
//!   announcing a large frame on GetStatus is refused after 64 KiB, not after the frame;
//! - the bytes being received over all connections share one budget
//!   ([`Limits::max_receiving_bytes`]): a request that would pass it is refused, not buffered;
//! - a body that stops arriving for `body_timeout` is refused and its bytes freed (a client
//!   that announced 250 MB and sent 150 MB held them until it left);
//! - the request counts as in flight on its connection (see `listener`), so the connection's
//!   idle clock stops while it runs — however long an AwaitProof waits.
//!
//! Refusals are gRPC statuses (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED) naming the limit.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::time::Sleep;
use tonic::body::BoxBody;
use tonic::Status;

use crate::limits::{Checked, SMALL_REQUEST_BYTES};
use crate::listener::ConnInfo;

/// Bytes being received at once, over every connection.
pub struct ReceiveBudget {
    limit: u64,
    used: AtomicU64,
}

impl ReceiveBudget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes held by requests being received now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    fn try_take(&self, n: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// The methods whose messages carry proofs' inputs; every other one is small.
fn is_large_method(path: &str) -> bool {
    matches!(
        path,
        "/cuzk.v1.ProvingEngine/SubmitProof" | "/cuzk.v1.ProvingEngine/Prove"
    )
}

/// The tower layer the gRPC server is built with.
#[derive(Clone)]
pub struct RequestGuardLayer {
    max_request_bytes: u64,
    body_timeout: Duration,
    budget: Arc<ReceiveBudget>,
}

impl RequestGuardLayer {
    pub fn new(limits: &Checked, budget: Arc<ReceiveBudget>) -> Self {
        Self {
            max_request_bytes: limits.max_request_bytes,
            body_timeout: limits.body_timeout,
            budget,
        }
    }
}

impl<S> tower::Layer<S> for RequestGuardLayer {
    type Service = RequestGuard<S>;

    fn layer(&self, inner: S) -> RequestGuard<S> {
        RequestGuard {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct RequestGuard<S> {
    inner: S,
    layer: RequestGuardLayer,
}

impl<S> tower::Service<http::Request<BoxBody>> for RequestGuard<S>
where
    S: tower::Service<http::Request<BoxBody>> + Send,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<BoxBody>) -> Self::Future {
        let l = &self.layer;
        let limit = if is_large_method(req.uri().path()) {
            l.max_request_bytes
        } else {
            SMALL_REQUEST_BYTES
        };
        let active = req
            .extensions()
            .get::<ConnInfo>()
            .map(|c| c.0.request_started());
        let (budget, timeout) = (l.budget.clone(), l.body_timeout);
        let req = req.map(|body| {
            BoxBody::new(GuardedBody {
                inner: body,
                limit,
                received: 0,
                budget,
                timeout,
                stall: Box::pin(tokio::time::sleep(timeout)),
            })
        });
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await;
            drop(active);
            response
        })
    }
}

/// A request body under its method's size limit, the receive budget and the stall timeout.
struct GuardedBody {
    inner: BoxBody,
    limit: u64,
    received: u64,
    budget: Arc<ReceiveBudget>,
    timeout: Duration,
    stall: Pin<Box<Sleep>>,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = data.len() as u64;
                    if this.received + n > this.limit {
                        return Poll::Ready(Some(Err(Status::resource_exhausted(format!(
                            "request larger than this method takes ({} bytes; \
                             limits.max_request_bytes for SubmitProof and Prove)",
                            this.limit
                        )))));
                    }
                    if !this.budget.try_take(n) {
                        return Poll::Ready(Some(Err(Status::resource_exhausted(format!(
                            "the daemon is already receiving {} bytes of requests \
                             (limits.max_receiving_bytes); retry",
                            this.budget.used()
                        )))));
                    }
                    this.received += n;
                    let next = tokio::time::Instant::now() + this.timeout;
                    this.stall.as_mut().reset(next);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match this.stall.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(Status::deadline_exceeded(format!(
                    "the request body stalled: no bytes for {} s (limits.body_timeout_secs)",
                    this.timeout.as_secs()
                ))))),
                Poll::Pending => Poll::Pending,
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for GuardedBody {
    fn drop(&mut self) {
        self.budget.give_back(self.received);
    }
}
