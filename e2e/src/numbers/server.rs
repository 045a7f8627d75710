//! The scripted `Numbers` server: each call takes the next [`Fate`] of its [`Script`] (how many
//! messages it sends, then how it ends), and the script counts what was opened, sent and
//! cancelled. The server runs on a thread and a runtime of its own, so that killing it (dropping
//! that runtime) closes its listener and every connection at once, as a killed process does.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Sleep;
use tonic::body::Body;
use tonic::codegen::tokio_stream::{self, Stream, StreamExt as _};
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tonic::transport::Server;
use tonic::transport::server::Connected;
use tonic::{Request, Response, Status};

use super::pb::numbers_server::{Numbers, NumbersServer};
use super::pb::{CountRequest, Number};

/// How long a call waits, after its last scripted message, before it ends as scripted: long
/// enough on loopback for the messages sent to reach the client (h2 drops the frames still
/// queued on a stream it resets), so that what the client got is what the server counts as sent.
pub const SETTLE: Duration = Duration::from_millis(50);

/// How a call ends after its scripted messages.
#[derive(Clone, Debug)]
pub enum End {
    /// The server resets the stream (`RST_STREAM` with this reason), as hyper does when a
    /// response body fails: the client reads a transport error (tonic: `INTERNAL` for
    /// `INTERNAL_ERROR`, `CANCELLED` for `CANCEL`, with h2's error as the source).
    Reset(h2::Reason),
    /// The server's application ends the stream with this status, in the trailers.
    Fail(Status),
    /// The stream's TCP connection is shut down: every call on it fails with a transport error.
    /// The server keeps listening.
    DropConnection,
    /// Nothing more is sent, and the stream never ends: the client has to give up on it.
    Stall,
    /// The whole server is killed: its listener and every connection closed. Start it again on
    /// the same address with [`TestServer::start`].
    KillServer,
}

/// What one call does: `after` messages (fewer if the request asks for fewer), then `end`.
#[derive(Clone, Debug)]
pub struct Fate {
    /// The messages sent before the end.
    pub after: u64,
    /// How the call ends.
    pub end: End,
}

impl Fate {
    /// `after` messages, then `end`.
    pub fn new(after: u64, end: End) -> Fate {
        Fate { after, end }
    }
}

/// The calls' fates, in order (once they are used up, a call sends every number asked for and
/// ends with OK), and what the server did.
#[derive(Debug, Default)]
pub struct Script {
    fates: Mutex<VecDeque<Fate>>,
    /// A pause before each message (none by default: messages go as fast as the client reads).
    pace: Option<Duration>,
    seen: Mutex<Seen>,
    /// A call asks for the server to be killed.
    kill: Notify,
}

/// What the server did, as [`Script::seen`] gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// Each call's request, in the order they came.
    pub opened: Vec<CountRequest>,
    /// Every number sent (handed to tonic's encoder), across calls, in order.
    pub sent: Vec<u64>,
    /// The calls the client went away from before their end (a dropped stream, a stall given
    /// up): the server saw the stream cancelled.
    pub cancelled: usize,
    /// The calls that sent every number asked for and ended with OK.
    pub finished: usize,
    /// The calls that ended as their fate said (reset, status, dropped connection, killed).
    pub ended_as_scripted: usize,
    /// The times a call killed the server.
    pub kills: usize,
}

impl Seen {
    /// The numbers sent more than once (a resume that asked for some again).
    pub fn resent(&self) -> usize {
        let mut sent = self.sent.clone();
        sent.sort_unstable();
        sent.dedup();
        self.sent.len() - sent.len()
    }
}

impl Script {
    /// A script of `fates`, one per call in order.
    pub fn new(fates: impl IntoIterator<Item = Fate>) -> Arc<Script> {
        Arc::new(Script {
            fates: Mutex::new(fates.into_iter().collect()),
            ..Script::default()
        })
    }

    /// The same with a pause before each message.
    pub fn paced(fates: impl IntoIterator<Item = Fate>, pace: Duration) -> Arc<Script> {
        Arc::new(Script {
            fates: Mutex::new(fates.into_iter().collect()),
            pace: Some(pace),
            ..Script::default()
        })
    }

    /// What the server did so far.
    pub fn seen(&self) -> Seen {
        self.record().clone()
    }

    /// Waits (on the real clock, at most 5 s) until what the server did satisfies `done`.
    ///
    /// # Panics
    ///
    /// After 5 s, with what was seen.
    pub async fn wait_until(&self, done: impl Fn(&Seen) -> bool) -> Seen {
        let start = std::time::Instant::now();
        loop {
            let seen = self.seen();
            if done(&seen) {
                return seen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the server never got there: {seen:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
            tokio::task::yield_now().await;
        }
    }

    fn record(&self) -> MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The service: each call follows the next fate.
struct Scripted(Arc<Script>);

#[tonic::async_trait]
impl Numbers for Scripted {
    type CountStream = Pin<Box<dyn Stream<Item = Result<Number, Status>> + Send>>;

    async fn count(
        &self,
        request: Request<CountRequest>,
    ) -> Result<Response<Self::CountStream>, Status> {
        let reset = request.extensions().get::<Arc<ResetSwitch>>().cloned();
        let connection = request.extensions().get::<ConnectionHandle>().cloned();
        let asked = *request.get_ref();
        let script = Arc::clone(&self.0);
        script.record().opened.push(asked);
        let fate = script
            .fates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop_front();
        let stream = Counting {
            next: asked.after + 1,
            until: asked.until,
            left: fate.as_ref().map(|fate| fate.after),
            end: fate.map(|fate| fate.end),
            pause: None,
            state: State::Sending,
            reset,
            connection,
            script,
        };
        Ok(Response::new(Box::pin(stream)))
    }
}

/// Where a call's stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Sending,
    /// Its end is done (or stalling): nothing more is yielded.
    Ended,
    /// It stalls: its drop is the client's cancellation.
    Stalled,
    /// It sent every number and ended with OK, or with its scripted status.
    Done,
}

/// A call's stream: the numbers, counted as they are handed to tonic, then the scripted end.
struct Counting {
    next: u64,
    until: u64,
    /// The messages left before the scripted end (`None`: no fate, finish).
    left: Option<u64>,
    end: Option<End>,
    /// The pace's pause before the next message, or [`SETTLE`] before the end.
    pause: Option<Pin<Box<Sleep>>>,
    state: State,
    reset: Option<Arc<ResetSwitch>>,
    connection: Option<ConnectionHandle>,
    script: Arc<Script>,
}

impl Stream for Counting {
    type Item = Result<Number, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.state {
            State::Sending => {}
            State::Ended | State::Stalled => return Poll::Pending,
            State::Done => return Poll::Ready(None),
        }
        if this.left == Some(0) || (this.end.is_some() && this.next > this.until) {
            let settle = this
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(SETTLE)));
            ready!(settle.as_mut().poll(cx));
            this.pause = None;
            return this.finish_as_scripted();
        }
        if this.next > this.until {
            this.state = State::Done;
            this.script.record().finished += 1;
            return Poll::Ready(None);
        }
        if let Some(pace) = this.script.pace {
            let pause = this
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(pace)));
            ready!(pause.as_mut().poll(cx));
            this.pause = None;
        }
        let seq = this.next;
        this.next += 1;
        if let Some(left) = &mut this.left {
            *left -= 1;
        }
        this.script.record().sent.push(seq);
        Poll::Ready(Some(Ok(Number { seq })))
    }
}

impl Counting {
    /// Ends the call as its fate says: what `poll_next` returns then (pending for ever, but for
    /// a status: the stream is reset, its connection or server killed, or it stalls).
    fn finish_as_scripted(&mut self) -> Poll<Option<Result<Number, Status>>> {
        let end = self.end.take().expect("a scripted end");
        if matches!(end, End::Stall) {
            self.state = State::Stalled;
            return Poll::Pending;
        }
        self.script.record().ended_as_scripted += 1;
        self.state = State::Ended;
        match end {
            End::Reset(reason) => {
                // `Resetting`'s body fails when it finds this stream pending with the switch on.
                let switch = self.reset.as_ref().expect("served behind `Resetting`");
                switch.trip(reason);
            }
            End::Fail(status) => {
                self.state = State::Done;
                return Poll::Ready(Some(Err(status)));
            }
            End::DropConnection => {
                let connection = self.connection.as_ref().expect("a killable connection");
                connection.shut_down();
            }
            End::KillServer => {
                self.script.record().kills += 1;
                self.script.kill.notify_one();
            }
            End::Stall => unreachable!("handled above"),
        }
        Poll::Pending
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        if matches!(self.state, State::Sending | State::Stalled) {
            self.script.record().cancelled += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Resetting a stream: hyper resets an HTTP/2 stream (`RST_STREAM`, with the reason of the h2
// error it finds in the failure's sources) when the response body fails.

/// A call's switch: once tripped, the response body fails with an h2 error of this reason.
#[derive(Debug, Default)]
struct ResetSwitch(Mutex<Option<h2::Reason>>);

impl ResetSwitch {
    fn trip(&self, reason: h2::Reason) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(reason);
    }

    fn tripped(&self) -> Option<h2::Reason> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The service behind a switch per call (in the request's extensions) that fails its body.
#[derive(Clone)]
struct Resetting<S>(S);

impl<S: NamedService> NamedService for Resetting<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for Resetting<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Body>) -> Self::Future {
        let switch = Arc::new(ResetSwitch::default());
        request.extensions_mut().insert(Arc::clone(&switch));
        let response = self.0.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|inner| Body::new(ResettableBody { inner, switch })))
        })
    }
}

/// A response body that fails once its switch is tripped and the stream has nothing ready.
struct ResettableBody {
    inner: Body,
    switch: Arc<ResetSwitch>,
}

impl http_body::Body for ResettableBody {
    type Data = Bytes;
    type Error = tonic::codegen::StdError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        // The switch is tripped by the call's stream while it is polled in here: it is looked
        // at once the stream has nothing more to give.
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Pending => match self.switch.tripped() {
                Some(reason) => Poll::Ready(Some(Err(h2::Error::from(reason).into()))),
                None => Poll::Pending,
            },
            Poll::Ready(frame) => Poll::Ready(frame.map(|frame| frame.map_err(Into::into))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

// ---------------------------------------------------------------------------------------------
// Connections a call can shut down.

/// A handle on a connection's socket (in each request's extensions, as tonic's connect info).
#[derive(Clone, Debug)]
struct ConnectionHandle(Arc<std::net::TcpStream>);

impl ConnectionHandle {
    /// Shuts the socket down both ways: the client reads the end of the connection.
    fn shut_down(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// An accepted connection, with a second handle on its socket for [`End::DropConnection`].
struct Connection {
    io: tokio::net::TcpStream,
    handle: ConnectionHandle,
}

impl Connection {
    fn new(io: tokio::net::TcpStream) -> std::io::Result<Connection> {
        let io = io.into_std()?;
        let handle = ConnectionHandle(Arc::new(io.try_clone()?));
        let io = tokio::net::TcpStream::from_std(io)?;
        Ok(Connection { io, handle })
    }
}

impl Connected for Connection {
    type ConnectInfo = ConnectionHandle;

    fn connect_info(&self) -> ConnectionHandle {
        self.handle.clone()
    }
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------------------------

/// A `Numbers` server on 127.0.0.1, on its own thread and runtime, following a [`Script`].
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Serves `script` on `addr` (`127.0.0.1:0` for a free port; the address of a killed server
    /// to start it again).
    ///
    /// # Panics
    ///
    /// If `addr` cannot be bound.
    pub fn start(addr: SocketAddr, script: &Arc<Script>) -> TestServer {
        let listener = std::net::TcpListener::bind(addr).expect("bind the test server");
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let service = Resetting(NumbersServer::new(Scripted(Arc::clone(script))));
        let script = Arc::clone(script);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener)
                    .map(|accepted| accepted.and_then(Connection::new));
                let serve = Server::builder()
                    .add_service(service)
                    .serve_with_incoming(incoming);
                tokio::select! {
                    served = serve => served.unwrap(),
                    _ = stopped => {}
                    () = script.kill.notified() => {}
                }
            });
            // Dropping the runtime drops every connection task: the sockets close at once.
            drop(runtime);
        });
        TestServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address for a client (`http://127.0.0.1:port`).
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Kills the server (or waits for a scripted [`End::KillServer`] to have done it): its
    /// listener and every open connection are closed when this returns.
    pub fn kill(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shut();
    }
}
