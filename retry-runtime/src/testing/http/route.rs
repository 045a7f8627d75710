//! The service's routes, as the scripts and the log name them.

use std::fmt;

/// One of the service's routes, for [`Service::script_route`](super::Service::script_route); its `Display` is the route as
/// [`Seen::route`](super::Seen::route) names it (`POST /charges`; `GET /prices` for every sku).
///
/// ```
/// use reattempt::testing::http::{Fault, Route, Service};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() {
///     let service = Service::start().await;
///     service.script_route(Route::Prices, [Fault::Status(504)]);
///     let price = |sku: &str| reqwest::get(format!("{}/prices/{sku}", service.url()));
///     assert_eq!(price("tea").await.unwrap().status(), 504);
///     assert_eq!(price("tea").await.unwrap().status(), 200);
///     assert_eq!(Route::Charges.to_string(), "POST /charges");
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Route {
    /// `POST /charges`.
    Charges,
    /// `POST /messages`.
    Messages,
    /// `GET /prices/{sku}`, any sku.
    Prices,
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Route::Charges => "POST /charges",
            Route::Messages => "POST /messages",
            Route::Prices => "GET /prices",
        })
    }
}
