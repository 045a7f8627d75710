//! What a server's retry hint (`Retry-After`, `x-amz-retry-after`) does to the wait: [`HintMode`].

use std::time::Duration;

use crate::duration::parse_duration;

/// How a call's wait is made of the schedule's (jittered) delay `t` and a server's hint `h`
/// (`Retry-After`, `x-amz-retry-after`, gRPC's pushback): set with
/// `RetryPolicyBuilder::hint_mode`, or in a config file as `hint_mode = "floor"` or
/// `hint_mode = "clamp 5s"`.
///
/// - [`Floor`](HintMode::Floor) (the default): the wait is `max(h, t)`, and a hint beyond
///   `max_delay` ends the call: never come back before the server allows.
/// - [`Clamp`](HintMode::Clamp): the wait is `h` clamped to `[t, t + above]`, and `max_delay`
///   does not bound it (the AWS SDKs' standard mode from 2026: `x-amz-retry-after` clamped to
///   `[tᵢ, tᵢ + 5 s]`; `MAX_BACKOFF` bounds `tᵢ` only). A long hint is cut to `t + above`
///   rather than ending the call.
///
/// Either way no wait ends at or past the call's `max_elapsed` deadline.
///
/// ```
/// use std::time::Duration;
/// use reattempt::HintMode;
///
/// assert_eq!(HintMode::default(), HintMode::Floor);
/// assert_eq!("clamp 5s".parse::<HintMode>(), Ok(HintMode::AWS_2026));
/// assert_eq!(HintMode::AWS_2026.to_string(), "clamp 5s");
/// let t = Duration::from_millis(50);
/// assert_eq!(HintMode::AWS_2026.wait(t, Duration::from_secs(10)), Duration::from_millis(5050));
/// assert_eq!(HintMode::Floor.wait(t, Duration::from_secs(10)), Duration::from_secs(10));
/// assert_eq!(HintMode::AWS_2026.wait(t, Duration::ZERO), t, "never below the schedule's delay");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HintMode {
    /// The hint is a floor under the schedule's delay; one beyond `max_delay` ends the call.
    #[default]
    Floor,
    /// The hint is clamped to `[t, t + above]`, `t` the schedule's (jittered) delay.
    Clamp {
        /// How far above the schedule's delay the hint may take the wait.
        above: Duration,
    },
}

impl HintMode {
    /// The AWS SDKs' standard mode from 2026: `x-amz-retry-after` clamped to `[tᵢ, tᵢ + 5 s]`
    /// (botocore's `_RETRY_AFTER_MAX_ADDITIONAL`, smithy-rs's `t_i + Duration::from_secs(5)`).
    pub const AWS_2026: HintMode = HintMode::Clamp {
        above: Duration::from_secs(5),
    };

    /// The wait for a hint `hint` over the schedule's delay `t` (before the `max_delay` and
    /// deadline rules: see [`HintMode`]).
    #[must_use]
    pub const fn wait(self, t: Duration, hint: Duration) -> Duration {
        let top = match self {
            HintMode::Floor => Duration::MAX,
            HintMode::Clamp { above } => t.saturating_add(above),
        };
        if hint.as_nanos() < t.as_nanos() {
            t
        } else if hint.as_nanos() > top.as_nanos() {
            top
        } else {
            hint
        }
    }
}

impl std::fmt::Display for HintMode {
    /// The config file's text: `floor`, or `clamp` and the margin (`clamp 5s`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HintMode::Floor => f.write_str("floor"),
            HintMode::Clamp { above } => {
                write!(f, "clamp {}", humantime::format_duration(*above))
            }
        }
    }
}

/// The text was not `"floor"` or `"clamp"` followed by a duration.
///
/// ```
/// let err = "cap".parse::<reattempt::HintMode>().unwrap_err();
/// assert_eq!(err.to_string(), r#"unknown hint_mode `cap`: expected "floor" or "clamp" and a duration ("clamp 5s")"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseHintModeError(pub String);

impl std::fmt::Display for ParseHintModeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            r#"unknown hint_mode `{}`: expected "floor" or "clamp" and a duration ("clamp 5s")"#,
            self.0
        )
    }
}

impl std::error::Error for ParseHintModeError {}

impl std::str::FromStr for HintMode {
    type Err = ParseHintModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if text == "floor" {
            return Ok(HintMode::Floor);
        }
        text.strip_prefix("clamp ")
            .and_then(|above| parse_duration(above.trim()).ok())
            .map(|above| HintMode::Clamp { above })
            .ok_or_else(|| ParseHintModeError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn clamp_keeps_the_hint_between_t_and_t_plus_above() {
        let m = HintMode::AWS_2026;
        let t = 50 * MS;
        // botocore's and smithy-rs's cases: 1500 → 1.5 s, 0 → tᵢ, 10000 → tᵢ + 5 s.
        assert_eq!(m.wait(t, 1500 * MS), 1500 * MS);
        assert_eq!(m.wait(t, Duration::ZERO), t);
        assert_eq!(m.wait(t, 10_000 * MS), 5050 * MS);
        assert_eq!(m.wait(t, Duration::MAX), 5050 * MS);
        assert_eq!(m.wait(Duration::MAX, MS), Duration::MAX, "saturates");
        assert_eq!(HintMode::Floor.wait(t, 10 * MS), t);
        assert_eq!(HintMode::Floor.wait(t, Duration::MAX), Duration::MAX);
    }

    #[test]
    fn parses_and_prints_back() {
        for m in [
            HintMode::Floor,
            HintMode::AWS_2026,
            HintMode::Clamp { above: 250 * MS },
        ] {
            assert_eq!(m.to_string().parse::<HintMode>(), Ok(m));
        }
        for bad in ["", "clamp", "clamp five", "Floor", "clamp5s"] {
            assert!(bad.parse::<HintMode>().is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod edges {
    use super::*;

    /// `Display` is "the config file's text": each mode prints back to itself, from zero to
    /// `Duration::MAX`.
    #[test]
    fn every_clamp_prints_back_to_itself() {
        let mut bad = Vec::new();
        for above in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(1500),
            Duration::from_secs(86_400 * 31),
            Duration::from_secs(86_400 * 365 * 3),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            let m = HintMode::Clamp { above };
            let text = m.to_string();
            if text.parse::<HintMode>() != Ok(m) {
                bad.push((text.clone(), text.parse::<HintMode>()));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }

    /// The clamp's arithmetic at the edges (saturating, a zero margin), and the spacing a
    /// config file may use.
    #[test]
    fn clamp_edges_and_spacing() {
        let ms = Duration::from_millis(1);
        let huge = HintMode::Clamp {
            above: Duration::MAX,
        };
        assert_eq!(huge.wait(50 * ms, Duration::MAX), Duration::MAX);
        assert_eq!(huge.wait(Duration::MAX, Duration::ZERO), Duration::MAX);
        let zero = HintMode::Clamp {
            above: Duration::ZERO,
        };
        assert_eq!(zero.wait(50 * ms, Duration::from_secs(9)), 50 * ms);
        assert_eq!(
            HintMode::AWS_2026.wait(Duration::ZERO, Duration::MAX),
            Duration::from_secs(5)
        );
        assert_eq!(
            HintMode::AWS_2026.wait(Duration::ZERO, Duration::ZERO),
            Duration::ZERO
        );
        for text in ["clamp  5s", " clamp 5s ", "clamp 5 s", "clamp 1m 30s"] {
            assert!(text.parse::<HintMode>().is_ok(), "{text:?}");
        }
    }
}
