//! Review 3: `{self}` in the format string of a formatting macro the rename does not know
//! (`eyre!`, `log::log!`, a crate's own wrapper) was renamed before m3; now it captures the
//! receiver itself, which a `&mut self` (or by-value `self`) method moves into the first attempt.
//! Does not compile (E0505, E0382).

use std::fmt;

use reattempt::retryable;

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

/// Stand-in for `eyre::eyre!` (the rename recognises macros by name only).
macro_rules! eyre {
    ($($t:tt)*) => { format!($($t)*) };
}

struct Conn {
    id: u32,
}

impl fmt::Display for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn{}", self.id)
    }
}

impl Conn {
    #[retryable(max_attempts = 2, delay = "1ms")]
    fn query(&mut self) -> Result<u32, String> {
        self.id += 1;
        if first_try() {
            return Err(eyre!("failed on {self}"));
        }
        Ok(self.id)
    }
}

#[test]
fn an_eyre_format_string_may_name_self() {
    assert_eq!(Conn { id: 0 }.query(), Ok(2));
}
