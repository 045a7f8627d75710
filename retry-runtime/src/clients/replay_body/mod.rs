//! The replayable body, in rooms (this commit only moves the file; the next splits it).

mod body;

pub use self::body::*;
