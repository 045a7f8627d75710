//! What an unknown key is, by meaning, each kind a rule of its own (a table or a test), looked
//! up in this order before any guess by spelling:
//!
//! 1. a config file named, or a key of this crate's config-file format that the attribute does
//!    not take (`preset = "aws-2026"`): `config_file`;
//! 2. a name another retry library (or gRPC's service config, the AWS SDKs) gives one of the
//!    retry's own settings, in any case style, with or without a unit suffix or a builder
//!    prefix (`max_retries`, `retry_error_callback`, `initialBackoff`): `libraries`;
//! 3. a setting of another object, a breaker's, a budget's, a bulkhead's, a rate limiter's, an
//!    HTTP client's (`failure_threshold`, `waitDurationInOpenState`): `elsewhere`, which says
//!    whose it is and how to pass that object;
//!
//! then one of the keys by `snake_case` spelling or edit distance, and last the list of keys.
//! So `max_retries` leads to `max_attempts` (with the count adjusted) rather than to whatever
//! key is nearest by spelling.

mod config_file;
mod elsewhere;
mod libraries;
mod spelling;

use syn::{Expr, Lit};

use crate::render::render;
use crate::value_rules::duration_call;
pub(crate) use config_file::{file_message, names_a_file};
use libraries::{Here, Known, MAX_ATTEMPTS_WHY, TABLE};
use spelling::{UNIT_SUFFIXES, normalise, unit_of};

/// The keys `#[retryable]` accepts.
pub(crate) const KEYS: &[&str] = &[
    "max_attempts",
    "delay",
    "throttling_delay",
    "backoff",
    "multiplier",
    "max_delay",
    "jitter",
    "timeout",
    "max_elapsed",
    "log_error",
    "hedge_after",
    "retry_on",
    "no_retry_on",
    "retry_if",
    "retry_if_ok",
    "retry_after",
    "delay_for",
    "on_retry",
    "recover",
    "name",
    "crate",
    "circuit_breaker",
    "budget",
    "policy",
    "one_layer",
    "idempotent",
    "throttle",
    "bulkhead",
    "timeout_into",
    "breaker_open_into",
    "throttled_into",
    "bulkhead_full_into",
    "resume",
    "checkpoint",
    "idle_timeout",
    "progress_resets",
];

/// The keys whose value is a duration string.
pub(crate) const DURATION_KEYS: &[&str] = &[
    "delay",
    "throttling_delay",
    "max_delay",
    "timeout",
    "max_elapsed",
    "idle_timeout",
];

/// The corrected `key = value` for a duration key given `value`, or `None` when the value's
/// unit cannot be known (then the message says "such as").
pub(crate) fn duration_fix(key: &str, value: &Expr, unit: Option<&str>) -> Option<String> {
    if let Some(text) = duration_call(value) {
        return Some(format!("{key} = {text}"));
    }
    match value {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => Some(format!("{key} = {:?}", s.value())),
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(i), ..
        }) => unit
            .map(|u| format!("{}{u}", i.base10_digits()))
            // `timeout_ms = 18446744073709551615`: no suggestion the runtime would reject.
            .filter(|text| retry_rules::parse_duration(text).is_ok())
            .map(|text| format!("{key} = \"{text}\"")),
        // urllib3's `backoff_factor = 0.5` (seconds); an exponent written out.
        Expr::Lit(syn::ExprLit {
            lit: Lit::Float(f), ..
        }) if f.suffix().is_empty() => unit
            .zip(f.base10_digits().parse::<f64>().ok())
            .map(|(u, n)| format!("{n}{u}"))
            .filter(|text| retry_rules::parse_duration(text).is_ok())
            .map(|text| format!("{key} = \"{text}\"")),
        _ => None,
    }
}

/// What an unknown key is, found by its spelling.
#[derive(Clone, Copy)]
enum Found {
    /// A name of another library (the table).
    Table(&'static Known),
    /// One of this attribute's keys, in another case style or with a unit suffix.
    Key(&'static str),
}

/// Looks `key` up by its normalised spelling: the table's names and this attribute's keys, then
/// the same without a unit suffix. Gives what it is, and the unit its name gives an integer
/// value (`timeoutMs = 500` is 500 ms).
fn lookup(key: &str) -> Option<(Found, Option<&'static str>)> {
    if let Some(known) = TABLE.iter().find(|k| k.names.contains(&key)) {
        return Some((Found::Table(known), unit_of(key)));
    }
    let find = |text: &str| {
        KEYS.iter()
            .find(|k| normalise(k) == text)
            .map(|k| Found::Key(k))
            .or_else(|| {
                TABLE
                    .iter()
                    .find(|t| t.names.iter().any(|n| normalise(n) == text))
                    .map(Found::Table)
            })
    };
    // A builder method's name (backon's `with_max_times`, Failsafe's `withMaxRetries`, a
    // setter's `set_delay`) is the setting's name after its prefix.
    let lower = key.to_ascii_lowercase();
    let unprefixed = ["with_", "with", "set_", "set"]
        .iter()
        .find_map(|p| lower.strip_prefix(p).filter(|rest| rest.len() > 2));
    // Exact case first: `unit_of` reads a unit from the name as written.
    [Some(key), unprefixed]
        .into_iter()
        .flatten()
        .find_map(|name| lookup_spelling(name, &find))
}

/// [`lookup`] of one spelling: as it is, then without a unit suffix.
fn lookup_spelling(
    name: &str,
    find: &impl Fn(&str) -> Option<Found>,
) -> Option<(Found, Option<&'static str>)> {
    let text = normalise(name);
    if let Some(found) = find(&text) {
        return Some((found, unit_of(name)));
    }
    // `delay_s`, `timeout_S`: a one-letter unit after a separator.
    let lower = name.to_ascii_lowercase();
    let short_s = lower.strip_suffix("_s").map(|stem| (normalise(stem), "s"));
    UNIT_SUFFIXES
        .iter()
        .filter_map(|(suffix, unit)| {
            let stem = text.strip_suffix(suffix)?;
            (!stem.is_empty()).then(|| (stem.to_owned(), *unit))
        })
        .chain(short_s)
        .find_map(|(stem, unit)| find(&stem).map(|found| (found, Some(unit))))
}

/// The message for an unknown key, if its spelling (in any case style, with or without a unit
/// suffix) is a name the table knows or one of the keys. `value` is the written value, if any.
pub(crate) fn explain(key: &str, value: Option<&Expr>) -> Option<String> {
    let (found, unit) = lookup(key)?;
    let known = match found {
        Found::Key(here) => {
            let fix = key_fix(here, unit, value);
            return Some(format!(
                "`{key}` is not a key of #[retryable]: the key is `{here}` (keys are snake_case{}): write {fix}",
                if unit.is_some() {
                    ", and a duration's unit goes in its value"
                } else {
                    ""
                },
            ));
        }
        Found::Table(known) => known,
    };
    let head = format!("`{key}` is not a key of #[retryable] ({})", known.from);
    Some(match known.here {
        Here::Retries => {
            // `u32::MAX`, `i32::MAX`, `-1`: "retry forever".
            let forever = match value {
                Some(Expr::Path(p)) => p.path.segments.last().is_some_and(|s| s.ident == "MAX"),
                Some(Expr::Unary(u)) => matches!(u.op, syn::UnOp::Neg(_)),
                // A meta value reads `-1` as one negative literal.
                Some(Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(i), ..
                })) => i.base10_digits().starts_with('-'),
                _ => false,
            };
            let fix = match value {
                _ if forever => {
                    ": for \"until the deadline\", write `max_attempts = u32::MAX`".to_owned()
                }
                Some(Expr::Lit(syn::ExprLit {
                    lit: Lit::Int(i), ..
                })) => match i.base10_parse::<u32>() {
                    Ok(n) if n < u32::MAX => {
                        format!(
                            ": write `max_attempts = {}` ({n} retries + the first attempt)",
                            n + 1
                        )
                    }
                    _ => ": write `max_attempts = <retries + 1>`".to_owned(),
                },
                _ => ": write `max_attempts = <retries + 1>`".to_owned(),
            };
            format!("{head}; here the count is `max_attempts`, {MAX_ATTEMPTS_WHY}{fix}")
        }
        Here::Explain => format!("{head}; here {}", known.why),
        Here::Key(here) => {
            let fix = key_fix(here, unit, value);
            format!("{head}; here it is `{here}`, {}: write {fix}", known.why)
        }
    })
}

/// `here = value`, the value converted as the key takes it (a duration in a string with its
/// unit, patterns in brackets, a fn by its path), for a message.
fn key_fix(here: &str, unit: Option<&str>, value: Option<&Expr>) -> String {
    let Some(v) = value else {
        return format!("`{here} = …`");
    };
    if DURATION_KEYS.contains(&here) {
        duration_fix(here, v, unit).map_or_else(
            || {
                format!(
                    "a duration string with its unit, such as `{here} = \"{}ms\"`",
                    match v {
                        Expr::Lit(syn::ExprLit {
                            lit: Lit::Int(i), ..
                        }) if retry_rules::parse_duration(&format!("{}ms", i.base10_digits()))
                            .is_ok() =>
                        {
                            i.base10_digits().to_owned()
                        }
                        _ => "200".to_owned(),
                    }
                )
                .replace(
                    "200ms",
                    &match v {
                        // `backoff_factor = 0.5`: a decimal is most likely seconds.
                        Expr::Lit(syn::ExprLit {
                            lit: Lit::Float(f), ..
                        }) => crate::value_rules::plain_decimal(f.base10_digits())
                            .map(|n| format!("{n}s"))
                            .filter(|t| retry_rules::parse_duration(t).is_ok())
                            .unwrap_or_else(|| "200ms".to_owned()),
                        _ => "200ms".to_owned(),
                    },
                )
            },
            |fix| format!("`{fix}`"),
        )
    } else if matches!(here, "retry_on" | "no_retry_on") {
        match v {
            // `retryOn = "5xx,reset"` (Envoy): conditions of an exchange, not patterns.
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(s), ..
            }) if crate::value_rules::retry_conditions(here, &s.value()).is_some() => format!(
                "`retry_if = reattempt::transient` over an `http::StatusCode` error for HTTP \
                 statuses ({:?} are Envoy's or gRPC's conditions; `{here}` takes the error's \
                 patterns, as in `{here} = [ApiError::Unavailable]`)",
                s.value()
            ),
            Expr::Array(_) => format!("`{here} = {}`", render(v)),
            _ => format!("`{here} = [{}]`", render(v)),
        }
    } else if let (
        true,
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(text),
            ..
        }),
    ) = (crate::value_rules::FN_KEYS.contains(&here), v)
    {
        // `fallbackMethod = "cached"`: here the fn is named by its path. Every other key that
        // takes a string (`backoff`, `jitter`, `hedge_after`, `name`) keeps the quotes.
        format!("`{here} = {}`", text.value())
    } else {
        format!("`{here} = {}`", render(v))
    }
}

/// `maxDelay` → `max_delay`.
pub(super) fn snake_case(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The edit distance between `a` and `b`, a swap of two neighbouring letters counting as one edit
/// (optimal string alignment): `dealy` is one edit from `delay`, as a dropped or a changed letter
/// is.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows of the table: two back (for swaps), one back, and the one being filled.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut last: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut row = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (last[j - 1] + cost).min(last[j] + 1).min(row[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        before = std::mem::replace(&mut last, row);
    }
    last[b.len()]
}

/// The message for an unknown key: the rules by meaning (see the module's list), then the key's
/// `snake_case` spelling, then the nearest key by spelling (within a small distance), then the
/// list of keys.
pub(crate) fn unknown_key(key: &str, value: Option<&Expr>) -> String {
    if let Some(message) = config_file::explain(key, value)
        .or_else(|| explain(key, value))
        .or_else(|| elsewhere::explain(key, value))
    {
        return message;
    }
    let snake = snake_case(key);
    let near = if KEYS.contains(&snake.as_str()) {
        Some(snake)
    } else {
        KEYS.iter()
            .map(|k| (edit_distance(key, k), *k))
            .filter(|(d, k)| *d <= (k.len() / 4).max(1))
            .min()
            .map(|(_, k)| k.to_owned())
    };
    match near {
        Some(near) => format!("unknown key `{key}`: did you mean `{near}`?"),
        None => format!(
            "unknown key `{key}`; the keys are: {}",
            KEYS.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(s: &str) -> Expr {
        syn::parse_str(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn retries_become_attempts_plus_one() {
        let m = unknown_key("max_retries", Some(&expr("3")));
        assert!(m.contains("`max_attempts = 4`"), "{m}");
        assert!(!m.contains("max_elapsed"), "{m}");
        let m = unknown_key("max_times", Some(&expr("5")));
        assert!(
            m.contains("`max_attempts = 6`") && m.contains("backon"),
            "{m}"
        );
    }

    #[test]
    fn durations_keep_a_known_unit_and_otherwise_say_such_as() {
        let m = unknown_key("timeout_ms", Some(&expr("500")));
        assert!(m.contains("`timeout = \"500ms\"`"), "{m}");
        let m = unknown_key("initial_delay", Some(&expr("200")));
        assert!(m.contains("such as `delay = \"200ms\"`"), "{m}");
        let m = unknown_key("min_delay", Some(&expr("Duration::from_secs(2)")));
        assert!(m.contains("`delay = \"2s\"`"), "{m}");
    }

    #[test]
    fn patterns_get_brackets() {
        let m = unknown_key("retryFor", Some(&expr("PayError::Unavailable")));
        assert!(m.contains("`retry_on = [PayError::Unavailable]`"), "{m}");
    }

    #[test]
    fn every_table_entry_maps_to_a_real_key_or_explains() {
        for known in TABLE {
            if let Here::Key(k) = known.here {
                assert!(KEYS.contains(&k), "{k}");
            }
            for name in known.names {
                assert!(!KEYS.contains(name), "{name} is a key here");
            }
        }
    }

    /// The rustdoc of `#[retryable]` lists every key the macro accepts, so that a new key cannot
    /// land undocumented; the README's short table names only keys that exist.
    #[test]
    fn every_key_is_in_the_documented_tables() {
        let rustdoc = include_str!("../../../src/lib.rs");
        for key in KEYS {
            let row = format!("| `{key}` |");
            assert!(
                rustdoc.contains(&format!("/// {row}")),
                "`{key}` is missing from src/lib.rs's key table"
            );
        }
        let readme = include_str!("../../../README.md");
        let table = &readme[readme.find("| key |").expect("the README's key table")..];
        let table = &table[..table.find("\n\n").unwrap_or(table.len())];
        let mut named = 0;
        for row in table.lines().skip(2) {
            let cell = row.split('|').nth(1).expect("a key cell");
            for key in cell.split(',').map(|k| k.trim().trim_matches('`')) {
                assert!(
                    KEYS.contains(&key),
                    "the README's key table names `{key}`, no key"
                );
                named += 1;
            }
        }
        assert!(named >= 10, "the README's key table names {named} keys");
    }

    /// The words of a name: split at `_` and where a lower-case letter or digit meets an upper-case one.
    fn words(name: &str) -> Vec<String> {
        let mut words: Vec<String> = vec![];
        let mut prev_lower = false;
        for c in name.chars() {
            if c == '_' {
                prev_lower = false;
                words.push(String::new());
                continue;
            }
            if c.is_ascii_uppercase() && prev_lower || words.is_empty() {
                words.push(String::new());
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            words.last_mut().unwrap().push(c.to_ascii_lowercase());
        }
        words.retain(|w| !w.is_empty());
        words
    }

    fn capitalised(w: &str) -> String {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
            .unwrap_or_default()
    }

    /// A name in each case style a user of another library writes: snake, camel, Pascal,
    /// screaming snake.
    fn case_styles(name: &str) -> Vec<String> {
        let w = words(name);
        let camel = w
            .iter()
            .enumerate()
            .map(|(i, w)| if i == 0 { w.clone() } else { capitalised(w) })
            .collect::<String>();
        vec![
            w.join("_"),
            camel,
            w.iter().map(|w| capitalised(w)).collect(),
            w.join("_").to_ascii_uppercase(),
        ]
    }

    /// What a lookup leads to, whichever way it was found: the key it names, the retries rule,
    /// or the explanation.
    fn target(found: Found) -> String {
        match found {
            Found::Key(k) => format!("key {k}"),
            Found::Table(Known {
                here: Here::Key(k), ..
            }) => format!("key {k}"),
            Found::Table(Known {
                here: Here::Retries,
                ..
            }) => "retries".to_owned(),
            Found::Table(Known { why, .. }) => format!("explain {why}"),
        }
    }

    proptest::proptest! {
        /// Every name the table knows, and every key, in every case style, leads where its own
        /// spelling leads, with the specific message (never the list of keys or a guess).
        #[test]
        fn every_known_name_in_every_case_style_gets_its_specific_message(
            which in 0usize..1000,
            value in proptest::sample::select(vec!["3", "500", "\"2s\"", "Duration::from_secs(2)"]),
        ) {
            let names: Vec<&str> = TABLE.iter().flat_map(|k| k.names.iter().copied()).chain(KEYS.iter().copied()).collect();
            let name = names[which % names.len()];
            let value = expr(value);
            for variant in case_styles(name) {
                if KEYS.contains(&variant.as_str()) {
                    continue;
                }
                let want = lookup(name).map_or_else(
                    || format!("key {name}"),
                    |(found, _)| target(found),
                );
                let (found, _) = lookup(&variant).unwrap_or_else(|| panic!("`{variant}` (from `{name}`) is not found"));
                proptest::prop_assert_eq!(target(found), want.clone(), "{} from {}", variant, name);
                let m = unknown_key(&variant, Some(&value));
                proptest::prop_assert!(!m.contains("the keys are") && !m.contains("did you mean"), "{}", m);
                proptest::prop_assert!(m.starts_with(&format!("`{variant}` is not a key of #[retryable]")), "{}", m);
            }
        }
    }

    #[test]
    fn every_name_is_found_in_every_case_style() {
        let names = TABLE
            .iter()
            .flat_map(|k| k.names.iter().copied())
            .chain(KEYS.iter().copied());
        for name in names {
            for variant in case_styles(name) {
                if !KEYS.contains(&variant.as_str()) {
                    assert!(lookup(&variant).is_some(), "`{variant}` (from `{name}`)");
                }
            }
        }
    }

    #[test]
    fn a_unit_suffix_carries_its_unit_into_the_value() {
        for key in DURATION_KEYS {
            for variant in case_styles(key) {
                for (suffix, unit) in [
                    ("Ms", "ms"),
                    ("_ms", "ms"),
                    ("Millis", "ms"),
                    ("Seconds", "s"),
                    ("_secs", "s"),
                    ("InMilliseconds", "ms"),
                ] {
                    let written = format!("{variant}{suffix}");
                    let m = unknown_key(&written, Some(&expr("500")));
                    assert!(
                        m.contains(&format!("`{key} = \"500{unit}\"`")),
                        "{written}: {m}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_builder_methods_name_is_the_settings_name() {
        let m = unknown_key("with_max_times", Some(&expr("3")));
        assert!(
            m.contains("`max_attempts = 4`") && m.contains("backon"),
            "{m}"
        );
        let m = unknown_key("withMaxRetries", Some(&expr("2")));
        assert!(m.contains("`max_attempts = 3`"), "{m}");
        let m = unknown_key("with_max_delay", Some(&expr("\"10s\"")));
        assert!(m.contains("`max_delay = \"10s\"`"), "{m}");
        let m = unknown_key("withBackoff", None);
        assert!(m.contains("the key is `backoff`"), "{m}");
        let m = unknown_key("with_factor", Some(&expr("3")));
        assert!(m.contains("`multiplier = 3`"), "{m}");
        let m = unknown_key("with_total_delay", Some(&expr("\"30s\"")));
        assert!(m.contains("`max_elapsed = \"30s\"`"), "{m}");
        let m = unknown_key("set_delay", Some(&expr("\"1s\"")));
        assert!(m.contains("the key is `delay`"), "{m}");
    }

    #[test]
    fn polly_and_resilience4j_spellings() {
        let m = unknown_key("MaxRetryAttempts", Some(&expr("3")));
        assert!(
            m.contains("`max_attempts = 4`") && m.contains("Polly"),
            "{m}"
        );
        let m = unknown_key("MaxAttempts", Some(&expr("3")));
        assert!(
            m.contains("the key is `max_attempts`") && m.contains("`max_attempts = 3`"),
            "{m}"
        );
        let m = unknown_key("Delay", Some(&expr("Duration::from_secs(2)")));
        assert!(m.contains("`delay = \"2s\"`"), "{m}");
        let m = unknown_key("RetryCount", Some(&expr("2")));
        assert!(m.contains("`max_attempts = 3`"), "{m}");
        let m = unknown_key("WaitDuration", Some(&expr("\"500ms\"")));
        assert!(m.contains("`delay = \"500ms\"`"), "{m}");
        let m = unknown_key("MAX_RETRIES", Some(&expr("5")));
        assert!(m.contains("`max_attempts = 6`"), "{m}");
        let m = unknown_key("randomizedWaitFactor", Some(&expr("0.5")));
        assert!(m.contains("`jitter = 0.5`"), "{m}");
    }

    /// No spelling means two things: a name written twice (in two entries, or two tables) leads
    /// to one meaning, and none of the config-file rule's keys is in a table.
    #[test]
    fn each_spelling_has_one_meaning() {
        let mut seen = std::collections::HashMap::new();
        let libraries = TABLE.iter().map(|k| (k.names, target(Found::Table(k))));
        let settings = elsewhere::SETTINGS
            .iter()
            .map(|s| (s.names, format!("{:?} {}", s.owner, s.names[0])));
        for (names, meaning) in libraries.chain(settings) {
            for name in names {
                if let Some((other, before)) =
                    seen.insert(normalise(name), (*name, meaning.clone()))
                {
                    assert_eq!(meaning, before, "`{name}` is also `{other}`");
                }
            }
        }
        for key in ["preset", "inject_faults", "profile", "from_env", "file"] {
            assert!(!seen.contains_key(&normalise(key)), "{key}");
        }
    }

    #[test]
    fn fallbacks_camel_case_then_spelling() {
        assert!(unknown_key("maxElapsed", None).contains("`max_elapsed`"));
        assert!(unknown_key("max_atempts", None).contains("`max_attempts`"));
        assert!(unknown_key("zzz", None).contains("the keys are"));
    }

    /// The value of a `key = value` fix, as written in the message.
    fn fix_value(fix: &str) -> String {
        let inner = fix.trim_matches('`');
        inner.split_once(" = ").unwrap().1.to_owned()
    }

    #[test]
    fn a_string_value_stays_a_string_where_the_key_takes_one() {
        for (key, value, want) in [
            ("hedge_after", "\"50ms\"", "\"50ms\""),
            ("hedge_after", "\"p95\"", "\"p95\""),
            ("backoff", "\"exponential\"", "\"exponential\""),
            ("jitter", "\"full\"", "\"full\""),
            ("name", "\"fetch\"", "\"fetch\""),
            ("recover", "\"cached\"", "cached"),
            ("retry_if", "\"is_transient\"", "is_transient"),
        ] {
            let v: Expr = syn::parse_str(value).unwrap();
            let fix = key_fix(key, None, Some(&v));
            assert_eq!(fix_value(&fix), want, "{key} = {value}: {fix}");
            assert!(syn::parse_str::<Expr>(&fix_value(&fix)).is_ok(), "{fix}");
        }
    }

    /// The names of the families users bring habits from (cockatiel, opossum, failsafe-go,
    /// Finagle, Envoy, Polly v8, go-retryablehttp, axios-retry, p-retry, urllib3, .NET's HTTP
    /// client resilience) are each told what they are, not the list of keys.
    #[test]
    fn the_families_names_are_told_by_meaning() {
        for (key, says) in [
            ("retry_host_predicate", "which host"),
            ("retryPriority", "which host"),
            ("requeues", "max_attempts"),
            ("WithJitterFactor", "`jitter`"),
            ("WithMaxDuration", "`max_elapsed`"),
            ("HandleErrors", "`retry_if`"),
            ("halfOpenAfter", "reset_timeout"),
            ("ConsecutiveBreaker", "failure_threshold"),
            ("exponent", "`multiplier`"),
            ("handleWhen", "`retry_if`"),
            ("volumeThreshold", "minimum_calls"),
            ("errorFilter", "breaker counts"),
            ("rollingCountTimeout", "sliding_window"),
            ("capacity", "max_concurrent"),
            ("jitter_type", "`jitter`"),
            ("ShouldHandle", "`retry_if`"),
            ("MaxRetryAttempts", "max_attempts"),
            ("UseJitter", "jitter"),
            ("BackoffType", "backoff"),
            ("RetryWaitMin", "`delay`"),
            ("RetryWaitMax", "`max_delay`"),
            ("retries", "max_attempts"),
            ("retryDelay", "`delay`"),
            ("retryCondition", "`retry_if`"),
            ("shouldResetTimeout", "`timeout`"),
            ("minTimeout", "`delay`"),
            ("maxTimeout", "`max_delay`"),
            ("factor", "`multiplier`"),
            ("onFailedAttempt", "`on_retry`"),
            ("shouldRetry", "`retry_if`"),
            ("maxRetryTime", "`max_elapsed`"),
            ("total", "max_attempts"),
            ("connect", "max_attempts"),
            ("backoff_factor", "`delay`"),
            ("backoff_max", "`max_delay`"),
            ("status_forcelist", "StatusCode"),
            ("allowed_methods", "idempotent"),
            ("respect_retry_after_header", "`retry_after`"),
            ("raise_on_status", "last error"),
            ("redirect", "HTTP client"),
            ("TotalRequestTimeout", "`max_elapsed`"),
            ("AttemptTimeout", "`timeout`"),
            ("DisableForUnsafeHttpMethods", "idempotent"),
            ("ShouldRetryAfterHeader", "`retry_after`"),
        ] {
            let m = unknown_key(key, None);
            assert!(
                m.contains(says) && !m.contains("the keys are"),
                "{key}: {m}"
            );
        }
    }

    /// One typo of a key (a letter dropped, doubled, or two neighbours swapped) is answered
    /// with that key.
    #[test]
    fn every_keys_one_typo_names_the_key() {
        let mut missed = Vec::new();
        for key in KEYS {
            let chars: Vec<char> = key.chars().collect();
            let mut typos = Vec::new();
            for i in 0..chars.len() {
                let mut drop = chars.clone();
                drop.remove(i);
                typos.push(drop);
                let mut double = chars.clone();
                double.insert(i, chars[i]);
                typos.push(double);
                if i + 1 < chars.len() && chars[i] != chars[i + 1] {
                    let mut swap = chars.clone();
                    swap.swap(i, i + 1);
                    typos.push(swap);
                }
            }
            for typo in typos {
                let typo: String = typo.into_iter().collect();
                if KEYS.contains(&typo.as_str()) || typo.starts_with('_') || typo.ends_with('_') {
                    continue;
                }
                let m = unknown_key(&typo, None);
                if !m.contains(&format!("`{key}`")) || m.contains("the keys are") {
                    missed.push(format!("{typo} -> {m}"));
                }
            }
        }
        assert!(
            missed.is_empty(),
            "{} typos without their key:\n{}",
            missed.len(),
            missed.join("\n")
        );
    }

    #[test]
    fn a_swap_of_neighbours_is_one_edit() {
        assert_eq!(edit_distance("dealy", "delay"), 1);
        assert_eq!(edit_distance("retry_no", "retry_on"), 1);
        assert_eq!(edit_distance("retry_no", "retry_if"), 2);
        assert_eq!(edit_distance("delay", "delay"), 0);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("ab", ""), 2);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
