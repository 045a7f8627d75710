//! The workspace's modules are layered: in each crate, no module uses one that uses it back,
//! directly or through others (the runtime's order is written at the top of its `src/lib.rs`).
//!
//! `graph` reads a crate's `src/**/*.rs` as text and builds the graph of what each module (each
//! file) names of the others; each crate is a graph of its own, `crate::` being its own root.

mod graph;

use std::fmt::Write as _;
use std::path::Path;

use graph::{Graph, name, path_of};

/// Every crate of the workspace that has modules (more than one source file): where its sources
/// are, from the workspace's root, and the fewest files it has, so that a wrong path cannot pass
/// with an empty graph.
const CRATES: &[(&str, usize)] = &[
    ("retry-runtime/src", 20),
    ("retry-runtime/rules/src", 8),
    ("retry-macros/src", 30),
    ("src", 2),
    ("support/src", 4),
    ("bench/src", 6),
    ("e2e/src", 4),
];

/// The runtime's top-level modules in layer order, lowest first: none of them names one that
/// comes after it.
const TOP_LEVEL_ORDER: &[&str] = &["schedule", "engine", "drivers"];

#[test]
fn modules_form_no_cycle() {
    // No cycle is tolerated, anywhere in any crate.
    let mut report = String::new();
    for &(src, fewest) in CRATES {
        let graph = Graph::read(src);
        assert!(
            graph.modules.len() >= fewest,
            "found only {} source files in {src}, expected {fewest} or more",
            graph.modules.len()
        );
        for cycle in graph.cycles() {
            let _ = write!(report, "in {src}: {}", graph.describe(&cycle));
        }
    }
    assert!(report.is_empty(), "module cycles:\n{report}");
}

/// A crate added to the workspace, or one that grows a second file, is checked too.
#[test]
fn every_crate_with_modules_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("the workspace's `members = [...]` line");
    let mut dirs: Vec<&str> = members.split('"').skip(1).step_by(2).collect();
    assert!(dirs.contains(&"retry-macros"), "members read as {dirs:?}");
    // The facade is the root package.
    dirs.push(".");
    for dir in dirs {
        let src = root.join(dir).join("src");
        let files = count_rs(&src);
        let listed = if dir == "." {
            "src".to_owned()
        } else {
            format!("{dir}/src")
        };
        assert!(
            files <= 1 || CRATES.iter().any(|(s, _)| *s == listed),
            "{listed} has {files} source files: add it to CRATES"
        );
    }
}

fn count_rs(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .map(|e| e.unwrap().path())
        .map(|p| {
            if p.is_dir() {
                count_rs(&p)
            } else {
                usize::from(p.extension().is_some_and(|e| e == "rs"))
            }
        })
        .sum()
}

#[test]
fn top_level_layers_only_use_the_ones_below() {
    let graph = Graph::read("retry-runtime/src");
    let mut report = String::new();
    for (from, tos) in &graph.edges {
        for (to, why) in tos {
            let rank = |m: Option<&String>| {
                TOP_LEVEL_ORDER
                    .iter()
                    .position(|t| m.is_some_and(|m| m == t))
            };
            if let (Some(a), Some(b)) = (rank(from.first()), rank(to.first()))
                && a < b
            {
                let _ = writeln!(
                    report,
                    "  {} -> {} ({})",
                    name(from),
                    name(to),
                    why.iter().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
    }
    assert!(
        report.is_empty(),
        "a lower layer (order, lowest first: {TOP_LEVEL_ORDER:?}) uses a higher one:\n{report}"
    );
}

/// The graph sees what it should, so that a parser that found nothing cannot pass the tests
/// above: plain imports, grouped and nested ones, `super::`, code paths, and re-exports followed
/// to the defining module.
#[test]
fn the_graph_sees_the_imports() {
    let graph = Graph::read("retry-runtime/src");
    let edges = &[
        ("engine::state::engine", "schedule::policy"),
        ("engine::state::engine", "schedule::delays"),
        ("engine::steps::admit", "guards"),
        // `super::…` between the rooms of a folder.
        ("engine::state::start", "engine::state::engine"),
        // `crate::engine::state::Engine`, re-exported by the folder's `mod.rs`.
        ("engine::steps::decide", "engine::state::engine"),
        ("drivers::closure::future", "drivers::hedged"),
        ("drivers::hedged", "drivers::timeout"),
        ("drivers::call", "drivers::closure::future"),
        ("drivers::lent", "drivers::call"),
        // `GiveUpReason`, in a module of its own below the engine.
        ("guards", "engine::give_up"),
        // `crate::RetryPolicy`, re-exported at the root.
        ("config", "schedule::policy"),
        ("schedule::delays", "schedule::policy"),
    ];
    assert_edges(&graph, "retry-runtime/src", edges);
    // A `#[cfg(doc)]` import (for a doc link) is no dependency.
    assert!(!graph.has_edge("drivers::timeout", "drivers::closure::retry"));
}

/// The same for the macro crate, whose rooms reach each other by other routes: a child named
/// by its own name, `super::` between siblings, a re-export by a folder's `mod.rs` followed to
/// the room that defines the item.
#[test]
fn the_graph_sees_the_macro_crates_imports() {
    let graph = Graph::read("retry-macros/src");
    let edges = &[
        ("expand", "valid"),
        ("rewrite", "rename"),
        ("known_keys", "value_rules"),
        ("value_rules", "render"),
        // `use libraries::{…}`: a child by its name.
        ("known_keys", "known_keys::libraries"),
        // `use super::spelling::{…}` between siblings.
        ("known_keys::elsewhere", "known_keys::spelling"),
        // `crate::args::RetryArgs`, re-exported by `args/mod.rs`.
        ("valid", "args::model"),
        // `crate::known_keys::names_a_file`, re-exported from `known_keys::config_file`.
        ("args::shape", "known_keys::config_file"),
    ];
    assert_edges(&graph, "retry-macros/src", edges);
    // A unit test's `use super::super::unknown_key` is no dependency.
    assert!(!graph.has_edge("known_keys::config_file", "known_keys"));
    // The lowest rooms, which the messages of every pass use, use none of the crate's.
    for lowest in ["render", "known_keys::spelling"] {
        assert!(graph.modules.contains(&path_of(lowest)), "{lowest}");
        assert!(
            !graph.edges.contains_key(&path_of(lowest)),
            "{lowest} uses {:?}",
            graph.edges[&path_of(lowest)].keys().collect::<Vec<_>>()
        );
    }
}

/// Each `from -> to` is in `graph` (the crate whose sources are in `src`).
fn assert_edges(graph: &Graph, src: &str, edges: &[(&str, &str)]) {
    for (from, to) in edges {
        assert!(
            graph.has_edge(from, to),
            "expected {from} -> {to} in {src}; {from} uses: {:?}",
            graph
                .edges
                .get(&path_of(from))
                .map(|tos| tos.keys().map(|m| name(m)).collect::<Vec<_>>())
        );
    }
}

#[test]
fn the_checker_finds_a_cycle() {
    let mut graph = Graph::read("retry-runtime/src");
    graph
        .edges
        .entry(path_of("schedule::policy"))
        .or_default()
        .entry(path_of("engine::state"))
        .or_default()
        .insert("crate::engine::state::Engine".to_owned());
    let described: Vec<String> = graph.cycles().iter().map(|c| graph.describe(c)).collect();
    assert!(
        described
            .iter()
            .any(|d| d.contains("schedule::policy -> engine::state")),
        "{described:?}"
    );
}
