//! Configuration where the attribute takes literals: a key of this crate's config-file format
//! that the attribute does not take (`preset = "aws-2026"`, `inject_faults`: the policy table's
//! keys beside the attribute's own, see `retry-runtime`'s `config`), a config file or an
//! environment named as a value (`config = "retry.toml"`), or a key asking to read one
//! (`profile`, `from_env`). The attribute checks its values when it expands, before any file or
//! environment exists; configuration is a `RetryPolicy` read at run time and passed as
//! `policy = …`, which every such message says, with the code for it.

use syn::{Expr, Lit};

use super::spelling::normalise;
use crate::render::render;

/// The presets' names in a config file and their variants (`retry-runtime`'s `Preset`).
const PRESETS: &[(&str, &str)] = &[
    ("aws-standard", "AwsStandard"),
    ("aws-2026", "Aws2026"),
    ("aws-2026-dynamodb", "Aws2026DynamoDb"),
    ("grpc", "Grpc"),
];

/// Keys that ask to read configuration, in any case style.
const READERS: &[&str] = &[
    "config_file",
    "config_path",
    "configFile",
    "file",
    "path",
    "profile",
    "env",
    "from_env",
    "from_file",
    "from_config",
    "properties",
    "instance",
    "baseConfig",
];

/// The extensions of config files.
const FILE_EXTENSIONS: &[&str] = &[
    ".toml",
    ".yaml",
    ".yml",
    ".json",
    ".json5",
    ".ini",
    ".properties",
    ".conf",
    ".ron",
];

/// How a run-time policy is passed, for messages.
const LOAD: &str = "load a `reattempt::RetryPolicy` at run time (feature `serde`: \
    `toml::from_str::<RetryPolicy>(&text)?`, the same keys), keep it in a `static` or a field, \
    and give `policy = POLICY`";

/// Whether `text` names a config file.
pub(crate) fn names_a_file(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    FILE_EXTENSIONS.iter().any(|e| lower.ends_with(e))
}

/// The message for `key = "retry.toml"` (any key, `policy` included).
pub(crate) fn file_message(key: &str, text: &str) -> String {
    format!(
        "`{key} = {text:?}` names a config file, which #[retryable] cannot read: it checks its \
         values when it expands, before the file is there. To configure the retry from a file, {LOAD}"
    )
}

/// The variant of a preset written as its config-file name (`"aws-2026"`) or as a path
/// (`Preset::Aws2026`).
fn preset_variant(value: Option<&Expr>) -> Option<&'static str> {
    match value? {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) => {
            let text = s.value().trim().to_ascii_lowercase().replace('_', "-");
            PRESETS.iter().find(|(n, _)| *n == text).map(|(_, v)| *v)
        }
        Expr::Path(p) => {
            let last = p.path.segments.last()?.ident.to_string();
            PRESETS.iter().find(|(_, v)| *v == last).map(|(_, v)| *v)
        }
        _ => None,
    }
}

/// The message for configuration written in the attribute, if `key = value` is one (see the
/// module's rule).
pub(crate) fn explain(key: &str, value: Option<&Expr>) -> Option<String> {
    if let Some(Expr::Lit(syn::ExprLit {
        lit: Lit::Str(s), ..
    })) = value
        && names_a_file(&s.value())
    {
        return Some(file_message(key, &s.value()));
    }
    let text = normalise(key);
    if text == "preset" {
        let head = "`preset` is a key of the config file's policy table, not of #[retryable]";
        return Some(match preset_variant(value) {
            Some(v) => format!(
                "{head}: in code a preset is a run-time policy. Build it once, \
                 `static POLICY: std::sync::LazyLock<reattempt::RetryPolicy> = \
                 std::sync::LazyLock::new(|| reattempt::Preset::{v}.policy().build().unwrap());` \
                 (change a setting on the builder: `.max_attempts(5)`), and give `policy = POLICY` \
                 (its budget is `Preset::{v}.budget()`, given with `budget = …`)"
            ),
            None => format!(
                "{head}: in code a preset is a run-time policy, `reattempt::Preset::{}.policy()` \
                 (the presets: {}), built once and given with `policy = POLICY`{}",
                PRESETS[1].1,
                PRESETS
                    .iter()
                    .map(|(n, v)| format!("`{n}` is `Preset::{v}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                value.map_or_else(String::new, |v| format!(
                    "; `{}` is none of them",
                    render(v)
                )),
            ),
        });
    }
    if matches!(
        text.as_str(),
        "injectfaults" | "latency" | "latencyrate" | "faultrate" | "seed"
    ) {
        return Some(format!(
            "`{key}` is a key of the config file's `inject_faults` table (feature `testing`), not \
             of #[retryable]: faults are injected into a run-time policy; {LOAD}"
        ));
    }
    // The run-time policy's settings without a literal form in the attribute (AWS 2026).
    let builder = match text.as_str() {
        "longpolling" => Some(("long_polling", "`.long_polling(true)`")),
        "hintmode" => Some(("hint_mode", "`.hint_mode(reattempt::HintMode::AWS_2026)`")),
        _ => None,
    };
    if let Some((name, call)) = builder {
        return Some(format!(
            "`{key}` is a setting of a run-time policy (the builder's {call}, the config file's \
             `{name}` key), not a key of #[retryable]: build the `reattempt::RetryPolicy` once \
             with it (`RetryPolicy::builder()…{call_bare}.build()`, or a preset's `.policy()`), \
             keep it in a `static` or a field, and give `policy = POLICY`",
            call_bare = call.trim_matches('`'),
        ));
    }
    if READERS.iter().any(|r| normalise(r) == text) {
        return Some(format!(
            "`{key}` is not a key of #[retryable], which reads no configuration: it checks its \
             values when it expands, before any file or environment is there. To configure the \
             retry at run time, {LOAD}"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::unknown_key;
    use super::*;

    fn expr(s: &str) -> Expr {
        syn::parse_str(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_preset_is_told_its_variant_and_policy() {
        for (value, variant) in [
            ("\"aws-2026\"", "Aws2026"),
            ("\"aws-2026-dynamodb\"", "Aws2026DynamoDb"),
            ("\"AWS_STANDARD\"", "AwsStandard"),
            ("Preset::Grpc", "Grpc"),
        ] {
            let m = unknown_key("preset", Some(&expr(value)));
            assert!(
                m.contains(&format!("reattempt::Preset::{variant}.policy()")),
                "{value}: {m}"
            );
            assert!(m.contains("`policy = POLICY`"), "{m}");
        }
        let m = unknown_key("Preset", Some(&expr("\"aws\"")));
        assert!(
            m.contains("`aws-2026` is `Preset::Aws2026`") && m.contains("`\"aws\"` is none"),
            "{m}"
        );
    }

    #[test]
    fn a_config_file_or_reader_is_told_to_load_a_policy() {
        for (key, value) in [
            ("config", "\"retry.toml\""),
            ("settings", "\"conf/retry.yaml\""),
            ("resilience4j", "\"application.yml\""),
        ] {
            let m = unknown_key(key, Some(&expr(value)));
            assert!(
                m.contains("names a config file") && m.contains("`policy = POLICY`"),
                "{key}: {m}"
            );
        }
        for key in ["profile", "from_env", "configFile", "inject_faults"] {
            let m = unknown_key(key, Some(&expr("\"x\"")));
            assert!(
                m.contains("`policy = POLICY`") && m.contains("RetryPolicy"),
                "{key}: {m}"
            );
        }
        assert_eq!(explain("delay", Some(&expr("\"200ms\""))), None);
    }
}
