//! Where an instance's sources are, when they are not beside its API header: what the
//! archive's own Makefile builds (read, never run), else the folder above that the header's
//! folder includes from (`#include "../api.h"`); and which official ICCS files a draft
//! needs: only those its build uses and the archive does not have.

use super::make::{Build, Makefile};
use super::{base, common_folder, default_sources, excluded, is_under, parent, q, Tree};

/// Folders above the header's searched for a Makefile.
const UP_MAX: usize = 2;

/// An instance's folder, sources and defines, and why.
pub struct Located {
    pub dir: String,
    pub sources: Vec<String>,
    pub defines: Vec<String>,
    pub why: String,
}

/// The instance whose API header is in `hdir`: from a Makefile, else from relative
/// includes, else the harness's default rule on `hdir`.
pub fn locate(tree: &Tree, hdir: &str, others: &[&str]) -> Located {
    if let Some(l) = from_makefile(tree, hdir, others) {
        return l;
    }
    if let Some(l) = from_includes(tree, hdir, others) {
        return l;
    }
    let (sources, why) = default_sources(tree, hdir, others);
    Located { dir: hdir.to_owned(), sources, defines: Vec::new(), why }
}

/// Whether a folder holding every file of an instance holds another instance's header too.
fn swallows(dir: &str, hdir: &str, others: &[&str]) -> bool {
    dir.is_empty() || others.iter().any(|o| *o != hdir && is_under(o, dir))
}

/// The nearest Makefile (in `hdir` or up to `UP_MAX` folders above) with a target that
/// compiles a file of `hdir`: that target's sources and defines; the instance folder is
/// the deepest holding them all.
fn from_makefile(tree: &Tree, hdir: &str, others: &[&str]) -> Option<Located> {
    let mut dir = hdir.to_owned();
    for _ in 0..=UP_MAX {
        for path in super::make::in_folder(tree, &dir) {
            let m = Makefile::read(tree, &path);
            let Some(b) = best_build(&m, hdir) else { continue };
            let mut paths: Vec<&str> = b.sources.iter().map(String::as_str).collect();
            paths.push(hdir);
            let folder = common_folder(&paths);
            if !swallows(&folder, hdir, others) {
                return Some(made(&m, b, folder));
            }
        }
        if dir.is_empty() {
            break;
        }
        dir = parent(&dir).to_owned();
    }
    None
}

/// The target that builds the instance: one compiling a file of `hdir`; a KAT target
/// first, then the one with most sources.
fn best_build(m: &Makefile, hdir: &str) -> Option<Build> {
    let kat = |b: &Build| {
        b.target.to_ascii_lowercase().contains("kat")
            || b.sources.iter().any(|s| base(s).to_ascii_lowercase().contains("kat"))
    };
    m.builds()
        .into_iter()
        .filter(|b| b.sources.iter().any(|s| parent(s) == hdir))
        .max_by_key(|b| (kat(b), b.sources.len(), std::cmp::Reverse(b.target.clone())))
}

fn made(m: &Makefile, b: Build, dir: String) -> Located {
    let (keep, out): (Vec<String>, Vec<String>) = b.sources.into_iter().partition(|s| !excluded(base(s)));
    let left: Vec<String> = out.iter().map(|s| q(base(s))).collect();
    let left = if left.is_empty() { String::new() } else { format!("; left out by it: {}", left.join(", ")) };
    let why = format!(
        "the sources of target {} in {} (the archive's own build, read, never run) minus the harness's \
         exclusion regex{left}",
        q(&b.target),
        q(&within(&dir, &m.path))
    );
    Located { dir, sources: keep, defines: b.defines, why }
}

/// No Makefile: the header's folder includes from the folder above (`"../api.h"`) and
/// that folder has sources: the instance is the folder above, its sources by the
/// default rule together with the header folder's.
fn from_includes(tree: &Tree, hdir: &str, others: &[&str]) -> Option<Located> {
    let up = parent(hdir);
    let reaches_up = tree.children(hdir).any(|f| {
        tree.read(f).lines().any(|l| {
            let l = l.trim_start();
            l.starts_with('#') && l.contains("include") && l.contains("\"../")
        })
    });
    if !reaches_up || swallows(up, hdir, others) {
        return None;
    }
    let (mut sources, why_up) = default_sources(tree, up, &[]);
    if sources.is_empty() {
        return None;
    }
    let (own, _) = default_sources(tree, hdir, &[]);
    let own: Vec<String> = own.into_iter().filter(|s| parent(s) == hdir).collect();
    let replaced = replaced_by(tree, &sources, &own);
    sources.retain(|s| !replaced.contains(s));
    sources.extend(own);
    let replaced: Vec<String> = replaced.iter().map(|s| q(base(s))).collect();
    let replaced = match replaced.is_empty() {
        true => String::new(),
        false => {
            format!("; left out as the header folder's sources define the same functions: {}", replaced.join(", "))
        }
    };
    let why = format!(
        "the header's folder includes from the folder above (`#include \"../...\"`), so the instance is that \
         folder: {why_up}; and the same of {}{replaced}",
        q(base(hdir))
    );
    Some(Located { dir: up.to_owned(), sources, defines: Vec::new(), why })
}

/// The sources of `up` that define a function a source of the header's folder defines too
/// (`randombytes.c` beside `kat_test/rng.c`, the KAT build's replacement): two definitions
/// cannot link, and the header's folder is the KAT build's.
fn replaced_by(tree: &Tree, up: &[String], own: &[String]) -> Vec<String> {
    let theirs: std::collections::BTreeSet<String> =
        own.iter().flat_map(|s| defined_functions(&tree.read(s))).collect();
    up.iter().filter(|s| defined_functions(&tree.read(s)).iter().any(|f| theirs.contains(f))).cloned().collect()
}

/// The external functions a C file defines, read as a person would: a line at the first
/// column that is no directive, declares no `static` and ends in no `;`, up to its `(`.
fn defined_functions(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .filter(|l| !l.starts_with("static") && !l.starts_with("typedef") && !l.trim_end().ends_with(';'))
        .filter_map(|l| {
            let head = l.split_once('(')?.0.trim_end();
            let at = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
            let name = &head[at..];
            (at > 0 && !name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// `path` relative to the instance folder `dir` when it is inside it (the same words for
/// every instance), else as it is in the tree.
pub fn within(dir: &str, path: &str) -> String {
    path.strip_prefix(dir).and_then(|r| r.strip_prefix('/')).unwrap_or(path).to_owned()
}

/// Whether the build of these sources (and the files they include) uses `name`: the
/// KAT driver needs the DRNG always; `auxfunc.c` only where something calls its hashes.
pub fn needs(tree: &Tree, name: &str, reached: &[String]) -> bool {
    if name != "auxfunc.c" {
        return true;
    }
    reached.iter().any(|f| {
        let t = tree.read(f);
        t.contains("auxfunc.h") || ["pseudohash", "pseudoXOF", "sm3hash"].iter().any(|n| t.contains(n))
    })
}

/// The archive's own copy of `name` for the instance in `dir`: inside it, else in a folder
/// above it, never inside another instance's folder; the nearest.
pub fn own_copy(tree: &Tree, name: &str, dir: &str, others: &[&str]) -> Option<String> {
    let mut copies: Vec<&String> = tree
        .by_name
        .get(name)?
        .iter()
        .filter(|p| is_under(p, dir) || is_under(dir, parent(p)))
        .filter(|p| !others.iter().any(|o| *o != dir && !is_under(dir, o) && is_under(p, o)))
        .collect();
    copies.sort_by_key(|p| (!is_under(p, dir), p.split('/').count().abs_diff(dir.split('/').count())));
    copies.first().map(|p| (*p).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn functions_a_file_defines() {
        let c = "#include <x.h>\nstatic int f(void) { return 0; }\nint g(void);\nvoid randombytes(unsigned char *x,\n\
                 unsigned long long n) {\n}\nunsigned long long kem_get_pk_len_bytes(void) { return 1; }\n  int h(void) {}\n";
        assert_eq!(defined_functions(c), ["randombytes", "kem_get_pk_len_bytes"]);
    }
}
