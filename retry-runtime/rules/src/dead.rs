//! Settings that another setting makes dead: accepted by [`PolicySettings::check`] (each is
//! valid alone) but unable ever to take effect beside the others, so that the call silently
//! does something other than what was written. `#[retryable]` reports each as a compile error
//! at the dead key ([`CheckedSettings::dead_settings`]).
//!
//! [`PolicySettings::check`]: crate::PolicySettings::check

use std::time::Duration;

use crate::{CheckedSettings, HedgeAfter, Jitter};

/// A setting that the others make dead, with what makes it so.
///
/// ```
/// use std::time::Duration;
/// use reattempt::{Jitter, runtime::{DeadSetting, PolicySettings}};
///
/// let ms = Duration::from_millis;
/// let settings = PolicySettings {
///     delay: Some(ms(500)),
///     jitter: Some(Jitter::None),
///     max_elapsed: Some(ms(300)),
///     ..PolicySettings::default()
/// };
/// let dead = settings.check().unwrap().dead_settings();
/// assert_eq!(dead, [DeadSetting::NoRetryFits { shortest_sleep: ms(500), max_elapsed: ms(300) }]);
/// assert_eq!(dead[0].field(), "max_elapsed");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadSetting {
    /// The shortest sleep before the first retry (the first delay, made shorter only by jitter)
    /// is at least `max_elapsed`: no sleep starts that would end at or past the deadline, so no
    /// retry is ever made, even after an attempt that failed at once.
    NoRetryFits {
        /// The shortest first sleep the schedule can draw.
        shortest_sleep: Duration,
        /// The call's deadline.
        max_elapsed: Duration,
    },
    /// The shortest delay `hedge_after` can give is at least `max_elapsed`: the deadline comes
    /// first, so no hedge ever starts.
    HedgeAfterDeadline {
        /// The shortest delay before a hedge (a quantile's floor).
        shortest: Duration,
        /// The call's deadline.
        max_elapsed: Duration,
    },
    /// `max_attempts = 1` beside `hedge_after`: a hedge is an attempt, and there is none left.
    HedgeWithOneAttempt,
}

impl DeadSetting {
    /// The key that is dead, where `#[retryable]` reports it.
    ///
    /// ```
    /// assert_eq!(reattempt::runtime::DeadSetting::HedgeWithOneAttempt.field(), "hedge_after");
    /// ```
    pub const fn field(&self) -> &'static str {
        match self {
            DeadSetting::NoRetryFits { .. } => "max_elapsed",
            DeadSetting::HedgeAfterDeadline { .. } | DeadSetting::HedgeWithOneAttempt => {
                "hedge_after"
            }
        }
    }
}

impl std::fmt::Display for DeadSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeadSetting::NoRetryFits {
                shortest_sleep,
                max_elapsed,
            } => write!(
                f,
                "no retry fits in `max_elapsed` ({max_elapsed:?}): the first sleep is at least \
                 {shortest_sleep:?} and no sleep starts that would end at or past the deadline, so \
                 every call makes one attempt"
            ),
            DeadSetting::HedgeAfterDeadline {
                shortest,
                max_elapsed,
            } => write!(
                f,
                "`hedge_after` can never start a hedge: it waits at least {shortest:?}, and the \
                 call's `max_elapsed` ({max_elapsed:?}) ends it first"
            ),
            DeadSetting::HedgeWithOneAttempt => f.write_str(
                "`hedge_after` can never start a hedge: a hedge is an attempt, and `max_attempts = 1` \
                 allows only the first",
            ),
        }
    }
}

impl CheckedSettings {
    /// The shortest sleep the schedule can draw before the first retry: the first delay
    /// (`delay`, which `check` keeps at or below `max_delay`) made shorter by jitter, if at all
    /// (full: 0; equal: half; a factor f: 1 − f of it; decorrelated and none: all of it).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{Jitter, runtime::PolicySettings};
    ///
    /// let with = |jitter| PolicySettings { jitter: Some(jitter), ..PolicySettings::default() }
    ///     .check().unwrap().shortest_first_sleep();
    /// assert_eq!(with(Jitter::None), Duration::from_millis(100));
    /// assert_eq!(with(Jitter::Equal), Duration::from_millis(50));
    /// assert_eq!(with(Jitter::Full), Duration::ZERO);
    /// ```
    pub fn shortest_first_sleep(&self) -> Duration {
        let d = self.delay.min(self.max_delay);
        match self.jitter {
            Jitter::Full => Duration::ZERO,
            Jitter::Equal => d / 2,
            Jitter::None | Jitter::Decorrelated => d,
            Jitter::Proportional(f) => d.mul_f64((1.0 - f).clamp(0.0, 1.0)),
        }
    }

    /// The settings that the others make dead, in the order `#[retryable]` reports them.
    pub fn dead_settings(&self) -> Vec<DeadSetting> {
        let mut dead = vec![];
        if let Some(max_elapsed) = self.max_elapsed {
            let shortest_sleep = self.shortest_first_sleep();
            if self.max_attempts > 1 && shortest_sleep >= max_elapsed {
                dead.push(DeadSetting::NoRetryFits {
                    shortest_sleep,
                    max_elapsed,
                });
            }
        }
        match self.hedge_after {
            Some(_) if self.max_attempts == 1 => dead.push(DeadSetting::HedgeWithOneAttempt),
            Some(h) => {
                let shortest = match h {
                    HedgeAfter::Fixed(d) => d,
                    HedgeAfter::Quantile { floor, start, .. } => floor.min(start),
                };
                if let Some(max_elapsed) = self.max_elapsed
                    && shortest >= max_elapsed
                {
                    dead.push(DeadSetting::HedgeAfterDeadline {
                        shortest,
                        max_elapsed,
                    });
                }
            }
            None => {}
        }
        dead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicySettings;

    const MS: Duration = Duration::from_millis(1);

    fn dead(s: PolicySettings) -> Vec<DeadSetting> {
        s.check().unwrap().dead_settings()
    }

    #[test]
    fn a_deadline_shorter_than_every_first_sleep_leaves_no_retry() {
        let base = PolicySettings {
            delay: Some(200 * MS),
            max_elapsed: Some(150 * MS),
            ..PolicySettings::default()
        };
        for (jitter, shortest) in [
            (Jitter::None, Some(200 * MS)),
            (Jitter::Decorrelated, Some(200 * MS)),
            (Jitter::Proportional(0.2), Some(160 * MS)),
            (Jitter::Equal, None),
            (Jitter::Proportional(0.5), None),
            (Jitter::Full, None),
        ] {
            let got = dead(PolicySettings {
                jitter: Some(jitter),
                ..base
            });
            let want: Vec<_> = shortest
                .map(|shortest_sleep| DeadSetting::NoRetryFits {
                    shortest_sleep,
                    max_elapsed: 150 * MS,
                })
                .into_iter()
                .collect();
            assert_eq!(got, want, "{jitter:?}");
        }
    }

    #[test]
    fn a_sleep_ending_exactly_at_the_deadline_does_not_fit() {
        let s = PolicySettings {
            delay: Some(100 * MS),
            jitter: Some(Jitter::None),
            max_elapsed: Some(100 * MS),
            ..PolicySettings::default()
        };
        assert_eq!(dead(s).len(), 1);
        let s = PolicySettings {
            max_elapsed: Some(101 * MS),
            ..s
        };
        assert!(dead(s).is_empty());
        let one = PolicySettings {
            max_attempts: Some(1),
            max_elapsed: Some(50 * MS),
            ..s
        };
        assert!(
            dead(one).is_empty(),
            "one attempt asked for: nothing to fit"
        );
    }

    #[test]
    fn a_hedge_after_the_deadline_or_without_attempts_never_starts() {
        let s = PolicySettings {
            hedge_after: Some(HedgeAfter::Fixed(300 * MS)),
            max_elapsed: Some(300 * MS),
            ..PolicySettings::default()
        };
        assert_eq!(
            dead(s),
            [DeadSetting::HedgeAfterDeadline {
                shortest: 300 * MS,
                max_elapsed: 300 * MS
            }]
        );
        let quantile = PolicySettings {
            hedge_after: Some(HedgeAfter::quantile(95.0)),
            ..s
        };
        assert!(dead(quantile).is_empty(), "its floor, 1 ms, fits");
        let one = PolicySettings {
            max_attempts: Some(1),
            hedge_after: Some(HedgeAfter::Fixed(10 * MS)),
            ..PolicySettings::default()
        };
        assert_eq!(dead(one), [DeadSetting::HedgeWithOneAttempt]);
    }
}
