//! The metrics the crate records (feature `metrics`), named and unit-ed as OpenTelemetry's
//! conventions ask: lowercase names in dotted namespaces (the crate's own, `reattempt.`: no
//! semantic convention names a retry library's metrics), units in UCUM (`s`, and `{call}` for a
//! count of calls) given with each metric's description rather than in its name (no `_total`,
//! no `_seconds`: a Prometheus exporter adds those), attributes namespaced too
//! (`reattempt.name`, the call's name, on every one). [`METRICS`] is the one table of them,
//! which the observability chapter shows row for row (`tests/guide_claims.rs` holds the two to
//! each other).

/// How a metric is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Histogram,
}

/// One metric: its name, kind, UCUM unit, attributes and what it counts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Metric {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    pub(crate) unit: &'static str,
    /// Read by the table's tests and by the guide's check of its table.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) attributes: &'static [&'static str],
    pub(crate) description: &'static str,
}

/// The call's name: an attribute of every metric.
pub(crate) const NAME: &str = "reattempt.name";
/// A call's outcome (`successful_without_retry`, …).
pub(crate) const OUTCOME: &str = "reattempt.outcome";
/// The class of the failure a retry follows (`transient`, `throttling`, `timeout`).
pub(crate) const CLASS: &str = "reattempt.class";
/// The kind of an injected fault.
pub(crate) const FAULT: &str = "reattempt.fault";

pub(crate) const CALLS: &str = "reattempt.calls";
pub(crate) const ATTEMPTS: &str = "reattempt.attempts";
pub(crate) const RETRY_DELAY: &str = "reattempt.retry.delay";
pub(crate) const BREAKER_REJECTIONS: &str = "reattempt.breaker.rejections";
pub(crate) const BUDGET_REFUSALS: &str = "reattempt.budget.refusals";
pub(crate) const THROTTLE_REJECTIONS: &str = "reattempt.throttle.rejections";
pub(crate) const BULKHEAD_REJECTIONS: &str = "reattempt.bulkhead.rejections";
pub(crate) const ONE_LAYER_DEFERRALS: &str = "reattempt.one_layer.deferrals";
pub(crate) const UNKNOWN_OUTCOME_REFUSALS: &str = "reattempt.unknown_outcome.refusals";
pub(crate) const TRANSPARENT_RETRIES: &str = "reattempt.grpc.transparent_retries";
pub(crate) const STREAM_RESUMES: &str = "reattempt.stream.resumes";
pub(crate) const INJECTED_FAULTS: &str = "reattempt.faults.injected";

const BY_NAME: &[&str] = &[NAME];

/// Every metric the crate records, a row each (on one line: the guide's check reads them).
#[rustfmt::skip]
pub(crate) const METRICS: &[Metric] = &[
    Metric { name: CALLS, kind: Kind::Counter, unit: "{call}", attributes: &[NAME, OUTCOME], description: "calls, by outcome: successful_without_retry, successful_with_retry, failed_without_retry, failed_with_retry" },
    Metric { name: ATTEMPTS, kind: Kind::Counter, unit: "{attempt}", attributes: BY_NAME, description: "attempts made" },
    Metric { name: RETRY_DELAY, kind: Kind::Histogram, unit: "s", attributes: &[NAME, CLASS], description: "the sleeps before retries, by the class of the failure (transient, throttling, timeout)" },
    Metric { name: BREAKER_REJECTIONS, kind: Kind::Counter, unit: "{attempt}", attributes: BY_NAME, description: "attempts a circuit breaker rejected" },
    Metric { name: BUDGET_REFUSALS, kind: Kind::Counter, unit: "{retry}", attributes: BY_NAME, description: "retries a budget could not pay for" },
    Metric { name: THROTTLE_REJECTIONS, kind: Kind::Counter, unit: "{attempt}", attributes: BY_NAME, description: "attempts the adaptive throttle shed" },
    Metric { name: BULKHEAD_REJECTIONS, kind: Kind::Counter, unit: "{call}", attributes: BY_NAME, description: "calls a bulkhead turned away" },
    Metric { name: ONE_LAYER_DEFERRALS, kind: Kind::Counter, unit: "{call}", attributes: BY_NAME, description: "calls that left their retry to an enclosing call (one_layer)" },
    Metric { name: UNKNOWN_OUTCOME_REFUSALS, kind: Kind::Counter, unit: "{call}", attributes: BY_NAME, description: "calls that ended on a failure whose outcome is unknown because they are not idempotent" },
    Metric { name: TRANSPARENT_RETRIES, kind: Kind::Counter, unit: "{retry}", attributes: BY_NAME, description: "the gRPC layer's resends of a stream the server refused before processing it" },
    Metric { name: STREAM_RESUMES, kind: Kind::Counter, unit: "{resume}", attributes: BY_NAME, description: "re-opens of resumed streams" },
    Metric { name: INJECTED_FAULTS, kind: Kind::Counter, unit: "{fault}", attributes: &[NAME, FAULT], description: "faults injected into attempts (feature testing)" },
];

/// Gives the installed recorder each metric's unit and description, once per process, before
/// the first is recorded (an exporter to OpenTelemetry passes them on).
#[cfg(feature = "metrics")]
#[inline]
pub(crate) fn describe() {
    static DESCRIBED: std::sync::Once = std::sync::Once::new();
    DESCRIBED.call_once(describe_all);
}

#[cfg(feature = "metrics")]
#[cold]
pub(crate) fn describe_all() {
    for metric in METRICS {
        let unit = match metric.unit {
            "s" => metrics::Unit::Seconds,
            _ => metrics::Unit::Count,
        };
        match metric.kind {
            Kind::Counter => metrics::describe_counter!(metric.name, unit, metric.description),
            Kind::Histogram => metrics::describe_histogram!(metric.name, unit, metric.description),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_opentelemetrys_rules() {
        for metric in METRICS {
            let name = metric.name;
            assert!(
                name.starts_with("reattempt."),
                "{name}: the crate's namespace"
            );
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'),
                "{name}: lowercase, dotted"
            );
            for suffix in ["_total", "_seconds", ".total", ".count"] {
                assert!(
                    !name.ends_with(suffix),
                    "{name}: no unit or type in the name"
                );
            }
            assert!(
                metric.unit == "s" || (metric.unit.starts_with('{') && metric.unit.ends_with('}')),
                "{name}: a UCUM unit"
            );
            assert_eq!(
                metric.attributes.first(),
                Some(&NAME),
                "{name}: the call's name first"
            );
            assert!(
                metric
                    .attributes
                    .iter()
                    .all(|a| a.starts_with("reattempt.")),
                "{name}: namespaced attributes"
            );
        }
        let mut names: Vec<_> = METRICS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METRICS.len(), "each once");
    }
}
