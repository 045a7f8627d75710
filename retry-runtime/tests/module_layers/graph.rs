//! The module graph of one crate, read from its sources as text.
//!
//! Each file is a module (a `mod.rs` is its directory's module); an edge is what one module names
//! of another: its `use` items (`crate::…`, `super::…`, `self::…`, a child module) and the
//! `crate::…`/`super::…` paths in its code. A name re-exported by `pub use` is followed to the
//! module that defines it, so that a module depends on where an item lives, not on the path it is
//! named by. Left out, as no part of the layering: comments (doc links included), string and char
//! literals, items under `#[cfg(test)]` (unit tests sit above everything) and under `#[cfg(doc)]`
//! (imports only for rustdoc's links). The crate root (`lib.rs`) re-exports everything and is not
//! a node. Features are ignored: the graph is the union over all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// A module by its path below the crate root (`["engine", "state"]`); `[]` is the root.
pub type ModPath = Vec<String>;

pub fn name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

pub fn path_of(name: &str) -> ModPath {
    name.split("::").map(str::to_owned).collect()
}

pub struct Graph {
    /// module -> module it names -> the paths it names it by.
    pub edges: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>,
    pub modules: BTreeSet<ModPath>,
}

/// What one module's code names: the paths (made absolute) it uses, and what it re-exports.
#[derive(Default)]
struct Names {
    used: Vec<ModPath>,
    /// A name re-exported by `pub use` (or `pub(crate) use`) -> the absolute path it stands for.
    reexports: BTreeMap<String, ModPath>,
}

impl Graph {
    /// The graph of the crate whose sources are in `src` (a path from the workspace's root, as
    /// `"retry-macros/src"`).
    pub fn read(src: &str) -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(src);
        let mut sources = BTreeMap::new();
        read_dir(&root, &root, &mut sources);
        let modules: BTreeSet<ModPath> = sources.keys().cloned().collect();
        let names: BTreeMap<ModPath, Names> = sources
            .iter()
            .map(|(m, text)| (m.clone(), names_in(m, text, &modules)))
            .collect();
        let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> = BTreeMap::new();
        for (m, n) in &names {
            if m.is_empty() {
                continue;
            }
            for used in &n.used {
                let Some(to) = defining_module(used, &modules, &names, 0) else {
                    continue;
                };
                if to.is_empty() || &to == m {
                    continue;
                }
                edges
                    .entry(m.clone())
                    .or_default()
                    .entry(to)
                    .or_default()
                    .insert(format!("crate::{}", used.join("::")));
            }
        }
        Graph { edges, modules }
    }

    pub fn has_edge(&self, from: &str, to: &str) -> bool {
        self.edges
            .get(&path_of(from))
            .is_some_and(|tos| tos.contains_key(&path_of(to)))
    }

    /// The strongly connected components of more than one module (Tarjan's algorithm).
    pub fn cycles(&self) -> Vec<Vec<ModPath>> {
        struct Tarjan<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g ModPath, usize>,
            low: BTreeMap<&'g ModPath, usize>,
            stack: Vec<&'g ModPath>,
            on_stack: BTreeSet<&'g ModPath>,
            found: Vec<Vec<ModPath>>,
        }
        impl<'g> Tarjan<'g> {
            fn visit(&mut self, v: &'g ModPath) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                self.on_stack.insert(v);
                for w in self.graph.edges.get(v).into_iter().flat_map(BTreeMap::keys) {
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let low = self.low[v].min(self.low[w]);
                        self.low.insert(v, low);
                    } else if self.on_stack.contains(w) {
                        let low = self.low[v].min(self.index[w]);
                        self.low.insert(v, low);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut component = vec![];
                    while let Some(w) = self.stack.pop() {
                        self.on_stack.remove(w);
                        component.push(w.clone());
                        if w == v {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        self.found.push(component);
                    }
                }
            }
        }
        let mut t = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: vec![],
            on_stack: BTreeSet::new(),
            found: vec![],
        };
        for m in &self.modules {
            if !t.index.contains_key(m) {
                t.visit(m);
            }
        }
        t.found
    }

    /// A cycle's modules and the uses between them.
    pub fn describe(&self, cycle: &[ModPath]) -> String {
        let mut out = format!(
            "cycle among {}:\n",
            cycle.iter().map(|m| name(m)).collect::<Vec<_>>().join(", ")
        );
        for from in cycle {
            for (to, why) in self.edges.get(from).into_iter().flatten() {
                if cycle.contains(to) {
                    let why: Vec<&str> = why.iter().map(String::as_str).collect();
                    let _ = writeln!(out, "  {} -> {} ({})", name(from), name(to), why.join(", "));
                }
            }
        }
        out
    }
}

fn read_dir(root: &Path, dir: &Path, out: &mut BTreeMap<ModPath, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_dir(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().with_extension("");
            let mut module: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(module, text);
        }
    }
}

/// The module that defines what `path` (absolute) names: its longest prefix that is a module,
/// through that module's re-exports.
fn defining_module(
    path: &[String],
    modules: &BTreeSet<ModPath>,
    names: &BTreeMap<ModPath, Names>,
    depth: u32,
) -> Option<ModPath> {
    let k = (0..=path.len())
        .rev()
        .find(|&k| modules.contains(&path[..k]))?;
    let module = path[..k].to_vec();
    if let Some(next) = path.get(k)
        && let Some(to) = names.get(&module).and_then(|n| n.reexports.get(next))
        && depth < 16
    {
        let mut through: ModPath = to.clone();
        through.extend_from_slice(&path[k + 1..]);
        return defining_module(&through, modules, names, depth + 1);
    }
    Some(module)
}

/// What module `m` names in its source `text`.
fn names_in(m: &ModPath, text: &str, modules: &BTreeSet<ModPath>) -> Names {
    let code = without_cfg_items(&code_only(text));
    let mut names = Names::default();
    let mut rest = String::with_capacity(code.len());
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        if is_word_at(&code, i, "use") && bytes.get(i + 3).is_some_and(u8::is_ascii_whitespace) {
            let end = code[i..].find(';').map_or(code.len(), |e| i + e);
            let before = code[..i].trim_end();
            let item_start = before.rfind([';', '{', '}', ']']).map_or(0, |p| p + 1);
            let public = before[item_start..].trim_start().starts_with("pub");
            for (path, alias) in use_paths(&code[i + 3..end]) {
                let Some(abs) = absolute(m, &path, modules) else {
                    continue;
                };
                // `pub use crate::http;` inside an inline module of the root (lib.rs's `api`)
                // re-exports a root name as itself: it must not hide the root's own
                // `pub use classify::http;`, through which `crate::http::…` paths go.
                if public
                    && let Some(alias) = alias
                    && abs != [alias.clone()]
                {
                    names.reexports.insert(alias, abs.clone());
                }
                names.used.push(abs);
            }
            rest.push(' ');
            i = end + 1;
        } else {
            let c = code[i..].chars().next().unwrap();
            rest.push(c);
            i += c.len_utf8();
        }
    }
    // Paths in the code (outside `use` items): `crate::…`, `super::…`, `self::…`, `child::…`.
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i..].chars().next().unwrap();
        if !(c.is_alphabetic() || c == '_' || c == '$') {
            i += c.len_utf8();
            continue;
        }
        let start = i;
        let mut end = i;
        while let Some(c) = rest[end..].chars().next() {
            if c.is_alphanumeric() || c == '_' || c == '$' || rest[end..].starts_with("::") {
                end += if c == ':' { 2 } else { c.len_utf8() };
            } else {
                break;
            }
        }
        i = end.max(start + 1);
        if rest[..start].ends_with("::") {
            continue;
        }
        let path: Vec<String> = rest[start..end]
            .trim_end_matches(':')
            .split("::")
            .map(str::to_owned)
            .collect();
        if path.len() < 2 {
            continue;
        }
        if let Some(abs) = absolute(m, &path, modules) {
            names.used.push(abs);
        }
    }
    names
}

/// `path` (as written in module `m`) from the crate root; `None` when it is another crate's.
fn absolute(m: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let first = path.first()?;
    let mut abs = match first.as_str() {
        "crate" | "$crate" => path[1..].to_vec(),
        "self" => m.iter().chain(&path[1..]).cloned().collect(),
        "super" => {
            let supers = path.iter().take_while(|s| *s == "super").count();
            let mut abs = m[..m.len().checked_sub(supers)?].to_vec();
            abs.extend_from_slice(&path[supers..]);
            abs
        }
        "" => return None,
        _ => {
            let mut child = m.clone();
            child.push(first.clone());
            if !modules.contains(&child) {
                return None;
            }
            m.iter().chain(path).cloned().collect()
        }
    };
    while matches!(abs.last().map(String::as_str), Some("self" | "*")) {
        abs.pop();
    }
    Some(abs)
}

/// The paths of a use tree (`crate::a::{b, c::{self, D as E}}`), each with the name it binds
/// (`None` for a glob).
fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    fn go(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let mut prefix = prefix.to_vec();
            let head = tree[..open].trim().trim_end_matches("::");
            if !head.is_empty() {
                prefix.extend(segments(head));
            }
            let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
            let mut depth = 0;
            let mut from = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        go(&inner[from..i], &prefix, out);
                        from = i + 1;
                    }
                    _ => {}
                }
            }
            go(&inner[from..], &prefix, out);
            return;
        }
        let mut words = tree.split_whitespace();
        let path_text = words.next().unwrap_or_default();
        let alias = match (words.next(), words.next()) {
            (Some("as"), Some(alias)) => Some(alias.to_owned()),
            _ => None,
        };
        let mut path = prefix.to_vec();
        path.extend(segments(path_text));
        let bound = match path.last().map(String::as_str) {
            Some("*") => None,
            Some("self") => path.iter().rev().nth(1).cloned(),
            last => last.map(str::to_owned),
        };
        out.push((path, alias.or(bound)));
    }
    fn segments(text: &str) -> impl Iterator<Item = String> + '_ {
        // A leading `::` (another crate's path) keeps its empty first segment.
        text.split("::").map(|s| s.trim().to_owned())
    }
    let mut out = vec![];
    go(tree, &[], &mut out);
    out.retain(|(p, _)| !(p.len() == 1 && p[0].is_empty()));
    out
}

fn is_word_at(text: &str, i: usize, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text[i..].starts_with(word)
        && !text[..i].chars().next_back().is_some_and(ident)
        && !text[i + word.len()..].chars().next().is_some_and(ident)
}

/// `text` without comments, and with every string and char literal emptied.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let ident = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            '/' if next == Some('/') => {
                while i < b.len() && b[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(' ');
            }
            // A raw string: r"…", r#"…"#, br"…".
            'r' if (next == Some('"') || next == Some('#'))
                && (!ident(i.checked_sub(1).and_then(|p| b.get(p)))
                    || (b[i - 1] == 'b' && !ident(i.checked_sub(2).and_then(|p| b.get(p))))) =>
            {
                let hashes = b[i + 1..].iter().take_while(|c| **c == '#').count();
                if b.get(i + 1 + hashes) == Some(&'"') {
                    let closes =
                        |j: usize| b[j] == '"' && (1..=hashes).all(|h| b.get(j + h) == Some(&'#'));
                    i += 2 + hashes;
                    while i < b.len() && !closes(i) {
                        i += 1;
                    }
                    i += 1 + hashes;
                    out.push_str("\"\"");
                } else {
                    out.push('r');
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < b.len() && b[i] != '"' {
                    i += if b[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            // A char literal ('x', '\n', '\u{…}'), or else a lifetime.
            '\'' if next == Some('\\') => {
                i += 3;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            }
            '\'' if b.get(i + 2) == Some(&'\'') => {
                i += 3;
                out.push_str("' '");
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `code` without the items under `#[cfg(test)]`, `#[cfg(all(test, …))]` or `#[cfg(doc)]`.
fn without_cfg_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < code.len() {
        if code[i..].starts_with("#[") {
            let end = closing(code, i + 1, '[', ']');
            let attr: String = code[i + 2..end].split_whitespace().collect();
            if attr == "cfg(test)" || attr.starts_with("cfg(all(test,") || attr == "cfg(doc)" {
                i = item_end(code, end + 1);
                continue;
            }
        }
        let c = code[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Where the item starting at `from` (after an attribute) ends: past its other attributes, at its
/// `;` or its block's closing brace.
fn item_end(code: &str, from: usize) -> usize {
    let mut i = from;
    let bytes = code.as_bytes();
    let mut depth = 0i32;
    while i < code.len() {
        match bytes[i] {
            b'#' if depth == 0 && code[i..].starts_with("#[") => {
                i = closing(code, i + 1, '[', ']');
            }
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' if depth == 0 => return i + 1,
            b'{' if depth == 0 => return closing(code, i, '{', '}') + 1,
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// The index of the bracket closing the one at `open`.
fn closing(code: &str, open: usize, left: char, right: char) -> usize {
    let mut depth = 0;
    for (i, c) in code[open..].char_indices() {
        if c == left {
            depth += 1;
        } else if c == right {
            depth -= 1;
            if depth == 0 {
                return open + i;
            }
        }
    }
    code.len()
}
