//! The module layering of every crate.
//!
//! Each crate's `src/**/*.rs` is read as a file-level import graph: a file's
//! module comes from its location (`lib.rs`/`main.rs` the crate root, `a.rs`
//! and `a/mod.rs` the module `a`, `a/b.rs` the module `a::b`), and every
//! `crate::…`, `super::…` and `self::…` path in it (in `use` trees, grouped
//! ones included, and inline in code) is an edge to the file whose module is
//! the path's longest prefix. Comments, string literals and `#[cfg(test)]`
//! items (and the files of `#[cfg(test)] mod x;`) are not read. An edge from
//! a module to one of its own descendants (a folder's facade over its
//! children) and an edge from a file to itself are not counted.
//!
//! The check fails on every import cycle (a strongly connected component of
//! more than one file) and, where the crate root's docs carry a `# Layers`
//! list (`//! N. `mod_a`, `mod_b` — what layer N holds`, layer 1 the
//! bottom; a list of names ending its line may go on on the next, indented
//! line), on every edge from a top-level module to one in a higher layer
//! and on every top-level module missing from the list (or listed but
//! absent). It reports every crate's problems at once.
//!
//! One exception is written down, not inferred: a crate root's docs may
//! name, under a `# Type group` heading, the files of one group of
//! mutually recursive types (backticked paths such as `src/core/state.rs`,
//! any number a line). A cycle among exactly those files is allowed; any
//! other cycle, a cycle that reaches past them, or a listed file that is
//! not in such a cycle any more fails, so the list stays exact.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path: its segments below the crate root (empty for the root).
type ModPath = Vec<String>;

/// One source file of a crate: its path below the crate (`src/a/b.rs`) and
/// its text.
struct Source {
    path: String,
    text: String,
}

/// The module a file below `src/` holds.
fn module_of(path: &str) -> ModPath {
    let below_src = path.strip_prefix("src/").unwrap_or(path);
    let stem = below_src.strip_suffix(".rs").unwrap_or(below_src);
    let mut parts: ModPath = stem.split('/').map(str::to_owned).collect();
    match parts.last().map(String::as_str) {
        Some("mod") => {
            parts.pop();
        }
        Some("lib" | "main") if parts.len() == 1 => {
            parts.pop();
        }
        _ => {}
    }
    parts
}

// ---------------------------------------------------------------------------
// Lexing: blank comments and literals, then split into tokens.

/// The source with every comment and every string and char literal's
/// contents replaced by spaces (newlines kept, so lines still count).
fn strip(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in out.iter_mut().take(to.min(b.len())).skip(from) {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            b'/' if next == Some(b'/') => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if next == Some(b'*') => {
                let (mut depth, mut j) = (1, i + 2);
                while j < b.len() && depth > 0 {
                    if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                        depth += 1;
                        j += 2;
                    } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                        depth -= 1;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                blank(&mut out, i, j);
                i = j;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j);
                i = j + 1;
            }
            b'\'' => {
                // A char literal (`'a'`, `'\n'`, `'é'`) or a lifetime (`'a`).
                if next == Some(b'\\') {
                    let mut j = i + 3;
                    while j < b.len() && b[j] != b'\'' {
                        j += 1;
                    }
                    blank(&mut out, i + 1, j);
                    i = j + 1;
                } else {
                    let width = next.map_or(1, utf8_width);
                    if b.get(i + 1 + width) == Some(&b'\'') {
                        blank(&mut out, i + 1, i + 1 + width);
                        i += 2 + width;
                    } else {
                        i += 1;
                    }
                }
            }
            c if is_ident_byte(c) => {
                let start = i;
                while i < b.len() && is_ident_byte(b[i]) {
                    i += 1;
                }
                // A raw string: `r"…"`, `r#"…"#`, `br"…"`, `cr"…"`.
                if matches!(&b[start..i], b"r" | b"br" | b"cr") {
                    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
                    if b.get(i + hashes) == Some(&b'"') {
                        let body = i + hashes + 1;
                        let mut j = body;
                        while j < b.len()
                            && !(b[j] == b'"'
                                && b[j + 1..]
                                    .iter()
                                    .take(hashes)
                                    .filter(|&&c| c == b'#')
                                    .count()
                                    == hashes)
                        {
                            j += 1;
                        }
                        blank(&mut out, body, j);
                        i = j + 1 + hashes;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The width in bytes of the UTF-8 character a byte starts.
fn utf8_width(first: u8) -> usize {
    match first {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// Whether a byte belongs to an identifier (or a number).
fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// One token: an identifier (or number) or one punctuation byte.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(u8),
}

/// A token and the (1-based) line it is on.
#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens of stripped source.
fn tokens(stripped: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < stripped.len() {
        let c = stripped[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if is_ident_byte(c) {
            let start = i;
            while i < stripped.len() && is_ident_byte(stripped[i]) {
                i += 1;
            }
            let word = String::from_utf8_lossy(&stripped[start..i]).into_owned();
            out.push(Token {
                tok: Tok::Ident(word),
                line,
            });
        } else {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        }
    }
    out
}

fn is_punct(toks: &[Token], i: usize, c: u8) -> bool {
    toks.get(i).is_some_and(|t| t.tok == Tok::Punct(c))
}

fn is_word(toks: &[Token], i: usize, word: &str) -> bool {
    toks.get(i)
        .is_some_and(|t| matches!(&t.tok, Tok::Ident(w) if w == word))
}

/// Whether `::` starts at `i`.
fn is_sep(toks: &[Token], i: usize) -> bool {
    is_punct(toks, i, b':') && is_punct(toks, i + 1, b':')
}

/// Whether `#[cfg(test)]` starts at `i`.
fn is_cfg_test(toks: &[Token], i: usize) -> bool {
    is_punct(toks, i, b'#')
        && is_punct(toks, i + 1, b'[')
        && is_word(toks, i + 2, "cfg")
        && is_punct(toks, i + 3, b'(')
        && is_word(toks, i + 4, "test")
        && is_punct(toks, i + 5, b')')
        && is_punct(toks, i + 6, b']')
}

/// The index just past the item that starts at `start`: its `;` or the `}`
/// closing its body.
fn item_end(toks: &[Token], start: usize) -> usize {
    let mut depth = 0_isize;
    for (j, t) in toks.iter().enumerate().skip(start) {
        match t.tok {
            Tok::Punct(b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(b')' | b']') => depth -= 1,
            Tok::Punct(b'}') => {
                depth -= 1;
                if depth <= 0 {
                    return j + 1;
                }
            }
            Tok::Punct(b';') if depth <= 0 => return j + 1,
            _ => {}
        }
    }
    toks.len()
}

/// The tokens without the `#[cfg(test)]` items, and the names of the child
/// modules declared test-only (`#[cfg(test)] mod tests;`).
fn without_test_items(toks: &[Token]) -> (Vec<Token>, Vec<String>) {
    let (mut kept, mut test_mods) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < toks.len() {
        if is_cfg_test(toks, i) {
            let end = item_end(toks, i + 7);
            let item = &toks[i + 7..end];
            if let [.., mod_kw, name, semi] = item {
                if let (Tok::Ident(kw), Tok::Ident(name), Tok::Punct(b';')) =
                    (&mod_kw.tok, &name.tok, &semi.tok)
                {
                    if kw == "mod" {
                        test_mods.push(name.clone());
                    }
                }
            }
            i = end;
        } else {
            kept.push(toks[i].clone());
            i += 1;
        }
    }
    (kept, test_mods)
}

// ---------------------------------------------------------------------------
// Paths.

/// A path a file names, made absolute (segments below the crate root), with
/// the line it is on and how it was written.
#[derive(Debug)]
struct Named {
    path: ModPath,
    line: usize,
    written: String,
}

/// The paths of the use tree starting at `i` (a plain path is a tree of one),
/// each prefixed with `prefix`, and the index just past the tree.
fn use_tree(toks: &[Token], mut i: usize, prefix: ModPath) -> (Vec<ModPath>, usize) {
    let mut path = prefix;
    loop {
        match toks.get(i).map(|t| &t.tok) {
            Some(Tok::Ident(segment)) => {
                path.push(segment.clone());
                i += 1;
            }
            Some(Tok::Punct(b'*')) => return (vec![path], i + 1),
            Some(Tok::Punct(b'{')) => {
                i += 1;
                let mut all = Vec::new();
                loop {
                    match toks.get(i).map(|t| &t.tok) {
                        None => break,
                        Some(Tok::Punct(b'}')) => {
                            i += 1;
                            break;
                        }
                        Some(Tok::Punct(b',')) => i += 1,
                        Some(_) => {
                            let (trees, next) = use_tree(toks, i, path.clone());
                            all.extend(trees);
                            i = next.max(i + 1);
                        }
                    }
                }
                if all.is_empty() {
                    all.push(path);
                }
                return (all, i);
            }
            _ => return (vec![path], i),
        }
        if is_sep(toks, i) {
            i += 2;
        } else {
            if is_word(toks, i, "as") {
                i += 2;
            }
            return (vec![path], i);
        }
    }
}

/// A written path (`crate::a`, `super::b`, `self::c`, with later `self` and
/// `super` segments) made absolute from the module it is written in, or
/// `None` if it does not start at the crate or climbs above the root.
fn absolute(written: &[String], current: &[String]) -> Option<ModPath> {
    let (first, rest) = written.split_first()?;
    let mut path: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => current.to_vec(),
        "super" => current.split_last()?.1.to_vec(),
        _ => return None,
    };
    for segment in rest {
        match segment.as_str() {
            "super" => {
                path.pop()?;
            }
            "self" => {}
            _ => path.push(segment.clone()),
        }
    }
    Some(path)
}

/// A written path as it reads in the source (a group's `self` leaf shown as
/// the group's prefix).
fn shown(written: &[String]) -> String {
    let mut segments: Vec<&str> = written.iter().map(String::as_str).collect();
    if segments.len() > 1 && segments.last() == Some(&"self") {
        segments.pop();
    }
    segments.join("::")
}

/// Every `crate::`, `super::` and `self::` path in a file's tokens, made
/// absolute from the file's module (and the inline modules around it).
fn named_paths(toks: &[Token], module: &[String]) -> Vec<Named> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0_usize;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].tok {
            Tok::Punct(b'{') => depth += 1,
            Tok::Punct(b'}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Ident(word) if word == "mod" => {
                if let Some(Tok::Ident(name)) = toks.get(i + 1).map(|t| &t.tok) {
                    if is_punct(toks, i + 2, b'{') {
                        depth += 1;
                        inline.push((name.clone(), depth));
                        i += 3;
                        continue;
                    }
                }
            }
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "super" | "self")
                    && is_sep(toks, i + 1)
                    && !(i >= 2 && is_sep(toks, i - 2))
                    && !(i >= 2 && is_word(toks, i - 1, "in") && is_punct(toks, i - 2, b'(')) =>
            {
                let current: ModPath = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(name, _)| name.clone()))
                    .collect();
                let line = toks[i].line;
                let (trees, next) = use_tree(toks, i, Vec::new());
                for written in trees {
                    if let Some(path) = absolute(&written, &current) {
                        out.push(Named {
                            path,
                            line,
                            written: shown(&written),
                        });
                    }
                }
                i = next;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------
// The graph.

/// A counted edge: the first place a file names another.
#[derive(Debug)]
struct Edge {
    line: usize,
    written: String,
}

/// A crate's file-level import graph.
struct Graph {
    /// The files' paths below the crate (`src/a.rs`).
    files: Vec<String>,
    /// Each file's module.
    modules: Vec<ModPath>,
    /// The counted edges, by (from, to) file index.
    edges: BTreeMap<(usize, usize), Edge>,
}

impl Graph {
    fn build(sources: &[Source]) -> Self {
        let mut read = Vec::new();
        let mut test_only: Vec<ModPath> = Vec::new();
        for source in sources {
            let module = module_of(&source.path);
            let (toks, test_mods) = without_test_items(&tokens(&strip(&source.text)));
            test_only.extend(test_mods.into_iter().map(|name| {
                let mut child = module.clone();
                child.push(name);
                child
            }));
            read.push((source.path.clone(), module, toks));
        }
        read.retain(|(_, module, _)| !test_only.iter().any(|t| module.starts_with(t)));
        let mut by_module: BTreeMap<ModPath, usize> = BTreeMap::new();
        for (index, (_, module, _)) in read.iter().enumerate() {
            by_module.entry(module.clone()).or_insert(index);
        }
        let mut edges = BTreeMap::new();
        for (from, (_, module, toks)) in read.iter().enumerate() {
            for named in named_paths(toks, module) {
                let Some(to) = (0..=named.path.len())
                    .rev()
                    .find_map(|n| by_module.get(&named.path[..n]).copied())
                else {
                    continue;
                };
                let target = &read[to].1;
                if to == from || (target.starts_with(module) && target.len() > module.len()) {
                    continue;
                }
                edges.entry((from, to)).or_insert(Edge {
                    line: named.line,
                    written: named.written,
                });
            }
        }
        let (files, modules) = read
            .into_iter()
            .map(|(path, module, _)| (path, module))
            .unzip();
        Graph {
            files,
            modules,
            edges,
        }
    }

    /// An edge as a reader would look it up.
    fn describe(&self, (from, to): (usize, usize), edge: &Edge) -> String {
        format!(
            "{}:{} -> {} ({})",
            self.files[from], edge.line, self.files[to], edge.written
        )
    }

    /// The strongly connected components of more than one file (Tarjan).
    fn cycles(&self) -> Vec<Vec<usize>> {
        struct Walk<'a> {
            next: &'a [Vec<usize>],
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            counter: usize,
            found: Vec<Vec<usize>>,
        }
        fn visit(w: &mut Walk<'_>, v: usize) {
            w.index[v] = Some(w.counter);
            w.low[v] = w.counter;
            w.counter += 1;
            w.stack.push(v);
            w.on_stack[v] = true;
            for &u in w.next[v].iter() {
                match w.index[u] {
                    None => {
                        visit(w, u);
                        w.low[v] = w.low[v].min(w.low[u]);
                    }
                    Some(index) if w.on_stack[u] => w.low[v] = w.low[v].min(index),
                    Some(_) => {}
                }
            }
            if Some(w.low[v]) == w.index[v] {
                let mut component = Vec::new();
                while let Some(u) = w.stack.pop() {
                    w.on_stack[u] = false;
                    component.push(u);
                    if u == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort_unstable();
                    w.found.push(component);
                }
            }
        }
        let n = self.files.len();
        let mut next = vec![Vec::new(); n];
        for &(from, to) in self.edges.keys() {
            next[from].push(to);
        }
        let mut walk = Walk {
            next: &next,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            found: Vec::new(),
        };
        for v in 0..n {
            if walk.index[v].is_none() {
                visit(&mut walk, v);
            }
        }
        walk.found.sort();
        walk.found
    }
}

// ---------------------------------------------------------------------------
// Layers.

/// The backticked names a layer line starts with (separated by commas),
/// and the rest of the line.
fn leading_names(line: &str) -> (Vec<&str>, &str) {
    let mut names = Vec::new();
    let mut rest = line.trim_start();
    while let Some(quoted) = rest.strip_prefix('`') {
        let Some((name, after)) = quoted.split_once('`') else {
            break;
        };
        names.push(name);
        rest = after.trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    (names, rest.trim_end())
}

/// The `# Layers` list of a crate root's docs: each listed top-level module's
/// layer (1 the bottom), `None` if the docs have no such section.
fn layers(root_text: &str) -> Result<Option<BTreeMap<String, usize>>, Vec<String>> {
    let docs: Vec<&str> = root_text
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let is_heading = |line: &str| {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        (1..=6).contains(&hashes) && line[hashes..].starts_with(' ')
    };
    let Some(start) = docs
        .iter()
        .position(|line| is_heading(line) && line.trim_start_matches('#').trim() == "Layers")
    else {
        return Ok(None);
    };
    let (mut table, mut problems) = (BTreeMap::new(), Vec::new());
    // The layer whose names ran to the end of the previous line: an
    // indented line after it may go on naming modules of the same layer.
    let mut wrapping = None;
    for line in docs[start + 1..]
        .iter()
        .take_while(|line| !is_heading(line))
    {
        let numbered = line
            .split_once(". ")
            .and_then(|(number, rest)| Some((number.trim().parse::<usize>().ok()?, rest)));
        let (layer, rest) = match (numbered, wrapping) {
            (Some(item), _) => item,
            (None, Some(layer)) if line.starts_with(' ') => (layer, *line),
            (None, _) => {
                wrapping = None;
                continue;
            }
        };
        let (names, rest) = leading_names(rest);
        if names.is_empty() && numbered.is_some() {
            problems.push(format!("layer {layer} names no module: {line:?}"));
        }
        for name in names {
            if let Some(before) = table.insert(name.to_owned(), layer) {
                problems.push(format!("`{name}` is listed in layers {before} and {layer}"));
            }
        }
        wrapping = rest.is_empty().then_some(layer);
    }
    if table.is_empty() {
        problems.push("the `Layers` section lists no module".to_owned());
    }
    if problems.is_empty() {
        Ok(Some(table))
    } else {
        Err(problems)
    }
}

/// The files of the `# Type group` section of a crate root's docs (empty
/// when there is none).
fn type_group(root_text: &str) -> BTreeSet<String> {
    let docs: Vec<&str> = root_text
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("//!"))
        .map(str::trim)
        .collect();
    let Some(start) = docs.iter().position(|line| {
        line.starts_with('#') && line.trim_start_matches('#').trim() == "Type group"
    }) else {
        return BTreeSet::new();
    };
    docs[start + 1..]
        .iter()
        .take_while(|line| !line.starts_with('#'))
        .flat_map(|line| line.split('`').skip(1).step_by(2))
        .filter(|name| name.starts_with("src/") && name.ends_with(".rs"))
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------------------
// The check.

/// Every problem of one crate, each a paragraph a reader can act on.
fn check_crate(name: &str, sources: &[Source]) -> Vec<String> {
    let graph = Graph::build(sources);
    let mut problems = Vec::new();
    let root_text = sources
        .iter()
        .find(|s| s.path == "src/lib.rs" || s.path == "src/main.rs")
        .map_or("", |s| s.text.as_str());
    let group = type_group(root_text);
    let mut group_found = group.is_empty();
    for component in graph.cycles() {
        let files: BTreeSet<String> = component.iter().map(|&f| graph.files[f].clone()).collect();
        if !group.is_empty() && files == group {
            group_found = true;
            continue;
        }
        let mut lines = vec![format!(
            "{name}: an import cycle among {} files: {}",
            component.len(),
            component
                .iter()
                .map(|&f| graph.files[f].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )];
        for (&(from, to), edge) in &graph.edges {
            if component.contains(&from) && component.contains(&to) {
                lines.push(format!("    {}", graph.describe((from, to), edge)));
            }
        }
        problems.push(lines.join("\n"));
    }
    if !group_found {
        problems.push(format!(
            "{name}: the type group of the crate docs ({}) is not exactly one import cycle any more: update the list",
            group.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let Some(root) = graph.modules.iter().position(Vec::is_empty) else {
        return problems;
    };
    let Some(root_source) = sources.iter().find(|s| s.path == graph.files[root]) else {
        return problems;
    };
    let table = match layers(&root_source.text) {
        Ok(Some(table)) => table,
        Ok(None) => return problems,
        Err(errors) => {
            problems.extend(
                errors
                    .into_iter()
                    .map(|e| format!("{name}: {}: {e}", graph.files[root])),
            );
            return problems;
        }
    };
    let top_level: BTreeSet<&str> = graph
        .modules
        .iter()
        .filter_map(|m| m.first().map(String::as_str))
        .collect();
    for module in &top_level {
        if !table.contains_key(*module) {
            problems.push(format!(
                "{name}: the top-level module `{module}` is missing from the Layers list in {}",
                graph.files[root]
            ));
        }
    }
    for module in table.keys() {
        if !top_level.contains(module.as_str()) {
            problems.push(format!(
                "{name}: the Layers list in {} names `{module}`, which is not a module",
                graph.files[root]
            ));
        }
    }
    for (&(from, to), edge) in &graph.edges {
        let (Some(a), Some(b)) = (graph.modules[from].first(), graph.modules[to].first()) else {
            continue;
        };
        let (Some(&la), Some(&lb)) = (table.get(a), table.get(b)) else {
            continue;
        };
        if la < lb {
            problems.push(format!(
                "{name}: `{a}` (layer {la}) imports `{b}` (layer {lb}), which is above it: {}",
                graph.describe((from, to), edge)
            ));
        }
    }
    problems
}

/// A crate's sources: `src/**/*.rs`, without `src/bin/` (other crate roots)
/// and without `src/main.rs` where `src/lib.rs` is the crate's root.
fn read_crate(dir: &Path) -> std::io::Result<Vec<Source>> {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut paths = Vec::new();
    walk(&dir.join("src"), &mut paths)?;
    let has_lib = dir.join("src/lib.rs").is_file();
    let mut sources = Vec::new();
    for path in paths {
        let Ok(relative) = path.strip_prefix(dir) else {
            continue;
        };
        let relative = relative.to_string_lossy().replace('\\', "/");
        if relative.starts_with("src/bin/") || (has_lib && relative == "src/main.rs") {
            continue;
        }
        sources.push(Source {
            path: relative,
            text: std::fs::read_to_string(&path)?,
        });
    }
    Ok(sources)
}

#[test]
fn every_crate_is_layered_without_cycles() {
    let crates = dsh_repo_checks::repo_root().join("crates");
    let mut dirs: Vec<_> = std::fs::read_dir(&crates)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|dir| dir.join("src").is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no crates under {}", crates.display());
    let mut problems = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let sources = read_crate(&dir).unwrap();
        problems.extend(check_crate(&name, &sources));
    }
    assert!(
        problems.is_empty(),
        "{} layering problem(s):\n\n{}\n",
        problems.len(),
        problems.join("\n\n")
    );
}

// ---------------------------------------------------------------------------
// The checker's own tests, on small inline crates.

fn sources(files: &[(&str, &str)]) -> Vec<Source> {
    files
        .iter()
        .map(|(path, text)| Source {
            path: (*path).to_owned(),
            text: (*text).to_owned(),
        })
        .collect()
}

/// The counted edges of an inline crate, as `from -> to` file paths.
fn edges_of(files: &[(&str, &str)]) -> Vec<String> {
    let graph = Graph::build(&sources(files));
    graph
        .edges
        .keys()
        .map(|&(from, to)| format!("{} -> {}", graph.files[from], graph.files[to]))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[test]
fn modules_come_from_file_locations() {
    assert_eq!(module_of("src/lib.rs"), ModPath::new());
    assert_eq!(module_of("src/main.rs"), ModPath::new());
    assert_eq!(module_of("src/a.rs"), ["a"]);
    assert_eq!(module_of("src/a/mod.rs"), ["a"]);
    assert_eq!(module_of("src/a/b.rs"), ["a", "b"]);
    assert_eq!(module_of("src/a/lib.rs"), ["a", "lib"]);
}

#[test]
fn grouped_use_trees_name_every_leaf() {
    let edges = edges_of(&[
        ("src/lib.rs", "mod a; mod b; mod c; mod d;"),
        ("src/a.rs", "use crate::{b::{self, X}, c::Y as Z, d::*};"),
        ("src/b.rs", ""),
        ("src/c.rs", ""),
        ("src/d/mod.rs", "mod e;"),
        ("src/d/e.rs", ""),
    ]);
    assert_eq!(
        edges,
        [
            "src/a.rs -> src/b.rs",
            "src/a.rs -> src/c.rs",
            "src/a.rs -> src/d/mod.rs"
        ]
    );
}

#[test]
fn inline_paths_resolve_to_the_longest_file_prefix() {
    let edges = edges_of(&[
        ("src/lib.rs", "mod a; mod b; pub struct Root;"),
        (
            "src/a.rs",
            "fn f() { let t = crate::b::c::Tracker::restored(&x); let r = crate::Root; }",
        ),
        ("src/b/mod.rs", "mod c;"),
        ("src/b/c.rs", ""),
    ]);
    assert_eq!(edges, ["src/a.rs -> src/b/c.rs", "src/a.rs -> src/lib.rs"]);
}

#[test]
fn super_and_self_are_relative_to_the_file_and_its_inline_modules() {
    let edges = edges_of(&[
        ("src/lib.rs", "mod a;"),
        ("src/a/mod.rs", "mod b; mod c; use self::b::X;"),
        ("src/a/b.rs", "use super::c::Y; use super::super::a::Z;"),
        ("src/a/c.rs", "mod inner { use super::super::b::W; }"),
    ]);
    assert_eq!(
        edges,
        [
            "src/a/b.rs -> src/a/c.rs",
            "src/a/b.rs -> src/a/mod.rs",
            "src/a/c.rs -> src/a/b.rs",
        ]
    );
}

#[test]
fn a_facade_over_its_own_children_is_not_an_edge_but_a_child_using_it_is() {
    let edges = edges_of(&[
        (
            "src/lib.rs",
            "mod store; pub use store::Thing; use crate::store::x::Y;",
        ),
        (
            "src/store/mod.rs",
            "mod x; pub use self::x::Y; fn f() { crate::store::x::g() }",
        ),
        ("src/store/x.rs", "use super::Z;"),
    ]);
    assert_eq!(edges, ["src/store/x.rs -> src/store/mod.rs"]);
}

#[test]
fn comments_strings_and_test_items_are_not_read() {
    let edges = edges_of(&[
        (
            "src/lib.rs",
            "mod a; mod b; mod c;\n#[cfg(test)]\nmod tests;",
        ),
        (
            "src/a.rs",
            concat!(
                "// use crate::b::X;\n",
                "/* crate::b::X /* nested */ crate::b::Y */\n",
                "/// [`crate::b::Z`]\n",
                "const S: &str = \"crate::b::X\";\n",
                "const R: &str = r#\"crate::b::\"X\"#;\n",
                "const C: char = '\"'; fn f<'a>(x: &'a str) {}\n",
                "pub(in crate::b) fn g() {}\n",
                "#[cfg(test)]\nuse crate::b::T;\n",
                "#[cfg(test)]\nmod tests { use crate::b::X; }\n",
                "fn h() { crate::c::go() }\n",
            ),
        ),
        ("src/b.rs", ""),
        ("src/c.rs", ""),
        ("src/tests.rs", "use crate::a::X;"),
    ]);
    assert_eq!(edges, ["src/a.rs -> src/c.rs"]);
}

#[test]
fn a_two_file_cycle_is_reported_with_its_edges() {
    let problems = check_crate(
        "demo",
        &sources(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            ("src/a.rs", "use crate::b::X;"),
            ("src/b.rs", "\nfn f() { super::a::y() }"),
            ("src/c.rs", "use crate::a::Z;"),
        ]),
    );
    assert_eq!(
        problems,
        [concat!(
            "demo: an import cycle among 2 files: src/a.rs, src/b.rs\n",
            "    src/a.rs:1 -> src/b.rs (crate::b::X)\n",
            "    src/b.rs:2 -> src/a.rs (super::a::y)",
        )]
    );
}

#[test]
fn a_layer_table_is_parsed_from_the_crate_docs() {
    let docs = concat!(
        "//! A crate.\n",
        "//!\n",
        "//! ## Layers\n",
        "//!\n",
        "//! 3. `server` — the registry; it names `Thing` too\n",
        "//! 2. `handlers`, `publish`: what answers\n",
        "//!    (a continuation line naming `not_listed`)\n",
        "//! 1. `error`,\n",
        "//!    `wrapped` — names go on on an indented line\n",
        "//!    `not_listed` after the description\n",
        "//!\n",
        "//! # Next\n",
        "//! 4. `not_a_layer`\n",
        "mod error;\n",
    );
    let table = layers(docs).unwrap().unwrap();
    let expected: BTreeMap<String, usize> = [
        ("server", 3),
        ("handlers", 2),
        ("publish", 2),
        ("error", 1),
        ("wrapped", 1),
    ]
    .into_iter()
    .map(|(name, layer)| (name.to_owned(), layer))
    .collect();
    assert_eq!(table, expected);
    assert_eq!(layers("//! No table.\nmod a;").unwrap(), None);
    assert!(layers("//! # Layers\n//! 1. nothing quoted\n").is_err());
}

#[test]
fn an_import_from_a_higher_layer_and_an_unlisted_module_fail() {
    let lib =
        "//! # Layers\n//! 2. `top`\n//! 1. `bottom`, `gone`\nmod top; mod bottom; mod extra;";
    let problems = check_crate(
        "demo",
        &sources(&[
            ("src/lib.rs", lib),
            ("src/top.rs", "use crate::bottom::X;"),
            ("src/bottom/mod.rs", "mod deep;"),
            ("src/bottom/deep.rs", "use crate::top::Y;"),
            ("src/extra.rs", ""),
        ]),
    );
    assert_eq!(
        problems,
        [
            "demo: the top-level module `extra` is missing from the Layers list in src/lib.rs",
            "demo: the Layers list in src/lib.rs names `gone`, which is not a module",
            "demo: `bottom` (layer 1) imports `top` (layer 2), which is above it: \
             src/bottom/deep.rs:1 -> src/top.rs (crate::top::Y)",
        ]
    );
}

#[test]
fn only_the_declared_type_group_may_form_a_cycle() {
    let cycle = [
        ("src/a.rs", "fn f() { crate::b::x() }"),
        ("src/b.rs", "fn f() { crate::a::y() }"),
    ];
    let declared = |docs: &str| {
        let mut files = vec![("src/lib.rs", docs)];
        files.extend(cycle);
        check_crate("demo", &sources(&files))
    };
    assert!(declared("//! # Type group\n//! `src/a.rs`, `src/b.rs`\nmod a; mod b;").is_empty());
    // A group that is not the cycle found (a stale or a wider list) fails,
    // and so does the cycle it no longer covers.
    let stale = declared("//! # Type group\n//! `src/a.rs`, `src/b.rs`, `src/c.rs`\nmod a; mod b;");
    assert_eq!(stale.len(), 2, "{stale:?}");
    assert!(
        stale[0].contains("an import cycle among 2 files"),
        "{stale:?}"
    );
    assert!(
        stale[1].contains("not exactly one import cycle"),
        "{stale:?}"
    );
    assert_eq!(declared("mod a; mod b;").len(), 1);
}
