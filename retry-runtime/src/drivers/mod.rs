//! What runs the attempts: the driver of the code `#[retryable]` generates (`call`) and the
//! closure API (`closure`). Drivers only poll futures and sleep; the engine decides.

pub(crate) mod call;
pub(crate) mod closure;
