//! Every gRPC request passes through [`RequestGuardLayer`] before tonic reads its body:
//!
//! - its message may be at most what its method needs ([`Limits::max_request_bytes`] for
//!   SubmitProof and Prove, 64 KiB for the rest), counted as the bytes arrive, so a client
//!   announcing a large frame on GetStatus is refused after 64 KiB, not after the frame;
//! - the bytes being received over all connections share one budget
//!   ([`Limits::max_receiving_bytes`], with a reserve for urgent requests), a body must keep
//!   arriving at `min_receive_rate`, and one that stalls is refused: `receive.rs`;
//! - the request counts as in flight on its connection (see `listener`), so the connection's
//!   idle clock stops while it runs — however long an AwaitProof waits.
//!
//! Refusals are gRPC statuses (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED) naming the limit.
//!
//! [`Limits::max_request_bytes`]: crate::Limits::max_request_bytes
//! [`Limits::max_receiving_bytes`]: crate::Limits::max_receiving_bytes

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tonic::body::BoxBody;

use crate::limits::{Checked, SMALL_REQUEST_BYTES};
use crate::listener::ConnInfo;
use crate::receive::{GuardedBody, ReceiveBudget};

/// The methods whose messages carry proofs' inputs, and whether the message is a
/// ProveRequest (a SubmitProofRequest inside); every other method's messages are small.
fn large_method(path: &str) -> Option<bool> {
    match path {
        "/cuzk.v1.ProvingEngine/SubmitProof" => Some(false),
        "/cuzk.v1.ProvingEngine/Prove" => Some(true),
        _ => None,
    }
}

/// The tower layer the gRPC server is built with.
#[derive(Clone)]
pub struct RequestGuardLayer {
    max_request_bytes: u64,
    body_timeout: Duration,
    min_rate: u64,
    budget: Arc<ReceiveBudget>,
}

impl RequestGuardLayer {
    pub fn new(limits: &Checked, budget: Arc<ReceiveBudget>) -> Self {
        Self {
            max_request_bytes: limits.max_request_bytes,
            body_timeout: limits.body_timeout,
            min_rate: limits.min_receive_rate,
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
        let large = large_method(req.uri().path());
        let limit = match large {
            Some(_) => l.max_request_bytes,
            None => SMALL_REQUEST_BYTES,
        };
        let active = req
            .extensions()
            .get::<ConnInfo>()
            .map(|c| c.0.request_started());
        let (budget, timeout, min_rate) = (l.budget.clone(), l.body_timeout, l.min_rate);
        let req = req.map(|body| {
            BoxBody::new(GuardedBody::new(
                body, limit, large, budget, timeout, min_rate,
            ))
        });
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await;
            drop(active);
            response
        })
    }
}
