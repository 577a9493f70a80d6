//! Request bodies as they arrive, under one receive budget for every connection.
//!
//! - The bytes being received at once share `max_receiving_bytes`. A body with no room
//!   waits for it — it is not read meanwhile, so HTTP/2's flow control holds the client's
//!   bytes on its side — for at most `body_timeout`; a refusal only when the wait runs out.
//!   The budget's last `urgent_receiving_bytes` are for urgent requests alone (urgent as the
//!   queues read it, `Priority::is_urgent`, from the message's first bytes:
//!   `codec::urgent_head`): a WinningPoSt is received at once however many C1 outputs are
//!   arriving.
//! - A body must keep arriving at `min_receive_rate` or better, over windows of
//!   [`RATE_WINDOW`] while it is read, else it is refused and its bytes freed: a client
//!   trickling its last bytes cannot hold its share of the budget (one once held it for as
//!   long as it trickled, and every other Prove was refused meanwhile).
//! - A body that stops arriving for `body_timeout` is refused and its bytes freed.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::futures::OwnedNotified;
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};
use tonic::body::BoxBody;
use tonic::Status;
use zkforge_engine::FailureKind;

use crate::codec::{urgent_head, HEAD_BYTES};
use crate::status;

/// RESOURCE_EXHAUSTED: the daemon has no room to receive the body now.
fn no_room(message: String) -> Status {
    status::failure(FailureKind::NoRoom, message)
}

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
    /// Bodies waiting for room are woken when bytes come back.
    freed: Arc<Notify>,
    /// Bodies waiting for room now: each leaves up to a stream window of the client's bytes
    /// unread in HTTP/2's buffers, outside `used`, so at most [`MAX_WAITING`] may wait.
    waiting: AtomicUsize,
}

/// Bodies that may wait for room at once; one more is refused at once, as before waits
/// existed. With HTTP/2 stream windows of [`crate::serve::STREAM_WINDOW`] they leave at most
/// 64 MiB unread beside the budget.
pub const MAX_WAITING: usize = 64;

impl ReceiveBudget {
    pub fn new(limit: u64, urgent_reserve: u64) -> Arc<Self> {
        Arc::new(Self {
            limit,
            urgent_reserve: urgent_reserve.min(limit),
            used: AtomicU64::new(0),
            freed: Arc::new(Notify::new()),
            waiting: AtomicUsize::new(0),
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

    /// A place among the bodies waiting for room, if one is free.
    fn start_waiting(&self) -> bool {
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w < MAX_WAITING).then_some(w + 1)
            })
            .is_ok()
    }

    fn stop_waiting(&self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }

    fn give_back(&self, n: u64) {
        if n > 0 {
            self.used.fetch_sub(n, Ordering::AcqRel);
            self.freed.notify_waiters();
        }
    }
}

/// Whether a body's bytes may use the urgent reserve of the receive budget.
enum Reserve {
    /// The message's first bytes are still arriving; until they say, it may (they are few).
    Reading {
        head: Vec<u8>,
        prove: bool,
    },
    Known(bool),
}

impl Reserve {
    /// Reads the message's head from `data` until it says; returns whether the bytes may
    /// use the reserve.
    fn observe(&mut self, data: &[u8]) -> bool {
        let Reserve::Reading { head, prove } = self else {
            return matches!(self, Reserve::Known(true));
        };
        let want = GRPC_PREFIX + HEAD_BYTES;
        head.extend_from_slice(&data[..data.len().min(want - head.len())]);
        let message_len = head
            .get(1..GRPC_PREFIX)
            .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize);
        if message_len.is_some_and(|len| head.len() >= GRPC_PREFIX + len.min(HEAD_BYTES)) {
            *self = Reserve::Known(urgent_head(&head[GRPC_PREFIX..], *prove));
        }
        !matches!(self, Reserve::Known(false))
    }
}

/// A request body under its method's size limit, the receive budget, the minimum rate and
/// the stall timeout.
pub struct GuardedBody {
    inner: BoxBody,
    limit: u64,
    received: u64,
    budget: Arc<ReceiveBudget>,
    reserve: Reserve,
    timeout: Duration,
    /// The stall clock while the body is read; the wait's clock while it waits for room.
    stall: Pin<Box<Sleep>>,
    /// A frame received but not yet given room in the budget, and whether it is urgent.
    waiting: Option<(Frame<Bytes>, bool)>,
    /// The wake-up for a waiting frame when bytes come back.
    wake: Option<Pin<Box<OwnedNotified>>>,
    /// Bytes a second the body must keep up (0: no minimum).
    min_rate: u64,
    /// Since when the current rate window runs, and the bytes it brought.
    window: (Instant, u64),
    window_end: Pin<Box<Sleep>>,
}

impl GuardedBody {
    /// `large`: `Some(prove)` for SubmitProof (`false`) and Prove (`true`), whose messages
    /// carry proofs' inputs; `None` for the small RPCs.
    pub fn new(
        inner: BoxBody,
        limit: u64,
        large: Option<bool>,
        budget: Arc<ReceiveBudget>,
        timeout: Duration,
        min_rate: u64,
    ) -> Self {
        let now = Instant::now();
        Self {
            inner,
            limit,
            received: 0,
            budget,
            reserve: match large {
                Some(prove) => Reserve::Reading {
                    head: Vec::new(),
                    prove,
                },
                // Small messages may use the reserve: 64 KiB at most each.
                None => Reserve::Known(true),
            },
            timeout,
            stall: Box::pin(tokio::time::sleep(timeout)),
            waiting: None,
            wake: None,
            min_rate,
            window: (now, 0),
            window_end: Box::pin(tokio::time::sleep_until(now + RATE_WINDOW)),
        }
    }

    /// Starts the rate window and the stall clock afresh from `now`.
    fn restart_clocks(&mut self, now: Instant) {
        self.window = (now, 0);
        self.window_end.as_mut().reset(now + RATE_WINDOW);
        self.stall.as_mut().reset(now + self.timeout);
    }

    /// Refuses the body if the window that ended by `now` brought fewer bytes than the
    /// minimum rate asks; starts the next window otherwise.
    fn check_rate(&mut self, now: Instant) -> Result<(), Status> {
        let (start, bytes) = self.window;
        if self.min_rate == 0 || now < start + RATE_WINDOW {
            return Ok(());
        }
        let needed = self.min_rate.saturating_mul(RATE_WINDOW.as_secs());
        if bytes < needed {
            return Err(no_room(format!(
                "the request body arrived at {} bytes/s over the last {} s, below \
                 limits.min_receive_rate ({} bytes/s); its {} bytes are freed",
                bytes / RATE_WINDOW.as_secs(),
                RATE_WINDOW.as_secs(),
                self.min_rate,
                self.received
            )));
        }
        self.window = (now, 0);
        self.window_end.as_mut().reset(now + RATE_WINDOW);
        Ok(())
    }

    /// Gives `frame` its room in the budget, or parks it until room comes back (the
    /// wake-up registered before the second look, so that no return of bytes is missed).
    /// `resumed`: the frame was already waiting.
    fn admit(
        &mut self,
        frame: Frame<Bytes>,
        urgent: bool,
        resumed: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Frame<Bytes>, Status>> {
        let n = frame.data_ref().map_or(0, |d| d.len() as u64);
        let freed = || Box::pin(self.budget.freed.clone().notified_owned());
        let mut wake = self.wake.take().unwrap_or_else(freed);
        loop {
            wake.as_mut().enable();
            if self.budget.try_take(n, urgent) {
                let now = Instant::now();
                if resumed {
                    // Nothing was read while it waited: the rate is measured from now.
                    self.budget.stop_waiting();
                    self.restart_clocks(now);
                }
                self.received += n;
                self.window.1 += n;
                self.stall.as_mut().reset(now + self.timeout);
                return Poll::Ready(Ok(frame));
            }
            match wake.as_mut().poll(cx) {
                Poll::Ready(()) => wake = freed(),
                Poll::Pending => break,
            }
        }
        let full = || {
            no_room(format!(
                "the daemon is already receiving {} bytes of requests (limits.max_receiving_bytes{}) \
                 and {MAX_WAITING} more wait for room; retry",
                self.budget.used(),
                match urgent {
                    true => "",
                    false => ", less limits.urgent_receiving_bytes kept for urgent proofs",
                }
            ))
        };
        if !resumed {
            if !self.budget.start_waiting() {
                return Poll::Ready(Err(full()));
            }
            // The stall clock bounds the wait for room from here.
            self.stall.as_mut().reset(Instant::now() + self.timeout);
        }
        if self.stall.as_mut().poll(cx).is_ready() {
            self.budget.stop_waiting();
            return Poll::Ready(Err(no_room(format!(
                "the daemon has been receiving {} bytes of requests for {} s with no room for \
                 this one (limits.max_receiving_bytes{}); retry",
                self.budget.used(),
                self.timeout.as_secs(),
                match urgent {
                    true => "",
                    false => ", less limits.urgent_receiving_bytes kept for urgent proofs",
                }
            ))));
        }
        self.waiting = Some((frame, urgent));
        self.wake = Some(wake);
        Poll::Pending
    }

    /// `admit`'s answer with the rate checked once the frame's bytes are counted.
    fn admitted(
        &mut self,
        admitted: Poll<Result<Frame<Bytes>, Status>>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        match admitted {
            Poll::Ready(Ok(frame)) => {
                let check = match self.inner.is_end_stream() {
                    true => Ok(()),
                    false => self.check_rate(Instant::now()),
                };
                Poll::Ready(Some(check.map(|()| frame)))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Pending => Poll::Pending,
        }
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
        // A frame waiting for room goes first; nothing more is read meanwhile.
        if let Some((frame, urgent)) = this.waiting.take() {
            let admitted = this.admit(frame, urgent, true, cx);
            return this.admitted(admitted);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let Some(data) = frame.data_ref() else {
                    return Poll::Ready(Some(Ok(frame)));
                };
                if this.received + data.len() as u64 > this.limit {
                    return Poll::Ready(Some(Err(no_room(format!(
                        "request larger than this method takes ({} bytes; \
                         limits.max_request_bytes for SubmitProof and Prove)",
                        this.limit
                    )))));
                }
                let urgent = this.reserve.observe(data);
                let admitted = this.admit(frame, urgent, false, cx);
                this.admitted(admitted)
            }
            Poll::Pending => {
                if this.stall.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(status::stalled(format!(
                        "the request body stalled: no bytes for {} s (limits.body_timeout_secs)",
                        this.timeout.as_secs()
                    )))));
                }
                while this.min_rate > 0 && this.window_end.as_mut().poll(cx).is_ready() {
                    if let Err(e) = this.check_rate(Instant::now()) {
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Poll::Pending
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.waiting.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for GuardedBody {
    fn drop(&mut self) {
        if self.waiting.is_some() {
            self.budget.stop_waiting();
        }
        self.budget.give_back(self.received);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{pb, request};
    use prost::Message;

    #[test]
    fn the_urgent_reserve_and_the_waiting_places_are_bounded() {
        let b = ReceiveBudget::new(100, 30);
        assert!(b.try_take(70, false), "bulk work takes up to the reserve");
        assert!(!b.try_take(1, false), "and not into it");
        assert!(b.try_take(30, true), "urgent work takes the reserve");
        assert!(!b.try_take(1, true));
        b.give_back(100);
        assert_eq!(b.used(), 0);
        assert!((0..MAX_WAITING).all(|_| b.start_waiting()));
        assert!(!b.start_waiting(), "one more waiter is refused at once");
        b.stop_waiting();
        assert!(b.start_waiting());
    }

    /// Whether the receive reserve lets `message` (a SubmitProof, or a Prove if `prove`) use
    /// it once its head has arrived, `step` bytes at a time as frames bring it.
    fn reserve_takes(message: &[u8], prove: bool, step: usize) -> bool {
        let mut framed = vec![0];
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(message);
        let mut reserve = Reserve::Reading {
            head: Vec::new(),
            prove,
        };
        for chunk in framed.chunks(step) {
            reserve.observe(chunk);
        }
        assert!(matches!(reserve, Reserve::Known(_)), "the head was read");
        reserve.observe(&[])
    }

    #[test]
    fn the_receive_reserve_and_the_queues_agree_on_every_kind_and_priority() {
        // Every value of both fields, one past them, and a negative one (a 10-byte varint).
        for kind in -1..=6 {
            for priority in -1..=6 {
                let submit = pb::SubmitProofRequest {
                    request_id: "r".repeat(zkforge_engine::MAX_REQUEST_ID_BYTES),
                    proof_kind: kind,
                    sector_size: 32 << 30,
                    registered_proof: u64::MAX,
                    priority,
                    vanilla_proof: vec![7; 4 * HEAD_BYTES],
                    ..Default::default()
                };
                // What the service submits to the engine's queues, lanes and admission; a
                // request the service refuses reaches none of them, and is bulk here.
                let queued =
                    request::kind_and_priority(kind, priority).is_ok_and(|(_, p)| p.is_urgent());
                let prove = pb::ProveRequest {
                    submit: Some(submit.clone()),
                };
                for step in [1, 7, 1 << 20] {
                    assert_eq!(
                        reserve_takes(&submit.encode_to_vec(), false, step),
                        queued,
                        "SubmitProof of kind {kind}, priority {priority}"
                    );
                    assert_eq!(
                        reserve_takes(&prove.encode_to_vec(), true, step),
                        queued,
                        "Prove of kind {kind}, priority {priority}"
                    );
                }
            }
        }
        // The queues' reading is the engine's: a PoSt of unset priority is urgent, and a
        // PoRep is not, so the loop above compared both answers.
        let urgent = |k: i32| request::kind_and_priority(k, 0).map(|(_, p)| p.is_urgent());
        assert_eq!(urgent(pb::ProofKind::WinningPost as i32).ok(), Some(true));
        assert_eq!(
            urgent(pb::ProofKind::PorepSealCommit as i32).ok(),
            Some(false)
        );
    }
}
