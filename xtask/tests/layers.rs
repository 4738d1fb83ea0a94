//! The layers of ARCHITECTURE.md ("Layers"), checked on the source: which files each
//! file of the lower layers may import (`crate::` paths outside `#[cfg(test)]`), and
//! that the one import circle left is no larger than the one written down there, so it
//! can only shrink.

use std::collections::{BTreeMap, BTreeSet};

/// Module path (`container::engine`, `pages`) → its code before `#[cfg(test)]`.
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
        let code = code.split("#[cfg(test)]").next().unwrap().to_owned();
        mods.insert(if name == "lib" || name == "main" { "crate".into() } else { name }, code);
    }
    mods
}

/// The longest module that `path` (after `crate::`) names.
fn resolve<'a>(path: &str, mods: &'a BTreeMap<String, String>) -> Option<&'a str> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| mods.get_key_value(&parts[..n].join("::")).map(|(k, _)| k.as_str()))
}

/// The paths after `crate::` in `code`, a `use crate::{a, b::c}` group split.
fn paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find("};").unwrap_or(group.len())];
            out.extend(body.split(',').map(|p| p.trim().split("::{").next().unwrap().to_owned()));
        } else {
            let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            out.push(rest[..end].trim_end_matches(':').to_owned());
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules();
    let mut g = BTreeMap::new();
    for (name, code) in &mods {
        let to: BTreeSet<String> = paths(code)
            .iter()
            .filter_map(|p| resolve(p, &mods))
            .filter(|t| t != name && *t != "crate")
            .map(str::to_owned)
            .collect();
        g.insert(name.clone(), to);
    }
    g
}

/// What each file of the lower layers may import (ARCHITECTURE.md, "Layers").
const BELOW: &[(&str, &[&str])] = &[
    ("project", &[]),
    ("sha", &["project"]),
    ("evidence::domain", &["sha"]),
    ("evidence::schema", &["evidence::domain", "project", "sha"]),
    ("ui", &["evidence::schema", "project"]),
    ("lock", &["project", "ui"]),
    ("evidence", &["project", "ui"]),
    ("container::interrupt", &["container::engine", "project", "ui"]),
    ("container::engine", &["evidence::domain", "ui"]),
    ("container::hostcpu", &["container::engine"]),
    ("container::emulation", &["evidence::domain"]),
    ("measure::elf", &["evidence::schema", "project"]),
    ("pages", &["measure::stats"]),
    ("pages::chart", &["pages", "measure::stats"]),
    ("pages::constant_time", &["pages", "evidence::schema", "family", "ct::memcheck", "measure::stats"]),
];

#[test]
fn each_lower_file_imports_only_what_its_layer_allows() {
    let g = graph();
    let mut wrong = Vec::new();
    for (file, allowed) in BELOW {
        let to = g.get(*file).unwrap_or_else(|| panic!("no module {file}: update the table"));
        wrong.extend(to.iter().filter(|t| !allowed.contains(&t.as_str())).map(|t| format!("{file} -> {t}")));
    }
    assert!(wrong.is_empty(), "imports against the layers: {wrong:#?}");
    // The check sees imports at all: the schema takes the domain types.
    assert!(g.get("evidence::schema").is_some_and(|to| to.contains("evidence::domain")));
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
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
        for w in t.g[v].iter().map(String::as_str) {
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

/// The circle left (ARCHITECTURE.md, "Layers"): the build, KAT, ct and family modules
/// still take the command line's option types and run sandboxes from family data.
const LEFT: &[&str] = &[
    "compile::builder",
    "compile::iccs",
    "compile::inputs",
    "compile::recipe",
    "compile::sources",
    "compile::submission",
    "compile::trees",
    "container::image",
    "ct",
    "ct::timing",
    "evidence::merge",
    "family",
    "flags",
    "kat::verify",
    "measure::runner",
];

#[test]
fn the_one_import_circle_left_only_shrinks() {
    let found = circles(&graph());
    assert!(found.len() <= 1, "more than one import circle: {found:#?}");
    for circle in &found {
        let new: Vec<&String> = circle.iter().filter(|m| !LEFT.contains(&m.as_str())).collect();
        assert!(new.is_empty(), "modules drawn into the import circle: {new:?}");
    }
    // A made-up circle is found: the check can fail.
    let mut g = BTreeMap::new();
    g.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    g.insert("b".to_owned(), BTreeSet::from(["a".to_owned()]));
    g.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(circles(&g), [BTreeSet::from(["a".to_owned(), "b".to_owned()])]);
}
