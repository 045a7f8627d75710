//! The service's state: scripts, the idempotency store, the side effects and the log, behind one
//! mutex; and what its handlers and connections share.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, PoisonError, Weak};

use axum::body::Bytes;
use axum::http::StatusCode;
use tokio::sync::watch;

use super::event::Feed;
use super::kill::Kill;
use super::object::ObjectEntry;
use super::{Fault, Route, Seen};

/// An answer kept for replay under an idempotency key.
#[derive(Debug, Clone)]
pub(super) struct Stored {
    pub(super) body_of_request: Bytes,
    pub(super) status: StatusCode,
    pub(super) body: String,
}

/// The service's state, behind one mutex (never held across an await).
#[derive(Debug, Default)]
pub(super) struct Records {
    /// Faults per subject, drawn first.
    pub(super) scripts: HashMap<String, VecDeque<Fault>>,
    /// Faults per route, drawn next.
    pub(super) routes: HashMap<Route, VecDeque<Fault>>,
    /// Faults for any request, drawn next.
    pub(super) script: VecDeque<Fault>,
    /// The fault when no script has one (`None`: [`Fault::Pass`]).
    pub(super) default: Option<Fault>,
    /// The idempotency store: (route, key) → the first answer.
    pub(super) store: HashMap<(String, String), Stored>,
    /// Side effects applied, per subject.
    pub(super) effects: HashMap<String, u32>,
    /// The last id handed out (`ch_1`, `msg_2`, …).
    pub(super) next_id: u64,
    /// Every request, in order of arrival.
    pub(super) seen: Vec<Seen>,
    /// The objects of `GET /objects/{name}`, with their scripts and requests.
    pub(super) objects: HashMap<String, ObjectEntry>,
    /// The event feed of `GET /events`, with its script and requests.
    pub(super) feed: Feed,
}

/// What the service, its handlers and its connections share.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) state: Mutex<Records>,
    pub(super) narrate: AtomicBool,
    /// Flips to `true` when the service stops: hung requests end.
    pub(super) stopping: watch::Sender<bool>,
    /// Every connection accepted, so that stopping can reset them all.
    pub(super) conns: Mutex<Vec<Weak<Kill>>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, Records> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn say(&self, what: impl std::fmt::Display) {
        if self.narrate.load(SeqCst) {
            println!("            server: {what}");
        }
    }

    pub(super) fn kill_all(&self) {
        let conns = std::mem::take(&mut *self.conns.lock().unwrap_or_else(PoisonError::into_inner));
        for kill in conns.iter().filter_map(Weak::upgrade) {
            kill.kill();
        }
    }
}
