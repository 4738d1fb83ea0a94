//! The layers of ARCHITECTURE.md ("Layers"), checked on the source as rust-analyzer's
//! `tidy` checks its own: every `crate::` path outside `#[cfg(test)]` in `xtask/src`
//! names a module of its own layer or of a lower one, and no two files import each
//! other, directly or through others. A failure prints the file and the line.

use std::collections::{BTreeMap, BTreeSet};

/// Bottom to top; a module belongs to the layer of the longest prefix that names it.
const LAYERS: &[(&str, &[&str])] = &[
    ("base", &["project", "sched", "sha", "text"]),
    ("evidence", &["evidence::domain", "evidence::schema", "ui", "lock", "evidence"]),
    ("container", &["container"]),
    ("family", &["family"]),
    ("compile", &["compile"]),
    ("measure", &["measure"]),
    ("kat", &["kat"]),
    ("ct", &["ct", "sanitize"]),
    ("pages", &["pages"]),
    (
        "commands",
        &["campaign_estimate", "campaign", "onboard", "doctor", "list", "matrix", "merge", "evidence::command"],
    ),
    ("flags", &["flags"]),
];

/// Module path (`container::engine`, `pages`) → its code before its `mod tests`.
fn modules() -> BTreeMap<String, String> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut mods = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&src) {
        let path = entry.unwrap().into_path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = path.strip_prefix(&src).unwrap().with_extension("");
        let mut name = rel.to_str().unwrap().replace('/', "::");
        if let Some(parent) = name.strip_suffix("::mod") {
            name = parent.to_owned();
        }
        let code = std::fs::read_to_string(&path).unwrap();
        // The unit tests' module is left out; a test-only `mod x;` is its own file.
        let code = code.split("#[cfg(test)]\nmod tests").next().unwrap().to_owned();
        mods.insert(if name == "lib" || name == "main" { "crate".into() } else { name }, code);
    }
    mods
}

/// The longest module that `path` (after `crate::`) names.
fn resolve<'a>(path: &str, mods: &'a BTreeMap<String, String>) -> Option<&'a str> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| mods.get_key_value(&parts[..n].join("::")).map(|(k, _)| k.as_str()))
}

/// Each path after `crate::` in `code` with the line it is on; a `use crate::{a, b::c}`
/// group split.
fn paths(code: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let line_start = code[..i].rfind('\n').map_or(0, |n| n + 1);
        let line = code[line_start..].lines().next().unwrap_or("").trim().to_owned();
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find("};").unwrap_or(group.len())];
            out.extend(body.split(',').map(|p| (p.trim().split("::{").next().unwrap().to_owned(), line.clone())));
        } else {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            out.push((rest[..end].trim_end_matches(':').to_owned(), line));
        }
    }
    out
}

/// Module → the modules it imports, each with the first line that does.
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn graph(mods: &BTreeMap<String, String>) -> Graph {
    let mut g = Graph::new();
    for (name, code) in mods {
        let mut to = BTreeMap::new();
        for (path, line) in paths(code) {
            match resolve(&path, mods) {
                Some(t) if t != name && t != "crate" => {
                    to.entry(t.to_owned()).or_insert(line);
                }
                _ => {}
            }
        }
        g.insert(name.clone(), to);
    }
    g
}

/// The layer of `module`: its index and name; None when no layer names it.
fn layer(module: &str) -> Option<(usize, &'static str)> {
    let prefix_len = |p: &str| (module == p || module.starts_with(&format!("{p}::"))).then_some(p.len());
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (name, prefixes))| prefixes.iter().filter_map(move |p| prefix_len(p).map(|n| (n, i, *name))))
        .max()
        .map(|(_, i, name)| (i, name))
}

/// Every import of a higher layer, and every module no layer names, as a line to print.
fn upward(g: &Graph) -> Vec<String> {
    let mut wrong = Vec::new();
    for (file, to) in g.iter().filter(|(f, _)| *f != "crate") {
        let Some((at, name)) = layer(file) else {
            wrong.push(format!("{file}: in no layer (add it to LAYERS and to ARCHITECTURE.md)"));
            continue;
        };
        for (target, line) in to {
            if let Some((_, above)) = layer(target).filter(|(t, _)| *t > at) {
                wrong.push(format!("{file} ({name}) imports {target} ({above}): `{line}`"));
            }
        }
    }
    wrong
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &Graph) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        for w in t.g[v].keys().map(String::as_str) {
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                t.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                t.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                comp.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.found.push(comp);
            }
        }
    }
    let mut t = T { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.found
}

/// Each circle with the lines that close it.
fn describe(g: &Graph, circle: &BTreeSet<String>) -> String {
    let edges = circle.iter().flat_map(|a| {
        g[a].iter().filter(|(b, _)| circle.contains(*b)).map(move |(b, line)| format!("  {a} -> {b}: `{line}`"))
    });
    edges.collect::<Vec<_>>().join("\n")
}

#[test]
fn every_file_imports_only_its_own_layer_and_those_below() {
    let g = graph(&modules());
    let wrong = upward(&g);
    assert!(wrong.is_empty(), "imports against the layers (ARCHITECTURE.md, \"Layers\"):\n{}", wrong.join("\n"));
    // The check sees imports at all: the schema takes the domain types.
    assert!(g.get("evidence::schema").is_some_and(|to| to.contains_key("evidence::domain")));
}

#[test]
fn no_two_files_import_each_other() {
    let g = graph(&modules());
    let found = circles(&g);
    let text: Vec<String> = found.iter().map(|c| describe(&g, c)).collect();
    assert!(found.is_empty(), "import circles:\n{}", text.join("\n\n"));
}

/// A planted upward import and a planted circle are found, with their lines: the
/// checks can fail.
#[test]
fn a_planted_upward_import_and_circle_are_found() {
    let mut mods = modules();
    mods.entry("evidence::schema".into()).or_default().push_str("\nuse crate::kat::verify::Verify;\n");
    let g = graph(&mods);
    let wrong = upward(&g);
    assert_eq!(
        wrong,
        ["evidence::schema (evidence) imports kat::verify (kat): `use crate::kat::verify::Verify;`"],
        "the planted import"
    );
    let found = circles(&g);
    assert!(found.iter().any(|c| c.contains("evidence::schema") && c.contains("kat::verify")), "{found:?}");
    assert!(describe(&g, &found[0]).contains("use crate::kat::verify::Verify;"));
    // A module in no layer is named.
    mods.insert("stray".into(), String::new());
    assert!(upward(&graph(&mods)).iter().any(|w| w.starts_with("stray: in no layer")));
}
