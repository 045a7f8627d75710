//! Sets of gRPC status codes (`retryableStatusCodes`, `nonFatalStatusCodes`) and the codes'
//! names.

use ::tonic::Code;

use super::error::{ServiceConfigError, invalid};

/// A set of gRPC status codes ([`tonic::Code`](https://docs.rs/tonic/0.14/tonic/enum.Code.html)), as a bit set: `retryableStatusCodes` and
/// `nonFatalStatusCodes`.
///
/// ```
/// use reattempt::tonic::Codes;
/// use tonic::Code;
///
/// let codes = Codes::new(&[Code::Unavailable, Code::Aborted]);
/// assert!(codes.contains(Code::Aborted));
/// assert!(!codes.contains(Code::Internal));
/// assert!(Codes::default().is_empty());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Codes(u32);

impl Codes {
    /// The set of `codes`.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert_eq!(Codes::new(&[Code::Unavailable, Code::Unavailable]), Codes::new(&[Code::Unavailable]));
    /// ```
    pub fn new(codes: &[Code]) -> Codes {
        Codes(codes.iter().fold(0, |set, &code| set | bit(code)))
    }

    /// Whether `code` is in the set.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert!(Codes::new(&[Code::Unavailable]).contains(Code::Unavailable));
    /// ```
    pub fn contains(self, code: Code) -> bool {
        self.0 & bit(code) != 0
    }

    /// Whether the set has no code.
    ///
    /// ```
    /// use reattempt::tonic::Codes;
    /// use tonic::Code;
    ///
    /// assert!(Codes::new(&[]).is_empty());
    /// assert!(!Codes::new(&[Code::Ok]).is_empty());
    /// ```
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set with `code` too.
    pub(super) fn with(self, code: Code) -> Codes {
        Codes(self.0 | bit(code))
    }
}

/// `code`'s bit (the 17 codes are 0 to 16).
fn bit(code: Code) -> u32 {
    #[allow(clippy::cast_sign_loss, reason = "a code is 0 to 16")]
    let n = code as i32 as u32;
    1_u32 << (n & 31)
}

/// The codes by their names in the gRPC spec (`statuscodes.md`), as A6 writes them.
pub(super) const CODE_NAMES: [(&str, Code); 17] = [
    ("OK", Code::Ok),
    ("CANCELLED", Code::Cancelled),
    ("UNKNOWN", Code::Unknown),
    ("INVALID_ARGUMENT", Code::InvalidArgument),
    ("DEADLINE_EXCEEDED", Code::DeadlineExceeded),
    ("NOT_FOUND", Code::NotFound),
    ("ALREADY_EXISTS", Code::AlreadyExists),
    ("PERMISSION_DENIED", Code::PermissionDenied),
    ("RESOURCE_EXHAUSTED", Code::ResourceExhausted),
    ("FAILED_PRECONDITION", Code::FailedPrecondition),
    ("ABORTED", Code::Aborted),
    ("OUT_OF_RANGE", Code::OutOfRange),
    ("UNIMPLEMENTED", Code::Unimplemented),
    ("INTERNAL", Code::Internal),
    ("UNAVAILABLE", Code::Unavailable),
    ("DATA_LOSS", Code::DataLoss),
    ("UNAUTHENTICATED", Code::Unauthenticated),
];

/// `code`'s name in the gRPC spec (`UNAVAILABLE`): a failed attempt's `error.type` on its span.
#[cfg(all(feature = "spans", feature = "tonic"))]
pub(crate) fn code_name(code: Code) -> &'static str {
    CODE_NAMES
        .iter()
        .find(|(_, c)| *c == code)
        .map_or("UNKNOWN", |(name, _)| name)
}

/// grpc-java (`ServiceConfigUtil`): `OK` is no failure to retry or to hedge on.
pub(super) fn check_no_ok(codes: Codes, field: &str) -> Result<(), ServiceConfigError> {
    if codes.contains(Code::Ok) {
        return Err(invalid(field, "must not contain OK"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_hold_every_code_by_its_own_bit() {
        let all = CODE_NAMES.map(|(_, code)| code);
        let set = Codes::new(&all);
        assert_eq!(set.0, (1 << 17) - 1);
        for (i, (name, code)) in CODE_NAMES.iter().enumerate() {
            assert_eq!(*code as usize, i, "{name}");
            assert!(Codes::new(&[*code]).contains(*code));
            assert_eq!(Codes::new(&[*code]).0.count_ones(), 1);
            assert_eq!(Codes::default().with(*code), Codes::new(&[*code]));
        }
    }
}
