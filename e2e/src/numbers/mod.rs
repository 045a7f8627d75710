//! `numbers.v1.Numbers` (feature `tonic`): a small server-streaming gRPC service for the stream
//! tests, and a scripted server of it on loopback.
//!
//! [`pb`] is the code tonic-build 0.14 generates from `numbers.proto` (beside it), checked in so
//! that no protoc is needed. `rpc Count(CountRequest { after, until }) returns (stream Number)`
//! streams `after + 1 ..= until`: a client that lost the stream after `n` asks again with
//! `after = n`.
//!
//! [`server::TestServer`] serves a [`server::Script`]: each call's [`server::Fate`] says how
//! many messages it sends and how it then ends ([`server::End`]: a reset stream, a status, a
//! dropped connection, a stall, the whole server killed), and the script counts what the server
//! opened, sent and saw cancelled ([`server::Seen`]).
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use reattempt_e2e::numbers::pb::CountRequest;
//! use reattempt_e2e::numbers::pb::numbers_client::NumbersClient;
//! use reattempt_e2e::numbers::server::{End, Fate, Script, TestServer};
//!
//! let script = Script::new([Fate::new(5, End::Fail(tonic::Status::unavailable("draining")))]);
//! let server = TestServer::start("127.0.0.1:0".parse()?, &script);
//! let mut client = NumbersClient::connect(server.uri()).await?;
//! let mut numbers = client.count(CountRequest { after: 0, until: 10 }).await?.into_inner();
//! while let Some(number) = numbers.message().await? {
//!     println!("{}", number.seq);
//! }
//! # Ok(())
//! # }
//! ```

#[allow(missing_docs, clippy::pedantic, clippy::all)]
#[rustfmt::skip]
pub mod pb;
// Not re-exported here: the generated code names its messages as `super::…` from its inline
// modules, which the module-graph test (retry-runtime/tests/module_layers) reads as `pb` using
// this module; a `pub use` of `server` (which uses `pb`) would close a circle.
pub mod server;
