//! Review (README: "The default event name is the function's path with the `Self` type of a
//! method (`crate::api::Client::get` ...)"): in a trait impl the name is
//! `<crate::A as crate::Api>::get`, not `crate::A::get` (the form logs and metric labels then
//! carry, with spaces and angle brackets). Only inherent methods were tested (S60).
#![allow(missing_docs)]
use std::io::Write;
use std::sync::{Arc, Mutex};

use reattempt::retryable;

#[derive(Debug, PartialEq)]
pub struct Fail;

fn first_try() -> bool {
    reattempt::context().is_some_and(|c| c.attempt() < 2)
}

pub trait Api {
    fn get(&self) -> Result<u8, Fail>;
}
pub struct A;
impl Api for A {
    #[retryable(max_attempts = 2, delay = "1ms", jitter = "none")]
    fn get(&self) -> Result<u8, Fail> {
        if first_try() { Err(Fail) } else { Ok(1) }
    }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);
impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_trait_method_is_named_type_then_method() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || assert_eq!(A.get(), Ok(1)));
    let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
    assert!(
        text.contains("name=\"review_trait_names::A::get\""),
        "{text}"
    );
}
