//! The doc examples of this crate are what users read on docs.rs through `reattempt`, which
//! re-exports its items with their rustdoc: they must say `reattempt::…` (a user's crate does not
//! depend on `retry_runtime`), and show the runtime they need rather than hide it (copied into a
//! user's crate, a hidden `#[tokio::main]` is missing). Their doctests compile them against the
//! facade (`reattempt` is a dev-dependency); this test keeps the old paths from coming back.
//!
//! Allowed: `retry_runtime::__private::…` in the docs of the hidden items the generated code uses
//! (not shown on docs.rs, and not re-exported by the facade under that path).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text of a doc comment line (`///` or `//!`), if it is one.
fn doc_text(line: &str) -> Option<&str> {
    let line = line.trim_start();
    line.strip_prefix("///")
        .or_else(|| line.strip_prefix("//!"))
        .filter(|_| !line.starts_with("////"))
}

/// What is wrong with one doc line, if anything.
fn offence(doc: &str) -> Option<&'static str> {
    let runtime_path = doc
        .match_indices("retry_runtime::")
        .any(|(i, _)| !doc[i..].starts_with("retry_runtime::__private::"));
    if runtime_path {
        return Some("names `retry_runtime::` (users depend on `reattempt`: write `reattempt::…`)");
    }
    if doc.contains("retry_rules::") {
        return Some("names `retry_rules::` (users depend on `reattempt`: write `reattempt::…`)");
    }
    let code = doc.trim_start();
    if code.starts_with("# #[tokio::main") || code.starts_with("# #[tokio::test") {
        return Some("hides its tokio runtime (a copy lacks it: show the `#[tokio::main]`)");
    }
    None
}

#[test]
fn doc_examples_use_the_facade_paths_and_show_their_runtime() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    // retry-rules' items are re-exported by the facade too, with their docs.
    sources(&root.join("rules/src"), &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} source files", files.len());

    let mut found = Vec::new();
    let mut doc_lines = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let Some(doc) = doc_text(line) else { continue };
            doc_lines += 1;
            if let Some(why) = offence(doc) {
                let path = file.strip_prefix(root).unwrap().display();
                found.push(format!("{path}:{}: {why}\n    {}", n + 1, line.trim()));
            }
        }
    }
    assert!(doc_lines > 1000, "read only {doc_lines} doc lines");
    assert!(
        found.is_empty(),
        "{} doc lines to fix:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn the_check_catches_what_it_is_for() {
    assert!(offence(" use retry_runtime::RetryPolicy;").is_some());
    assert!(offence(" let p = retry_runtime::RetryPolicy::default();").is_some());
    assert!(offence(" use reattempt::{RetryPolicy, retry_runtime::X};").is_some());
    assert!(offence(" # #[tokio::main(flavor = \"current_thread\")]").is_some());
    assert!(offence(" use retry_runtime::__private::Call;").is_none());
    assert!(offence(" use reattempt::RetryPolicy;").is_none());
    assert!(offence(" #[tokio::main(flavor = \"current_thread\")]").is_none());
    assert_eq!(doc_text("    /// x"), Some(" x"));
    assert_eq!(doc_text("//! x"), Some(" x"));
    assert_eq!(doc_text("//// x"), None);
    assert_eq!(doc_text("// x"), None);
}
