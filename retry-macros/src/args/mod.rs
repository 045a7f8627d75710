//! The arguments of `#[retryable(...)]`, parsed: with darling (the two pattern lists by hand, since
//! patterns are not expressions), each item's shape checked first so that a mistake gets its
//! fix; each error is spanned at its token. `valid` then checks the values against each other
//! and against the function.

mod examples;
mod jitter_range;
mod literal;
mod log_error;
mod model;
mod pattern_lists;
mod raw;
mod shape;
#[cfg(test)]
mod tests;
mod values;
mod wrong_kind;

use std::collections::HashMap;

use darling::FromMeta;
use darling::ast::NestedMeta;
use proc_macro2::{Span, TokenStream};

pub(crate) use model::{Conversions, RetryArgs, Schedule, StreamArgs};
use raw::RawArgs;

use crate::util::combine;

/// The arguments as read, and the errors of the values that could not be read: each such key is
/// left unset, so that `valid` still checks the others (and reports them all together).
pub(crate) struct Parsed {
    pub(crate) args: RetryArgs,
    /// The values that could not be read (a duration, a name), in the order the keys are read.
    pub(crate) unread: Vec<syn::Error>,
    /// `crate`'s value, when it is not a path (read last: reported after the keys' checks).
    pub(crate) unread_crate: Option<syn::Error>,
}

/// Where each key of `items` is written (its name).
fn key_spans(items: &[NestedMeta]) -> HashMap<String, Span> {
    items
        .iter()
        .filter_map(|item| match item {
            NestedMeta::Meta(m) => m.path().get_ident().map(|i| (i.to_string(), i.span())),
            NestedMeta::Lit(_) | NestedMeta::NameValueInvalidExpr(_) => None,
        })
        .collect()
}

/// Parses the attribute's arguments. A mistake in an item's shape (an unknown key, a value of
/// the wrong kind) fails the parse, with every such mistake reported; a value that cannot be read
/// is reported in [`Parsed`], beside the others.
pub(crate) fn parse(args: TokenStream) -> syn::Result<Parsed> {
    let mut split = pattern_lists::split(args)?;
    let mut errors = Vec::new();
    let items = std::mem::take(&mut split.rest);
    let items = shape::check_items(items, &mut errors);
    let mut key_spans = key_spans(&items);
    key_spans.extend(std::mem::take(&mut split.key_spans));
    let raw = match RawArgs::from_list(&items) {
        Ok(raw) => raw,
        Err(e) => {
            errors.push(e.into());
            return Err(combine(errors).unwrap_or_else(|| unreachable!("one error at least")));
        }
    };
    if let Some(e) = combine(std::mem::take(&mut errors)) {
        return Err(e);
    }
    let mut schedule = values::schedule(&raw, &mut errors);
    let stream = values::stream(&raw, &mut schedule, &mut errors);
    let (krate, unread_crate) = values::crate_path(raw.krate.as_ref());
    let args = RetryArgs {
        schedule,
        retry_on: split.retry_on,
        no_retry_on: split.no_retry_on,
        retry_if: raw.retry_if,
        retry_if_ok: raw.retry_if_ok,
        retry_after: raw.retry_after,
        delay_for: raw.delay_for,
        on_retry: raw.on_retry,
        recover: raw.recover.map(|r| r.0),
        name: raw.name.map(|n| n.0),
        krate,
        circuit_breaker: raw.circuit_breaker,
        budget: raw.budget,
        policy: raw.policy,
        throttle: raw.throttle,
        bulkhead: raw.bulkhead,
        into: Conversions {
            timeout: raw.timeout_into,
            breaker_open: raw.breaker_open_into,
            throttled: raw.throttled_into,
            bulkhead_full: raw.bulkhead_full_into,
        },
        stream,
        key_spans,
    };
    Ok(Parsed {
        args,
        unread: errors,
        unread_crate,
    })
}
