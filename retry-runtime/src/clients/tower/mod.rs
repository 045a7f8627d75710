//! The tower layer, in rooms (this commit only moves the file; the next splits it).

mod layer;

pub use self::layer::*;
