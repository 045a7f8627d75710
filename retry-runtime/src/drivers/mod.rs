//! What runs the attempts: the driver of the code `#[retryable]` generates (`call`) and the
//! closure API (`closure`); the loop of a hedged call (`hedged`), which the closure API and the
//! tower layer share. Drivers only poll futures (with `timed`, the one timed poll) and
//! sleep; every rule is the engine's (`engine::steps`).

pub(crate) mod call;
pub(crate) mod closure;
pub(crate) mod hedged;
pub(crate) mod kept;
pub(crate) mod lent;
pub(crate) mod stream;
pub(crate) mod timed;
pub(crate) mod timeout;
