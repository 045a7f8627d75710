//! Every source file the guide, the README, BENCHMARKS.md and the architecture notes name (`` `tests/foo.rs` ``,
//! `` `guards/breaker.rs::a_test` ``, `` `send.rs` ``) exists, and every function named after
//! `::` is in it: when code moves to another room, the docs that point at it move too.
//!
//! A path is matched by its end (`guards/breaker.rs` is `retry-runtime/src/guards/breaker.rs`),
//! and must name one file only; a
//! function name may hold `*` (a family of tests: `a_panic_*`) or list alternatives in braces
//! (`{a,b}`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The documents held to their citations.
const DOCS: &[&str] = &["README.md", "BENCHMARKS.md", "docs"];

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

/// The citations of a document: `(path, function names)`, from backticks (`` `a/b.rs` ``,
/// `` `a/b.rs::name` ``, `` `a/b.rs:120` ``) and from markdown links (`[text](a/b.rs)`).
fn citations(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let quoted = text
        .split('`')
        .enumerate()
        // Odd pieces are inside backticks.
        .filter(|(i, q)| i % 2 == 1 && !q.contains(char::is_whitespace))
        .map(|(_, q)| q);
    let linked = text
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next());
    for cited in quoted.chain(linked) {
        let (path, names) = match cited.split_once("::") {
            Some((p, n)) => (p, Some(n)),
            None => (cited, None),
        };
        // A line number after the path (`file.rs:120`) names a place in the file.
        let path = match path.rsplit_once(':') {
            Some((p, line)) if line.chars().all(|c| c.is_ascii_digit()) => p,
            _ => path,
        };
        // A link into the repository from docs/ (`../bench/src/x.rs`) is read from the root.
        let path = path.trim_start_matches("../");
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
            // A file's generic name cited alone (`mod.rs`) names the kind of file, not one.
            if matches!(path.as_str(), "mod.rs" | "tests.rs" | "lib.rs" | "main.rs") {
                continue;
            }
            // The path from the workspace's root if it is one, else the files it ends.
            let exact: Vec<&String> = files.iter().filter(|f| *f == &path).collect();
            let matches: Vec<&String> = if exact.is_empty() {
                files
                    .iter()
                    .filter(|f| f.ends_with(&format!("/{path}")))
                    .collect()
            } else {
                exact
            };
            if matches.is_empty() {
                missing.push(format!("{doc_name}: `{path}` is no file of the workspace"));
                continue;
            }
            if matches.len() > 1 {
                missing.push(format!(
                    "{doc_name}: `{path}` could be any of {matches:?}: cite more of its path"
                ));
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
    let cited = citations(
        "see `tests/a.rs::b_*` and `c/d.rs::{e,f}`, not `x.rs is` or `Vec<u8>`; `g/h.rs:120` \
         and the [simulator](../bench/src/sim/occ.rs)",
    );
    assert_eq!(
        cited,
        vec![
            ("tests/a.rs".to_owned(), vec!["b_*".to_owned()]),
            ("c/d.rs".to_owned(), vec!["e".to_owned(), "f".to_owned()]),
            ("g/h.rs".to_owned(), vec![]),
            ("bench/src/sim/occ.rs".to_owned(), vec![]),
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

/// The crates whose rooms `docs/ARCHITECTURE.md` lists, by their source roots.
const ROOMS_OF: &[&str] = &[
    "retry-runtime/src",
    "retry-runtime/rules/src",
    "retry-macros/src",
];

/// Words a room row names in backticks outside parentheses that are not rooms: features.
const NOT_ROOMS: &[&str] = &["serde", "testing"];

/// The module names (`` `word` `` or `` `word/` ``, lowercase) a room row names outside
/// parentheses, where it lists rooms; inside them it says what a room holds.
fn rooms_named(row: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut depth = 0;
    let mut quoted = None::<String>;
    for c in row.chars() {
        match (c, &mut quoted) {
            ('`', None) => quoted = Some(String::new()),
            ('`', Some(word)) => {
                let is_module = word
                    .trim_end_matches('/')
                    .chars()
                    .enumerate()
                    .all(|(i, c)| {
                        c.is_ascii_lowercase() || c == '_' || (i > 0 && c.is_ascii_digit())
                    })
                    && !word.is_empty();
                if depth == 0 && is_module {
                    names.push(word.clone());
                }
                quoted = None;
            }
            (c, Some(word)) => word.push(c),
            ('(', None) => depth += 1,
            (')', None) => depth -= 1,
            _ => {}
        }
    }
    names
}

/// `docs/ARCHITECTURE.md` shows the rooms as they are: every folder of the crates' sources has a
/// row of its own (its path, backticked, first in the row), and the row names each file of the
/// folder (`mod.rs`, `lib.rs` and `tests.rs` aside) by its stem, backticked. A room added,
/// renamed or moved without the note fails here; so does a row for a folder that is gone, and a
/// row naming a room (outside parentheses) its folder does not have.
#[test]
fn the_architecture_note_lists_every_room() {
    let root = workspace();
    let note = fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("the note");
    let rows: Vec<&str> = note.lines().filter(|l| l.starts_with("| `")).collect();
    let mut problems = Vec::new();
    let mut folders = Vec::new();
    for crate_root in ROOMS_OF {
        let mut files = Vec::new();
        sources(&root.join(crate_root), &root, &mut files);
        let mut by_folder: BTreeMap<String, Vec<String>> = BTreeMap::default();
        for f in files {
            let (dir, file) = f.rsplit_once('/').expect("a path under a root");
            let stem = file.trim_end_matches(".rs").to_owned();
            by_folder.entry(format!("{dir}/")).or_default().push(stem);
        }
        let subfolders: Vec<String> = by_folder.keys().cloned().collect();
        for (folder, all) in by_folder {
            folders.push(folder.clone());
            // `mod.rs`, `lib.rs` and `tests.rs` need no naming (a row may name them).
            let stems: Vec<&String> = all
                .iter()
                .filter(|s| !matches!(s.as_str(), "mod" | "lib" | "tests"))
                .collect();
            if stems.is_empty() {
                continue; // a folder for a file's tests alone: part of its parent's room
            }
            let head = format!("| `{folder}` |");
            let Some(row) = rows.iter().find(|r| r.starts_with(&head)) else {
                problems.push(format!("no row for `{folder}`"));
                continue;
            };
            for stem in stems {
                if !row.contains(&format!("`{stem}`")) {
                    problems.push(format!("`{folder}`'s row does not name `{stem}`"));
                }
            }
            // A room the row names (a module's name outside parentheses) that is not there.
            for named in rooms_named(&row[head.len()..]) {
                let here = all.contains(&named)
                    || subfolders.contains(&format!("{folder}{named}"))
                    || NOT_ROOMS.contains(&named.as_str());
                if !here {
                    problems.push(format!("`{folder}`'s row names `{named}`, no room of it"));
                }
            }
        }
    }
    // A row for a folder of these crates that no longer exists.
    for row in &rows {
        let path = row
            .trim_start_matches("| `")
            .split('`')
            .next()
            .unwrap_or("");
        let ours = ROOMS_OF.iter().any(|r| path.starts_with(r));
        if ours && path.ends_with('/') && !folders.iter().any(|f| f == path) {
            problems.push(format!(
                "a row for `{path}`, which is no folder of the sources"
            ));
        }
    }
    assert!(folders.len() > 20, "found only {} folders", folders.len());
    assert!(
        problems.is_empty(),
        "docs/ARCHITECTURE.md's rooms are out of date:\n{}",
        problems.join("\n")
    );
}
