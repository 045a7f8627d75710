//! Each value darling read, into the settings: durations, the schedule's numbers and names,
//! the other settings and the `crate` path; a value that cannot be read is an error beside the
//! others, its key left unset.

use std::collections::HashMap;
use std::time::Duration;

use proc_macro2::Span;
use retry_rules::{Backoff, HedgeAfter, Jitter, LogError};
use syn::Path;

use super::log_error::log_error_fix;
use super::model::Schedule;
use super::raw::{AttemptsArg, DurationArg, JitterArg, NumberArg, RawArgs};

fn parse_duration(
    arg: Option<&DurationArg>,
    key: &'static str,
    spans: &mut HashMap<&'static str, Span>,
    errors: &mut Vec<syn::Error>,
) -> Option<Duration> {
    let DurationArg(lit) = arg?;
    spans.insert(key, lit.span());
    // The runtime's reader, as config files use: both refuse what a person most likely
    // mistyped (a capital `M`, a unit written twice).
    match retry_rules::parse_duration(&lit.value()) {
        Ok(d) => Some(d),
        // `timeout = "PT2S"` (Java's `Duration`, ISO-8601): the same duration as written here.
        Err(_) if crate::value_rules::iso_duration(&lit.value()).is_some() => {
            let text = crate::value_rules::iso_duration(&lit.value()).unwrap_or_default();
            errors.push(syn::Error::new(
                lit.span(),
                format!(
                    "{:?} is an ISO-8601 duration, which `{key}` does not read: write `{key} = \"{text}\"`",
                    lit.value()
                ),
            ));
            None
        }
        Err(e) => {
            let e = e.to_string();
            // Its advice, where it gives one; otherwise the forms to write.
            let hint = if e.contains("write ") {
                ""
            } else {
                "; write it like \"250ms\", \"2s\" or \"1m 30s\""
            };
            errors.push(syn::Error::new(
                lit.span(),
                format!("invalid duration {:?} for `{key}`: {e}{hint}", lit.value()),
            ));
            None
        }
    }
}

/// The schedule's keys, each read into the settings (in the order of their errors).
pub(super) fn schedule(raw: &RawArgs, errors: &mut Vec<syn::Error>) -> Schedule {
    let mut s = Schedule::default();
    if let Some(AttemptsArg(n, span)) = raw.max_attempts {
        s.spans.insert("max_attempts", span);
        s.settings.max_attempts = Some(n);
    }
    let spans = &mut s.spans;
    let settings = &mut s.settings;
    settings.delay = parse_duration(raw.delay.as_ref(), "delay", spans, errors);
    settings.max_delay = parse_duration(raw.max_delay.as_ref(), "max_delay", spans, errors);
    settings.throttling_delay = parse_duration(
        raw.throttling_delay.as_ref(),
        "throttling_delay",
        spans,
        errors,
    );
    settings.timeout = parse_duration(raw.timeout.as_ref(), "timeout", spans, errors);
    settings.max_elapsed = parse_duration(raw.max_elapsed.as_ref(), "max_elapsed", spans, errors);
    if let Some(lit) = &raw.backoff {
        s.spans.insert("backoff", lit.span());
        match lit.value().parse::<Backoff>() {
            Ok(b) => s.settings.backoff = Some(b),
            Err(msg) => errors.push(syn::Error::new(lit.span(), msg)),
        }
    }
    if let Some(NumberArg(m, span)) = raw.multiplier {
        s.spans.insert("multiplier", span);
        s.settings.multiplier = Some(m);
    }
    if let Some(JitterArg(text, span)) = &raw.jitter {
        s.spans.insert("jitter", *span);
        // A number is a proportional factor, whose range the runtime's rules check.
        match text
            .parse::<f64>()
            .map_or_else(|_| text.parse::<Jitter>(), |f| Ok(Jitter::Proportional(f)))
        {
            Ok(j) => s.settings.jitter = Some(j),
            Err(e) => errors.push(syn::Error::new(*span, e.to_string())),
        }
    }
    read_other_settings(raw, &mut s, errors);
    s
}

/// The settings beside the schedule's numbers: `log_error`, `hedge_after`, `one_layer`,
/// `idempotent`.
fn read_other_settings(raw: &RawArgs, s: &mut Schedule, errors: &mut Vec<syn::Error>) {
    if let Some(lit) = &raw.log_error {
        s.spans.insert("log_error", lit.span());
        match lit.value().parse::<LogError>() {
            Ok(log) => s.settings.log_error = Some(log),
            Err(e) => errors.push(syn::Error::new(lit.span(), log_error_fix(&lit.value(), &e))),
        }
    }
    if let Some(lit) = &raw.hedge_after {
        s.spans.insert("hedge_after", lit.span());
        match lit.value().parse::<HedgeAfter>() {
            Ok(h) => s.settings.hedge_after = Some(h),
            Err(e) => errors.push(syn::Error::new(
                lit.span(),
                format!("invalid `hedge_after`: {e}; write a duration such as \"50ms\" or a quantile such as \"p95\""),
            )),
        }
    }
    if let Some(lit) = &raw.one_layer {
        s.spans.insert("one_layer", lit.span());
        s.settings.one_layer = Some(lit.value);
    }
    if let Some(lit) = &raw.idempotent {
        s.spans.insert("idempotent", lit.span());
        s.settings.idempotent = Some(lit.value);
    }
}

/// `resume`, `checkpoint` and the stream's settings (`idle_timeout`, read as the other
/// durations; `progress_resets`), their spans beside the schedule's.
pub(super) fn stream(
    raw: &RawArgs,
    s: &mut Schedule,
    errors: &mut Vec<syn::Error>,
) -> super::StreamArgs {
    let mut settings = retry_rules::StreamSettings {
        idle_timeout: parse_duration(
            raw.idle_timeout.as_ref(),
            "idle_timeout",
            &mut s.spans,
            errors,
        ),
        ..retry_rules::StreamSettings::default()
    };
    if let Some(lit) = &raw.progress_resets {
        s.spans.insert("progress_resets", lit.span());
        settings.progress_resets = Some(lit.value);
    }
    super::StreamArgs {
        resume: raw.resume.clone(),
        checkpoint: raw.checkpoint.clone(),
        settings,
    }
}

/// `crate`'s path (`::reattempt` when it is not given), and the error of one that is not a path.
pub(super) fn crate_path(lit: Option<&syn::LitStr>) -> (Path, Option<syn::Error>) {
    let mut unread_crate = None;
    let krate = lit.map_or_else(
        || syn::parse_quote!(::reattempt),
        |lit| {
            lit.parse::<Path>().unwrap_or_else(|_| {
                unread_crate = Some(syn::Error::new(
                    lit.span(),
                    "`crate` must be a path to the reattempt facade, such as \"::reattempt\"",
                ));
                syn::parse_quote!(::reattempt)
            })
        },
    );
    (krate, unread_crate)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use crate::args::tests::errors_of;

    #[test]
    fn durations_are_read_by_the_runtimes_parser() {
        let errs = errors_of(quote!(delay = "1M"));
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("`delay`"), "{errs:?}");
        assert!(errs[0].contains(r#"write "1m" for minutes"#), "{errs:?}");
        let errs = errors_of(quote!(max_elapsed = "1m 1m"));
        assert!(errs[0].contains("more than once"), "{errs:?}");
        let errs = errors_of(quote!(timeout = "2 parsecs"));
        assert!(errs[0].contains("write it like"), "{errs:?}");
        assert!(errors_of(quote!(delay = "1m 30s", max_delay = "1month")).is_empty());
    }

    /// The parse's errors: those of the shapes, else those of the values it could not read.
    /// A time where a count goes is told the count and where a time limit goes; an ISO-8601
    /// duration is told as the runtime reads it.
    #[test]
    fn a_time_for_a_count_and_an_iso_duration_are_told_their_fix() {
        for (args, says) in [
            (quote!(max_attempts = "5s"), "`max_elapsed = \"5s\"`"),
            (quote!(max_attempts = "500ms"), "`max_elapsed = \"500ms\"`"),
            (quote!(max_attempts = 5s), "`max_elapsed = \"5s\"`"),
            (quote!(max_attempts = "PT5S"), "`max_elapsed = \"5s\"`"),
            (quote!(timeout = "PT2S"), "write `timeout = \"2s\"`"),
            (
                quote!(max_elapsed = "PT1M30S"),
                "write `max_elapsed = \"1m 30s\"`",
            ),
            (quote!(delay = "pt0.5s"), "write `delay = \"0.5s\"`"),
        ] {
            let errs = errors_of(args.clone());
            assert!(
                errs.len() == 1 && errs[0].contains(says),
                "{args}: {errs:?}"
            );
        }
        assert!(errors_of(quote!(max_attempts = 5)).is_empty());
    }
}
