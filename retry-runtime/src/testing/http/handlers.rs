//! The handlers of `POST /charges`, `POST /messages` and `GET /prices/{sku}`, and the part every
//! request goes through: its fault, validation, the idempotency store, the side effect, the answer.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::body::Trickle;
use super::conn::Conn;
use super::state::{Shared, Stored};
use super::{Fault, Outcome, RetryAfter, Route, Seen};

/// The longest a hung request waits before its connection is reset (when nothing stopped it).
const HANG_LIMIT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
struct ChargeBody {
    order_id: String,
    amount_cents: i64,
}

#[derive(Deserialize)]
struct MessageBody {
    to: String,
    text: String,
}

/// A request reduced to what the service needs: its subject, and either the status to answer
/// with when its side effect is applied or why it is invalid.
struct Parsed {
    subject: Option<String>,
    valid: Result<StatusCode, String>,
}

pub(super) async fn charge(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (parsed, order, amount) = match serde_json::from_slice::<ChargeBody>(&body) {
        Err(e) => (
            Parsed {
                subject: None,
                valid: Err(format!("malformed charge: {e}")),
            },
            String::new(),
            0,
        ),
        Ok(c) => {
            let valid = if c.amount_cents <= 0 {
                Err(format!(
                    "amount_cents must be positive, got {}",
                    c.amount_cents
                ))
            } else if c.order_id.is_empty() {
                Err("order_id is empty".to_owned())
            } else {
                Ok(StatusCode::CREATED)
            };
            let subject = Some(c.order_id.clone());
            (Parsed { subject, valid }, c.order_id, c.amount_cents)
        }
    };
    handle(
        &shared,
        &conn,
        Route::Charges,
        &headers,
        body,
        parsed,
        move |id| {
            let said = format!("charged {order} {amount}¢ as ch_{id}");
            let answer =
                json!({"charge_id": format!("ch_{id}"), "order_id": order, "amount_cents": amount});
            (answer, said)
        },
    )
    .await
}

pub(super) async fn message(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (parsed, to) = match serde_json::from_slice::<MessageBody>(&body) {
        Err(e) => (
            Parsed {
                subject: None,
                valid: Err(format!("malformed message: {e}")),
            },
            String::new(),
        ),
        Ok(m) => {
            let digits = m.to.strip_prefix('+').unwrap_or("");
            let valid = if !(8..=15).contains(&digits.len())
                || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                Err(format!("invalid phone number {:?}", m.to))
            } else if m.text.is_empty() {
                Err("text is empty".to_owned())
            } else {
                Ok(StatusCode::ACCEPTED)
            };
            let subject = Some(m.to.clone());
            (Parsed { subject, valid }, m.to)
        }
    };
    handle(
        &shared,
        &conn,
        Route::Messages,
        &headers,
        body,
        parsed,
        move |id| {
            let said = format!("delivered msg_{id} to {to}");
            (json!({"message_id": format!("msg_{id}"), "to": to}), said)
        },
    )
    .await
}

pub(super) async fn price(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    Path(sku): Path<String>,
) -> Response {
    let route = format!("GET /prices/{sku}");
    let (fault, seen) = arrive(&shared, Route::Prices, &route, Some(&sku), None);
    if let Some(early) = pre_app_fault(&shared, &conn, fault, seen).await {
        return early;
    }
    if matches!(fault, Fault::Hang | Fault::LoseResponse) {
        shared.say("hung");
        return hang(&shared, &conn, seen, Outcome::NoAnswer).await;
    }
    if fault == Fault::CommitThenReset {
        return reset(&shared, &conn, seen, Outcome::Reset);
    }
    if let Fault::CommitThenStatus(code) = fault {
        // A read has nothing to commit: the status alone.
        record(&shared, seen, Outcome::Status(code), None);
        let code = StatusCode::from_u16(code).expect("a status code");
        return error(code, "upstream reset before headers");
    }
    if let Fault::SlowAnswer(delay) = fault {
        tokio::time::sleep(delay).await;
    }
    // Prices: a few cents per letter, stable.
    let cents: u64 = 100 + sku.bytes().map(u64::from).sum::<u64>() % 900;
    record(&shared, seen, Outcome::Read, None);
    shared.say(format!("price of {sku}: {cents}¢"));
    let text = json!({"sku": sku, "price_cents": cents}).to_string();
    json_response(StatusCode::OK, text, fault)
}

/// The part every write shares: fault, validation, idempotency store, side effect, answer.
#[allow(
    clippy::too_many_lines,
    reason = "one request's path, read from top to bottom"
)]
async fn handle(
    shared: &Shared,
    conn: &Conn,
    which: Route,
    headers: &HeaderMap,
    body: Bytes,
    parsed: Parsed,
    answer: impl FnOnce(u64) -> (serde_json::Value, String),
) -> Response {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let route = &which.to_string();
    let (fault, seen) = arrive(
        shared,
        which,
        route,
        parsed.subject.as_deref(),
        key.as_deref(),
    );
    if let Some(early) = pre_app_fault(shared, conn, fault, seen).await {
        return early;
    }
    if fault == Fault::Hang {
        shared.say("hung (nothing done)");
        return hang(shared, conn, seen, Outcome::NoAnswer).await;
    }

    // The application: validate, then look the key up, then apply.
    let status = match parsed.valid {
        Err(why) => {
            record(shared, seen, Outcome::Status(400), None);
            shared.say(format!("400 Bad Request: {why}"));
            return error(StatusCode::BAD_REQUEST, &why);
        }
        Ok(status) => status,
    };
    let subject = parsed.subject.unwrap_or_default();
    let (status, text, did) = {
        let mut state = shared.lock();
        let stored = key
            .as_ref()
            .and_then(|k| state.store.get(&(route.to_owned(), k.clone())).cloned());
        if let Some(stored) = stored {
            if stored.body_of_request != body {
                drop(state);
                record(shared, seen, Outcome::Status(422), None);
                shared.say("422: this Idempotency-Key was used with another request body");
                return error(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Idempotency-Key reused with a different request body",
                );
            }
            (stored.status, stored.body, None)
        } else {
            state.next_id += 1;
            let id = state.next_id;
            *state.effects.entry(subject.clone()).or_default() += 1;
            let (answer, said) = answer(id);
            let text = answer.to_string();
            if let Some(k) = &key {
                state.store.insert(
                    (route.to_owned(), k.clone()),
                    Stored {
                        body_of_request: body,
                        status,
                        body: text.clone(),
                    },
                );
            }
            (status, text, Some(said))
        }
    };
    let (did, outcome) = match did {
        Some(said) => (said, Outcome::Applied),
        None => (
            "replayed the stored answer for this key (no new side effect)".to_owned(),
            Outcome::Replayed,
        ),
    };
    match fault {
        Fault::LoseResponse => {
            shared.say(format!("{did}, then lost the response"));
            hang(shared, conn, seen, outcome).await
        }
        Fault::CommitThenReset => {
            shared.say(format!("{did}, then reset the connection"));
            reset(shared, conn, seen, outcome)
        }
        Fault::CommitThenStatus(code) => {
            shared.say(format!("{did}, then answered {code}"));
            record(shared, seen, outcome, None);
            let code = StatusCode::from_u16(code).expect("a status code");
            error(code, "upstream reset before headers")
        }
        _ => {
            if let Fault::SlowAnswer(delay) = fault {
                shared.say(format!("{did}; answering after {delay:?}"));
                tokio::time::sleep(delay).await;
            }
            if let Fault::SlowBody(total) = fault {
                shared.say(format!("{did}; the body takes {total:?}"));
            }
            shared.say(format!("{did}; {}", status_line(status)));
            let replayed = outcome == Outcome::Replayed;
            record(shared, seen, outcome, None);
            let mut response = json_response(status, text, fault);
            if replayed {
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
            }
            response
        }
    }
}

/// An answer with a JSON body, which trickles for [`Fault::SlowBody`].
fn json_response(status: StatusCode, text: String, fault: Fault) -> Response {
    let json = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )];
    match fault {
        Fault::SlowBody(total) => (
            status,
            json,
            axum::body::Body::new(Trickle::new(&text, total)),
        )
            .into_response(),
        _ => (status, json, text).into_response(),
    }
}

/// Logs the arrival and draws the request's fault (from the subject's script, the route's, the
/// global one, the default); gives the fault and the log's index.
fn arrive(
    shared: &Shared,
    which: Route,
    route: &str,
    subject: Option<&str>,
    key: Option<&str>,
) -> (Fault, usize) {
    let mut state = shared.lock();
    let scripted = subject
        .and_then(|s| state.scripts.get_mut(s))
        .and_then(VecDeque::pop_front);
    let fault = scripted
        .or_else(|| state.routes.get_mut(&which).and_then(VecDeque::pop_front))
        .or_else(|| state.script.pop_front())
        .or(state.default)
        .unwrap_or(Fault::Pass);
    state.seen.push(Seen {
        at: Instant::now(),
        wall: SystemTime::now(),
        route: route.to_owned(),
        subject: subject.map(str::to_owned),
        key: key.map(str::to_owned),
        fault,
        outcome: Outcome::NoAnswer,
        retry_not_before: None,
    });
    (fault, state.seen.len() - 1)
}

fn record(shared: &Shared, seen: usize, outcome: Outcome, not_before: Option<SystemTime>) {
    let mut state = shared.lock();
    let entry = &mut state.seen[seen];
    entry.outcome = outcome;
    entry.retry_not_before = not_before;
}

/// The faults that strike before the application sees the request (a load balancer, the
/// network): an answer for them, or `None` to go on.
async fn pre_app_fault(
    shared: &Shared,
    conn: &Conn,
    fault: Fault,
    seen: usize,
) -> Option<Response> {
    match fault {
        Fault::Unavailable => {
            record(shared, seen, Outcome::Status(503), None);
            shared.say("503 Service Unavailable (nothing done)");
            Some(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "deploying, try again",
            ))
        }
        Fault::Status(status) => {
            record(shared, seen, Outcome::Status(status), None);
            shared.say(format!("{status} (nothing done)"));
            let code = StatusCode::from_u16(status).expect("a status code");
            Some(error(code, "scripted status"))
        }
        Fault::Hinted {
            status,
            header,
            value,
        } => {
            record(shared, seen, Outcome::Status(status), None);
            shared.say(format!("{status}, {header}: {value} (nothing done)"));
            let code = StatusCode::from_u16(status).expect("a status");
            let mut response = error(code, "with a hint");
            response
                .headers_mut()
                .insert(header, HeaderValue::from_static(value));
            Some(response)
        }
        Fault::RateLimited(form) => {
            let now = SystemTime::now();
            let (value, not_before) = match form {
                RetryAfter::Seconds(s) => (s.to_string(), now + Duration::from_secs(s)),
                RetryAfter::Date(d) => {
                    let at = ceil_to_second(now + d);
                    (httpdate::fmt_http_date(at), at)
                }
            };
            record(shared, seen, Outcome::Status(429), Some(not_before));
            shared.say(format!(
                "429 Too Many Requests, Retry-After: {value} (nothing done)"
            ));
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, "slow down");
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from_str(&value).expect("a header value"),
            );
            Some(response)
        }
        Fault::Reset => {
            shared.say("reset the connection (nothing done)");
            Some(reset(shared, conn, seen, Outcome::Reset))
        }
        Fault::Pass
        | Fault::Hang
        | Fault::LoseResponse
        | Fault::CommitThenReset
        | Fault::CommitThenStatus(_)
        | Fault::SlowAnswer(_)
        | Fault::SlowBody(_) => {
            // Let tokio run other tasks, as a real service would between accepting and handling.
            tokio::task::yield_now().await;
            None
        }
    }
}

fn status_line(status: StatusCode) -> String {
    format!(
        "{} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or_default()
    )
}

fn ceil_to_second(t: SystemTime) -> SystemTime {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() + u64::from(since.subsec_nanos() > 0);
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn error(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(json!({"error": why}))).into_response()
}

/// Never answers: waits until the service stops (or [`HANG_LIMIT`]), then resets the
/// connection. A client that gave up earlier has closed its end already.
async fn hang(shared: &Shared, conn: &Conn, seen: usize, outcome: Outcome) -> Response {
    record(shared, seen, outcome.clone(), None);
    let mut stopping = shared.stopping.subscribe();
    let _ = tokio::time::timeout(HANG_LIMIT, stopping.wait_for(|stop| *stop)).await;
    reset(shared, conn, seen, outcome)
}

/// Resets the request's connection: the response handed back is never written.
fn reset(shared: &Shared, conn: &Conn, seen: usize, outcome: Outcome) -> Response {
    record(shared, seen, outcome, None);
    conn.kill.kill();
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}
