//! The daemon's stop as everything serving sees it. Once a drain starts:
//!
//! - new connections are refused at once (the listeners are closed, so a client's connect
//!   fails fast instead of waiting in the kernel's backlog for a handshake that never comes);
//! - every new call on a connection already open is answered UNAVAILABLE at once
//!   ([`DrainLayer`]), and submissions that were being received or parsed are UNAVAILABLE
//!   when they get that far;
//! - the calls in flight are answered (their jobs finish, or are failed at the deadline), and
//!   only then are the open connections told to go away ([`Drain::close_connections`]).
//!
//! The order matters to clients built on hyper (tonic's, and so our own): a connection told to
//! go away fails the client's next call on it locally, CANCELLED, without sending it, where
//! gRPC's clients expect UNAVAILABLE of a server that is stopping. Connections told to go away
//! only once nothing is in flight leave no window for that but the last moment.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::watch;
use tonic::body::BoxBody;

/// A stop that can be started once and awaited anywhere; cheap to clone.
#[derive(Clone)]
pub struct Drain(Arc<State>);

struct State {
    draining: watch::Sender<bool>,
    /// Calls in flight (their handlers have not answered yet).
    calls: watch::Sender<usize>,
    /// Set once the open connections are to go away.
    closing: watch::Sender<bool>,
}

impl Default for Drain {
    fn default() -> Self {
        Self(Arc::new(State {
            draining: watch::Sender::new(false),
            calls: watch::Sender::new(0),
            closing: watch::Sender::new(false),
        }))
    }
}

impl Drain {
    /// Starts the drain; later calls do nothing.
    pub fn start(&self) {
        self.0
            .draining
            .send_if_modified(|draining| !std::mem::replace(draining, true));
    }

    pub fn is_draining(&self) -> bool {
        *self.0.draining.borrow()
    }

    /// Resolves once the drain has started.
    pub async fn started(&self) {
        let mut rx = self.0.draining.subscribe();
        // The sender lives in `self`: the channel cannot close while this waits.
        let _ = rx.wait_for(|draining| *draining).await;
    }

    /// A call about to run, unless the drain has started: counted in flight until the
    /// returned guard drops.
    fn call(&self) -> Option<InFlight> {
        self.0.calls.send_modify(|n| *n += 1);
        let call = InFlight(self.clone());
        // Counted first, checked after: a drain that starts in between waits for this call.
        (!self.is_draining()).then_some(call)
    }

    /// Resolves once no call is in flight.
    pub async fn answered(&self) {
        let mut rx = self.0.calls.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Tells the open connections to go away (HTTP/2 GOAWAY, once their calls are answered).
    pub fn close_connections(&self) {
        self.0.closing.send_replace(true);
    }

    /// Resolves once [`Drain::close_connections`] was called: the server's shutdown signal.
    pub async fn connections_closing(&self) {
        let mut rx = self.0.closing.subscribe();
        let _ = rx.wait_for(|closing| *closing).await;
    }
}

/// A call counted in flight.
struct InFlight(Drain);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0 .0.calls.send_modify(|n| *n -= 1);
    }
}

/// What a call gets while the daemon stops: cuzk's clients (and Curio's scheduler) retry it,
/// against this daemon once it is back or another one.
pub(crate) fn draining() -> tonic::Status {
    crate::status::failure(
        zkforge_engine::FailureKind::Unavailable,
        "the daemon is shutting down: submit again once it is back",
    )
}

/// The tower layer that refuses new calls once the drain has started and counts the others
/// in flight.
#[derive(Clone)]
pub struct DrainLayer(pub Drain);

impl<S> tower::Layer<S> for DrainLayer {
    type Service = DrainGuard<S>;

    fn layer(&self, inner: S) -> DrainGuard<S> {
        DrainGuard {
            inner,
            drain: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct DrainGuard<S> {
    inner: S,
    drain: Drain,
}

impl<S, B> tower::Service<http::Request<B>> for DrainGuard<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<BoxBody>> + Send,
    S::Future: Send + 'static,
{
    type Response = http::Response<BoxBody>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let Some(call) = self.drain.call() else {
            // Answered without reading the body, before any handler runs.
            return Box::pin(async { Ok(draining().into_http()) });
        };
        let fut = self.inner.call(req);
        Box::pin(async move {
            let response = fut.await;
            drop(call);
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_drain_starts_once_and_wakes_every_waiter() {
        let d = Drain::default();
        assert!(!d.is_draining());
        let waiter = tokio::spawn({
            let d = d.clone();
            async move { d.started().await }
        });
        d.start();
        d.start();
        assert!(d.is_draining());
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .expect("woken")
            .unwrap();
        // Awaited after it started: at once.
        d.started().await;
    }

    #[tokio::test]
    async fn calls_in_flight_are_awaited_and_new_ones_refused_once_draining() {
        let d = Drain::default();
        let running = d.call().expect("before the drain");
        d.start();
        assert!(d.call().is_none(), "a new call during the drain");
        let answered = tokio::spawn({
            let d = d.clone();
            async move { d.answered().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!answered.is_finished(), "a call is still in flight");
        drop(running);
        tokio::time::timeout(Duration::from_secs(1), answered)
            .await
            .expect("answered once the call ended")
            .unwrap();
        let closing = tokio::spawn({
            let d = d.clone();
            async move { d.connections_closing().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!closing.is_finished());
        d.close_connections();
        tokio::time::timeout(Duration::from_secs(1), closing)
            .await
            .expect("woken")
            .unwrap();
    }
}
