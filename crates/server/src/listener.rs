//! Accepting connections so that no client can stop the listener or hold it open forever.
//!
//! - An accept error never ends the stream: running out of descriptors (EMFILE, ENFILE) or
//!   memory is a moment to back off and retry, logged once per burst. tonic's own TCP stream
//!   ends on such an error, and the daemon then stopped with exit status 0.
//! - Connections are counted in total and per client (IP address; on the unix socket, the
//!   peer's process). At a cap, the connection of that client (at the total cap: of any
//!   client) idle longest — no request in flight, open for over [`EVICTABLE_AFTER`] — is
//!   closed to make room: one local process holding every slot open with a status call now
//!   and then cannot lock Curio, or the Prometheus scraper, out (gRPC and HTTP clients
//!   reconnect on their next call). Only when every connection is busy or just opened is the
//!   newcomer accepted and closed at once, so the backlog keeps moving.
//! - A drain closes the listener: new connections are refused by the kernel at once.
//! - A connection with no request in flight for `idle_timeout` is closed: that also bounds a
//!   client that connects and sends nothing, or half a header. HTTP/2 pings do not count as
//!   activity (a client library answers them without any request).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tokio_stream::Stream;

use crate::access::AllowedClients;
use crate::log_sample::LogSample;

/// Who a connection counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    Ip(IpAddr),
    /// A process on the unix socket, by its pid (the socket's 0660 mode already limits who
    /// can connect at all).
    Process(i32),
    /// A unix-socket peer whose credentials could not be read.
    Local,
}

/// How long a connection must have been open before another may take its slot: a client's
/// first request arrives within milliseconds of its connect. Not how long it has been idle:
/// clients that poll in step (every holder of the slots calling at the same instant) would
/// then leave a newcomer nothing to take at the instant it arrives.
pub const EVICTABLE_AFTER: Duration = Duration::from_secs(1);

/// The open connections of one listener.
pub struct Connections {
    max_total: usize,
    max_per_client: usize,
    idle_timeout: Duration,
    open: Mutex<Open>,
    refused: LogSample,
    evicted: LogSample,
}

/// The counts and the connections themselves, for eviction.
#[derive(Default)]
struct Open {
    by_client: HashMap<Client, usize>,
    total: usize,
    /// What eviction reads of each open connection. Not the `ConnState` itself: dropping the
    /// last reference to one takes this lock, so none may be dropped while it is held.
    live: HashMap<u64, (Client, Arc<Activity>)>,
    next_id: u64,
}

impl Connections {
    pub fn new(max_total: usize, max_per_client: usize, idle_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_client,
            idle_timeout,
            open: Mutex::new(Open::default()),
            refused: LogSample::default(),
            evicted: LogSample::default(),
        })
    }

    /// The connection idle longest among those `of` selects, if one is evictable.
    fn idlest(open: &Open, of: impl Fn(Client) -> bool) -> Option<(Client, Arc<Activity>)> {
        open.live
            .values()
            .filter(|(c, a)| of(*c) && !a.is_evicted())
            .filter(|(_, a)| a.opened.elapsed() >= EVICTABLE_AFTER)
            .filter_map(|(c, a)| Some((a.idle_since()?, c, a)))
            .min_by_key(|(since, _, _)| *since)
            .map(|(_, c, a)| (*c, a.clone()))
    }

    /// A slot for a new connection from `client`, taken from an idle connection at a cap, or
    /// `None` when every connection in the way is busy.
    fn admit(self: &Arc<Self>, client: Client) -> Option<Arc<ConnState>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mine = open.by_client.get(&client).copied().unwrap_or(0);
        let victim = if mine >= self.max_per_client {
            Some(Self::idlest(&open, |c| c == client))
        } else if open.total >= self.max_total {
            Some(Self::idlest(&open, |_| true))
        } else {
            None
        };
        match victim {
            Some(Some((closed, activity))) => {
                // Its slot is free from now on; the connection closes as its task notices.
                activity.evict();
                Self::forget(&mut open, closed);
                if self.evicted.take() {
                    tracing::info!(
                        ?client,
                        ?closed,
                        "at a connection cap: closed the connection idle longest for a new \
                         one (logged once per 1000)"
                    );
                }
            }
            Some(None) => {
                let total = open.total;
                drop(open);
                self.refused_at_cap(client, total, mine);
                return None;
            }
            None => {}
        }
        *open.by_client.entry(client).or_default() += 1;
        open.total += 1;
        open.next_id += 1;
        let id = open.next_id;
        let activity = Arc::new(Activity {
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_active: Mutex::new(Instant::now()),
            evicted: std::sync::atomic::AtomicBool::new(false),
            on_evict: Mutex::new(None),
        });
        open.live.insert(id, (client, activity.clone()));
        Some(Arc::new(ConnState {
            id,
            client,
            activity,
            connections: self.clone(),
        }))
    }

    fn refused_at_cap(&self, client: Client, total: usize, mine: usize) {
        {
            if self.refused.take() {
                tracing::warn!(
                    ?client,
                    total,
                    from_client = mine,
                    "connection refused: over limits.max_connections{} with every connection \
                     busy (logged once per 1000)",
                    if total >= self.max_total {
                        ""
                    } else {
                        "_per_client"
                    }
                );
            }
        }
    }

    /// Takes a connection of `client` off the counts.
    fn forget(open: &mut Open, client: Client) {
        if let Some(n) = open.by_client.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                open.by_client.remove(&client);
            }
        }
        open.total -= 1;
    }

    fn release(&self, state: &ConnState) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        // Dropped after the guard: an Arc is never dropped under the lock (see `Open::live`).
        let _entry = open.live.remove(&state.id);
        // An evicted connection's slot was given back when it was evicted.
        if !state.activity.is_evicted() {
            Self::forget(&mut open, state.client);
        }
        drop(open);
    }
}

/// One open connection: its client, and what its requests do.
pub struct ConnState {
    id: u64,
    pub client: Client,
    activity: Arc<Activity>,
    connections: Arc<Connections>,
}

/// Whether a request is in flight on a connection, since when it is idle, and whether it was
/// evicted.
struct Activity {
    opened: Instant,
    in_flight: AtomicUsize,
    last_active: Mutex<Instant>,
    evicted: std::sync::atomic::AtomicBool,
    /// Wakes the connection's task to close it once evicted.
    on_evict: Mutex<Option<std::task::Waker>>,
}

impl Activity {
    /// Since when the connection has had no request in flight; `None` while one is.
    fn idle_since(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(*self.last_active.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Marks the connection for closing and wakes its task.
    fn evict(&self) {
        self.evicted.store(true, Ordering::Release);
        if let Some(w) = self
            .on_evict
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            w.wake();
        }
    }
}

impl ConnState {
    /// Marks a request in flight until the guard drops.
    pub fn request_started(self: &Arc<Self>) -> ActiveRequest {
        self.activity.in_flight.fetch_add(1, Ordering::AcqRel);
        ActiveRequest(self.clone())
    }

    /// When the connection may be closed for idleness, if no request starts before.
    fn idle_deadline(&self) -> Option<Instant> {
        let last = self.activity.idle_since()?;
        Some(last + self.connections.idle_timeout)
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        self.connections.release(self);
    }
}

/// A request in flight on a connection; the idle clock restarts when it ends.
pub struct ActiveRequest(Arc<ConnState>);

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        let a = &self.0.activity;
        *a.last_active.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        a.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What the request handlers find in a request's extensions (tonic copies a connection's
/// `ConnectInfo` there), to mark themselves in flight.
#[derive(Clone)]
pub struct ConnInfo(pub Arc<ConnState>);

/// A connection's byte stream, closed when it has been idle too long.
pub struct GuardedIo<T> {
    io: T,
    state: Arc<ConnState>,
    timer: Pin<Box<Sleep>>,
}

impl<T> GuardedIo<T> {
    fn new(io: T, state: Arc<ConnState>) -> Self {
        let deadline = Instant::now() + state.connections.idle_timeout;
        Self {
            io,
            state,
            timer: Box::pin(tokio::time::sleep_until(deadline.into())),
        }
    }

    pub fn state(&self) -> &Arc<ConnState> {
        &self.state
    }

    /// Ready(error) once the connection has been idle past its deadline or was evicted;
    /// re-arms otherwise.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let activity = &self.state.activity;
        *activity.on_evict.lock().unwrap_or_else(|e| e.into_inner()) = Some(cx.waker().clone());
        if activity.is_evicted() {
            return Poll::Ready(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "connection closed for a new one at limits.max_connections",
            ));
        }
        loop {
            ready!(self.timer.as_mut().poll(cx));
            let now = Instant::now();
            match self.state.idle_deadline() {
                Some(deadline) if deadline <= now => {
                    return Poll::Ready(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "connection idle past limits.idle_timeout_secs",
                    ))
                }
                Some(deadline) => self.timer.as_mut().reset(deadline.into()),
                // A request is running: look again one timeout from now.
                None => self
                    .timer
                    .as_mut()
                    .reset((now + self.state.connections.idle_timeout).into()),
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for GuardedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Poll::Ready(e) = this.poll_idle(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for GuardedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

impl tonic::transport::server::Connected for GuardedIo<tokio::net::TcpStream> {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo(self.state.clone())
    }
}

impl tonic::transport::server::Connected for GuardedIo<tokio::net::UnixStream> {
    type ConnectInfo = ConnInfo;

    fn connect_info(&self) -> ConnInfo {
        ConnInfo(self.state.clone())
    }
}

/// A listener the accept loop can poll.
pub trait Accept: Unpin {
    type Io: AsyncRead + AsyncWrite + Unpin;
    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Client)>>;
}

impl Accept for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Client)>> {
        tokio::net::TcpListener::poll_accept(self, cx).map_ok(|(s, addr)| {
            // Requests are small frames answered at once: no Nagle delay.
            let _ = s.set_nodelay(true);
            (s, Client::Ip(addr.ip()))
        })
    }
}

impl Accept for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Client)>> {
        tokio::net::UnixListener::poll_accept(self, cx).map_ok(|(s, _)| {
            // Each process is a client of its own: one cannot take another's share.
            let client = match s.peer_cred().ok().and_then(|c| c.pid()) {
                Some(pid) => Client::Process(pid),
                None => Client::Local,
            };
            (s, client)
        })
    }
}

/// First pause after an accept error that is about resources, doubled up to the cap.
const BACKOFF_FIRST: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A listener that can be closed from outside the stream that accepts on it: the server keeps
/// its incoming stream until every connection has closed, and a listener still bound meanwhile
/// would leave new clients hanging in the kernel's backlog instead of refused.
pub struct ListenerSlot<L>(Arc<Mutex<Option<L>>>);

impl<L> Clone for ListenerSlot<L> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<L> ListenerSlot<L> {
    pub fn new(listener: L) -> Self {
        Self(Arc::new(Mutex::new(Some(listener))))
    }

    /// Closes the listener: connects are refused from now on.
    pub fn close(&self) {
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The accepted connections of a listener, as a stream that yields nothing more once its
/// listener is closed.
pub struct Incoming<L: Accept> {
    listener: ListenerSlot<L>,
    connections: Arc<Connections>,
    backoff: Option<(Pin<Box<Sleep>>, Duration)>,
    errors_in_burst: u64,
    /// `daemon.allow_clients`: a TCP client outside them is closed before it takes a slot.
    allowed: Option<Arc<AllowedClients>>,
}

impl<L: Accept> Incoming<L> {
    pub fn new(listener: ListenerSlot<L>, connections: Arc<Connections>) -> Self {
        Self {
            listener,
            connections,
            backoff: None,
            errors_in_burst: 0,
            allowed: None,
        }
    }

    /// Serves only clients `allowed` admits (None: every client).
    pub fn allowing(mut self, allowed: Option<Arc<AllowedClients>>) -> Self {
        self.allowed = allowed;
        self
    }

    fn on_error(&mut self, e: io::Error) {
        // The peer gave up before we accepted: nothing to wait for.
        if matches!(
            e.kind(),
            io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::Interrupted
        ) {
            return;
        }
        if self.errors_in_burst == 0 {
            tracing::warn!(
                "accepting a connection failed ({e}); retrying with backoff (out of file \
                 descriptors or memory? see limits.max_connections and the process's open-file \
                 limit)"
            );
        }
        self.errors_in_burst += 1;
        let pause = self
            .backoff
            .as_ref()
            .map_or(BACKOFF_FIRST, |(_, d)| (*d * 2).min(BACKOFF_MAX));
        self.backoff = Some((Box::pin(tokio::time::sleep(pause)), pause));
    }
}

impl<L: Accept> Stream for Incoming<L> {
    type Item = io::Result<GuardedIo<L::Io>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some((sleep, _)) = this.backoff.as_mut() {
                ready!(sleep.as_mut().poll(cx));
            }
            let accepted = {
                let mut slot = this.listener.0.lock().unwrap_or_else(|e| e.into_inner());
                match slot.as_mut() {
                    Some(listener) => listener.poll_accept(cx),
                    // Closed for a drain: nothing more comes, and the server's shutdown
                    // signal, not the end of this stream, tells its open connections to go
                    // away (once the drain has answered their calls).
                    None => return Poll::Pending,
                }
            };
            match ready!(accepted) {
                Ok((io, client)) => {
                    if this.errors_in_burst > 0 {
                        tracing::info!(
                            errors = this.errors_in_burst,
                            "accepting connections again"
                        );
                        this.errors_in_burst = 0;
                    }
                    this.backoff = None;
                    if let (Some(gate), Client::Ip(ip)) = (&this.allowed, client) {
                        if !gate.admits(ip) {
                            // Dropping the stream closes it.
                            continue;
                        }
                    }
                    match this.connections.admit(client) {
                        Some(state) => return Poll::Ready(Some(Ok(GuardedIo::new(io, state)))),
                        // Over a cap: dropping the stream closes it.
                        None => continue,
                    }
                }
                Err(e) => {
                    this.on_error(e);
                    if this.backoff.is_none() {
                        continue;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(n: u8) -> Client {
        Client::Ip(IpAddr::from([127, 0, 0, n]))
    }

    #[test]
    fn at_a_cap_the_connection_idle_longest_makes_room_and_busy_ones_stay() {
        let c = Connections::new(3, 2, Duration::from_secs(60));
        let first = c.admit(local(1)).unwrap();
        let second = c.admit(local(1)).unwrap();
        // Both just connected: not open long enough to give way.
        assert!(c.admit(local(1)).is_none(), "a newcomer is refused");
        std::thread::sleep(EVICTABLE_AFTER + Duration::from_millis(100));
        let busy = second.request_started();
        let third = c
            .admit(local(1))
            .expect("the one with no request made room");
        assert!(first.activity.is_evicted() && !second.activity.is_evicted());
        // The evicted one's slot was given back at once; its close takes it off nothing twice.
        drop(first);
        assert!(
            c.admit(local(1)).is_none(),
            "two open again, both busy or new"
        );
        // Another client has slots of its own until the total cap.
        let other = c.admit(local(2)).unwrap();
        assert!(
            c.admit(local(3)).is_none(),
            "the total cap, nobody idle long enough"
        );
        drop((busy, second, third, other));
        let o = c.open.lock().unwrap();
        assert_eq!((o.total, o.by_client.len(), o.live.len()), (0, 0, 0));
    }

    #[tokio::test]
    async fn each_unix_socket_peer_process_is_a_client_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let mut listener = tokio::net::UnixListener::bind(&path).unwrap();
        let _peer = tokio::net::UnixStream::connect(&path).await.unwrap();
        let (_, client) = std::future::poll_fn(|cx| Accept::poll_accept(&mut listener, cx))
            .await
            .unwrap();
        assert_eq!(client, Client::Process(std::process::id() as i32));
    }
}
