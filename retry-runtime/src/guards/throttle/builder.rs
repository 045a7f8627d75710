//! Builds an [`AdaptiveThrottle`], checking its settings.

use std::sync::OnceLock;
use std::time::Duration;

use super::adaptive::AdaptiveThrottle;
use super::buckets::{BUCKETS, BUCKETS_U32};
use crate::ConfigError;
use crate::sync::AtomicU64;

// Here, beside what it makes: the throttle itself does not name its builder.
impl AdaptiveThrottle {
    /// A builder with the SRE book's defaults: K = 2, a two-minute window (bounded at 512
    /// requests).
    pub fn builder() -> AdaptiveThrottleBuilder {
        AdaptiveThrottleBuilder::default()
    }
}

/// Builds an [`AdaptiveThrottle`].
///
/// ```
/// use std::time::Duration;
/// use reattempt::AdaptiveThrottle;
///
/// let throttle = AdaptiveThrottle::builder()
///     .k(1.5)
///     .window(Duration::from_secs(60))
///     .window_requests(4096)
///     .name("payments")
///     .build()
///     .unwrap();
/// assert_eq!(throttle.k(), 1.5);
/// let err = AdaptiveThrottle::builder().k(0.0).build().unwrap_err();
/// assert_eq!(err.field(), "k");
/// let err = AdaptiveThrottle::builder().window_requests(0).build().unwrap_err();
/// assert_eq!(err.field(), "window_requests");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct AdaptiveThrottleBuilder {
    k: f64,
    window: Duration,
    window_requests: u32,
    name: &'static str,
    forget_outage: bool,
}

impl Default for AdaptiveThrottleBuilder {
    fn default() -> Self {
        AdaptiveThrottleBuilder {
            k: 2.0,
            window: Duration::from_secs(120),
            window_requests: AdaptiveThrottle::DEFAULT_WINDOW_REQUESTS,
            name: "throttle",
            forget_outage: true,
        }
    }
}

impl AdaptiveThrottleBuilder {
    /// The multiplier K (finite, ≥ 1; default 2): the dependency is sent up to K times what it
    /// accepts. Lower is more aggressive (1 sends only what was accepted); higher wastes more of
    /// the dependency's work on requests it refuses, but adapts faster when it recovers.
    pub fn k(mut self, k: f64) -> Self {
        self.k = k;
        self
    }

    /// How far back requests and accepts are counted at most (≥ 20 ms; default 2 minutes, as in
    /// the SRE book), in 32 buckets. The window is shorter when the
    /// [`window_requests`](Self::window_requests) last requests are more recent.
    ///
    /// Which window: the throttle estimates what the dependency accepts from what one instance
    /// saw in it, so it must hold enough requests (a few hundred) to estimate it; and it keeps
    /// rejecting until an overload's refusals leave it. An instance sending hundreds of
    /// requests a second is bounded by `window_requests` whatever the window; one sending a
    /// few a second (a fleet of many small instances) holds only a few hundred in two minutes,
    /// and shorter windows make its estimate noisy (a 10 s window at 1 request a second holds
    /// 10). Keep the default and [`forget_outage`](Self::forget_outage), which ends the
    /// rejection after a complete outage within seconds (not after a partial one); shorten the window (to 10–30 s) when
    /// overloads, rather than outages, should end faster, at the price of a noisier estimate.
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// How many of the last requests are counted at most (≥ 1, rounded up to a multiple of 32;
    /// default 512): the window is the last [`window`](Self::window) or the last
    /// `window_requests` requests, whichever is shorter. Fewer adapt faster to a change in what
    /// the dependency accepts, more estimate it more precisely (the noise on the accepted share
    /// is at most `1 / (2 √window_requests)`, one standard deviation). `u32::MAX` leaves the
    /// time window alone.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::AdaptiveThrottle;
    ///
    /// // The SRE book's window as it stands: two minutes, however many requests they hold.
    /// let throttle = AdaptiveThrottle::builder()
    ///     .window(Duration::from_secs(120))
    ///     .window_requests(u32::MAX)
    ///     .build()
    ///     .unwrap();
    /// for _ in 0..5000 {
    ///     throttle.try_acquire().unwrap();
    ///     throttle.record(true);
    /// }
    /// assert_eq!(throttle.counts(), (5000, 5000));
    /// ```
    pub fn window_requests(mut self, requests: u32) -> Self {
        self.window_requests = requests;
        self
    }

    /// Whether two accepts in a row after an accept-free stretch of at least a 16th of the
    /// window (7.5 s at the default two minutes) and two of its buckets forget the refusals
    /// counted in it (default `true`; see the type's documentation, "After an outage").
    /// `false` is the SRE book's throttle as written: after an outage it rejects until the
    /// outage's refusals leave the window.
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::AdaptiveThrottle;
    ///
    /// // Needs tokio's "test-util" feature: the paused clock runs the outage at once.
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
    /// let throttles = [true, false].map(|forget| {
    ///     AdaptiveThrottle::builder().forget_outage(forget).build().unwrap()
    /// });
    /// for t in &throttles {
    ///     // A minute of one request a second, all accepted, then 30 s of outage.
    ///     for _ in 0..60 {
    ///         t.try_acquire().unwrap();
    ///         t.record(true);
    ///         tokio::time::advance(Duration::from_secs(1)).await;
    ///     }
    ///     for _ in 0..90 {
    ///         if t.try_acquire().is_ok() {
    ///             t.record(false);
    ///         }
    ///         tokio::time::advance(Duration::from_millis(333)).await;
    ///     }
    ///     assert!(t.rejection_probability() > 0.1, "the outage is shed");
    ///     // The dependency is back: two requests in a row get through and are accepted.
    ///     for _ in 0..2 {
    ///         while t.try_acquire().is_err() {}
    ///         t.record(true);
    ///     }
    /// }
    /// assert_eq!(throttles[0].rejection_probability(), 0.0, "the outage is forgotten");
    /// assert!(throttles[1].rejection_probability() > 0.1, "the book's throttle still sheds");
    /// # });
    /// ```
    pub fn forget_outage(mut self, forget: bool) -> Self {
        self.forget_outage = forget;
        self
    }

    /// A name for events (default `"throttle"`).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// Checks the settings and makes the throttle.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `k` (not finite, or below 1), `window` (below 20 ms) or
    /// `window_requests` (zero).
    pub fn build(self) -> Result<AdaptiveThrottle, ConfigError> {
        if !self.k.is_finite() || self.k < 1.0 {
            return Err(ConfigError::OutOfRange {
                field: "k",
                rule: "a finite number ≥ 1",
            });
        }
        if self.window < Duration::from_millis(20) {
            return Err(ConfigError::OutOfRange {
                field: "window",
                rule: "at least 20ms",
            });
        }
        if self.window_requests == 0 {
            return Err(ConfigError::Zero {
                field: "window_requests",
            });
        }
        let bucket = self.window.as_nanos() / BUCKETS as u128;
        Ok(AdaptiveThrottle {
            name: self.name,
            k: self.k,
            bucket: u64::try_from(bucket).unwrap_or(u64::MAX),
            per_bucket: self.window_requests.div_ceil(BUCKETS_U32),
            origin: OnceLock::new(),
            head: AtomicU64::new(0),
            latest: AtomicU64::new(0),
            // Bucket 0 starts at tick 0, the first use.
            started: std::array::from_fn(|_| AtomicU64::new(0)),
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            accepts: std::array::from_fn(|_| AtomicU64::new(0)),
            refusals: std::array::from_fn(|_| AtomicU64::new(0)),
            forget_outage: self.forget_outage,
            last_accept: AtomicU64::new(0),
            last_accept_tick: AtomicU64::new(0),
            armed: AtomicU64::new(0),
            last_admit_tick: AtomicU64::new(0),
        })
    }
}
