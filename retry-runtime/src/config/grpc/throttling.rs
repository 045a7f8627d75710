//! A6's `retryThrottling`, read into a [`RetryThrottle`] through its own rules.

use crate::ConfigError;
use crate::guards::retry_throttle::RetryThrottle;

use super::error::{ServiceConfigError, invalid};
use super::json::{RawThrottling, required};

/// A6's rules for `retryThrottling`, through [`RetryThrottle::new`]'s.
pub(super) fn check(raw: &RawThrottling) -> Result<RetryThrottle, ServiceConfigError> {
    let max_tokens = required(raw.max_tokens.as_ref(), "maxTokens")?;
    let token_ratio = required(raw.token_ratio.as_ref(), "tokenRatio")?;
    let max_tokens =
        u32::try_from(max_tokens).map_err(|_| invalid("maxTokens", MAX_TOKENS_MESSAGE))?;
    match RetryThrottle::new(max_tokens, token_ratio) {
        Ok(throttle) => Ok(throttle),
        Err(ConfigError::OutOfRange {
            field: "max_tokens",
            ..
        }) => Err(invalid("maxTokens", MAX_TOKENS_MESSAGE)),
        Err(_) => Err(invalid("tokenRatio", TOKEN_RATIO_MESSAGE)),
    }
}

/// `RetryThrottle::new`'s rule for `max_tokens`, after "must be" (a test checks they agree).
const MAX_TOKENS_MESSAGE: &str = "must be in (0, 1000]";
/// `RetryThrottle::new`'s rule for `token_ratio`, after "must be".
const TOKEN_RATIO_MESSAGE: &str = "must be a number of at least 0.001 (A6 keeps 3 decimal places)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::retry_throttle::{MAX_TOKENS_RULE, TOKEN_RATIO_RULE};

    #[test]
    fn the_throttles_rules_read_the_same_from_json_and_from_code() {
        assert_eq!(MAX_TOKENS_MESSAGE, format!("must be {MAX_TOKENS_RULE}"));
        assert_eq!(TOKEN_RATIO_MESSAGE, format!("must be {TOKEN_RATIO_RULE}"));
        let from_code = RetryThrottle::new(0, 0.1).unwrap_err().to_string();
        assert_eq!(
            from_code,
            format!("invalid `max_tokens`: {MAX_TOKENS_MESSAGE}")
        );
        let from_code = RetryThrottle::new(1, 0.0).unwrap_err().to_string();
        assert_eq!(
            from_code,
            format!("invalid `token_ratio`: {TOKEN_RATIO_MESSAGE}")
        );
    }
}
