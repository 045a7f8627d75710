//! The examples can be copied into a user's crate: none names the workspace's unpublished crates
//! (`reattempt_support`, the tests' helpers) or the runtime crate behind the facade
//! (`retry_runtime`, which a user does not depend on), and each says in its top comment which
//! `[dependencies]` a copy needs. Covers `examples/` and the end-to-end member's
//! `e2e/examples/` (the gRPC and SQLite examples).

use std::path::{Path, PathBuf};

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["examples", "e2e/examples"] {
        for entry in std::fs::read_dir(root.join(dir)).expect(dir) {
            let path = entry.expect("a directory entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn no_example_names_an_unpublished_crate() {
    let files = examples();
    assert!(files.len() >= 10, "examples found: {files:?}");
    let mut offenders = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).expect("an example");
        for name in [
            "reattempt_support",
            "reattempt-support",
            "retry_runtime",
            "retry-runtime",
        ] {
            if text.contains(name) {
                offenders.push(format!("{} mentions {name}", path.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

#[test]
fn every_example_says_what_a_copy_depends_on() {
    for path in examples() {
        let text = std::fs::read_to_string(&path).expect("an example");
        let top: Vec<&str> = text
            .lines()
            .take_while(|line| line.starts_with("//!"))
            .collect();
        let top = top.join("\n");
        assert!(
            top.contains("[dependencies]") && top.contains("reattempt = { version = "),
            "{}: its top comment names no `[dependencies]` with reattempt",
            path.display()
        );
    }
}

/// The guide's and the README's examples (doctests, which may hide lines a reader does not need)
/// say so when they run on tokio's paused clock: copied under a plain `#[tokio::main]`, an
/// example that asserts an exact schedule fails, so the visible lines right after a hidden
/// paused `main` name the paused clock (`#[tokio::test(start_paused = true)]`, or a comment).
#[test]
fn a_hidden_paused_clock_is_named_in_the_visible_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .expect("docs/guide")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(root.join("README.md"));
    assert!(pages.len() >= 14, "pages found: {pages:?}");
    let mut offenders = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page");
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            if !(line.starts_with("# #[tokio::main") && line.contains("start_paused = true")) {
                continue;
            }
            let visible_after = lines[n + 1..]
                .iter()
                .filter(|l| !l.starts_with("# ") && **l != "#")
                .take(2)
                .any(|l| l.contains("paused"));
            if !visible_after {
                offenders.push(format!("{}:{}", page.display(), n + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "hidden paused clock not named: {offenders:#?}"
    );
}

/// The crates a page's Rust examples `use`, besides std, reattempt and tokio, each appear in that
/// page's Cargo lines (a TOML block, or a `// Cargo.toml:` comment in the example), so that a
/// copy builds with what the page says to add. (The doctests build them with the workspace's
/// dev-dependencies, which would hide a missing line.) A hidden line's use of the end-to-end
/// crate's fixtures is not a crate the reader adds: they stand for the reader's own code.
#[test]
fn every_crate_an_example_uses_is_in_its_pages_cargo_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .expect("docs/guide")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.push(root.join("README.md"));
    pages.sort();
    let mut offenders = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page");
        let mut declared: Vec<String> = ["std", "core", "alloc", "reattempt", "tokio"]
            .map(String::from)
            .to_vec();
        let mut used: Vec<(usize, String)> = Vec::new();
        let mut block: Option<&str> = None;
        let mut in_cargo_comment = false;
        let mut imported: Vec<String> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if let Some(fence) = line.strip_prefix("```") {
                block = match block {
                    Some(_) => None,
                    None => Some(fence),
                };
                continue;
            }
            let Some(kind) = block else {
                in_cargo_comment = false;
                continue;
            };
            // `// Cargo.toml: …` and the comment lines that go on from it.
            let comment = line.trim_start().starts_with("//");
            in_cargo_comment =
                comment && (in_cargo_comment || line.trim_start().starts_with("// Cargo.toml:"));
            let cargo_line = kind == "toml" || in_cargo_comment;
            if cargo_line || (kind == "toml" && line.starts_with(char::is_alphabetic)) {
                for part in line.split([',', ':']) {
                    if let Some((name, _)) = part.split_once('=') {
                        let name = name.trim().trim_start_matches("//").trim();
                        if !name.is_empty()
                            && name
                                .chars()
                                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
                        {
                            declared.push(name.replace('-', "_"));
                        }
                    }
                }
            }
            let rust = kind.starts_with("rust")
                && !kind.contains("ignore")
                && !kind.contains("compile_fail");
            // A hidden line may use the end-to-end crate's fixtures (the code tonic-build
            // generated, a scripted server), which stand for what the reader has already.
            let fixture = line.trim_start().starts_with("# ") && line.contains("reattempt_e2e");
            if rust {
                let code = line.trim_start().trim_start_matches("# ");
                let code = code.split("//").next().unwrap_or_default();
                // Not in string literals (`"sqlite::memory:"`): every other `"` opens one.
                let code: String = code.split('"').step_by(2).collect::<Vec<_>>().join("\"\"");
                let code = code.as_str();
                if let Some(tree) = code.strip_prefix("use ") {
                    // The crate is the first segment; the rest (`io`, `health_client`) are names
                    // the example brings into scope, which later paths may start from.
                    let roots = path_roots(tree);
                    imported.extend(roots.iter().skip(1).cloned());
                    imported.extend(
                        tree.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .skip(1)
                            .map(String::from),
                    );
                    if !fixture {
                        used.extend(roots.into_iter().take(1).map(|krate| (n + 1, krate)));
                    }
                } else if !fixture {
                    used.extend(path_roots(code).into_iter().map(|krate| (n + 1, krate)));
                }
            }
        }
        for (n, krate) in used {
            if !declared.contains(&krate) && !imported.contains(&krate) {
                offenders.push(format!(
                    "{}:{n}: `use {krate}::…` with no Cargo line for it",
                    page.display()
                ));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// The first segments of the paths in a line of Rust (`reqwest::Client::new()` gives
/// `reqwest`): lower-case names followed by `::` and not preceded by one, so not a type
/// (`Duration::from_secs`) nor a later segment.
fn path_roots(code: &str) -> Vec<String> {
    let mut roots = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let starts_word = (bytes[i].is_ascii_lowercase() || bytes[i] == b'_')
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if !starts_word {
            i += 1;
            continue;
        }
        let end = code[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(code.len(), |e| i + e);
        let after_path = code[..i].ends_with("::");
        let turbofish = code[end..].starts_with("::<");
        if !after_path && !turbofish && code[end..].starts_with("::") {
            let name = &code[i..end];
            if !["crate", "self", "super"].contains(&name) {
                roots.push(name.to_owned());
            }
        }
        i = end;
    }
    roots
}

/// An example's top comment names the reattempt features a copy needs: each of its
/// `required-features` in Cargo.toml but the default `http` is in its `reattempt = { … }` line
/// (a copy that asked for `testing` when the service moved to `testing-http` failed with "could
/// not find `http` in `testing`").
#[test]
fn every_example_copy_asks_for_its_required_features() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let mut offenders = Vec::new();
    for block in manifest.split("[[example]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim_start_matches([' ', '=']).trim().to_owned())
        };
        let (Some(name), Some(features)) = (field("name"), field("required-features")) else {
            continue;
        };
        let name = name.trim_matches('"');
        let text =
            std::fs::read_to_string(root.join(format!("examples/{name}.rs"))).expect("the example");
        let line = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .find(|l| l.contains("reattempt = {"))
            .unwrap_or_default();
        for feature in features.trim_matches(['[', ']']).split(',') {
            let feature = feature.trim().trim_matches('"');
            if feature != "http" && !line.contains(&format!("\"{feature}\"")) {
                offenders.push(format!(
                    "examples/{name}.rs: `{feature}` missing from `{}`",
                    line.trim_start_matches("//! ")
                ));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
}
