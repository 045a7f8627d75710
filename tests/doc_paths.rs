//! Every source file the guide, the README and the architecture notes name (`` `tests/foo.rs` ``,
//! `` `guards/breaker.rs::a_test` ``, `` `send.rs` ``) exists, and every function named after
//! `::` is in it: when code moves to another room, the docs that point at it move too.
//!
//! A path is matched by its end (`guards/breaker.rs` is `retry-runtime/src/guards/breaker.rs`); a
//! function name may hold `*` (a family of tests: `a_panic_*`) or list alternatives in braces
//! (`{a,b}`).

use std::fs;
use std::path::{Path, PathBuf};

/// The documents held to their citations.
const DOCS: &[&str] = &["README.md", "docs"];

/// Paths the docs name that are the reader's own files, not ours ("copy it into `src/main.rs`").
const USERS_FILES: &[&str] = &["src/main.rs"];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file of the workspace (build output and VCS metadata aside), as `/`-joined paths
/// relative to the root.
fn sources(dir: &Path, root: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).expect("readable dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git") {
                sources(&path, root, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// The markdown files under `DOCS`.
fn documents() -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        if p.is_dir() {
            for e in fs::read_dir(p).expect("readable dir") {
                walk(&e.expect("entry").path(), out);
            }
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p.to_owned());
        }
    }
    let mut out = Vec::new();
    for d in DOCS {
        walk(&workspace().join(d), &mut out);
    }
    out
}

/// The backticked citations of a document: `(path, function names)`.
fn citations(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (i, quoted) in text.split('`').enumerate() {
        // Odd pieces are inside backticks.
        if i % 2 == 0 || quoted.contains(char::is_whitespace) {
            continue;
        }
        let (path, names) = match quoted.split_once("::") {
            Some((p, n)) => (p, Some(n)),
            None => (quoted, None),
        };
        let is_path = Path::new(path).extension().is_some_and(|e| e == "rs")
            && path
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if !is_path {
            continue;
        }
        let names = match names {
            None => Vec::new(),
            Some(n) => match n.strip_prefix('{').and_then(|n| n.strip_suffix('}')) {
                Some(list) => list.split(',').map(str::to_owned).collect(),
                None => vec![n.to_owned()],
            },
        };
        out.push((path.to_owned(), names));
    }
    out
}

/// Whether `source` defines a function `name` (a `*` in `name` stands for any characters).
fn defines(source: &str, name: &str) -> bool {
    source.match_indices("fn ").any(|(at, _)| {
        let rest = &source[at + 3..];
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        glob(name, &ident)
    })
}

/// `pattern` matches all of `text`, each `*` standing for any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty(); // no `*` at all
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[test]
fn every_cited_file_and_function_exists() {
    let root = workspace();
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = fs::read_to_string(&doc).expect("readable doc");
        let doc_name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        for (path, names) in citations(&text) {
            if USERS_FILES.contains(&path.as_str()) {
                continue;
            }
            checked += 1;
            let matches: Vec<&String> = files
                .iter()
                .filter(|f| *f == &path || f.ends_with(&format!("/{path}")))
                .collect();
            if matches.is_empty() {
                missing.push(format!("{doc_name}: `{path}` is no file of the workspace"));
                continue;
            }
            for name in names {
                let found = matches
                    .iter()
                    .any(|f| fs::read_to_string(root.join(f)).is_ok_and(|s| defines(&s, &name)));
                if !found {
                    missing.push(format!(
                        "{doc_name}: `{path}::{name}`: no such function in {matches:?}"
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "found only {checked} citations: is the parser reading the docs?"
    );
    assert!(
        missing.is_empty(),
        "stale citations:\n{}",
        missing.join("\n")
    );
}

/// The checker finds what it should: a path that moved, a test renamed, and a family by prefix.
#[test]
fn the_checker_reads_citations_and_definitions() {
    let cited = citations("see `tests/a.rs::b_*` and `c/d.rs::{e,f}`, not `x.rs is` or `Vec<u8>`");
    assert_eq!(
        cited,
        vec![
            ("tests/a.rs".to_owned(), vec!["b_*".to_owned()]),
            ("c/d.rs".to_owned(), vec!["e".to_owned(), "f".to_owned()]),
        ]
    );
    let source = "#[test]\nfn b_one() {}\nasync fn e() {}\nfn full_jitter_mean_is_half() {}";
    assert!(defines(source, "b_*"));
    assert!(defines(source, "*_jitter_mean_*"));
    assert!(!defines(source, "*_jitter_median_*"));
    assert!(defines(source, "e"));
    assert!(!defines(source, "f"));
    assert!(!defines(source, "b_"));
}
