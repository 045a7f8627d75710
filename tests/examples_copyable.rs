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
