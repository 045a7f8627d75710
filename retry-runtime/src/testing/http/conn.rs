//! Connections that can be reset: a TCP listener whose streams a handler can make fail, with a
//! TCP RST, as a crashed server or a middlebox would.

use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::kill::Kill;
use super::state::Shared;

/// The connection a request came on (axum's `ConnectInfo`), so that a handler can reset it.
#[derive(Debug, Clone)]
pub(super) struct Conn {
    pub(super) kill: Arc<Kill>,
}

impl Connected<IncomingStream<'_, FaultyListener>> for Conn {
    fn connect_info(stream: IncomingStream<'_, FaultyListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP listener whose connections can be reset by the handlers.
#[derive(Debug)]
pub(super) struct FaultyListener {
    pub(super) inner: TcpListener,
    pub(super) shared: Arc<Shared>,
}

impl Listener for FaultyListener {
    type Io = FaultyStream;
    type Addr = Conn;

    async fn accept(&mut self) -> (FaultyStream, Conn) {
        loop {
            match self.inner.accept().await {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    let ports = stream
                        .local_addr()
                        .ok()
                        .zip(stream.peer_addr().ok())
                        .map(|(local, peer)| (local.port(), peer.port()));
                    let kill = Arc::new(Kill::new(ports));
                    let mut conns = self
                        .shared
                        .conns
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    conns.retain(|w| w.strong_count() > 0);
                    conns.push(Arc::downgrade(&kill));
                    drop(conns);
                    let conn = Conn {
                        kill: Arc::clone(&kill),
                    };
                    return (
                        FaultyStream {
                            inner: stream,
                            kill,
                        },
                        conn,
                    );
                }
                // Out of file descriptors and the like: wait a little, as axum does.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Conn> {
        self.inner.local_addr()?;
        Ok(Conn {
            kill: Arc::new(Kill::default()),
        })
    }
}

/// A TCP stream that fails with `ConnectionReset` once its [`Kill`] switch is thrown.
#[derive(Debug)]
pub(super) struct FaultyStream {
    inner: TcpStream,
    kill: Arc<Kill>,
}

impl FaultyStream {
    fn killed(&self, cx: &Context<'_>) -> Option<io::Error> {
        self.kill.check(cx).then(|| {
            // Zero linger: the close that follows sends RST, not FIN.
            let _ = self.inner.set_zero_linger();
            io::ErrorKind::ConnectionReset.into()
        })
    }

    fn count(&self, written: &Poll<io::Result<usize>>) {
        if let Poll::Ready(Ok(n)) = written {
            self.kill.written.fetch_add(*n as u64, Ordering::SeqCst);
        }
    }
}

impl AsyncRead for FaultyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.count(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.count(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(e) = self.killed(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
