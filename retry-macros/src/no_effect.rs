//! The principle, held at compile time: **no setting is accepted that another setting makes
//! dead, and no guard expression that can only make a fresh guard for each call.** Each such
//! case compiles into a call that silently does something other than what was written (a single
//! attempt, a breaker that never opens), so each is an error at the key, naming the fix.
//!
//! - Dead settings: the schedule's own rules are the runtime's ([`DeadSetting`], from
//!   `retry-rules`: no retry fits in `max_elapsed`, a hedge that can never start); beside them,
//!   `max_attempts = 1` makes every setting of the retries' schedule dead (`delay`, `on_retry`,
//!   …), and the classification too (`retry_on`, `retry_if`, …) unless a guard counts by it (a
//!   `circuit_breaker` or a `throttle`: an error the call would not retry is no failure of the
//!   dependency to them).
//! - Guards built per call: `circuit_breaker`, `budget`, `throttle` and `bulkhead` are evaluated
//!   once per call (a breaker must see every call to the dependency); an expression that builds
//!   one (`CircuitBreaker::builder()…build()`, `RetryBudget::default()`, `Bulkhead::new(…)`, a
//!   struct literal) gives each call its own, which never sees a second call.

use retry_rules::DeadSetting;
use syn::Expr;

use crate::args::RetryArgs;
use crate::render::render;

/// The keys whose only effect is on retries (or hedges): dead with `max_attempts = 1`. Not the
/// classification (`retry_on`, `no_retry_on`, `retry_if`, `retry_if_ok`), which still decides
/// what a breaker or a throttle counts as a failure, nor `budget`, which a first-try success
/// still pays into.
const RETRY_ONLY_KEYS: &[&str] = &[
    "delay",
    "throttling_delay",
    "backoff",
    "multiplier",
    "max_delay",
    "jitter",
    "hedge_after",
    "retry_after",
    "delay_for",
    "on_retry",
    "one_layer",
    "idempotent",
];

/// The keys that classify outcomes: what a retry would be made for, and (to a breaker or a
/// throttle, which count by it) what is a failure of the dependency. With `max_attempts = 1`,
/// dead unless one of [`COUNTING_GUARDS`] is given.
const CLASSIFICATION_KEYS: &[&str] = &["retry_on", "no_retry_on", "retry_if", "retry_if_ok"];

/// The guards that count outcomes by the classification (`Guards::record`).
const COUNTING_GUARDS: &[&str] = &["circuit_breaker", "throttle"];

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
        let counted = COUNTING_GUARDS
            .iter()
            .any(|k| args.key_spans.contains_key(*k));
        let classification: &[&str] = if counted { &[] } else { CLASSIFICATION_KEYS };
        let dead: Vec<&str> = RETRY_ONLY_KEYS
            .iter()
            .chain(classification)
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
            // The classification is told why it is dead too: it would count with a guard.
            let uncounted = if dead.iter().any(|k| CLASSIFICATION_KEYS.contains(k)) {
                " (and no `circuit_breaker` or `throttle` counts failures by the classification)"
            } else {
                ""
            };
            errors.push(syn::Error::new(
                args.key_span(first),
                format!(
                    "{listed} {it} no effect: `max_attempts = 1` makes one attempt and never retries{uncounted}; \
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

/// Types whose `new`, `default` or `builder` makes a fresh value each time it is evaluated: this
/// crate's guards and their builders, and the lazy cells (a `OnceLock::new()` written in the
/// expression is a new, empty cell per call).
const FRESH_TYPES: &[&str] = &[
    "CircuitBreaker",
    "CircuitBreakerBuilder",
    "RetryBudget",
    "RetryBudgetBuilder",
    "AdaptiveThrottle",
    "AdaptiveThrottleBuilder",
    "Bulkhead",
    "BulkheadBuilder",
    "Preset",
    "OnceLock",
    "OnceCell",
    "LazyLock",
    "Lazy",
];

/// The last two segments of a call's function path (`CircuitBreaker`, `builder`).
fn callee(c: &syn::ExprCall) -> Option<(Option<String>, String)> {
    let Expr::Path(p) = &*c.func else { return None };
    let mut rev = p.path.segments.iter().rev();
    let last = rev.next()?.ident.to_string();
    let prev = rev.next().map(|s| s.ident.to_string());
    Some((prev, last))
}

/// What a `static` holding the guard is initialised with: the expression without its leading
/// `&`, without an `Arc::new`/`Rc::new`/`Box::new`/`Box::leak` around it (a `static` needs
/// none), and without a cell made on the spot (`OnceLock::new().get_or_init(|| …)`).
fn once(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => once(&r.expr),
        Expr::Paren(p) => once(&p.expr),
        Expr::Group(g) => once(&g.expr),
        Expr::Call(c) if c.args.len() == 1 => match callee(c) {
            Some((Some(ty), f))
                if matches!(ty.as_str(), "Arc" | "Rc" | "Box")
                    && matches!(f.as_str(), "new" | "leak" | "from") =>
            {
                once(&c.args[0])
            }
            _ => expr,
        },
        Expr::MethodCall(m) if m.method == "get_or_init" && m.args.len() == 1 => match &m.args[0] {
            Expr::Closure(c) => once(&c.body),
            _ => expr,
        },
        other => other,
    }
}

/// The part of `expr` that builds a new value, if it does: a struct literal; a call of `build` or
/// `builder` anywhere down a method chain; a call of `new`, `default` or `builder` on one of
/// [`FRESH_TYPES`], or `Default::default()`, at the chain's root. Looks through `&`, parentheses,
/// a block's value, `?`, and `Arc::new`/`Rc::new`/`Box::new`/`Box::leak`, which keep what they
/// are given. A call that only reaches an existing guard (`registry.get("payments")`,
/// `self.breakers.with_name("x")`, `Arc::clone(&b)`, `breaker_for(name)`) is not building one.
fn builds_a_value(expr: &Expr) -> Option<&Expr> {
    match expr {
        Expr::Reference(r) => builds_a_value(&r.expr),
        Expr::Paren(p) => builds_a_value(&p.expr),
        Expr::Group(g) => builds_a_value(&g.expr),
        Expr::Try(t) => builds_a_value(&t.expr),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => builds_a_value(e),
            _ => None,
        },
        Expr::Struct(_) => Some(expr),
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "build" | "builder") => {
            Some(expr)
        }
        // Down the chain to its root: `….build().unwrap_or_else(…)`, `OnceLock::new().get_or_init(…)`.
        Expr::MethodCall(m) => builds_a_value(&m.receiver),
        Expr::Call(c) => {
            let (prev, f) = callee(c)?;
            let prev = prev.as_deref();
            let fresh = matches!(f.as_str(), "new" | "default" | "builder" | "from_settings")
                && prev.is_some_and(|t| FRESH_TYPES.contains(&t));
            if fresh || (prev == Some("Default") && f == "default") {
                return Some(expr);
            }
            if matches!(prev, Some("Arc" | "Rc" | "Box"))
                && matches!(f.as_str(), "new" | "leak" | "from")
            {
                return c.args.first().and_then(builds_a_value);
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builds(s: &str) -> bool {
        builds_a_value(&syn::parse_str(s).unwrap()).is_some()
    }

    /// The errors `check` finds in the attribute `args`.
    fn dead(args: proc_macro2::TokenStream) -> Vec<String> {
        let parsed = crate::args::parse(args).unwrap_or_else(|e| panic!("{e}"));
        let mut errors = vec![];
        check(&parsed.args, &mut errors);
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_classification_with_one_attempt_is_dead_unless_a_guard_counts_by_it() {
        use quote::quote;
        for args in [
            quote!(max_attempts = 1, retry_on = [E::A]),
            quote!(max_attempts = 1, no_retry_on = [E::A]),
            quote!(max_attempts = 1, retry_if = reattempt::transient),
            quote!(
                max_attempts = 1,
                retry_if_ok = |v| v.pending,
                budget = BUDGET
            ),
        ] {
            let errs = dead(args.clone());
            assert_eq!(errs.len(), 1, "{args}: {errs:?}");
            assert!(
                errs[0].contains("no effect: `max_attempts = 1`")
                    && errs[0].contains("no `circuit_breaker` or `throttle` counts"),
                "{errs:?}"
            );
        }
        let errs = dead(quote!(max_attempts = 1, delay = "1s", retry_on = [E::A]));
        assert!(
            errs[0].starts_with("`delay`, `retry_on` have no effect"),
            "{errs:?}"
        );
        // A breaker or a throttle counts failures by it: alive.
        for args in [
            quote!(
                max_attempts = 1,
                retry_on = [E::A],
                circuit_breaker = BREAKER
            ),
            quote!(max_attempts = 1, retry_if = f, throttle = THROTTLE),
            quote!(max_attempts = 2, retry_on = [E::A]),
        ] {
            assert_eq!(dead(args.clone()), Vec::<String>::new(), "{args}");
        }
        // Without classification, the message keeps its words.
        let errs = dead(quote!(max_attempts = 1, delay = "1s"));
        assert!(!errs[0].contains("circuit_breaker"), "{errs:?}");
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
            "Default::default()",
            "Box::leak(Box::new(CircuitBreaker::builder().build().unwrap()))",
            "&CircuitBreaker::builder().build().unwrap_or_else(|e| panic!(\"{e}\"))",
            "&{ CircuitBreaker::builder().build().unwrap() }",
            "OnceLock::new().get_or_init(|| CircuitBreaker::builder().build().unwrap())",
            "&CircuitBreaker::builder().build().ok().unwrap()",
            "&CircuitBreaker::builder().build().map_err(E::from)?",
            "&Preset::Aws2026.budget().build().unwrap()",
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
            "self.breakers.with_name(\"payments\")",
            "BREAKERS.with_label_values(&[\"payments\"])",
            "breakers::default()",
            "Registry::global().breaker(\"x\")",
            "build_breaker()",
            "BREAKER.get_or_init(make)",
        ] {
            assert!(!builds(s), "{s}");
        }
    }

    #[test]
    fn the_static_is_initialised_with_the_guard_itself() {
        let once_of = |s: &str| render(once(&syn::parse_str::<Expr>(s).unwrap()));
        assert_eq!(
            once_of("Box::leak(Box::new(CircuitBreaker::builder().build().unwrap()))"),
            "CircuitBreaker::builder().build().unwrap()"
        );
        assert_eq!(
            once_of("OnceLock::new().get_or_init(|| RetryBudget::default())"),
            "RetryBudget::default()"
        );
    }
}
