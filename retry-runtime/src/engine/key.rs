//! The idempotency key: one random 128-bit value per logical call, the same on every attempt.

/// A random 128-bit idempotency key. `Display` gives 32 lowercase hex digits.
///
/// ```
/// use reattempt::IdempotencyKey;
///
/// let key = IdempotencyKey::from_u128(0xfeed);
/// assert_eq!(key.to_string(), "0000000000000000000000000000feed");
/// assert_eq!(key.as_u128(), 0xfeed);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyKey([u64; 2]);

impl IdempotencyKey {
    /// A fresh key from the operating-system-seeded generator.
    pub(crate) fn random() -> Self {
        Self::from_u128(crate::schedule::rng::key_bits())
    }

    /// A key with these bits (for tests and for keys stored elsewhere).
    pub const fn from_u128(bits: u128) -> Self {
        #[allow(clippy::cast_possible_truncation, reason = "splitting into halves")]
        IdempotencyKey([(bits >> 64) as u64, bits as u64])
    }

    pub(crate) const fn to_halves(self) -> [u64; 2] {
        self.0
    }

    pub(crate) const fn from_halves(halves: [u64; 2]) -> Self {
        IdempotencyKey(halves)
    }

    /// The key's bits.
    pub const fn as_u128(self) -> u128 {
        ((self.0[0] as u128) << 64) | self.0[1] as u128
    }
}

impl std::fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.as_u128())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_hex_and_distinct() {
        let a = IdempotencyKey::random();
        let b = IdempotencyKey::random();
        assert_ne!(a, b);
        assert_eq!(a.to_string().len(), 32);
        assert_eq!(IdempotencyKey::from_u128(a.as_u128()), a);
    }
}
