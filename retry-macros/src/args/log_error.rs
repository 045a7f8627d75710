//! `log_error`'s values, and the one a word most likely means.

/// The values of `log_error`, for messages.
pub(super) const LOG_ERROR_VALUES: &str = "one of \"none\" (nothing), \"type\" (the error type's name; the default) or \"debug\" (its `Debug` text, secrets included)";

/// The value of `log_error` that a word most likely means (`Debug`, `LogError::TypeName`, `off`).
pub(super) fn log_error_name(word: &str) -> Option<&'static str> {
    let lower = word.trim().to_lowercase().replace(['-', ' '], "_");
    Some(match lower.as_str() {
        "debug" | "full" | "all" | "verbose" | "whole" | "error" => "debug",
        "type" | "typename" | "type_name" | "name" | "kind" | "default" => "type",
        "none" | "off" | "no" | "false" | "never" | "nothing" | "silent" | "hidden" | "redact"
        | "redacted" => "none",
        _ => {
            return ["none", "type", "debug"]
                .into_iter()
                .map(|v| (crate::known_keys::edit_distance(&lower, v), v))
                .filter(|(d, _)| *d <= 2)
                .min()
                .map(|(_, v)| v);
        }
    })
}

/// An unknown `log_error` value: the runtime's message, the values, and the likely one.
pub(super) fn log_error_fix(text: &str, e: &retry_rules::ParseLogError) -> String {
    let near = log_error_name(text);
    let mut message = format!("{e}");
    if text.trim().eq_ignore_ascii_case("display") {
        message.push_str(
            "; there is no \"display\": an error's `Display` can carry a secret as its `Debug` does \
             (a `reqwest::Error` shows its URL); to log chosen parts of an error, do it in `on_retry`",
        );
    }
    match near {
        Some(v) => format!("{message}; did you mean `log_error = \"{v}\"`?"),
        None => format!("{message}; `log_error` takes {LOG_ERROR_VALUES}"),
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;
    use retry_rules::LogError;

    use crate::args::tests::{errors_of, parsed};

    #[test]
    fn log_error_takes_one_of_three_names() {
        for (text, log) in [
            ("none", LogError::None),
            ("type", LogError::TypeName),
            ("debug", LogError::Debug),
        ] {
            let a = parsed(quote!(log_error = #text));
            assert_eq!(a.schedule.settings.log_error, Some(log));
        }
        for (args, expected) in [
            (
                quote!(log_error = "Debug"),
                "did you mean `log_error = \"debug\"`?",
            ),
            (
                quote!(log_error = "dbug"),
                "did you mean `log_error = \"debug\"`?",
            ),
            (
                quote!(log_error = "type_name"),
                "did you mean `log_error = \"type\"`?",
            ),
            (
                quote!(log_error = "off"),
                "did you mean `log_error = \"none\"`?",
            ),
            (quote!(log_error = "display"), "there is no \"display\""),
            (quote!(log_error = "xyz"), "\"none\" (nothing), \"type\""),
            (quote!(log_error = debug), "write `log_error = \"debug\"`"),
            (
                quote!(log_error = LogError::TypeName),
                "write `log_error = \"type\"`",
            ),
            (
                quote!(log_error = true),
                "in a string, as in `log_error = \"debug\"`",
            ),
            (quote!(log_eror = "debug"), "did you mean `log_error`?"),
        ] {
            let errs = errors_of(args.clone());
            assert_eq!(errs.len(), 1, "{args}: {errs:?}");
            assert!(errs[0].contains(expected), "{args}: {errs:?}");
        }
        let errs = errors_of(quote!(log_error = "xyz"));
        assert!(errs[0].starts_with("unknown log_error `xyz`"), "{errs:?}");
    }
}
