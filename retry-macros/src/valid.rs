//! The validation pass, between the parse (`args`, `item`) and the expansion: checks of what was
//! parsed, against itself and against the function, each error spanned at its token. Nothing
//! here changes what was parsed.
//!
//! - The attribute's keys against each other: the schedule's rules are the runtime's own
//!   (`RetryPolicyBuilder::build`), run here at expansion time; no schedule key stands beside
//!   `policy`.
//! - The function's shape: shapes that would compile into something other than what was meant,
//!   as a second `#[retryable]` (two nested loops: 3 × 5 = 15 attempts) or a non-`async` fn
//!   returning a future (each attempt would only build the future); and a return type that can
//!   be a `Result`.
//! - The keys against the function: `timeout` needs an `async fn`; `recover` takes no argument
//!   under `#[cfg]`.

use proc_macro2::Span;
use retry_rules::PolicySettings;
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType, Type, TypeParamBound};

use crate::args::{Parsed, RetryArgs, Schedule};
use crate::item::{Param, RetryFn, ungroup};
use crate::util::combine;

/// Checks the attribute's keys against each other, and reports the errors with those of the
/// values the parse could not read (in the order the keys are read, `crate`'s last).
pub(crate) fn args(parsed: &Parsed) -> syn::Result<()> {
    let mut errors = parsed.unread.clone();
    let schedule = &parsed.args.schedule;
    if parsed.args.policy.is_some() {
        exclude_schedule_keys(schedule, &mut errors);
    } else {
        schedule_rules(schedule, &mut errors);
    }
    crate::no_effect::check(&parsed.args, &mut errors);
    crate::stream::keys(&parsed.args, &mut errors);
    errors.extend(parsed.unread_crate.clone());
    combine(errors).map_or(Ok(()), Err)
}

/// Checks the function's shape; reports the first mistake found.
pub(crate) fn item(f: &RetryFn, attempts: Option<u32>, streamed: bool) -> syn::Result<()> {
    let item = &f.item;
    if let Some(constness) = &item.sig.constness {
        return Err(syn::Error::new(
            constness.span,
            "#[retryable] cannot apply to a `const fn`: retrying sleeps and reads the clock; remove `const`",
        ));
    }
    if let Some(a) = item
        .attrs
        .iter()
        .find(|a| a.path().is_ident("track_caller"))
    {
        return Err(syn::Error::new(
            a.span(),
            "#[retryable] cannot keep `#[track_caller]`: each attempt runs the body in a closure or an async block, which cannot forward the caller's location on stable Rust; remove `#[track_caller]`",
        ));
    }
    check_single(item, attempts)?;
    check_reserved_names(f)?;
    if f.boxed.is_some() {
        checked_result(&f.output, streamed)
    } else {
        // Not async-trait's boxed future: a hand-written fn returning a future is a mistake.
        check_not_a_future(item)?;
        result_type(&item.sig, streamed)
    }
}

/// Checks the attribute's keys against the function; reports the first mistake found.
pub(crate) fn together(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    crate::stream::check(args, f)?;
    if !f.is_async() && args.schedule.settings.timeout.is_some() {
        return Err(syn::Error::new(
            args.schedule.span_of("timeout"),
            "`timeout` needs an `async fn`: a blocking call cannot be cut short; remove `timeout` or make the function async",
        ));
    }
    if args.schedule.settings.hedge_after.is_some() {
        hedge_shape(args, f)?;
    }
    let error = crate::item::error_type(&f.output);
    let mut shapes = vec![];
    for (key, pats) in [
        ("retry_on", &args.retry_on),
        ("no_retry_on", &args.no_retry_on),
    ] {
        if let Some(pats) = pats {
            shapes.extend(crate::patterns::shape_errors(key, pats, error));
        }
    }
    if let Some(e) = combine(shapes) {
        return Err(e);
    }
    conversions_in_use(args, f)?;
    no_cfg_with_recover(args, f)
}

/// An `…_into` key without what it converts (no setting another makes dead): `timeout_into`
/// needs a timed attempt (an `async fn` with `timeout`, or with `policy`, which may hold one),
/// and each guard's conversion needs its guard.
fn conversions_in_use(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    // A stream's idle timeout and its deadline (`max_elapsed`, which ends the stream with the
    // conversion) convert an `Elapsed` too.
    let stream = &args.stream;
    let stream_timed = stream.resume.is_some()
        && (stream.settings.idle_timeout.is_some() || args.schedule.settings.max_elapsed.is_some());
    let timed = f.is_async()
        && (args.schedule.settings.timeout.is_some() || args.policy.is_some() || stream_timed);
    let into = &args.into;
    for (key, given, used, needs) in [
        (
            "timeout_into",
            into.timeout.is_some(),
            timed,
            if f.is_async() {
                "`timeout` (or `policy`)"
            } else {
                "an `async fn` with `timeout`: a blocking attempt is never cut"
            },
        ),
        (
            "breaker_open_into",
            into.breaker_open.is_some(),
            args.circuit_breaker.is_some(),
            "`circuit_breaker`",
        ),
        (
            "throttled_into",
            into.throttled.is_some(),
            args.throttle.is_some(),
            "`throttle`",
        ),
        (
            "bulkhead_full_into",
            into.bulkhead_full.is_some(),
            args.bulkhead.is_some(),
            "`bulkhead`",
        ),
    ] {
        if given && !used {
            return Err(syn::Error::new(
                args.key_span(key),
                format!(
                    "`{key}` converts a failure that cannot happen here: it only applies with {needs}; remove `{key}`"
                ),
            ));
        }
    }
    Ok(())
}

/// `hedge_after` runs attempts side by side: it needs an `async fn`, and nothing the attempts
/// borrow mutably (two copies cannot both hold `&mut`).
/// Whether the attempts of `f` may run side by side: an `async fn` taking neither `&mut self`
/// nor `self` nor a `&mut` argument (the shapes `hedge_after` accepts).
pub(crate) fn can_overlap(f: &RetryFn) -> bool {
    f.is_async()
        && f.receiver
            .is_none_or(|(r, _)| r == crate::item::Receiver::Shared)
        && unique_param(f).is_none()
}

/// Whether every argument is a shared reference (or unused): nothing is cloned per attempt, so
/// the closure driver borrows only what the attribute's own loop borrows.
pub(crate) fn borrows_only(f: &RetryFn) -> bool {
    f.params.iter().all(|a| match a {
        Param::Borrowed { unique, .. } => !unique,
        Param::Ignored { .. } => true,
        Param::Pattern { ty, .. } => {
            matches!(ungroup(ty), Type::Reference(r) if r.mutability.is_none())
        }
        Param::Owned { .. } => false,
    })
}

/// The first argument the attempts would borrow mutably, as written.
fn unique_param(f: &RetryFn) -> Option<String> {
    f.params.iter().find_map(|a| match a {
        Param::Borrowed {
            ident,
            unique: true,
            ..
        } => Some(ident.to_string()),
        Param::Pattern { pat, ty, .. } => match ungroup(ty) {
            Type::Reference(r) if r.mutability.is_some() => {
                Some(quote::ToTokens::to_token_stream(pat).to_string())
            }
            _ => None,
        },
        _ => None,
    })
}

fn hedge_shape(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    let span = args.schedule.span_of("hedge_after");
    if !f.is_async() {
        return Err(syn::Error::new(
            span,
            "`hedge_after` needs an `async fn`: hedging runs a second attempt alongside a slow one, and a blocking call cannot run two at once; remove `hedge_after` or make the function async",
        ));
    }
    let unique_receiver = f
        .receiver
        .is_some_and(|(r, _)| r != crate::item::Receiver::Shared);
    if unique_receiver {
        return Err(syn::Error::new(
            span,
            "`hedge_after` cannot apply to a method taking `&mut self` or `self`: hedged attempts run at the same time, and they cannot all borrow `self` mutably; take `&self` (with interior mutability where needed) or remove `hedge_after`",
        ));
    }
    if let Some(ident) = unique_param(f) {
        return Err(syn::Error::new(
            span,
            format!(
                "`hedge_after` cannot apply to a function taking `&mut` arguments (`{ident}`): hedged attempts run at the same time, and they cannot all borrow `{ident}` mutably; pass it by shared reference or by value, or remove `hedge_after`"
            ),
        ));
    }
    Ok(())
}

/// Runs the runtime's rules, reporting every broken one at its key's value.
fn schedule_rules(schedule: &Schedule, errors: &mut Vec<syn::Error>) {
    hedge_needs_idempotent(schedule, errors);
    let mut settings = schedule.settings;
    // Each pass drops the key at fault; there are only nine keys.
    for _ in 0..12 {
        let Err(e) = settings.check() else {
            return;
        };
        let span = schedule
            .spans
            .get(e.field())
            .copied()
            .unwrap_or_else(Span::call_site);
        errors.push(syn::Error::new(span, fix_hint(&e)));
        forget(&mut settings, e.field());
    }
}

/// Hedged copies overlap the attempt in flight, and each may do the call's action: the
/// attribute hedges only a call that says it is safe to repeat (`idempotent = true`). Said
/// `false`, the runtime's rule reports it (`PolicyError::HedgeNotIdempotent`).
fn hedge_needs_idempotent(schedule: &Schedule, errors: &mut Vec<syn::Error>) {
    // With one attempt, `hedge_after` is dead anyway, which `no_effect` reports.
    if schedule.settings.hedge_after.is_none()
        || schedule.settings.idempotent.is_some()
        || schedule.settings.max_attempts == Some(1)
    {
        return;
    }
    let span = schedule
        .spans
        .get("hedge_after")
        .copied()
        .unwrap_or_else(Span::call_site);
    errors.push(syn::Error::new(
        span,
        "`hedge_after` starts copies of the call while an attempt is in flight, and each copy may do \
         the call's action: hedge only a call that is safe to repeat, and say so with `idempotent = true` \
         (a read, or a write that sends the call's idempotency key), or remove `hedge_after`",
    ));
}

/// Drops a key found invalid, so the remaining keys can still be checked.
fn forget(s: &mut PolicySettings, field: &str) {
    match field {
        "max_attempts" => s.max_attempts = None,
        "delay" => s.delay = None,
        "multiplier" => s.multiplier = None,
        "max_delay" => s.max_delay = None,
        "throttling_delay" => s.throttling_delay = None,
        "jitter" => s.jitter = None,
        "timeout" => s.timeout = None,
        "max_elapsed" => s.max_elapsed = None,
        "log_error" => s.log_error = None,
        "hedge_after" => s.hedge_after = None,
        "one_layer" => s.one_layer = None,
        "idempotent" => s.idempotent = None,
        _ => s.backoff = None,
    }
}

/// The runtime's message, plus how to fix it where that is not obvious.
fn fix_hint(e: &retry_rules::PolicyError) -> String {
    use retry_rules::PolicyError as P;
    match e {
        P::ZeroAttempts => format!("{e}; use `max_attempts = 1` for no retries"),
        P::ZeroDuration { .. } => format!("{e}; write a positive duration such as \"100ms\""),
        P::DelayAboveMaxDelay { .. } => format!("{e}; lower `delay` or raise `max_delay`"),
        P::ThrottlingDelayAboveMaxDelay { .. } => {
            format!("{e}; lower `throttling_delay` or raise `max_delay`")
        }
        // `jitter = 1.5` for "times a random 0.5 to 1.5": the factor is the spread, 0.5.
        // `jitter = 50` for "50 %".
        P::JitterFactorOutOfRange { factor } if *factor > 2.0 && *factor <= 100.0 => format!(
            "{e}; a factor is a fraction, not a percentage: for ±{factor} % write `jitter = {}`",
            factor / 100.0
        ),
        P::JitterFactorOutOfRange { factor } if *factor > 1.0 && *factor <= 2.0 => format!(
            "{e}; a factor f multiplies each delay by a random 1 − f to 1 + f, so for a multiplier \
             up to {factor} write `jitter = {}`",
            (((factor - 1.0) * 1000.0).round() / 1000.0)
        ),
        _ => e.to_string(),
    }
}

/// `policy = …` sets the whole schedule at run time: no schedule key may stand beside it.
fn exclude_schedule_keys(schedule: &Schedule, errors: &mut Vec<syn::Error>) {
    // The stream's own settings are not the schedule's: they stand beside a `policy`.
    let mut keys: Vec<_> = schedule
        .spans
        .iter()
        .filter(|(key, _)| !matches!(**key, "idle_timeout" | "progress_resets"))
        .collect();
    keys.sort_by_key(|(key, _)| **key);
    for (key, span) in keys {
        let message = if *key == "idempotent" {
            "`idempotent` cannot be combined with `policy`, which says it for every call under it; \
             set it in the policy instead (`RetryPolicy::builder().idempotent(true)`, or `idempotent = true` in a config file)"
                .to_owned()
        } else if *key == "log_error" {
            "`log_error` cannot be combined with `policy`, which also says what its events log of an error; \
             set it in the policy instead (`RetryPolicy::builder().log_error(LogError::Debug)`, or `log_error = \"debug\"` in a config file)"
                .to_owned()
        } else {
            format!(
                "`{key}` cannot be combined with `policy`, which sets the whole schedule; set it in the policy instead"
            )
        };
        errors.push(syn::Error::new(*span, message));
    }
}

/// `recover` hands the fallback every argument, which a `#[cfg]` on one makes impossible to
/// write (a tuple type has no `#[cfg]` on its elements).
fn no_cfg_with_recover(args: &RetryArgs, f: &RetryFn) -> syn::Result<()> {
    match f.params.iter().find_map(Param::cfg) {
        Some(cfg) if args.recover.is_some() => Err(syn::Error::new_spanned(
            cfg,
            "`recover` cannot be given the arguments when one of them is under `#[cfg]` (the fallback's parameters would depend on the configuration): remove `recover`, or the `#[cfg]`",
        )),
        _ => Ok(()),
    }
}

/// The return type. Whether it is a `Result` (under any name: `io::Result<T>`, an alias) is
/// for the compiler to say (the expansion requires `__private::IsResult` of it); only types that
/// cannot be one whatever their names are refused here.
fn result_type(sig: &syn::Signature, streamed: bool) -> syn::Result<()> {
    let ReturnType::Type(_, ty) = &sig.output else {
        return Err(syn::Error::new(
            sig.paren_token.span.close(),
            "#[retryable] needs a function that returns `Result<T, E>`: add a return type",
        ));
    };
    checked_result(ty, streamed)
}

/// `streamed`: the attribute has `resume`, whose function returns its stream inside a `Result`.
fn checked_result(ty: &Type, streamed: bool) -> syn::Result<()> {
    if matches!(ungroup(ty), Type::Path(_) | Type::Macro(_)) {
        Ok(())
    } else if streamed {
        Err(syn::Error::new_spanned(
            ty,
            "`resume` needs the stream returned inside a `Result` (the open itself may fail, and is retried): `Result<impl Stream<Item = Result<T, E>>, E>`; wrap the stream in `Ok(…)` and the return type in `Result<…, E>`",
        ))
    } else {
        Err(syn::Error::new(
            ty.span(),
            "#[retryable] needs a function that returns `Result<T, E>`: retries are decided on its `Err` values",
        ))
    }
}

/// Whether an attribute is `#[retryable]` or `#[retryable(...)]` under a path this macro can
/// recognise: `retryable`, `reattempt::retryable`, `::reattempt::retryable`, or any path ending
/// in `::retryable`. A `use reattempt::retryable as retry;` rename cannot be recognised.
fn is_retryable(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "retryable")
}

/// The attempts an attribute's settings make (the default when `max_attempts` is not set).
pub(crate) fn attempts(args: &RetryArgs) -> u32 {
    args.schedule
        .settings
        .max_attempts
        .unwrap_or(retry_rules::PolicySettings::DEFAULT_MAX_ATTEMPTS)
}

/// Rejects a second `#[retryable]` on the function. `outer` is the attempts of the attribute
/// being expanded, when its arguments were read: the message multiplies the real counts.
fn check_single(item: &ItemFn, outer: Option<u32>) -> syn::Result<()> {
    let Some(second) = item.attrs.iter().find(|a| is_retryable(a)) else {
        return Ok(());
    };
    let inner = match &second.meta {
        syn::Meta::Path(_) => Some(retry_rules::PolicySettings::DEFAULT_MAX_ATTEMPTS),
        syn::Meta::List(l) => crate::args::parse(l.tokens.clone())
            .ok()
            .map(|p| attempts(&p.args)),
        syn::Meta::NameValue(_) => None,
    };
    let product = match (outer, inner) {
        (Some(a), Some(b)) if a < u32::MAX && b < u32::MAX => {
            format!(" ({a} × {b} = {} attempts)", u64::from(a) * u64::from(b))
        }
        _ => String::new(),
    };
    Err(syn::Error::new_spanned(
        second,
        format!(
            "a second #[retryable] on the same function would nest two retry loops and multiply \
             the attempts{product}; keep one #[retryable] with all the keys in it"
        ),
    ))
}

/// Rejects an argument named like the expansion's own items and locals (`__reattempt_name`,
/// `__reattempt_result_type`, …), or, in a method, like its renamed receiver (`__self`: the
/// body's `self` is `__self`, bound before the arguments): the body would see the expansion's,
/// not the argument, and compile to the wrong value or fail far from the cause. The
/// `__reattempt` prefix is reserved, and `__self` in a method.
fn check_reserved_names(f: &RetryFn) -> syn::Result<()> {
    let method = f.receiver.is_some();
    for param in &f.params {
        // A plain name is read as it is; only a destructuring pattern is walked as tokens.
        let reserved = match param {
            Param::Owned { ident, .. } | Param::Borrowed { ident, .. } => {
                is_reserved(ident, method).then(|| ident.clone())
            }
            Param::Pattern { pat, .. } => {
                reserved_ident(quote::ToTokens::to_token_stream(pat), method)
            }
            Param::Ignored { .. } => None,
        };
        if let Some(ident) = reserved {
            let why = if is_reserved(&ident, false) {
                "#[retryable] reserves names starting with `__reattempt` for its expansion, \
                 which declares such names in the function's body"
            } else {
                "#[retryable] renames a method's `self` to `__self` in its body"
            };
            return Err(syn::Error::new(
                ident.span(),
                format!("{why}; rename the argument `{ident}`"),
            ));
        }
    }
    Ok(())
}

/// Whether `ident` starts with `__reattempt` (any case, raw or not), or is `__self` in a
/// `method`.
fn is_reserved(ident: &proc_macro2::Ident, method: bool) -> bool {
    let name = ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    name.to_ascii_lowercase().starts_with("__reattempt") || (method && name == "__self")
}

/// The first identifier in `tokens` (however nested) that [`is_reserved`].
fn reserved_ident(tokens: proc_macro2::TokenStream, method: bool) -> Option<proc_macro2::Ident> {
    tokens.into_iter().find_map(|tree| match tree {
        proc_macro2::TokenTree::Ident(ident) => is_reserved(&ident, method).then_some(ident),
        proc_macro2::TokenTree::Group(group) => reserved_ident(group.stream(), method),
        _ => None,
    })
}

/// Rejects a non-`async` fn returning a future (except async-trait's own boxed future, which the
/// caller recognises first).
fn check_not_a_future(item: &ItemFn) -> syn::Result<()> {
    if item.sig.asyncness.is_none()
        && let Some(output) = future_output(&item.sig.output)
    {
        let sig = &item.sig;
        let args = crate::render::render(&sig.inputs);
        let output = crate::render::render(&output);
        let span: &dyn quote::ToTokens = match &sig.output {
            ReturnType::Type(_, ty) => ty,
            ReturnType::Default => &sig.ident,
        };
        return Err(syn::Error::new_spanned(
            span,
            format!(
                "#[retryable] retries an `async fn`, not a fn that returns a future (each \
                 attempt must run the body again): write `async fn {}({args}) -> {output}`",
                sig.ident
            ),
        ));
    }
    Ok(())
}

/// `Some(output)` when the return type is a future: `impl Future<Output = X>`,
/// `Pin<Box<dyn Future<Output = X>>>`, `BoxFuture<'_, X>` give `X`; `Result<T, E>` when the
/// output cannot be read off.
fn future_output(output: &ReturnType) -> Option<Type> {
    let ReturnType::Type(_, ty) = output else {
        return None;
    };
    match &**ty {
        Type::ImplTrait(t) => bounds_output(&t.bounds),
        Type::Path(p) => {
            let last = p.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            if last.ident == "BoxFuture" || last.ident == "LocalBoxFuture" {
                return Some(
                    args.args
                        .iter()
                        .find_map(|a| match a {
                            syn::GenericArgument::Type(t) => Some(t.clone()),
                            _ => None,
                        })
                        .unwrap_or_else(unknown_output),
                );
            }
            if last.ident != "Pin" {
                return None;
            }
            // Pin<Box<dyn Future<Output = X> + Send>>
            let Some(syn::GenericArgument::Type(Type::Path(boxed))) = args.args.first() else {
                return None;
            };
            let inner = boxed.path.segments.last()?;
            let syn::PathArguments::AngleBracketed(inner) = &inner.arguments else {
                return None;
            };
            match inner.args.first()? {
                syn::GenericArgument::Type(Type::TraitObject(t)) => bounds_output(&t.bounds),
                _ => None,
            }
        }
        _ => None,
    }
}

fn unknown_output() -> Type {
    syn::parse_quote!(Result<T, E>)
}

fn bounds_output(
    bounds: &syn::punctuated::Punctuated<TypeParamBound, syn::Token![+]>,
) -> Option<Type> {
    bounds.iter().find_map(|b| {
        let TypeParamBound::Trait(t) = b else {
            return None;
        };
        let last = t.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return Some(unknown_output());
        };
        Some(
            args.args
                .iter()
                .find_map(|a| match a {
                    syn::GenericArgument::AssocType(at) if at.ident == "Output" => {
                        Some(at.ty.clone())
                    }
                    _ => None,
                })
                .unwrap_or_else(unknown_output),
        )
    })
}

#[cfg(test)]
mod tests {
    /// `async fn f(ARG) -> Result<u32, E>`, parsed as the macro parses it.
    fn function(arg: &str) -> crate::item::RetryFn {
        let tokens = format!("async fn f({arg}) -> Result<u32, E> {{ Ok(1) }}");
        crate::item::parse(tokens.parse().unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn arguments_with_the_reserved_prefix_are_rejected_however_nested() {
        for (arg, name) in [
            ("__reattempt_name: u32", "__reattempt_name"),
            (
                "mut __reattempt_result_type: u32",
                "__reattempt_result_type",
            ),
            ("(a, __REATTEMPT_X): (u32, u32)", "__REATTEMPT_X"),
            ("P { x: __reattempt_ty, .. }: P", "__reattempt_ty"),
        ] {
            let err = super::check_reserved_names(&function(arg)).expect_err(arg);
            assert!(
                err.to_string()
                    .contains(&format!("rename the argument `{name}`")),
                "{err}"
            );
        }
        for arg in [
            "reattempt_name: u32",
            "_reattempt: u32",
            "(a, b): (u32, u32)",
            "__self_: u8",
        ] {
            assert!(super::check_reserved_names(&function(arg)).is_ok(), "{arg}");
        }
    }

    #[test]
    fn in_a_method_an_argument_named_like_the_renamed_receiver_is_rejected() {
        for arg in ["__self: &S", "(__self, b): (u32, u32)"] {
            let method: crate::item::RetryFn = crate::item::parse(
                format!("fn f(&self, {arg}) -> Result<u32, E> {{ Ok(1) }}")
                    .parse()
                    .unwrap_or_else(|e| panic!("{e}")),
            )
            .unwrap_or_else(|e| panic!("{e}"));
            let err = super::check_reserved_names(&method).expect_err(arg);
            assert!(
                err.to_string()
                    .contains("renames a method's `self` to `__self`")
                    && err.to_string().contains("rename the argument `__self`"),
                "{err}"
            );
        }
        // Without a receiver nothing is bound as `__self`.
        assert!(super::check_reserved_names(&function("__self: u32")).is_ok());
    }

    use super::*;
    use quote::quote;

    /// The function's first mistake, or `""`.
    fn err(item: proc_macro2::TokenStream) -> String {
        let f = crate::item::parse(item).unwrap_or_else(|e| panic!("{e}"));
        super::item(&f, Some(4), false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// Every error of the attribute, parse's and checks', in order.
    fn errors_of(args: proc_macro2::TokenStream) -> Vec<String> {
        match crate::args::parse(args).and_then(|parsed| super::args(&parsed)) {
            Ok(()) => vec![],
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    /// The mistake of the attribute on the function, or `""`.
    fn together_err(args: proc_macro2::TokenStream, item: proc_macro2::TokenStream) -> String {
        let parsed = crate::args::parse(args).unwrap_or_else(|e| panic!("{e}"));
        let f = crate::item::parse(item).unwrap_or_else(|e| panic!("{e}"));
        together(&parsed.args, &f)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn reports_all_errors_at_once() {
        let errs = errors_of(quote!(
            max_attempts = 0,
            delay = "2 parsecs",
            jitter = "ful"
        ));
        assert_eq!(errs.len(), 3, "{errs:?}");
    }

    #[test]
    fn runtime_rules_apply() {
        let errs = errors_of(quote!(delay = "3s", max_delay = "2s"));
        assert!(errs[0].contains("max_delay"), "{errs:?}");
        let errs = errors_of(quote!(backoff = "fixed", multiplier = 3));
        assert!(errs[0].contains("exponential"), "{errs:?}");
        let errs = errors_of(quote!(multiplier = 0.5, timeout = "0s"));
        assert_eq!(errs.len(), 2, "{errs:?}");
    }

    #[test]
    fn no_schedule_key_beside_a_policy() {
        let errs = errors_of(quote!(policy = POLICY, log_error = "debug"));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].contains("`log_error` cannot be combined with `policy`"),
            "{errs:?}"
        );
        let errs = errors_of(quote!(policy = POLICY, max_attempts = 0, delay = "1s"));
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("`delay` cannot"), "{errs:?}");
    }

    #[test]
    fn an_unread_value_comes_first_and_crate_last() {
        let errs = errors_of(quote!(
            crate = "not a path!",
            max_attempts = 0,
            delay = "2 parsecs"
        ));
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs[0].contains("`delay`"), "{errs:?}");
        assert!(errs[1].contains("max_attempts = 1"), "{errs:?}");
        assert!(errs[2].starts_with("`crate` must be a path"), "{errs:?}");
    }

    #[test]
    fn returns_what_can_be_a_result() {
        assert!(
            err(quote!(
                fn f() -> io::Result<u8> {
                    todo!()
                }
            ))
            .is_empty()
        );
        assert!(
            err(quote!(
                fn f() -> (u8, u8) {
                    (1, 2)
                }
            ))
            .contains("retries are decided on its `Err` values")
        );
        assert!(
            err(quote!(
                fn f() {}
            ))
            .contains("add a return type")
        );
    }

    #[test]
    fn const_and_track_caller_are_refused_before_the_return_type() {
        assert!(
            err(quote!(
                const fn f() {}
            ))
            .contains("`const fn`")
        );
        assert!(
            err(quote!(
                #[track_caller]
                fn f() {}
            ))
            .contains("`#[track_caller]`")
        );
    }

    #[test]
    fn keys_are_checked_against_the_function() {
        let blocking = quote!(
            fn f(#[cfg(unix)] a: u8) -> Result<u8, E> {
                Ok(a)
            }
        );
        assert!(
            together_err(quote!(timeout = "1s", recover = g), blocking.clone())
                .starts_with("`timeout` needs an `async fn`")
        );
        assert!(
            together_err(quote!(recover = g), blocking.clone())
                .starts_with("`recover` cannot be given the arguments")
        );
        assert!(together_err(quote!(max_attempts = 2), blocking).is_empty());
    }

    /// The message multiplies the real counts: the outer attribute's and the inner one's (its
    /// default when it sets none).
    #[test]
    fn second_retryable_multiplies_the_real_attempts() {
        let f = |item| crate::item::parse(item).unwrap_or_else(|e| panic!("{e}"));
        let inner = f(quote!(
            #[retryable(max_attempts = 7)]
            fn f() -> Result<(), E> {
                Ok(())
            }
        ));
        let m = super::item(&inner, Some(2), false).unwrap_err().to_string();
        assert!(
            m.contains("(2 × 7 = 14 attempts)") && !m.contains("3 × 5"),
            "{m}"
        );
        let bare = f(quote!(
            #[retryable]
            fn f() -> Result<(), E> {
                Ok(())
            }
        ));
        let m = super::item(&bare, Some(4), false).unwrap_err().to_string();
        assert!(m.contains("(4 × 3 = 12 attempts)"), "{m}");
        let m = super::item(&inner, None, false).unwrap_err().to_string();
        assert!(m.contains("multiply the attempts;"), "{m}");
    }

    #[test]
    fn second_retryable_is_rejected_under_both_paths() {
        assert!(
            err(quote::quote!(
                #[retryable(max_attempts = 5)]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .contains("second #[retryable]")
        );
        assert!(
            err(quote::quote!(
                #[reattempt::retryable]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .contains("second #[retryable]")
        );
        assert!(
            err(quote::quote!(
                #[inline]
                fn f() -> Result<(), E> {
                    Ok(())
                }
            ))
            .is_empty()
        );
    }

    #[test]
    fn future_returning_fns_are_told_to_be_async() {
        let m = err(quote::quote!(
            fn f(x: u8) -> impl Future<Output = Result<u8, E>> {
                async { Ok(x) }
            }
        ));
        assert!(
            m.contains("write `async fn f(x: u8) -> Result<u8, E>`"),
            "{m}"
        );
        let m = err(quote::quote!(
            fn f() -> Pin<Box<dyn Future<Output = Result<u8, E>> + Send>> {
                todo!()
            }
        ));
        assert!(m.contains("-> Result<u8, E>`"), "{m}");
        let m = err(quote::quote!(
            fn f() -> BoxFuture<'static, Result<u8, E>> {
                todo!()
            }
        ));
        assert!(m.contains("-> Result<u8, E>`"), "{m}");
        assert!(
            err(quote::quote!(
                async fn f() -> Result<u8, E> {
                    Ok(1)
                }
            ))
            .is_empty()
        );
    }
}
