//! The switch that resets a connection, which the service's state and its connections share.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::task::{Context, Waker};

/// A switch that makes a connection fail: its pending and later reads and writes return
/// `ConnectionReset`, and its socket is closed with `SO_LINGER` 0, which sends a TCP RST. It
/// also counts the bytes the connection's socket accepted, and knows its ports, so that a reset
/// can wait until what was written has left the socket (`drain`).
#[derive(Debug, Default)]
pub(super) struct Kill {
    killed: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
    /// Bytes the socket accepted.
    pub(super) written: AtomicU64,
    /// (the server's port, the client's port), to find the socket in `/proc/net/tcp`.
    pub(super) ports: Option<(u16, u16)>,
}

impl Kill {
    pub(super) fn new(ports: Option<(u16, u16)>) -> Kill {
        Kill {
            ports,
            ..Kill::default()
        }
    }

    pub(super) fn kill(&self) {
        self.killed.store(true, SeqCst);
        let wakers =
            std::mem::take(&mut *self.wakers.lock().unwrap_or_else(PoisonError::into_inner));
        for w in wakers {
            w.wake();
        }
    }

    /// Whether the connection is killed; if not, `cx` is woken when it is.
    pub(super) fn check(&self, cx: &Context<'_>) -> bool {
        if !self.killed.load(SeqCst) {
            let mut wakers = self.wakers.lock().unwrap_or_else(PoisonError::into_inner);
            if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.push(cx.waker().clone());
            }
        }
        self.killed.load(SeqCst)
    }
}
