//! `ALGORITHM_INSTANCE` as the preprocessor makes it from macros (`"Aigis-enc" STR(PARAMS)`
//! with `-DPARAMS=1` is `Aigis-enc1`), read from the API header and the headers it
//! includes by quoted name, and the instance's `-D` defines. Object-like macros, function-
//! like macros (stringification `#x` included) and adjacent string literals; conditionals
//! are not evaluated, so a name defined twice differently is no answer.

use std::collections::{BTreeMap, BTreeSet};

use super::{join, parent, Tree};

/// Most headers read for one instance and nested expansions.
const FILES_MAX: usize = 64;
const DEPTH_MAX: usize = 32;

/// A macro: its parameters (None: object-like) and its body.
#[derive(Clone, PartialEq)]
struct Macro {
    params: Option<Vec<String>>,
    body: String,
}

/// The macros an instance sees: the `-D` defines win over the headers' `#define`s.
pub struct Macros {
    defs: BTreeMap<String, Macro>,
    /// Names the headers define more than once, differently.
    clashes: BTreeSet<String>,
}

/// `header` and the files it includes by quoted name, resolved beside the includer.
fn closure(tree: &Tree, header: &str) -> Vec<String> {
    let mut seen = vec![header.to_owned()];
    let mut i = 0;
    while i < seen.len() && seen.len() < FILES_MAX {
        let from = seen[i].clone();
        for name in quoted_includes(&tree.read(&from)) {
            if let Some(p) = normal(&join(parent(&from), &name)).filter(|p| tree.files.contains(p) && !seen.contains(p))
            {
                seen.push(p);
            }
        }
        i += 1;
    }
    seen
}

fn quoted_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            l.trim_start().strip_prefix('#')?.trim_start().strip_prefix("include")?.trim().strip_prefix('"')
        })
        .filter_map(|r| r.split_once('"').map(|(n, _)| n.to_owned()))
        .collect()
}

/// A relative path with `.` and `..` resolved; None above the top.
fn normal(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            c => out.push(c),
        }
    }
    Some(out.join("/"))
}

/// `#define NAME body` / `#define NAME(a, b) body` of a header's lines (continuations joined).
fn parse_define(line: &str) -> Option<(String, Macro)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?;
    let rest = rest.trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let (name, after) = rest.split_at(end);
    if name.is_empty() {
        return None;
    }
    let (params, body) = match after.strip_prefix('(') {
        Some(p) => {
            let (list, body) = p.split_once(')')?;
            (Some(list.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()), body)
        }
        None => (None, after),
    };
    let body = body.split("//").next().unwrap_or("").trim().to_owned();
    Some((name.to_owned(), Macro { params, body }))
}

impl Macros {
    /// The macros of `header` and its includes, under the `-D` `defines`.
    pub fn of(tree: &Tree, header: &str, defines: &[String]) -> Macros {
        let mut defs: BTreeMap<String, Macro> = BTreeMap::new();
        let mut clashes = BTreeSet::new();
        for file in closure(tree, header) {
            let text = tree.read(&file).replace("\\\r\n", " ").replace("\\\n", " ");
            for (name, m) in text.lines().filter_map(parse_define) {
                match defs.get(&name) {
                    Some(old) if *old != m => {
                        clashes.insert(name);
                    }
                    _ => {
                        defs.insert(name, m);
                    }
                }
            }
        }
        for d in defines {
            let (name, value) = d.split_once('=').unwrap_or((d, "1"));
            clashes.remove(name);
            defs.insert(name.to_owned(), Macro { params: None, body: value.to_owned() });
        }
        Macros { defs, clashes }
    }

    /// The string `name` expands to: adjacent string literals only, none escaped.
    pub fn string(&self, name: &str) -> Option<String> {
        let text = self.expand(name, 0)?;
        let mut out = String::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (lit, after) = rest.strip_prefix('"')?.split_once('"')?;
            if lit.contains('\\') {
                return None;
            }
            out.push_str(lit);
            rest = after.trim_start();
        }
        Some(out)
    }

    /// `text` with every macro expanded (rescanned), or None when it meets a clash.
    fn expand(&self, text: &str, depth: usize) -> Option<String> {
        if depth > DEPTH_MAX {
            return None;
        }
        let mut out = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if c == '"' {
                let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
                out.push_str(&rest[..end]);
                rest = &rest[end..];
                continue;
            }
            if !(c.is_ascii_alphabetic() || c == '_') {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            let (word, after) = rest.split_at(end);
            let (piece, after) = self.word(word, after, depth)?;
            out.push_str(&piece);
            rest = after;
        }
        Some(out)
    }

    /// One identifier (and its arguments, for a function-like macro) expanded.
    fn word<'a>(&self, word: &str, after: &'a str, depth: usize) -> Option<(String, &'a str)> {
        if self.clashes.contains(word) {
            return None;
        }
        let Some(m) = self.defs.get(word) else { return Some((word.to_owned(), after)) };
        let Some(params) = &m.params else { return Some((self.expand(&m.body, depth + 1)?, after)) };
        let Some((args, tail)) = call_args(after) else { return Some((word.to_owned(), after)) };
        let body = substitute(&m.body, params, &args, |a| self.expand(a, depth + 1))?;
        Some((self.expand(&body, depth + 1)?, tail))
    }
}

/// `(a, b)` after a function-like macro's name: its arguments and what follows.
fn call_args(after: &str) -> Option<(Vec<String>, &str)> {
    let inner = after.trim_start().strip_prefix('(')?;
    let (mut depth, mut args, mut cur) = (0usize, Vec::new(), String::new());
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                args.push(cur.trim().to_owned());
                return Some((args, &inner[i + 1..]));
            }
            ')' => depth -= 1,
            ',' if depth == 0 => {
                args.push(std::mem::take(&mut cur).trim().to_owned());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    None
}

/// A function-like macro's body with its parameters replaced: `#p` by the argument as
/// written, in quotes; `p` by the argument expanded.
fn substitute(
    body: &str,
    params: &[String],
    args: &[String],
    expand: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let arg = |w: &str| params.iter().position(|p| p == w).map(|i| args.get(i).map_or("", String::as_str));
    let mut out = String::new();
    let mut rest = body;
    while let Some(c) = rest.chars().next() {
        let stringify = c == '#' && !rest.starts_with("##");
        let at = if stringify { rest[1..].trim_start() } else { rest };
        let end = at.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(at.len());
        match arg(&at[..end]).filter(|_| end > 0) {
            Some(a) if stringify => out.push_str(&format!("\"{a}\"")),
            Some(a) => out.push_str(&expand(a)?),
            None if end > 0 => out.push_str(&at[..end]),
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
        }
        rest = &at[end..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn macros(header: &str, defines: &[&str]) -> Macros {
        let mut defs = BTreeMap::new();
        let mut clashes = BTreeSet::new();
        for (n, m) in header.lines().filter_map(parse_define) {
            if defs.get(&n).is_some_and(|o| *o != m) {
                clashes.insert(n.clone());
            }
            defs.insert(n, m);
        }
        for d in defines {
            let (n, v) = d.split_once('=').unwrap_or((d, "1"));
            defs.insert(n.into(), Macro { params: None, body: v.into() });
        }
        Macros { defs, clashes }
    }

    #[test]
    fn algorithm_instance_from_macros_and_defines() {
        let h = "#define STR_(x) #x\n#define STR(x) STR_(x)\n#define ALGORITHM_INSTANCE \"Aigis-enc\" STR(PARAMS)\n";
        assert_eq!(macros(h, &["PARAMS=2"]).string("ALGORITHM_INSTANCE").as_deref(), Some("Aigis-enc2"));
        // Without the define, the name itself is stringified.
        assert_eq!(macros(h, &[]).string("ALGORITHM_INSTANCE").as_deref(), Some("Aigis-encPARAMS"));
        let direct = "#define S(x) # x\n#define ALGORITHM_INSTANCE \"T-\" S(PARAMS)\n";
        assert_eq!(macros(direct, &["PARAMS=1"]).string("ALGORITHM_INSTANCE").as_deref(), Some("T-PARAMS"));
        let name = "#define NAME \"Toy-\" LEVEL\n#define LEVEL \"L3\"\n#define ALGORITHM_INSTANCE NAME\n";
        assert_eq!(macros(name, &[]).string("ALGORITHM_INSTANCE").as_deref(), Some("Toy-L3"));
        let twice = "#define LEVEL \"a\"\n#define LEVEL \"b\"\n#define ALGORITHM_INSTANCE LEVEL\n";
        assert_eq!(macros(twice, &[]).string("ALGORITHM_INSTANCE"), None, "defined twice: no answer");
        assert_eq!(macros("#define ALGORITHM_INSTANCE f(1)\n", &[]).string("ALGORITHM_INSTANCE"), None);
        assert_eq!(normal("a/kat_test/../api.h").as_deref(), Some("a/api.h"));
        assert_eq!(normal("../x"), None);
    }
}
