//! A fault-injecting HTTP service on loopback (feature `testing-http`): a real axum
//! server on `127.0.0.1`, port 0, started by the test that uses it, whose requests meet the
//! faults a script says — scripted statuses, `429` with `Retry-After` (seconds or an HTTP-date),
//! a hang, a response lost after the side effect was applied, a reset connection, a slow answer,
//! a body that trickles — and which applies each side effect once per `Idempotency-Key`, as the
//! IETF Idempotency-Key draft describes. A test of retrying HTTP code points its client at
//! [`Service::url`] and reads back what the service saw ([`Service::seen`]) and did
//! ([`Service::effects`]).
//!
//! | route ([`Route`]) | body | answer | side effect |
//! |---|---|---|---|
//! | `POST /charges` | `{"order_id": "o-1", "amount_cents": 1250}` | 201 `{"charge_id", "order_id", "amount_cents"}` | a charge, counted per `order_id` |
//! | `POST /messages` | `{"to": "+15550100", "text": "hi"}` | 202 `{"message_id", "to"}` | a delivery, counted per `to` |
//! | `GET /prices/{sku}` | — | 200 `{"sku", "price_cents"}` | none |
//! | `GET /objects/{name}` | — | 200 or 206 (per `Range`, `If-Range`), the object's bytes | none |
//! | `GET /events?after=N` | — | 200, one JSON line per event after `N` | none |
//!
//! A body that does not parse or does not validate (an amount ≤ 0, a phone number that is not
//! `+` and 8 to 15 digits) is a 400 with `{"error": …}` and no side effect. A request with an
//! `Idempotency-Key` seen before (on the same route) gets the stored answer back with
//! `Idempotent-Replayed: true` and no new side effect; the same key with another body is a 422.
//!
//! Faults are drawn per request: first from the script of the request's subject (the `order_id`,
//! the `to` or the sku: [`Service::script_for`]), then from its route's
//! ([`Service::script_route`]), then from the global script ([`Service::script`]), then the
//! default fault (normally [`Fault::Pass`]; [`Service::set_default`] makes the service fail
//! every request). See [`Fault`] for what each does.
//!
//! The service runs on the tokio runtime that started it (spawned tasks, so a
//! `current_thread` runtime serves it between the test's awaits) and stops when dropped.
//!
//! ```
//! use std::time::Duration;
//! use reattempt::RetryPolicy;
//! use reattempt::testing::http::{Fault, Outcome, Service};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() {
//!     let service = Service::start().await;
//!     service.script_for("o-1", [Fault::Unavailable, Fault::Status(502)]);
//!
//!     let client = reqwest::Client::new();
//!     let policy = RetryPolicy::builder()
//!         .max_attempts(4)
//!         .delay(Duration::from_millis(5))
//!         .build()
//!         .unwrap();
//!     let charge = policy
//!         .retry(|| async {
//!             let response = client
//!                 .post(format!("{}/charges", service.url()))
//!                 .header("Idempotency-Key", "order-o-1")
//!                 .json(&serde_json::json!({"order_id": "o-1", "amount_cents": 1250}))
//!                 .send()
//!                 .await
//!                 .map_err(|e| e.to_string())?;
//!             match response.status().as_u16() {
//!                 201 => Ok(response.text().await.map_err(|e| e.to_string())?),
//!                 status => Err(format!("status {status}")),
//!             }
//!         })
//!         .retry_if(|e: &String| e.starts_with("status 5"))
//!         .await;
//!
//!     assert!(charge.unwrap().contains("ch_"));
//!     assert_eq!(service.effects("o-1"), 1);
//!     let outcomes: Vec<Outcome> = service.seen_with_key("order-o-1").into_iter().map(|s| s.outcome).collect();
//!     assert_eq!(outcomes, [Outcome::Status(503), Outcome::Status(502), Outcome::Applied]);
//! }
//! ```
//!
//! The parts: [`Fault`] and [`RetryAfter`] (what to do to a request), [`Seen`] and [`Outcome`]
//! (what the service saw), [`Route`], and [`Service`].
//!
//! Streams: `GET /objects/{name}` serves a deterministic object of any size with `ETag`,
//! `Last-Modified`, `Range` and `If-Range` ([`Object`], scripted with [`ObjectFault`]: a reset or
//! a stall at a byte offset, a `Range` ignored, the object replaced; read back as
//! [`ObjectRequest`]s), and `GET /events?after=N` a line-delimited event feed ([`event_line`],
//! [`EventFault`], [`EventRequest`]). Their scripting methods are [`Service`]'s too; their
//! requests are logged apart ([`Service::object_requests`], [`Service::event_requests`]), not in
//! [`Service::seen`], and their faults are their own scripts', not [`Fault`]s.
//!
//! Its files, lowest first: `fault`, `seen`, `route`, `object`, `event`, `body` (a body that
//! trickles) and `kill` (a connection's reset switch) < `drain` (waiting until a socket has sent
//! what it was given) < `state` (what the handlers and the connections share) < `conn`
//! (connections that can be reset) < `handlers` and `streams` (objects and events) < `service` <
//! `objects` and `events` (their scripting on `Service`). This module only re-exports them.

mod body;
mod conn;
mod drain;
mod event;
mod events;
mod fault;
mod handlers;
mod kill;
mod object;
mod objects;
mod route;
mod seen;
mod service;
mod state;
mod streams;

pub use event::{EventFault, EventRequest, event_line};
pub use fault::{Fault, RetryAfter};
pub use object::{Object, ObjectFault, ObjectRequest};
pub use route::Route;
pub use seen::{Outcome, Seen};
pub use service::Service;
