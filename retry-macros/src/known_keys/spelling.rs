//! A key's spelling, reduced so that every way of writing one name compares equal: case style,
//! a builder's prefix, a unit suffix. Below every rule of `known_keys`, which look names up by it.

/// The unit a foreign key's name gives its integer value, if any (`timeout_ms`).
pub(super) fn unit_of(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    if lower.ends_with("ms") || lower.ends_with("millis") || lower.ends_with("milliseconds") {
        Some("ms")
    } else if lower.ends_with("secs") || lower.ends_with("_s") || lower.ends_with("seconds") {
        Some("s")
    } else {
        None
    }
}

/// A key reduced to its letters and digits, lower case: every case style of one name
/// (`maxRetryAttempts`, `MaxRetryAttempts`, `max_retry_attempts`, `MAX_RETRY_ATTEMPTS`) is the
/// same text, `maxretryattempts`.
pub(super) fn normalise(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Unit suffixes a name may carry, normalised (`timeoutMs`, `delay_seconds`,
/// `MaxDelayInMilliseconds`), longest first, with the unit they give an integer value.
pub(super) const UNIT_SUFFIXES: &[(&str, &str)] = &[
    ("inmilliseconds", "ms"),
    ("milliseconds", "ms"),
    ("inmillis", "ms"),
    ("millis", "ms"),
    ("inms", "ms"),
    ("msec", "ms"),
    ("ms", "ms"),
    ("inseconds", "s"),
    ("seconds", "s"),
    ("insecs", "s"),
    ("secs", "s"),
    ("sec", "s"),
    ("inminutes", "m"),
    ("minutes", "m"),
    ("mins", "m"),
];

/// The normalised spellings a foreign name is looked up by, most exact first, each with the unit
/// its name gives an integer value: the name; the name after a builder's prefix (`with_`,
/// `set`); each without a unit suffix (`sleepWindowInMilliseconds`).
pub(super) fn spellings(key: &str) -> Vec<(String, Option<&'static str>)> {
    let lower = key.to_ascii_lowercase();
    let unprefixed = ["with_", "with", "set_", "set"]
        .iter()
        .find_map(|p| lower.strip_prefix(p).filter(|rest| rest.len() > 2));
    let mut out = Vec::new();
    for name in [Some(key), unprefixed].into_iter().flatten() {
        let text = normalise(name);
        out.push((text.clone(), unit_of(name)));
        out.extend(UNIT_SUFFIXES.iter().filter_map(|(suffix, unit)| {
            let stem = text.strip_suffix(suffix)?;
            (!stem.is_empty()).then(|| (stem.to_owned(), Some(*unit)))
        }));
    }
    out
}
