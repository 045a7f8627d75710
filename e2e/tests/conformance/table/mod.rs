//! The table: one fn per row. Unless a row says otherwise: 3 attempts, 100 ms ×2 (100, 200, 400
//! …) up to 10 s, no jitter, no timeout, no `max_elapsed`; a breaker's `reset_timeout` is 30 s;
//! a budget pays 5 per retry, 10 per retry after a timeout, and gets 1 back per first-try
//! success. Times are ms since the call began. Each expectation cites the rule it follows.

use reattempt::BreakerState as S;
use reattempt::GiveUpReason as R;

#[cfg(feature = "testing")]
use crate::expect::injected;
use crate::expect::{
    Closed, HalfOpen, Open, OpenExpired, Scenario, gave_up_ok, give_up, hedging, rejected,
    rejected_by, retrying, retrying_as, retrying_ok, retrying_said_timeout, retrying_with,
    transition,
};
use crate::model::{
    TestError, e, eh, err, fatal, hang, hinted, lost, ok, ok_retry, paced_err, says_timeout,
    throttled,
};

use TestError::{Fatal, Full, Rejected, SaysTimeout, Shed, TimedOut};

#[cfg(feature = "testing")]
mod faults;
mod guards;
mod overlap;
mod results;

#[cfg(feature = "testing")]
pub use faults::*;
pub use guards::*;
pub use overlap::*;
pub use results::*;
