//! Every gRPC request passes through [`RequestGuardLayer`] before tonic reads its body:
//!
//! - its message may be at most what its method needs ([`Limits::max_request_bytes`] for
//!   SubmitProof and Prove, 64 KiB for the rest), counted as the bytes arrive, so a client
//!   announcing a large frame on GetStatus is refused after 64 KiB, not after the frame;
//! - the bytes being received over all connections share one budget
//!   ([`Limits::max_receiving_bytes`]): a request that would pass it is refused, not buffered;
//!   its last `urgent_receiving_bytes` are for urgent requests only (HIGH or CRITICAL, or a
//!   PoSt of unset priority, read from the message's first bytes: `codec::urgent_head`), so a
//!   WinningPoSt is received however many C1 outputs are arriving;
//! - a body must keep arriving at `min_receive_rate` or better, measured over windows of
//!   [`RATE_WINDOW`], else it is refused and its bytes freed: a client trickling a byte now and
//!   then cannot hold its share of the budget (it once held it for as long as it trickled);
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

use crate::codec::{urgent_head, HEAD_BYTES};
use crate::limits::{Checked, SMALL_REQUEST_BYTES};
use crate::listener::ConnInfo;

/// The span over which a body's arrival rate is measured against `min_receive_rate`.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// gRPC's length-prefixed message: a compression flag and a 4-byte length before the bytes.
const GRPC_PREFIX: usize = 5;

/// Bytes being received at once, over every connection.
pub struct ReceiveBudget {
    limit: u64,
    /// The part of `limit` only urgent requests (and the small RPCs) may take.
    urgent_reserve: u64,
    used: AtomicU64,
}

impl ReceiveBudget {
    pub fn new(limit: u64, urgent_reserve: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            urgent_reserve: urgent_reserve.min(limit),
            used: AtomicU64::new(0),
        })
    }

    /// Bytes held by requests being received now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes if they fit: all of the budget for urgent requests, the budget less
    /// the urgent reserve for the rest.
    fn try_take(&self, n: u64, urgent: bool) -> bool {
        let cap = match urgent {
            true => self.limit,
            false => self.limit - self.urgent_reserve,
        };
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(n).filter(|&t| t <= cap)
            })
            .is_ok()
    }

    fn give_back(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

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
            let now = tokio::time::Instant::now();
            BoxBody::new(GuardedBody {
                inner: body,
                limit,
                received: 0,
                budget,
                urgency: match large {
                    Some(prove) => Urgency::Reading {
                        head: Vec::new(),
                        prove,
                    },
                    // Small messages may use the reserve: 64 KiB at most each.
                    None => Urgency::Known(true),
                },
                timeout,
                stall: Box::pin(tokio::time::sleep(timeout)),
                min_rate,
                window: RateWindow {
                    start: now,
                    bytes: 0,
                },
                window_end: Box::pin(tokio::time::sleep_until(now + RATE_WINDOW)),
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

/// Whether a body's bytes may use the urgent reserve of the receive budget.
enum Urgency {
    /// The message's first bytes are still arriving; until they say, it may (they are few).
    Reading {
        head: Vec<u8>,
        prove: bool,
    },
    Known(bool),
}

impl Urgency {
    /// Reads the message's head from `data` until it says; returns whether the bytes may
    /// use the reserve.
    fn observe(&mut self, data: &[u8]) -> bool {
        let Urgency::Reading { head, prove } = self else {
            return matches!(self, Urgency::Known(true));
        };
        let want = GRPC_PREFIX + HEAD_BYTES;
        head.extend_from_slice(&data[..data.len().min(want - head.len())]);
        let message_len = head
            .get(1..GRPC_PREFIX)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize);
        let complete = match message_len {
            Some(len) => head.len() >= GRPC_PREFIX + len.min(HEAD_BYTES),
            None => false,
        };
        if complete {
            *self = Urgency::Known(urgent_head(&head[GRPC_PREFIX..], *prove));
        }
        !matches!(self, Urgency::Known(false))
    }
}

/// Bytes received since `start`, the beginning of the current rate window.
struct RateWindow {
    start: tokio::time::Instant,
    bytes: u64,
}

/// A request body under its method's size limit, the receive budget, the minimum rate and
/// the stall timeout.
struct GuardedBody {
    inner: BoxBody,
    limit: u64,
    received: u64,
    budget: Arc<ReceiveBudget>,
    urgency: Urgency,
    timeout: Duration,
    stall: Pin<Box<Sleep>>,
    /// Bytes a second the body must keep up (0: no minimum).
    min_rate: u64,
    window: RateWindow,
    window_end: Pin<Box<Sleep>>,
}

impl GuardedBody {
    /// Refuses the body if the window that ended by `now` brought fewer bytes than the
    /// minimum rate asks; starts the next window otherwise.
    fn check_rate(&mut self, now: tokio::time::Instant) -> Result<(), Status> {
        let end = self.window.start + RATE_WINDOW;
        if now < end {
            return Ok(());
        }
        let needed = self.min_rate.saturating_mul(RATE_WINDOW.as_secs());
        if self.window.bytes < needed {
            return Err(Status::resource_exhausted(format!(
                "the request body arrived at {} bytes/s over the last {} s, below \
                 limits.min_receive_rate ({} bytes/s); its {} bytes are freed",
                self.window.bytes / RATE_WINDOW.as_secs(),
                RATE_WINDOW.as_secs(),
                self.min_rate,
                self.received
            )));
        }
        self.window = RateWindow {
            start: now,
            bytes: 0,
        };
        self.window_end.as_mut().reset(now + RATE_WINDOW);
        Ok(())
    }
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
                    let urgent = this.urgency.observe(data);
                    if !this.budget.try_take(n, urgent) {
                        return Poll::Ready(Some(Err(Status::resource_exhausted(format!(
                            "the daemon is already receiving {} bytes of requests \
                             (limits.max_receiving_bytes{}); retry",
                            this.budget.used(),
                            if urgent {
                                ""
                            } else {
                                ", less limits.urgent_receiving_bytes kept for urgent proofs"
                            }
                        )))));
                    }
                    this.received += n;
                    this.window.bytes += n;
                    let now = tokio::time::Instant::now();
                    this.stall.as_mut().reset(now + this.timeout);
                    if this.min_rate > 0 && !this.inner.is_end_stream() {
                        if let Err(e) = this.check_rate(now) {
                            return Poll::Ready(Some(Err(e)));
                        }
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                if this.stall.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(Status::deadline_exceeded(format!(
                        "the request body stalled: no bytes for {} s (limits.body_timeout_secs)",
                        this.timeout.as_secs()
                    )))));
                }
                while this.min_rate > 0 && this.window_end.as_mut().poll(cx).is_ready() {
                    if let Err(e) = this.check_rate(tokio::time::Instant::now()) {
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Poll::Pending
            }
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
