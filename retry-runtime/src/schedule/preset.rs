//! Presets: the retry settings of systems users know, each a builder whose numbers are those
//! of the source it cites (see [`Preset`]).

use std::time::Duration;

use crate::guards::budget::{RetryBudget, RetryBudgetBuilder};
use crate::schedule::policy::{RetryPolicy, RetryPolicyBuilder};
use crate::{Backoff, HintMode, Jitter};

/// The retry settings of a system users know: [`policy`](Preset::policy) gives a
/// [`RetryPolicyBuilder`] and [`budget`](Preset::budget) a [`RetryBudgetBuilder`], so that any
/// value can still be changed before `build()`. In a config file, `preset = "aws-2026"` (the
/// [`name`](Preset::name)) starts a policy or a budget table from it, and the table's other keys
/// change it.
///
/// | preset | attempts | transient base | throttling base | cap | jitter | hint | budget (tokens, transient / timeout / throttling cost) |
/// |---|---:|---:|---:|---:|---|---|---|
/// | `aws-standard` | 3 | 1 s | 1 s | 20 s | full | floor | 500, 5 / 10 / 5 |
/// | `aws-2026` | 3 | 50 ms | 1 s | 20 s | full | clamp 5 s | 500, 14 / 14 / 5 |
/// | `aws-2026-dynamodb` | 4 | 25 ms | 1 s | 20 s | full | clamp 5 s | 500, 14 / 14 / 5 |
/// | `grpc` | 5 (A6's cap) | — | — | — | ×0.8–1.2 (`Proportional(0.2)`) | floor | this crate's default |
///
/// - **AWS standard mode** (the SDKs' retry strategy, "standard" mode, before 2026; numbers from
///   aws-sdk-go-v2's announcement of the 2026 change, aws/aws-sdk-go-v2#3416: 1 s base delay
///   for both classes, 3 attempts; `MAX_BACKOFF` 20 s; the retry quota of 500 tokens, 5 per
///   retry, 10 after a timeout, 1 back per first-try success). One difference: the SDKs applied
///   `MAX_BACKOFF` after jitter, this crate before it (as the 2026 mode does); with 3 attempts
///   from a 1 s base no delay reaches the cap, so the two agree.
/// - **AWS standard mode, 2026** (`AWS_NEW_RETRIES_2026`, on by default from late 2026), rule by
///   rule, each with where the SDKs say it (aws-sdk-go-v2 `aws/retry/retry2026_test.go`, botocore
///   `botocore/retries/standard.py` and `tests/unit/retries/test_standard_retry_v2_1.py`,
///   smithy-rs `aws-smithy-runtime/src/client/retries/strategy/standard.rs`, smithy-typescript
///   `util-retry/retries-2026-config.ts`; every one runs as a test in `tests/aws_2026.rs`):
///
/// | rule | here | source |
/// |---|---|---|
/// | transient backoff `tᵢ = b × min(50 ms × 2ⁱ, 20 s)`, `b` uniform in [0, 1] | `delay` 50 ms, `multiplier` 2, `max_delay` 20 s, full jitter (the cap before jitter) | botocore `ExponentialBackoff.delay_amount`; aws-sdk-go-v2#3400 ("`MAX_BACKOFF` is now applied before jitter") |
/// | throttling backoff from 1 s | `throttling_delay` 1 s (the class from [`Transient::class`](crate::Transient::class)) | botocore `throttling_base_scale`; smithy-typescript `Retry.throttlingDelay` |
/// | `DynamoDB` and `DynamoDB` Streams: 25 ms, 4 attempts | `aws-2026-dynamodb` | botocore `_SERVICE_BACKOFF_CONFIG`, `_SERVICE_MAX_ATTEMPTS` |
/// | a retry costs 14 tokens, a throttling retry 5, a timeout is not special (14) | [`RetryBudget::aws_2026`] | botocore `_RETRY_COST_V2`, `_THROTTLING_RETRY_COST`; smithy-rs `token_bucket_for_spec` |
/// | quota 500; a retried call's success returns its last cost, a first-try success 1; a failed call nothing | [`RetryBudget`] | botocore `release_retry_quota` |
/// | `x-amz-retry-after` (ms) clamped to `[tᵢ, tᵢ + 5 s]`; `MAX_BACKOFF` does not bound it | [`HintMode::AWS_2026`] (a hint past `max_delay` is cut, not a give-up) | botocore `_RETRY_AFTER_MAX_ADDITIONAL`; smithy-rs `retry_after.clamp(t_i, t_i + 5 s)` |
/// | an `x-amz-retry-after` that is not an integer, is negative or overflows is ignored: `tᵢ` is used | `reattempt::http::server_hint` gives no delay for it (feature `http`) | not an integer or negative: botocore `_get_retry_after_delay`, smithy-rs, Go's `invalid` row. Overflowing (`9223372036854775807`): only aws-sdk-go-v2 ignores it (milliseconds × 10⁶ overflow its `time.Duration`); botocore (`int()`) and smithy-rs (a `u64`) read it and clamp it to `tᵢ + 5 s`. This crate follows Go |
/// | the clamp is to the hint a call is given: the SDKs read `x-amz-retry-after` only (smithy-typescript also clamps `Retry-After`) | every hint of the call under the preset's [`HintMode`] | smithy-rs `retry_after_from_ctx`; smithy-typescript `parseRetryAfterHeader` |
/// | long polling (SQS `ReceiveMessage`, SFN `GetActivityTask`, SWF `PollFor…Task`): a retry only the quota refuses still sleeps the backoff it would have used (the throttling one after throttling), then returns; never after a success, the last attempt or an error not retried | [`long_polling`](RetryPolicyBuilder::long_polling) (off in the presets: set it for those operations) | botocore `RetryHandler._LONG_POLLING_OPERATIONS`; smithy-rs `long_polling_*` tests; smithy-typescript `refusal.capacity && isLongPoll` (Go's table computes the throttling row's sleep with a nil error, 50 ms: the others, and this crate, use 1 s) |
/// | tests start the quota at 0, 14, 20 or 30 tokens | [`initial_tokens`](RetryBudgetBuilder::initial_tokens) | Go `initialTokens`; smithy-rs `TokenBucket::new(0)` |
///
/// - **gRPC** (gRFC A6, "client retries", as updated in 2024, grpc/proposal#452): the n-th
///   retry since the last pushback waits `min(initialBackoff × backoffMultiplier^(n−1),
///   maxBackoff) × random(0.8, 1.2)` (jitter of ±20 % after the cap, so a wait may be a little
///   under `initialBackoff` or over `maxBackoff`: [`Jitter::Proportional`]`(0.2)`, as grpc-go and
///   grpc-java draw it, and as the gRPC layer (feature `tonic`) waits), and `maxAttempts` is
///   capped at 5. (A6 before that update said full jitter, `random(0, …)`.) A6 gives
///   `initialBackoff`, `maxBackoff` and `backoffMultiplier` no default (a service
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

/// gRFC A6's jitter: the capped backoff × `random(0.8, 1.2)` (the gRPC layer's too).
pub(crate) const A6_JITTER: Jitter = Jitter::Proportional(0.2);

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
    /// assert_eq!((grpc.max_attempts(), grpc.jitter()), (5, Jitter::Proportional(0.2)));
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
            Preset::Aws2026 => aws
                .max_attempts(3)
                .delay(Duration::from_millis(50))
                .hint_mode(HintMode::AWS_2026),
            Preset::Aws2026DynamoDb => aws
                .max_attempts(4)
                .delay(Duration::from_millis(25))
                .hint_mode(HintMode::AWS_2026),
            Preset::Grpc => RetryPolicy::builder().max_attempts(5).jitter(A6_JITTER),
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
            let hint = if preset == Preset::AwsStandard {
                HintMode::Floor
            } else {
                HintMode::AWS_2026
            };
            assert_eq!(p.hint_mode(), hint, "{preset}");
            assert!(!p.long_polling(), "{preset}: per operation, not per preset");
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
            Jitter::Proportional(0.2),
            "A6 (2024): min(initialBackoff × multiplier^(n−1), maxBackoff) × random(0.8, 1.2)"
        );
    }

    /// A6's backoff section, drawn: every wait of the preset's policy lies within ±20 % of the
    /// capped exponential, both ends are reached, and past the cap a wait may exceed
    /// `maxBackoff` (A6: "slightly higher than `maxBackoff`").
    #[test]
    fn the_grpc_presets_waits_are_a6s() {
        crate::seed_rng(6);
        let policy = Preset::Grpc
            .policy()
            .max_attempts(5)
            .delay(100 * MS)
            .max_delay(300 * MS)
            .build()
            .unwrap();
        let mut low = [false; 4];
        let mut high = [false; 4];
        for _ in 0..500 {
            for (i, wait) in policy.delays().take(4).enumerate() {
                let capped = [100 * MS, 200 * MS, 300 * MS, 300 * MS][i];
                assert!(
                    wait >= capped * 8 / 10 && wait <= capped * 12 / 10,
                    "retry {}: {wait:?}",
                    i + 1
                );
                low[i] |= wait < capped * 85 / 100;
                high[i] |= wait > capped * 115 / 100;
            }
        }
        assert_eq!((low, high), ([true; 4], [true; 4]));
    }

    #[test]
    fn names_parse_back() {
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>(), Ok(p));
        }
        assert!("AWS-2026".parse::<Preset>().is_err(), "names are exact");
    }
}
