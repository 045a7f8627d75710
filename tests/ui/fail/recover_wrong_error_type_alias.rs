// The return type is an alias (`io::Result<u8>`): the message names the error type rustc resolves.
use std::io;

use reattempt::{recover, retryable};

#[retryable(max_attempts = 2, recover = fallback)]
fn read(path: &str) -> io::Result<u8> {
    Err(io::Error::other(path.to_owned()))
}

#[recover]
fn fallback(err: String, _path: &str) -> io::Result<u8> {
    Err(io::Error::other(err))
}

fn main() {
    let _ = read("/tmp/x");
}
