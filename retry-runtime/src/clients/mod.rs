//! The client stacks that drive attempts (the engine's drivers for other crates' clients): a
//! tower layer (`tower`), a reqwest-middleware `Middleware` (`reqwest_middleware`), and the
//! `retry-outer-attempts-left` header that carries `one_layer` across HTTP (`outer`). What an
//! outcome *means* (which errors and responses are transient) is decided in `crate::classify`.

#[cfg(feature = "reqwest")]
pub(crate) mod download;
#[cfg(feature = "tonic")]
pub(crate) mod grpc;
#[cfg(all(
    feature = "spans",
    any(
        all(feature = "tower", feature = "http"),
        feature = "reqwest-middleware"
    )
))]
pub(crate) mod http_spans;
#[cfg(feature = "http")]
pub(crate) mod outer;
#[cfg(feature = "http")]
pub(crate) mod replay_body;
#[cfg(feature = "reqwest-middleware")]
pub mod reqwest_middleware;
#[cfg(feature = "sqlx")]
pub mod sqlx;
#[cfg(feature = "tower")]
pub mod tower;
