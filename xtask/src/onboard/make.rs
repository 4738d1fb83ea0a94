//! What an archive's Makefile says about its own build, read and never run: variable
//! assignments (`=`, `:=`, `::=`, `+=`, `?=`), `$(VAR)` and `${VAR}` expansion,
//! substitution references, a few text functions (`wildcard` over the extracted tree,
//! `addprefix`, `addsuffix`, `filter`, `filter-out`, `patsubst`, `sort`, `strip`,
//! `notdir`), line continuations, `include` of another file of the tree, and rules with
//! their recipes (`$^`, `$<`, `$+`; a glob word matched over the tree, as make does in
//! prerequisites and the shell in recipes). Conditionals are skipped (every assignment counts, the
//! last one wins); anything else expands to nothing. Nothing of it reaches a shell.

use std::collections::BTreeMap;

use super::{base, is_source, join, parent, Tree};

/// The Makefile names make looks for, in its order.
pub const NAMES: &[&str] = &["GNUmakefile", "makefile", "Makefile"];
/// Most nested `include`s, expansions and bytes of expanded text.
const DEPTH_MAX: usize = 16;
const TEXT_MAX: usize = 1 << 20;

/// One rule: its targets, prerequisites and recipe lines, unexpanded.
struct Rule {
    targets: String,
    prereqs: String,
    recipe: Vec<String>,
}

/// A read Makefile: its folder (relative to the tree's top), variables and rules.
pub struct Makefile<'t> {
    tree: &'t Tree,
    pub path: String,
    dir: String,
    vars: BTreeMap<String, (bool, String)>,
    rules: Vec<Rule>,
}

/// What one target of a Makefile builds: its sources (tree paths) and `-D` defines.
pub struct Build {
    pub target: String,
    pub sources: Vec<String>,
    pub defines: Vec<String>,
}

/// Physical lines joined at a trailing backslash.
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        match line.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(line);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The line up to its first unescaped `#`.
fn uncomment(line: &str) -> &str {
    let b = line.as_bytes();
    (0..b.len()).find(|&i| b[i] == b'#' && (i == 0 || b[i - 1] != b'\\')).map_or(line, |i| &line[..i])
}

/// `NAME op value` of an assignment line, with its operator.
fn assignment(line: &str) -> Option<(&str, &str, &str)> {
    let eq = line.find('=')?;
    if line[..eq].contains(':') && !line[..eq].ends_with(':') {
        return None;
    }
    let head = &line[..eq];
    let (name, op) =
        ["::", ":", "+", "?", "!"].iter().find_map(|op| head.strip_suffix(op).map(|n| (n, *op))).unwrap_or((head, ""));
    let name = name.trim();
    let name = name.strip_prefix("override ").unwrap_or(name).trim();
    let name = name.strip_prefix("export ").unwrap_or(name).trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| (name, op, line[eq + 1..].trim()))
}

const DIRECTIVES: &[&str] =
    &["ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "define", "endef", "unexport", "vpath", "undefine"];

impl<'t> Makefile<'t> {
    /// Reads `path` (a file of `tree`) and the files it includes.
    pub fn read(tree: &'t Tree, path: &str) -> Makefile<'t> {
        let dir = parent(path).to_owned();
        let mut m = Makefile { tree, path: path.to_owned(), dir, vars: BTreeMap::new(), rules: Vec::new() };
        m.parse(path, 0);
        m
    }

    fn parse(&mut self, path: &str, depth: usize) {
        if depth > DEPTH_MAX {
            return;
        }
        for line in logical_lines(&self.tree.read(path)) {
            if let Some(cmd) = line.strip_prefix('\t') {
                if let Some(rule) = self.rules.last_mut() {
                    rule.recipe.push(uncomment(cmd).trim().to_owned());
                }
                continue;
            }
            self.statement(uncomment(&line).trim(), depth);
        }
    }

    fn statement(&mut self, line: &str, depth: usize) {
        let first = line.split_whitespace().next().unwrap_or("");
        if line.is_empty() || DIRECTIVES.contains(&first) {
            return;
        }
        if ["include", "-include", "sinclude"].contains(&first) {
            for f in self.expand(&line[first.len()..], None).split_whitespace() {
                if let Some(p) = self.resolve(f).filter(|p| self.tree.files.contains(p)) {
                    self.parse(&p, depth + 1);
                }
            }
            return;
        }
        if let Some((name, op, value)) = assignment(line) {
            self.assign(name, op, value);
            return;
        }
        if let Some((targets, prereqs)) = line.split_once(':') {
            let prereqs = prereqs.trim_start_matches(':');
            let prereqs = prereqs.split_once(';').map_or(prereqs, |(p, _)| p);
            self.rules.push(Rule { targets: targets.trim().into(), prereqs: prereqs.into(), recipe: Vec::new() });
        }
    }

    fn assign(&mut self, name: &str, op: &str, value: &str) {
        let old = self.vars.get(name).cloned();
        let new = match (op, old) {
            ("?", Some(v)) => v,
            ("+", Some((true, v))) => (true, format!("{v} {value}")),
            ("+", Some((false, v))) => (false, format!("{v} {}", self.expand(value, None))),
            (":" | "::", _) => (false, self.expand(value, None)),
            ("!", _) => (false, String::new()),
            _ => (true, value.to_owned()),
        };
        self.vars.insert(name.to_owned(), new);
    }

    /// A word of the Makefile as a path of the tree (relative to the Makefile's folder).
    fn resolve(&self, word: &str) -> Option<String> {
        let mut parts: Vec<&str> = self.dir.split('/').filter(|c| !c.is_empty()).collect();
        for c in word.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    parts.pop()?;
                }
                c => parts.push(c),
            }
        }
        Some(parts.join("/"))
    }

    /// `text` expanded; `auto` holds a rule's `$^`, `$+` and `$<`.
    fn expand(&self, text: &str, auto: Option<&Rule>) -> String {
        self.expand_at(text, auto, 0)
    }

    fn expand_at(&self, text: &str, auto: Option<&Rule>, depth: usize) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (body, tail) = match after.chars().next() {
                Some(open @ ('(' | '{')) => split_ref(after, open),
                Some(c) => (&after[..c.len_utf8()], &after[c.len_utf8()..]),
                None => ("", ""),
            };
            if depth < DEPTH_MAX && out.len() < TEXT_MAX {
                out.push_str(&self.reference(body, auto, depth + 1));
            }
            rest = tail;
        }
        out.push_str(rest);
        out
    }

    /// The value of `$(body)`: a function, a substitution reference or a variable.
    fn reference(&self, body: &str, auto: Option<&Rule>, depth: usize) -> String {
        if body == "$" {
            return "$".into();
        }
        if let Some(r) = auto.filter(|_| ["^", "+", "<"].contains(&body)) {
            let all = self.expand_at(&r.prereqs, None, depth);
            return if body == "<" { all.split_whitespace().next().unwrap_or("").into() } else { all };
        }
        if let Some((f, args)) = body.split_once(char::is_whitespace) {
            if let Some(v) = self.function(f, args, auto, depth) {
                return v;
            }
        }
        if let Some((var, sub)) = body.split_once(':') {
            let (from, to) = sub.split_once('=').unwrap_or((sub, ""));
            let words = self.reference(var, auto, depth);
            let (from, to) = (format!("%{from}"), format!("%{to}"));
            return words.split_whitespace().map(|w| patsubst(&from, &to, w)).collect::<Vec<_>>().join(" ");
        }
        let name = self.expand_at(body, auto, depth);
        match self.vars.get(name.trim()) {
            Some((true, v)) => self.expand_at(v, auto, depth),
            Some((false, v)) => v.clone(),
            None => String::new(),
        }
    }

    fn function(&self, f: &str, args: &str, auto: Option<&Rule>, depth: usize) -> Option<String> {
        let args: Vec<String> = split_args(args).iter().map(|a| self.expand_at(a, auto, depth)).collect();
        let words = |i: usize| args.get(i).map_or(Vec::new(), |a| a.split_whitespace().map(str::to_owned).collect());
        let arg = |i: usize| args.get(i).map_or("", |a| a.trim());
        let list: Vec<String> = match f {
            "wildcard" => words(0).iter().flat_map(|p| self.wildcard(p)).collect(),
            "addprefix" => words(1).iter().map(|w| format!("{}{w}", arg(0))).collect(),
            "addsuffix" => words(1).iter().map(|w| format!("{w}{}", arg(0))).collect(),
            "filter" => words(1).into_iter().filter(|w| words(0).iter().any(|p| pattern(p, w).is_some())).collect(),
            "filter-out" => {
                words(1).into_iter().filter(|w| !words(0).iter().any(|p| pattern(p, w).is_some())).collect()
            }
            "patsubst" => words(2).iter().map(|w| patsubst(arg(0), arg(1), w)).collect(),
            "notdir" => words(0).iter().map(|w| base(w).to_owned()).collect(),
            "sort" => words(0).into_iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect(),
            "strip" => words(0),
            _ => return None,
        };
        Some(list.join(" "))
    }

    /// Files of the tree a `wildcard` pattern matches (a pattern in its last part only),
    /// written as make writes them: the pattern's folder, then the name.
    fn wildcard(&self, pat: &str) -> Vec<String> {
        let (folder, name) = pat.rsplit_once('/').map_or(("", pat), |(d, n)| (d, n));
        let Some(dir) = self.resolve(folder) else { return Vec::new() };
        let shown = |n: &str| if folder.is_empty() { n.to_owned() } else { format!("{folder}/{n}") };
        self.tree.children(&dir).map(base).filter(|n| glob(name, n)).map(shown).collect()
    }

    /// Every rule that builds something from sources: its sources and defines.
    pub fn builds(&self) -> Vec<Build> {
        self.rules.iter().filter(|r| !r.targets.contains('%') && !r.recipe.is_empty()).map(|r| self.build(r)).collect()
    }

    fn build(&self, r: &Rule) -> Build {
        let recipe: Vec<String> = r.recipe.iter().map(|l| self.expand(l, Some(r))).collect();
        let words: Vec<String> = std::iter::once(self.expand(&r.prereqs, None))
            .chain(recipe.iter().cloned())
            .flat_map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .flat_map(|w| if w.contains(['*', '?']) { self.wildcard(&w) } else { vec![w] })
            .collect();
        let mut sources = Vec::new();
        let mut objects = false;
        for w in &words {
            let (path, object) = self.source_of(w);
            objects |= object && path.is_some();
            if let Some(p) = path.filter(|p| !sources.contains(p)) {
                sources.push(p);
            }
        }
        let mut defines = defines_in(&recipe);
        if objects || defines.is_empty() {
            let compile: Vec<String> = self
                .rules
                .iter()
                .filter(|p| p.targets.contains("%.o"))
                .flat_map(|p| p.recipe.iter().map(move |l| self.expand(l, Some(p))))
                .collect();
            defines.extend(defines_in(&compile).into_iter().filter(|d| !defines.contains(d)).collect::<Vec<_>>());
        }
        if defines.is_empty() {
            defines = self.flag_defines();
        }
        Build { target: r.targets.clone(), sources, defines }
    }

    /// The source a word names (`x.c`, `x.S`, or the `x.c` of an object `x.o`) in the tree.
    fn source_of(&self, word: &str) -> (Option<String>, bool) {
        let word = word.trim_matches(['"', '\'']);
        let cands: Vec<String> = match word.strip_suffix(".o") {
            Some(stem) => vec![format!("{stem}.c"), format!("{stem}.S")],
            None if is_source(base(word)) => vec![word.to_owned()],
            None => return (None, false),
        };
        let hit = cands.iter().filter_map(|c| self.resolve(c)).find(|p| self.tree.files.contains(p));
        (hit, word.ends_with(".o"))
    }

    /// `-D` defines of the usual flag variables, for a rule whose recipe shows none.
    fn flag_defines(&self) -> Vec<String> {
        let lines: Vec<String> =
            ["CPPFLAGS", "CFLAGS", "DEFS", "DEFINES", "DFLAGS"].iter().map(|v| self.reference(v, None, 0)).collect();
        defines_in(&lines)
    }
}

/// `-DNAME` and `-DNAME=value` (also `-D NAME`) of command lines, in order, once each.
fn defines_in(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in lines {
        let words: Vec<&str> = l.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim_matches('\'');
            let d = match w.strip_prefix("-D") {
                Some("") => words.get(i + 1).map(|n| n.trim_matches('\'')),
                Some(d) => Some(d),
                None => None,
            };
            if let Some(d) = d.filter(|d| !d.is_empty() && !out.iter().any(|o| o == d)) {
                out.push(d.to_owned());
            }
        }
    }
    out
}

/// `$(`...`)` split at its matching close: (body, what follows).
fn split_ref(after: &str, open: char) -> (&str, &str) {
    let close = if open == '(' { ')' } else { '}' };
    let mut depth = 0usize;
    for (i, c) in after.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return (&after[1..i], &after[i + 1..]);
            }
        }
    }
    (&after[1..], "")
}

/// A function's arguments, split at top-level commas.
fn split_args(args: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in args.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&args[start..]);
    out
}

/// The stem a make pattern (`%.c`, one `%` at most) matches in `word`.
fn pattern<'w>(pat: &str, word: &'w str) -> Option<&'w str> {
    match pat.split_once('%') {
        Some((pre, post)) if word.len() >= pre.len() + post.len() => word.strip_prefix(pre)?.strip_suffix(post),
        Some(_) => None,
        None => (pat == word).then_some(""),
    }
}

fn patsubst(from: &str, to: &str, word: &str) -> String {
    match pattern(from, word) {
        Some(stem) if from.contains('%') => to.replacen('%', stem, 1),
        Some(_) => to.to_owned(),
        None => word.to_owned(),
    }
}

/// A shell glob of one path part: `*`, `?` and plain characters.
fn glob(pat: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pat.chars().collect(), name.chars().collect());
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    !name.starts_with('.') && go(&p, &n)
}

/// The Makefiles of `dir`, in make's order.
pub fn in_folder(tree: &Tree, dir: &str) -> Vec<String> {
    NAMES.iter().map(|n| join(dir, n)).filter(|p| tree.files.contains(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Tree) {
        let tmp = tempfile::tempdir().unwrap();
        for (p, text) in files {
            let path = tmp.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let top = camino::Utf8Path::from_path(tmp.path()).unwrap().to_owned();
        let t = Tree::scan(&top).unwrap();
        (tmp, t)
    }

    const MK: &str = "SRCDIR := ..\nCFLAGS = -O2 $(DEFS) # the level\nDEFS = -DPARAMS=2\nDEFS += -DUSE_X\n\
        SRCS = $(SRCDIR)/kem.c \\\n  $(SRCDIR)/poly.c\nSRCS += $(filter-out rng_unused.c,$(wildcard *.c))\n\
        OBJS = $(SRCS:.c=.o)\nkat: $(OBJS) KAT_KEM.c\n\t$(CC) $(CFLAGS) $^ -o $@\nspeed: ../speed.c\n\t$(CC) $< -o $@\nglob:\n\tcc ../k*.c r?ng_unused.c -o $@\n";

    #[test]
    fn a_makefile_gives_sources_and_defines_of_each_target() {
        let files = [
            ("L/kat_test/Makefile", MK),
            ("L/kat_test/drng.c", ""),
            ("L/kat_test/rng_unused.c", ""),
            ("L/kat_test/KAT_KEM.c", ""),
            ("L/kem.c", ""),
            ("L/poly.c", ""),
            ("L/speed.c", ""),
        ];
        let (_tmp, t) = tree(&files);
        let m = Makefile::read(&t, "L/kat_test/Makefile");
        let builds = m.builds();
        assert_eq!(builds.len(), 3);
        let kat = &builds[0];
        assert_eq!(kat.target, "kat");
        assert_eq!(kat.sources, ["L/kem.c", "L/poly.c", "L/kat_test/KAT_KEM.c", "L/kat_test/drng.c"]);
        assert_eq!(kat.defines, ["PARAMS=2", "USE_X"]);
        assert_eq!(builds[1].sources, ["L/speed.c"]);
        assert_eq!(builds[1].defines, ["PARAMS=2", "USE_X"], "from CFLAGS when the recipe shows none");
        assert_eq!(builds[2].sources, ["L/kem.c"], "a glob matched over the tree; `?` is one character");
    }

    #[test]
    fn make_text_functions_and_patterns() {
        assert_eq!(pattern("%.c", "a.c"), Some("a"));
        assert_eq!(pattern("x%", "x"), Some(""));
        assert_eq!(patsubst("%.c", "%.o", "d/a.c"), "d/a.o");
        assert!(glob("*.c", "kem.c") && !glob("*.c", "kem.h") && !glob("*.c", ".hidden.c"));
        assert_eq!(assignment("A ::= b"), Some(("A", "::", "b")));
        assert_eq!(assignment("override CFLAGS += -DX"), Some(("CFLAGS", "+", "-DX")));
        assert_eq!(assignment("kat: CFLAGS=1"), None);
        assert_eq!(split_args("a,$(b,c),d"), ["a", "$(b,c)", "d"]);
        assert_eq!(logical_lines("A = b \\\r\n c\nD"), ["A = b   c", "D"]);
        assert_eq!(defines_in(&["cc -D X -DY=\"1\" '-DZ'".into()]), ["X", "Y=\"1\"", "Z"]);
    }
}
