//! The adaptive throttle itself: its sliding window of requests and accepts, and the rejection
//! it draws from them.

use std::sync::OnceLock;

use tokio::time::Instant;

use super::buckets::{
    BUCKETS, BUCKETS_U32, FORGET_AFTER, bucket_of, bump, count_of, low, older, probability, slot,
};
// For the docs' links only: the builder uses the throttle, not the other way round.
use crate::error::Throttled;
use crate::sync::{AtomicU64, Ordering, now};

/// The client-side adaptive throttle of Google's SRE book ("Handling Overload"): each client
/// counts, over a sliding window, the `requests` it tried to send and the `accepts` the
/// dependency answered, and rejects a new request locally with probability
///
/// ```text
/// max(0, (requests − K × accepts) / (requests + 1))
/// ```
///
/// While the dependency accepts everything, nothing is rejected; once it refuses more than
/// `1 − 1/K` of what it is sent, the client sheds its own requests so that what still reaches the
/// dependency stays near `K × accepts`. Every attempt (retries included) is a request, and a
/// request the throttle rejected counts too (it is what keeps the rejection going while the
/// dependency stays overloaded).
///
/// An attempt is *accepted* when the dependency answered it with something the call does not
/// retry (a success, or an error that is not retried): the same line the circuit breaker draws
/// between a success and a failure. A retryable error or a timeout is a refusal.
///
/// **The window** is the last [`window`][AdaptiveThrottleBuilder::window] (default 2 minutes,
/// the SRE book's) *or* the last [`window_requests`][AdaptiveThrottleBuilder::window_requests]
/// requests (default 512), whichever is shorter: the two sliding windows circuit breakers offer
/// (Resilience4j's count-based "last N calls" and time-based "last N seconds") in one.
/// A client sending a few requests a second keeps the whole two minutes; one sending thousands a
/// second (a throttle shared by many callers) looks back a fraction of a second, so it starts
/// shedding within a fraction of a second of an overload and stops as soon after its end, instead
/// of averaging over two minutes of history that no longer describes the dependency. 512
/// requests estimate the accepted share to ±2.2 % at worst (one standard deviation).
///
/// The window is cut into 32 buckets; a bucket ends with its tick (the window's time cut into
/// 32 ticks) or when it holds a 32nd of the request bound, and the window is the last 32 buckets
/// less those started 32 ticks ago or more. Each bucket is one atomic word per counter (the
/// bucket's number and its count) plus one for the tick it started in: recording is one
/// compare-and-swap (a few more when it starts a bucket), reading sums the buckets. No lock.
/// The slots keep the low 32 bits of a tick; one more word keeps the whole tick the newest
/// bucket started in, so that no idle spell, however long, brings old buckets back: after a
/// whole window without a new bucket, the window is empty, and the next bucket's number skips a
/// lap of 32, which puts every older bucket out of the window by its number (the buckets in the
/// window then started within 32 × 32 ticks of each other, which 32 bits tell apart).
/// Concurrent counts are not lost (a count whose writer was descheduled across 32 bucket ends
/// is dropped: its bucket has left the window); which bucket a count lands in when a bucket ends
/// while it is recorded is not exact (a full bucket may take a few more than its share).
///
/// **After an outage.** A dependency that accepted nothing for a while fills the window with
/// refusals, and the formula keeps rejecting until they leave it: at a few requests a second,
/// up to the whole two minutes (after a 30 s outage, 200 instances went on failing calls for
/// more than two minutes in the fleet simulation). With
/// [`forget_outage`][AdaptiveThrottleBuilder::forget_outage] (the default), two accepts in a
/// row after at least two whole buckets and two ticks (a 16th of the window) without one
/// forget the refusals of that stretch (the requests the dependency refused and those shed
/// here; never a request let through and not yet answered): the dependency has answered
/// again, and what it refused while it was down says nothing of what it accepts now (a
/// throttle's first accepts ever forget every refusal before them: an instance started
/// during an outage). A refusal between the two cancels it: a dependency that accepts one
/// request in twenty gives a lone accept every few seconds, and forgetting on each would
/// let the full load through again and again. So that the accepts come soon, a throttle that
/// let nothing through since its tick began (a 32nd of the window) lets one request through,
/// a probe: at most one per tick (3.75 s at the default window) per instance, on top of the
/// formula's. While the dependency accepts nothing, or accepts only now and then, nothing is
/// forgotten and the formula holds as the book gives it; in an overload, where it keeps
/// accepting a share, a 16th of the window without an accept is rare (and the throttle
/// still waits for the window after an overload, or after a failure of most but not all
/// requests). BENCHMARKS.md ("At fleet scale") gives the extra rejection a complete 30 s outage
/// costs at 10, 200 and 2,000 instances: 2 to 5 s (7 s for a fleet autoscaling from 50 to 200),
/// against 16 s to more than two minutes for the book's throttle.
///
/// ```
/// use reattempt::AdaptiveThrottle;
///
/// let throttle = AdaptiveThrottle::builder().k(2.0).build().unwrap();
/// // A dependency that accepts everything: nothing is shed.
/// for _ in 0..100 {
///     throttle.try_acquire().unwrap();
///     throttle.record(true);
/// }
/// assert_eq!(throttle.rejection_probability(), 0.0);
/// // One that refuses everything: the client sheds ever more of its own requests.
/// for _ in 0..1000 {
///     if throttle.try_acquire().is_ok() {
///         throttle.record(false);
///     }
/// }
/// assert!(throttle.rejection_probability() > 0.8);
/// ```
///
/// [AdaptiveThrottleBuilder::window]: super::builder::AdaptiveThrottleBuilder::window
/// [AdaptiveThrottleBuilder::window_requests]: super::builder::AdaptiveThrottleBuilder::window_requests
/// [AdaptiveThrottleBuilder::forget_outage]: super::builder::AdaptiveThrottleBuilder::forget_outage
#[derive(Debug)]
pub struct AdaptiveThrottle {
    pub(super) name: &'static str,
    pub(super) k: f64,
    /// Nanoseconds per bucket (a 32nd of the window).
    pub(super) bucket: u64,
    /// Requests per bucket (a 32nd of the request bound, rounded up).
    pub(super) per_bucket: u32,
    /// The instant tick 0 starts at: the first use.
    pub(super) origin: OnceLock<Instant>,
    /// The current bucket's number; its slot is `head % BUCKETS`.
    pub(super) head: AtomicU64,
    /// The tick (whole, not wrapping) the newest bucket started in: a window after it, every
    /// bucket has left the window.
    pub(super) latest: AtomicU64,
    /// Per slot: its bucket's number (high 32 bits) and the tick that bucket started in (low 32
    /// bits; ticks are `bucket`-long spans of time since `origin`, wrapping).
    pub(super) started: [AtomicU64; BUCKETS],
    /// Per slot: its bucket's number (high 32 bits) and the requests in it (low 32 bits).
    pub(super) requests: [AtomicU64; BUCKETS],
    /// The same for accepts.
    pub(super) accepts: [AtomicU64; BUCKETS],
    /// The same for the requests known not to be accepted: refused by the dependency, or shed
    /// here. Forgetting an outage takes these away, and only these: a request let through and
    /// not yet answered is never forgotten (its accept would otherwise outnumber it).
    pub(super) refusals: [AtomicU64; BUCKETS],
    /// Whether an accept after an accept-free stretch forgets the stretch's requests.
    pub(super) forget_outage: bool,
    /// One more than the number of the bucket of the last accept (0: none yet).
    pub(super) last_accept: AtomicU64,
    /// One more than the tick of the last accept (0: none yet).
    pub(super) last_accept_tick: AtomicU64,
    /// One more than the first bucket of an accept-free stretch that an accept ended, until the
    /// next answer confirms it (another accept: the stretch is forgotten) or not (a refusal:
    /// a dependency that accepts now and then is still failing). 0: nothing pending.
    pub(super) armed: AtomicU64,
    /// One more than the tick of the last request let through while shedding (0: none yet).
    pub(super) last_admit_tick: AtomicU64,
}

impl AdaptiveThrottle {
    /// The default bound on the requests in the window (see
    /// [`AdaptiveThrottleBuilder::window_requests`]).
    ///
    /// ```
    /// use reattempt::AdaptiveThrottle;
    ///
    /// let throttle = AdaptiveThrottle::builder().build().unwrap();
    /// assert_eq!(throttle.window_requests(), u64::from(AdaptiveThrottle::DEFAULT_WINDOW_REQUESTS));
    /// ```
    ///
    /// [`AdaptiveThrottleBuilder::window_requests`]: super::builder::AdaptiveThrottleBuilder::window_requests
    pub const DEFAULT_WINDOW_REQUESTS: u32 = 512;

    /// The name given to the builder (in events).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The multiplier K.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// Counts a request and decides whether to send it: `Err(Throttled)` with the probability
    /// the window gives (see [`rejection_probability`](Self::rejection_probability)), except the
    /// first request of a tick in which none was let through yet, which is sent as a probe
    /// (with [`forget_outage`][AdaptiveThrottleBuilder::forget_outage], the default). Call
    /// [`record`](Self::record) with the dependency's answer to a request it let through.
    ///
    /// # Errors
    /// [`Throttled`] when the request is rejected locally.
    ///
    /// [AdaptiveThrottleBuilder::forget_outage]: super::builder::AdaptiveThrottleBuilder::forget_outage
    pub fn try_acquire(&self) -> Result<(), Throttled> {
        let (head, tick) = self.current(self.tick());
        let (requests, accepts) = self.totals(head, tick);
        bump(&self.requests[slot(head)], head);
        let p = probability(requests, accepts, self.k);
        if p == 0.0 {
            return Ok(());
        }
        let last = self.last_admit_tick.load(Ordering::Relaxed);
        if crate::schedule::rng::with_jitter_rng(rand::RngExt::random::<f64>) >= p {
            self.last_admit_tick.fetch_max(tick + 1, Ordering::Relaxed);
            return Ok(());
        }
        // A probe: nothing let through yet in this tick, so that the first accept after an
        // outage, which ends it, comes within a tick of its end.
        if self.forget_outage
            && last <= tick
            && self
                .last_admit_tick
                .compare_exchange(last, tick + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Ok(());
        }
        if self.forget_outage {
            bump(&self.refusals[slot(head)], head);
        }
        Err(Throttled::new())
    }

    /// Records the dependency's answer to a request [`try_acquire`](Self::try_acquire) let
    /// through: `accepted` unless it refused it (a retryable error, a timeout).
    pub fn record(&self, accepted: bool) {
        if accepted {
            let (head, tick) = self.current(self.tick());
            bump(&self.accepts[slot(head)], head);
            if self.forget_outage {
                let after = self.last_accept.swap(head + 1, Ordering::AcqRel);
                let since = self.last_accept_tick.swap(tick + 1, Ordering::AcqRel);
                // Two whole buckets, and two ticks: in an overload at thousands of requests a
                // second, 32 requests without an accept can happen; 2 × 3.75 s cannot. A
                // throttle that never saw an accept (an instance started during the outage)
                // counted nothing but refusals.
                let never = after == 0;
                if never
                    || head.saturating_sub(after) >= FORGET_AFTER
                        && tick.saturating_sub(since) >= FORGET_AFTER
                {
                    // The first accept after the stretch: forgotten once the next answer is an
                    // accept too. One accept alone is what a dependency that accepts one
                    // request in twenty gives every few seconds at a few requests a second;
                    // forgetting on it would let the full load through again and again.
                    self.armed.store(after + 1, Ordering::Release);
                } else {
                    let armed = self.armed.swap(0, Ordering::AcqRel);
                    if armed != 0 {
                        self.forget(armed - 1, head);
                    }
                }
            }
        } else if self.forget_outage {
            let (head, _) = self.current(self.tick());
            bump(&self.refusals[slot(head)], head);
            // A refusal after the first accept: the dependency is not back.
            self.armed.store(0, Ordering::Release);
        }
    }

    /// Forgets the refusals of buckets `from..=head` (no accept came in them before the one
    /// that called this, in `head`): as many requests as were refused or shed there are taken
    /// from those buckets' counts, oldest first. A request let through and still unanswered
    /// stays counted.
    fn forget(&self, from: u64, head: u64) {
        let from = from.max(head.saturating_sub(u64::from(BUCKETS_U32) - 1));
        let mut refused: u32 = 0;
        for bucket in from..=head {
            let b = low(bucket);
            let taken = self.refusals[slot(bucket)].fetch_update(
                Ordering::Relaxed,
                Ordering::Relaxed,
                |w| (bucket_of(w) == b && count_of(w) > 0).then_some(u64::from(b) << 32),
            );
            if let Ok(word) = taken {
                refused = refused.saturating_add(count_of(word));
            }
        }
        for bucket in from..=head {
            if refused == 0 {
                break;
            }
            let b = low(bucket);
            let _ = self.requests[slot(bucket)]
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                    let n = count_of(w);
                    (bucket_of(w) == b && n > 0).then(|| {
                        let take = n.min(refused);
                        u64::from(b) << 32 | u64::from(n - take)
                    })
                })
                .map(|word| refused -= count_of(word).min(refused));
        }
    }

    /// The probability that a request made now is rejected:
    /// `max(0, (requests − K × accepts) / (requests + 1))` over the window.
    pub fn rejection_probability(&self) -> f64 {
        let (requests, accepts) = self.counts();
        probability(requests, accepts, self.k)
    }

    /// The requests and accepts counted in the window now.
    ///
    /// ```
    /// let throttle = reattempt::AdaptiveThrottle::builder().build().unwrap();
    /// throttle.try_acquire().unwrap();
    /// throttle.record(true);
    /// assert_eq!(throttle.counts(), (1, 1));
    /// ```
    pub fn counts(&self) -> (u64, u64) {
        self.totals(self.head.load(Ordering::Acquire), self.tick())
    }

    /// The bound on the requests in the window, as built (a multiple of 32).
    ///
    /// ```
    /// use reattempt::AdaptiveThrottle;
    ///
    /// let throttle = AdaptiveThrottle::builder().window_requests(1000).build().unwrap();
    /// assert_eq!(throttle.window_requests(), 1024);
    /// ```
    pub fn window_requests(&self) -> u64 {
        u64::from(self.per_bucket) * BUCKETS as u64
    }

    /// The tick of now (whole: the slots keep its low 32 bits, [`low`]).
    pub(super) fn tick(&self) -> u64 {
        let now = now();
        let origin = *self.origin.get_or_init(|| now);
        let nanos = now.saturating_duration_since(origin).as_nanos();
        u64::try_from(nanos / u128::from(self.bucket)).unwrap_or(u64::MAX)
    }

    /// Whether a whole window has passed at `tick` since the newest bucket started: every
    /// bucket is out of the window, whatever the low 32 bits of its tick say.
    fn idle(&self, tick: u64) -> bool {
        tick.saturating_sub(self.latest.load(Ordering::Acquire)) >= u64::from(BUCKETS_U32)
    }

    /// The bucket to count in at `tick`: the head, or a new bucket after it if the head's time
    /// is up or it holds its share of the request bound; and the tick to see the window from
    /// (`tick`, or the head's when `tick` is behind it).
    ///
    /// After a whole window without a new bucket ([`idle`](Self::idle)), the new bucket's
    /// number skips a lap (`head + 32`): every older bucket leaves the window by its number.
    pub(super) fn current(&self, mut tick: u64) -> (u64, u64) {
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let s = slot(head);
            let mut started = self.started[s].load(Ordering::Acquire);
            if bucket_of(started) != low(head) {
                if !older(bucket_of(started), low(head)) {
                    // The slot holds a newer bucket: this thread was descheduled across a
                    // window of buckets (its count is dropped).
                    return (head, tick);
                }
                // The thread that started the head has not written its tick yet (it may be
                // descheduled for long): write it for it, so that the head ends as any other.
                let mine = u64::from(low(head)) << 32 | u64::from(low(tick));
                // Before the tick is written: whoever reads it sees a window that is not idle.
                self.latest.fetch_max(tick, Ordering::AcqRel);
                started = match self.started[s].compare_exchange(
                    started,
                    mine,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => mine,
                    Err(now) => {
                        // Written meanwhile (or the head moved on): look again.
                        if bucket_of(now) != low(head) {
                            head = self.head.load(Ordering::Acquire);
                            continue;
                        }
                        now
                    }
                };
            }
            // A clock read before another thread started the head (at most a window behind it;
            // further is a tick count that wrapped): the head's time is not up.
            let behind = count_of(started).wrapping_sub(low(tick));
            if (1..=BUCKETS_U32).contains(&behind) {
                tick += u64::from(behind);
            }
            let requests = self.requests[s].load(Ordering::Relaxed);
            let full = bucket_of(requests) == low(head) && count_of(requests) >= self.per_bucket;
            // The low 32 bits of the tick match again after 2^32 ticks: the whole tick says
            // whether the head's time is up.
            let idle = self.idle(tick);
            if count_of(started) == low(tick) && !full && !idle {
                return (head, tick);
            }
            let next = if idle {
                head + u64::from(BUCKETS_U32)
            } else {
                head + 1
            };
            match self
                .head
                .compare_exchange(head, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.start(next, tick);
                    return (next, tick);
                }
                // Another thread started a bucket (or more): look at the new head.
                Err(now) => head = now,
            }
        }
    }

    /// Starts bucket `next` at `tick`, once the head is `next`: empties its slot of the bucket
    /// that held it a window ago (a count already made in the new bucket stays), so that every
    /// slot holds one of the last 32 buckets, and writes the tick it started in, unless another
    /// thread did either first (this one may have been descheduled since it moved the head on,
    /// even across a window of buckets: a newer bucket in the slot is left alone); a tick another
    /// thread wrote for it from an older reading is replaced.
    pub(super) fn start(&self, next: u64, tick: u64) {
        let s = slot(next);
        // Before the tick is written (see `current`); a stale reading leaves it as it is.
        self.latest.fetch_max(tick, Ordering::AcqRel);
        let tick = low(tick);
        for counter in [&self.requests[s], &self.accepts[s]] {
            let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                older(bucket_of(w), low(next)).then_some(u64::from(low(next)) << 32)
            });
        }
        let _ = self.started[s].fetch_update(Ordering::Release, Ordering::Relaxed, |w| {
            let b = bucket_of(w);
            // A thread that found the tick unwritten wrote its own reading (`current`), which
            // may be older than this one, taken before the head moved on: the bucket began at
            // the later one (or its counts would leave the window early).
            let stale =
                b == low(next) && (1..=BUCKETS_U32).contains(&tick.wrapping_sub(count_of(w)));
            (older(b, low(next)) || stale).then_some(u64::from(low(next)) << 32 | u64::from(tick))
        });
    }

    /// The requests and accepts in the buckets of the window, seen from bucket `head` at `tick`:
    /// the last 32 buckets, less those started 32 ticks ago or more (all of them when the newest
    /// did: [`idle`](Self::idle); a bucket whose tick is not written yet is the newest).
    pub(super) fn totals(&self, head: u64, tick: u64) -> (u64, u64) {
        let head = low(head);
        let idle = self.idle(tick);
        let tick = low(tick);
        let mut totals = (0, 0);
        for s in 0..BUCKETS {
            let started = self.started[s].load(Ordering::Acquire);
            let live = |word: u64| {
                let b = bucket_of(word);
                head.wrapping_sub(b) < BUCKETS_U32
                    // A bucket whose tick is not written yet is the newest.
                    && (bucket_of(started) != b
                        || !idle && tick.wrapping_sub(count_of(started)) < BUCKETS_U32)
            };
            let r = self.requests[s].load(Ordering::Relaxed);
            if live(r) {
                totals.0 += u64::from(count_of(r));
            }
            let a = self.accepts[s].load(Ordering::Relaxed);
            if live(a) {
                totals.1 += u64::from(count_of(a));
            }
        }
        totals
    }
}
