//! The principle, held at compile time: **no setting is accepted that another setting makes
//! dead, and no guard expression that can only make a fresh guard for each call.** Each such
//! case compiles into a call that silently does something other than what was written (a single
//! attempt, a breaker that never opens), so each is an error at the key, naming the fix.
//!
//! - Dead settings: the schedule's own rules are the runtime's ([`DeadSetting`], from
//!   `retry-rules`: no retry fits in `max_elapsed`, a hedge that can never start); beside them,
//!   `max_attempts = 1` makes every setting about retries dead.
//! - Guards built per call: `circuit_breaker`, `budget`, `throttle` and `bulkhead` are evaluated
//!   once per call (a breaker must see every call to the dependency); an expression that builds
//!   one (`CircuitBreaker::builder()…build()`, `RetryBudget::default()`, `Bulkhead::new(…)`, a
//!   struct literal) gives each call its own, which never sees a second call.

use retry_rules::DeadSetting;
use syn::Expr;

use crate::args::RetryArgs;
use crate::known_keys::render;

/// The keys whose only effect is on retries (or hedges): dead with `max_attempts = 1`.
const RETRY_ONLY_KEYS: &[&str] = &[
    "delay",
    "throttling_delay",
    "backoff",
    "multiplier",
    "max_delay",
    "jitter",
    "hedge_after",
    "retry_on",
    "no_retry_on",
    "retry_if",
    "retry_if_ok",
    "retry_after",
    "on_retry",
    "budget",
    "one_layer",
];

/// Every dead setting and every guard built per call, each an error at its key.
pub(crate) fn check(args: &RetryArgs, errors: &mut Vec<syn::Error>) {
    dead_settings(args, errors);
    guards_per_call(args, errors);
}

/// The schedule's dead settings (see the module's rule).
fn dead_settings(args: &RetryArgs, errors: &mut Vec<syn::Error>) {
    let Ok(checked) = args.schedule.settings.check() else {
        // A broken rule is reported already (`valid::schedule_rules`).
        return;
    };
    let single = args.schedule.settings.max_attempts == Some(1);
    if single {
        let dead: Vec<&str> = RETRY_ONLY_KEYS
            .iter()
            .copied()
            .filter(|k| args.key_spans.contains_key(*k))
            .collect();
        if let Some(first) = dead.first() {
            let listed = dead
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let (them, it) = if dead.len() == 1 {
                ("it", "has")
            } else {
                ("them", "have")
            };
            errors.push(syn::Error::new(
                args.key_span(first),
                format!(
                    "{listed} {it} no effect: `max_attempts = 1` makes one attempt and never retries; \
                     remove {them}, or allow retries with `max_attempts = 3` (it counts the first attempt)"
                ),
            ));
        }
    }
    for dead in checked.dead_settings() {
        let fix = match dead {
            DeadSetting::HedgeWithOneAttempt if single => continue,
            DeadSetting::HedgeWithOneAttempt => "allow hedges with `max_attempts = 2` or more",
            DeadSetting::NoRetryFits { .. } => {
                "raise `max_elapsed` above the first sleep, shorten `delay`, let jitter shorten it \
                 (`jitter = \"full\"`), or write `max_attempts = 1` if one attempt is what you mean"
            }
            DeadSetting::HedgeAfterDeadline { .. } => {
                "shorten `hedge_after` below `max_elapsed`, or remove it"
            }
        };
        let span = args.schedule.span_of(dead.field());
        errors.push(syn::Error::new(span, format!("{dead}; {fix}")));
    }
}

/// The guard keys whose expression builds a guard (see the module's rule).
fn guards_per_call(args: &RetryArgs, errors: &mut Vec<syn::Error>) {
    for (key, expr, noun, never, example) in [
        (
            "circuit_breaker",
            &args.circuit_breaker,
            "breaker",
            "it never sees a second call's failures, so it never opens",
            "CircuitBreaker",
        ),
        (
            "budget",
            &args.budget,
            "budget",
            "it never sees another call's retries, so it never runs out",
            "RetryBudget",
        ),
        (
            "throttle",
            &args.throttle,
            "throttle",
            "it never sees another call's rejections, so it never sheds",
            "AdaptiveThrottle",
        ),
        (
            "bulkhead",
            &args.bulkhead,
            "bulkhead",
            "each call has all its slots to itself, so it never turns one away",
            "Bulkhead",
        ),
    ] {
        let Some(expr) = expr else { continue };
        if builds_a_value(expr).is_some() {
            let built = once(expr);
            let upper = key.to_ascii_uppercase();
            errors.push(syn::Error::new(
                args.key_span(key),
                format!(
                    "`{key} = {}` builds a new {noun} for every call (the expression is evaluated once per call): \
                     {never}. Build it once, where every call finds it, and name it here: \
                     `static {upper}: std::sync::LazyLock<{example}> = std::sync::LazyLock::new(|| {});` \
                     then `{key} = {upper}`, or a field of `self` (`{key} = self.{key}`)",
                    render(expr),
                    render(built),
                ),
            ));
        }
    }
}

/// What a `static` holding the guard is initialised with: the expression without its leading
/// `&` (and without an `Arc::new`/`Rc::new`/`Box::new` around it, which a `static` does not need).
fn once(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => once(&r.expr),
        Expr::Paren(p) => once(&p.expr),
        Expr::Group(g) => once(&g.expr),
        Expr::Call(c)
            if c.args.len() == 1
                && matches!(&*c.func, Expr::Path(p) if p.path.segments.len() >= 2
                    && p.path.segments.last().is_some_and(|s| s.ident == "new")
                    && p.path.segments.iter().rev().nth(1).is_some_and(|s| matches!(s.ident.to_string().as_str(), "Arc" | "Rc" | "Box"))) =>
        {
            once(&c.args[0])
        }
        other => other,
    }
}

/// The part of `expr` that builds a new value, if it does: a call of `new`, `default`,
/// `builder` or `build` (or `new_…`, `with_…` constructors), or a struct literal. Looks through
/// `&`, parentheses, `.unwrap()`, `.expect(…)` and `?`, which keep what they are given; a call
/// that only reaches an existing guard (`registry.get("payments")`, `Arc::clone(&b)`,
/// `breaker_for(name)`) is not building one.
fn builds_a_value(expr: &Expr) -> Option<&Expr> {
    let constructor = |name: &str| {
        matches!(
            name,
            "new" | "default" | "builder" | "build" | "from_settings"
        ) || name.starts_with("new_")
            || name.starts_with("with_")
    };
    match expr {
        Expr::Reference(r) => builds_a_value(&r.expr),
        Expr::Paren(p) => builds_a_value(&p.expr),
        Expr::Group(g) => builds_a_value(&g.expr),
        Expr::Try(t) => builds_a_value(&t.expr),
        Expr::Struct(_) => Some(expr),
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            builds_a_value(&m.receiver)
        }
        Expr::MethodCall(m) if constructor(&m.method.to_string()) => Some(expr),
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => p
                .path
                .segments
                .last()
                .filter(|s| constructor(&s.ident.to_string()))
                .map(|_| expr),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builds(s: &str) -> bool {
        builds_a_value(&syn::parse_str(s).unwrap()).is_some()
    }

    #[test]
    fn an_expression_building_a_guard_is_found() {
        for s in [
            "CircuitBreaker::builder().failure_threshold(5).build().unwrap()",
            "&CircuitBreaker::builder().build().expect(\"valid\")",
            "RetryBudget::default()",
            "&Bulkhead::new(10)",
            "Arc::new(AdaptiveThrottle::builder().build().unwrap())",
            "&RetryBudget { max_tokens: 10 }",
            "(CircuitBreaker::new_default())",
            "Default::default()",
        ] {
            assert!(builds(s), "{s}");
        }
    }

    #[test]
    fn an_expression_reaching_an_existing_guard_is_not() {
        for s in [
            "BREAKER",
            "&*BREAKER",
            "self.breaker",
            "&self.breaker",
            "self.breakers.get(\"payments\").unwrap()",
            "breaker_for(\"payments\")",
            "Arc::clone(&self.breaker)",
            "registry::BUDGET",
            "self.inner.breaker.as_ref()",
        ] {
            assert!(!builds(s), "{s}");
        }
    }
}
