//! Accepting connections so that no client can stop the listener or hold it open forever.
//!
//! - An accept error never ends the stream: running out of descriptors (EMFILE, ENFILE) or
//!   memory is a moment to back off and retry, logged once per burst. tonic's own TCP stream
//!   ends on such an error, and the daemon then stopped with exit status 0.
//! - Connections are counted in total and per client (IP address; all unix-socket peers are
//!   one client); one over a cap is accepted and closed at once, so the backlog keeps moving.
//! - A connection with no request in flight for `idle_timeout` is closed: that also bounds a
//!   client that connects and sends nothing, or half a header. HTTP/2 pings do not count as
//!   activity (a client library answers them without any request).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tokio_stream::Stream;

/// Who a connection counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Client {
    Ip(IpAddr),
    /// A peer on the unix socket (the socket's 0660 mode already limits who that is).
    Local,
}

/// The open connections of one listener.
pub struct Connections {
    max_total: usize,
    max_per_client: usize,
    idle_timeout: Duration,
    open: Mutex<HashMap<Client, usize>>,
    total: AtomicUsize,
    refused: AtomicU64,
}

impl Connections {
    pub fn new(max_total: usize, max_per_client: usize, idle_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            max_total,
            max_per_client,
            idle_timeout,
            open: Mutex::new(HashMap::new()),
            total: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// A slot for a new connection from `client`, or `None` over a cap.
    fn admit(self: &Arc<Self>, client: Client) -> Option<Arc<ConnState>> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let total = self.total.load(Ordering::Relaxed);
        let mine = open.get(&client).copied().unwrap_or(0);
        if total >= self.max_total || mine >= self.max_per_client {
            drop(open);
            if self
                .refused
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(1000)
            {
                tracing::warn!(
                    ?client,
                    total,
                    from_client = mine,
                    "connection refused: over limits.max_connections{} (logged once per 1000)",
                    if total >= self.max_total {
                        ""
                    } else {
                        "_per_client"
                    }
                );
            }
            return None;
        }
        *open.entry(client).or_default() += 1;
        self.total.fetch_add(1, Ordering::Relaxed);
        Some(Arc::new(ConnState {
            client,
            in_flight: AtomicUsize::new(0),
            last_active: Mutex::new(Instant::now()),
            connections: self.clone(),
        }))
    }

    fn release(&self, client: Client) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&client) {
            *n -= 1;
            if *n == 0 {
                open.remove(&client);
            }
        }
        self.total.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One open connection: its client and whether a request is in flight on it.
pub struct ConnState {
    pub client: Client,
    in_flight: AtomicUsize,
    last_active: Mutex<Instant>,
    connections: Arc<Connections>,
}

impl ConnState {
    /// Marks a request in flight until the guard drops.
    pub fn request_started(self: &Arc<Self>) -> ActiveRequest {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        ActiveRequest(self.clone())
    }

    /// When the connection may be closed for idleness, if no request starts before.
    fn idle_deadline(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = *self.last_active.lock().unwrap_or_else(|e| e.into_inner());
        Some(last + self.connections.idle_timeout)
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        self.connections.release(self.client);
    }
}

/// A request in flight on a connection; the idle clock restarts when it ends.
pub struct ActiveRequest(Arc<ConnState>);

impl Drop for ActiveRequest {
    fn drop(&mut self) {
        *self.0.last_active.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
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

    /// Ready(error) once the connection has been idle past its deadline; re-arms otherwise.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
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
        tokio::net::UnixListener::poll_accept(self, cx).map_ok(|(s, _)| (s, Client::Local))
    }
}

/// First pause after an accept error that is about resources, doubled up to the cap.
const BACKOFF_FIRST: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The accepted connections of a listener, as a stream that ends only when dropped.
pub struct Incoming<L: Accept> {
    listener: L,
    connections: Arc<Connections>,
    backoff: Option<(Pin<Box<Sleep>>, Duration)>,
    errors_in_burst: u64,
}

impl<L: Accept> Incoming<L> {
    pub fn new(listener: L, connections: Arc<Connections>) -> Self {
        Self {
            listener,
            connections,
            backoff: None,
            errors_in_burst: 0,
        }
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
            match ready!(this.listener.poll_accept(cx)) {
                Ok((io, client)) => {
                    if this.errors_in_burst > 0 {
                        tracing::info!(
                            errors = this.errors_in_burst,
                            "accepting connections again"
                        );
                        this.errors_in_burst = 0;
                    }
                    this.backoff = None;
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
