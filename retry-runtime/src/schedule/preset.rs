//! Presets: the retry settings of systems users know, each a builder whose numbers are those
//! of the source it cites (see [`Preset`]).

use std::time::Duration;

use crate::guards::budget::{RetryBudget, RetryBudgetBuilder};
use crate::schedule::policy::{RetryPolicy, RetryPolicyBuilder};
use crate::{Backoff, Jitter};

/// The retry settings of a system users know: [`policy`](Preset::policy) gives a
/// [`RetryPolicyBuilder`] and [`budget`](Preset::budget) a [`RetryBudgetBuilder`], so that any
/// value can still be changed before `build()`. In a config file, `preset = "aws-2026"` (the
/// [`name`](Preset::name)) starts a policy or a budget table from it, and the table's other keys
/// change it.
///
/// | preset | attempts | transient base | throttling base | cap | jitter | budget (tokens, transient / timeout / throttling cost) |
/// |---|---:|---:|---:|---:|---|---|
/// | `aws-standard` | 3 | 1 s | 1 s | 20 s | full | 500, 5 / 10 / 5 |
/// | `aws-2026` | 3 | 50 ms | 1 s | 20 s | full | 500, 14 / 14 / 5 |
/// | `aws-2026-dynamodb` | 4 | 25 ms | 1 s | 20 s | full | 500, 14 / 14 / 5 |
/// | `grpc` | 5 (A6's cap) | — | — | — | full | this crate's default |
///
/// - **AWS standard mode** (the SDKs' retry strategy, "standard" mode, before 2026; numbers from
///   aws-sdk-go-v2's announcement of the 2026 change, aws/aws-sdk-go-v2#3416: 1 s base delay
///   for both classes, 3 attempts; `MAX_BACKOFF` 20 s; the retry quota of 500 tokens, 5 per
///   retry, 10 after a timeout, 1 back per first-try success). One difference: the SDKs applied
///   `MAX_BACKOFF` after jitter, this crate before it (as the 2026 mode does); with 3 attempts
///   from a 1 s base no delay reaches the cap, so the two agree.
/// - **AWS standard mode, 2026** (`AWS_NEW_RETRIES_2026`, on by default from late 2026;
///   aws/aws-sdk-go-v2#3400, aws/aws-sdk-java-v2#6987): a transient error backs off from 50 ms
///   and costs 14 tokens, a throttling error from 1 s and costs 5, timeouts are not special,
///   `MAX_BACKOFF` (20 s) applies before jitter; `DynamoDB` and `DynamoDB` Streams: 25 ms and 4
///   attempts. The SDKs also honour `x-amz-retry-after` (see [`crate::http`]).
/// - **gRPC** (gRFC A6, "client retries"): the n-th retry waits `random(0,
///   min(initialBackoff × backoffMultiplier^(n−1), maxBackoff))` (full jitter, the cap before
///   it), and `maxAttempts` is capped at 5. (The ×0.8–1.2 jitter of gRPC's
///   `connection-backoff.md` is its reconnection backoff, not its retries'.) A6 gives `initialBackoff`, `maxBackoff` and `backoffMultiplier` no default (a service
///   config must set them): set `delay`, `max_delay` and `multiplier` (this crate's 100 ms, 20 s
///   and 2 until then). A6's retry throttle is not a token bucket of costs: the budget is this
///   crate's default.
///
/// ```
/// use std::time::Duration;
/// use reattempt::{ErrorClass, Preset};
///
/// let policy = Preset::Aws2026.policy().build().unwrap();
/// assert_eq!(policy.delay(), Duration::from_millis(50));
/// assert_eq!(policy.throttling_delay(), Duration::from_secs(1));
/// let budget = Preset::Aws2026.budget().build().unwrap();
/// assert_eq!(budget.cost(ErrorClass::Transient), 14);
/// // A preset is a builder: change what differs.
/// let dynamo = Preset::Aws2026DynamoDb.policy().max_attempts(6).build().unwrap();
/// assert_eq!((dynamo.delay(), dynamo.max_attempts()), (Duration::from_millis(25), 6));
/// assert_eq!("aws-2026".parse::<Preset>(), Ok(Preset::Aws2026));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// The AWS SDKs' standard mode before 2026.
    AwsStandard,
    /// The AWS SDKs' standard mode from 2026.
    Aws2026,
    /// The AWS SDKs' standard mode from 2026, for `DynamoDB` and its Streams.
    Aws2026DynamoDb,
    /// gRFC A6's client retries, where it sets a value.
    Grpc,
}

/// AWS's `MAX_BACKOFF`.
const AWS_MAX_BACKOFF: Duration = Duration::from_secs(20);

impl Preset {
    /// Every preset, in the table's order.
    pub const ALL: [Preset; 4] = [
        Preset::AwsStandard,
        Preset::Aws2026,
        Preset::Aws2026DynamoDb,
        Preset::Grpc,
    ];

    /// The preset's name in config files: `aws-standard`, `aws-2026`, `aws-2026-dynamodb`,
    /// `grpc`.
    ///
    /// ```
    /// assert_eq!(reattempt::Preset::Aws2026DynamoDb.name(), "aws-2026-dynamodb");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Preset::AwsStandard => "aws-standard",
            Preset::Aws2026 => "aws-2026",
            Preset::Aws2026DynamoDb => "aws-2026-dynamodb",
            Preset::Grpc => "grpc",
        }
    }

    /// The preset's policy, as a builder (see the table of [`Preset`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use reattempt::{Jitter, Preset};
    ///
    /// let grpc = Preset::Grpc.policy().delay(Duration::from_millis(100)).build().unwrap();
    /// assert_eq!((grpc.max_attempts(), grpc.jitter()), (5, Jitter::Full));
    /// ```
    pub const fn policy(self) -> RetryPolicyBuilder {
        let aws = RetryPolicy::builder()
            .backoff(Backoff::Exponential)
            .multiplier(2.0)
            .max_delay(AWS_MAX_BACKOFF)
            .jitter(Jitter::Full)
            .throttling_delay(Duration::from_secs(1));
        match self {
            Preset::AwsStandard => aws.max_attempts(3).delay(Duration::from_secs(1)),
            Preset::Aws2026 => aws.max_attempts(3).delay(Duration::from_millis(50)),
            Preset::Aws2026DynamoDb => aws.max_attempts(4).delay(Duration::from_millis(25)),
            Preset::Grpc => RetryPolicy::builder().max_attempts(5).jitter(Jitter::Full),
        }
    }

    /// The preset's retry budget, as a builder (see the table of [`Preset`]). Its reserve is
    /// per instance, as in the SDK it comes from: see [`RetryBudget`](crate::RetryBudget) for a
    /// fleet.
    ///
    /// ```
    /// use reattempt::{ErrorClass, Preset};
    ///
    /// let before = Preset::AwsStandard.budget().build().unwrap();
    /// assert_eq!(before.cost(ErrorClass::Timeout), 10);
    /// ```
    pub fn budget(self) -> RetryBudgetBuilder {
        match self {
            Preset::AwsStandard => RetryBudget::aws_standard(),
            Preset::Aws2026 | Preset::Aws2026DynamoDb => RetryBudget::aws_2026(),
            Preset::Grpc => RetryBudget::builder(),
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The text was not a preset's name.
///
/// ```
/// let err = "aws".parse::<reattempt::Preset>().unwrap_err();
/// assert_eq!(err.to_string(), "unknown preset `aws`: expected \"aws-standard\", \"aws-2026\", \"aws-2026-dynamodb\" or \"grpc\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsePresetError {
    input: String,
}

impl std::fmt::Display for ParsePresetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown preset `{}`: expected \"aws-standard\", \"aws-2026\", \"aws-2026-dynamodb\" or \"grpc\"",
            self.input
        )
    }
}

impl std::error::Error for ParsePresetError {}

impl std::str::FromStr for Preset {
    type Err = ParsePresetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| ParsePresetError {
                input: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    const MS: Duration = Duration::from_millis(1);

    /// The numbers of aws/aws-sdk-go-v2#3400 and #3416 (the 2026 announcement's table: before and
    /// after), and gRFC A6.
    #[test]
    fn each_preset_has_its_sources_numbers() {
        let rows = [
            (Preset::AwsStandard, 3, 1000 * MS, 1000 * MS, [5, 10, 5]),
            (Preset::Aws2026, 3, 50 * MS, 1000 * MS, [14, 14, 5]),
            (Preset::Aws2026DynamoDb, 4, 25 * MS, 1000 * MS, [14, 14, 5]),
        ];
        for (preset, attempts, transient, throttling, costs) in rows {
            let p = preset.policy().build().unwrap();
            assert_eq!(p.max_attempts(), attempts, "{preset}");
            assert_eq!(p.delay(), transient, "{preset}");
            assert_eq!(p.throttling_delay(), throttling, "{preset}");
            assert_eq!(
                p.max_delay(),
                Duration::from_secs(20),
                "{preset}: MAX_BACKOFF"
            );
            assert_eq!(p.jitter(), Jitter::Full, "{preset}");
            assert!((p.multiplier() - 2.0).abs() < f64::EPSILON, "{preset}");
            let b = preset.budget().build().unwrap();
            assert_eq!(b.available(), 500, "{preset}");
            let got = [
                ErrorClass::Transient,
                ErrorClass::Timeout,
                ErrorClass::Throttling,
            ]
            .map(|c| b.cost(c));
            assert_eq!(got, costs, "{preset}");
        }
        let grpc = Preset::Grpc.policy().build().unwrap();
        assert_eq!(grpc.max_attempts(), 5, "A6 caps maxAttempts at 5");
        assert_eq!(
            grpc.jitter(),
            Jitter::Full,
            "A6: random(0, min(initialBackoff × multiplier^(n−1), maxBackoff))"
        );
    }

    #[test]
    fn names_parse_back() {
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert!("AWS-2026".parse::<Preset>().is_err(), "names are exact");
    }
}
