//! Durations as people write them in the attribute and in config files: `"250ms"`, `"1m 30s"`.

use std::time::Duration;

/// Reads a duration written with units, as the attribute's keys and config files take it:
/// `"250ms"`, `"2s"`, `"1.5s"`, `"1m 30s"`, `"2h"`, `"1 day"`.
///
/// The grammar is [humantime](https://docs.rs/humantime)'s (numbers, each followed by a unit:
/// `ns`, `us`/`µs`, `ms`, `s`/`sec`, `m`/`min`, `h`/`hr`, `d`/`day`, `w`/`week`, `month`,
/// `y`/`year` and their plurals), made stricter where a person has most likely mistyped:
///
/// - a capital `M`, which humantime reads as a month (30.44 days), while a retry delay of a month
///   is far more likely a minute written with the wrong case: write `"1m"` for a minute, or days
///   (`"30d"`) or the word (`"1month"`) for a month;
/// - a unit written twice (`"1m1m"`, `"1min 1m"`, `"1m 30s 10s"`), which humantime adds up:
///   write each unit once.
///
/// # Errors
/// A [`ParseDurationError`] saying what is wrong with the text.
///
/// ```
/// use std::time::Duration;
/// use reattempt::parse_duration;
///
/// assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("1M").unwrap_err().to_string().contains(r#"write "1m""#));
/// assert!(parse_duration("1m1m").unwrap_err().to_string().contains("more than once"));
/// assert!(parse_duration("200").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, ParseDurationError> {
    let mut seen: [Option<&str>; 10] = [None; 10];
    for (start, unit) in units(text) {
        if unit == "M" {
            let number = number_before(text, start);
            return Err(ParseDurationError(Kind::CapitalM {
                number: number.to_owned(),
            }));
        }
        if let Some(i) = unit_index(unit) {
            if let Some(first) = seen[i] {
                return Err(ParseDurationError(Kind::Repeated {
                    first: first.to_owned(),
                    again: unit.to_owned(),
                }));
            }
            seen[i] = Some(unit);
        }
    }
    humantime::parse_duration(text).map_err(|e| ParseDurationError(Kind::Invalid(e.to_string())))
}

/// The runs of letters in `text` (humantime's units), with where each starts.
fn units(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let is_letter = |c: char| c.is_ascii_alphabetic() || c == 'µ';
    let mut rest = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let (start, _) = rest.by_ref().find(|&(_, c)| is_letter(c))?;
        let mut end = text.len();
        while let Some(&(i, c)) = rest.peek() {
            if !is_letter(c) {
                end = i;
                break;
            }
            rest.next();
        }
        Some((start, &text[start..end]))
    })
}

/// The number written just before the unit at `start` (for the advice), or `"1"`.
fn number_before(text: &str, start: usize) -> &str {
    let before = text[..start].trim_end();
    let from = before
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    match &before[from..] {
        "" => "1",
        n => n,
    }
}

/// Which of humantime's units this spelling is, as an index; `None` if it is none (humantime then
/// reports it).
fn unit_index(unit: &str) -> Option<usize> {
    Some(match unit {
        "nanos" | "nsec" | "ns" => 0,
        "usec" | "us" | "µs" => 1,
        "millis" | "msec" | "ms" => 2,
        "seconds" | "second" | "secs" | "sec" | "s" => 3,
        "minutes" | "minute" | "min" | "mins" | "m" => 4,
        "hours" | "hour" | "hr" | "hrs" | "h" => 5,
        "days" | "day" | "d" => 6,
        "weeks" | "week" | "wk" | "wks" | "w" => 7,
        "months" | "month" | "M" => 8,
        "years" | "year" | "yr" | "yrs" | "y" => 9,
        _ => return None,
    })
}

/// Why a text is not a duration; see [`parse_duration`]. Its `Display` says what to write
/// instead, without naming the setting (the caller adds that).
///
/// ```
/// let err = reattempt::parse_duration("30M").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"capital "M" means months (30.44 days), easily mistaken for minutes: write "30m" for minutes, or days ("30d") or "30months" for months"#,
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseDurationError(Kind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// humantime's own message.
    Invalid(String),
    /// A capital `M` after this number.
    CapitalM { number: String },
    /// The same unit, spelled `first` and then `again`.
    Repeated { first: String, again: String },
}

impl std::fmt::Display for ParseDurationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Kind::Invalid(message) => f.write_str(message),
            Kind::CapitalM { number } => write!(
                f,
                r#"capital "M" means months (30.44 days), easily mistaken for minutes: write "{number}m" for minutes, or days ("30d") or "{number}months" for months"#
            ),
            Kind::Repeated { first, again } if first == again => write!(
                f,
                r#"the unit "{first}" appears more than once, and the parts would be added up: write each unit once, like "1m 30s""#
            ),
            Kind::Repeated { first, again } => write!(
                f,
                r#"the unit "{first}" appears more than once (again as "{again}"), and the parts would be added up: write each unit once, like "1m 30s""#
            ),
        }
    }
}

impl std::error::Error for ParseDurationError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_humantime_reads() {
        for (text, ms) in [
            ("250ms", 250),
            ("2s", 2000),
            ("1.5s", 1500),
            ("1m 30s", 90_000),
            ("1h1m", 3_660_000),
            ("2 days", 172_800_000),
            ("1month", 2_630_016_000),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
        assert_eq!(parse_duration("3µs"), Ok(Duration::from_micros(3)));
    }

    #[test]
    fn refuses_a_capital_m_with_advice() {
        for (text, number) in [("1M", "1"), ("30M", "30"), ("1h 5M", "5"), ("2 M", "2")] {
            let e = parse_duration(text).unwrap_err().to_string();
            assert!(e.contains(&format!(r#"write "{number}m""#)), "{text}: {e}");
        }
    }

    #[test]
    fn refuses_a_repeated_unit() {
        for text in ["1m1m", "1m 30s 10s", "1min 1m", "2 seconds 3s", "1h 1hr"] {
            let e = parse_duration(text).unwrap_err().to_string();
            assert!(e.contains("more than once"), "{text}: {e}");
        }
    }

    #[test]
    fn reports_humantimes_errors() {
        assert!(parse_duration("").is_err());
        assert!(parse_duration("200").is_err());
        assert!(
            parse_duration("5 parsecs")
                .unwrap_err()
                .to_string()
                .contains("parsecs")
        );
    }
}
