//! `cargo xtask onboard ARCHIVE`: a draft manifest and `kat.sha256` for an NGCC archive
//! that has none, inferred with the reference harness's default rules, then verified.
//!
//! Everything in the archive is hostile: it is extracted by the tool's own bounded
//! extraction (no link is ever written or followed), nothing in it is run, and every
//! name taken from it reaches the draft only as a TOML value written by the toml
//! crate, or escaped inside a comment.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::time::Instant;

use anyhow::{Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use sha2::{Digest, Sha256};
use xshell::Shell;

use crate::compile::extract::ExtractLimits;
use crate::compile::options::{Given, Inputs};
use crate::compile::submission::{Instance, Submission};
use crate::compile::trees;
use crate::container::engine::Target;
use crate::evidence::domain::EngineChoice;
use crate::family::{FamilyId, KatPart};
use crate::kat::verify::Verify;
use crate::kat::{self, Canonical, Mode};
use crate::project;

/// `onboard`: a draft manifest and kat.sha256 from an archive, then verify.
#[derive(Debug, Clone)]
pub struct Onboard {
    pub archive: camino::Utf8PathBuf,
    pub id: Option<String>,
    pub dir: camino::Utf8PathBuf,
    pub force: bool,
    pub no_verify: bool,
    pub target: Target,
    pub out: camino::Utf8PathBuf,
    pub iccs_api: Option<camino::Utf8PathBuf>,
}

mod layout;
mod macros;
mod make;

/// How an ICCS API header of a family looks, and what its draft needs. Whether the
/// family can be verified is the family model's word (`FamilyId::get`).
struct Shape {
    family: FamilyId,
    /// The official API header's name starts so (`KEM_AlgorithmInstance.h`).
    header_prefix: &'static str,
    /// Functions the API header declares (all of them).
    markers: &'static [&'static str],
    /// `KAT_<TYPE>_`: the official KAT file name before the instance name (after the
    /// family's part prefix, `KAT_2_12_`, where it has several files).
    kat_prefix: &'static str,
    /// The harness's own KAT driver.
    kat_driver: &'static str,
    /// How its shipped KAT files are read.
    kat_text: KatText,
    /// The official ICCS files the harness adds where the sources lack them.
    iccs: &'static [&'static str],
    /// The draft names the ICCS placeholder hash and DRNG for `profile`.
    profiled: bool,
}

/// How a shipped KAT file is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KatText {
    /// `Count =` starts a record (`:N` covers N of them); blank `*_Len =` lines are
    /// template mode (`nolen`).
    Counted,
    /// One fixed schedule per file, digested whole (`strict`): `Msg_Len =` starts a
    /// record, `Dst_Len =` is the digest width, and a blank `Dst =` is a template.
    Schedule,
}

const PKC_ICCS: &[&str] = &["drng.c", "auxfunc.c"];

const SHAPES: &[Shape] = &[
    Shape {
        family: FamilyId::Kem,
        header_prefix: "KEM_",
        markers: &["kem_keygen", "kem_enc", "kem_dec"],
        kat_prefix: "KAT_KEM_",
        kat_driver: "driver:iccs_kem_kat.c",
        kat_text: KatText::Counted,
        iccs: PKC_ICCS,
        profiled: true,
    },
    Shape {
        family: FamilyId::Sig,
        header_prefix: "SIG_",
        markers: &["sig_keygen", "sig_sign", "sig_verify"],
        kat_prefix: "KAT_SIG_",
        kat_driver: "driver:iccs_sig_kat.c",
        kat_text: KatText::Counted,
        iccs: PKC_ICCS,
        profiled: true,
    },
    Shape {
        family: FamilyId::Kex,
        header_prefix: "KEX_",
        markers: &["kex_init_a"],
        kat_prefix: "KAT_KEX_",
        kat_driver: "driver:iccs_kex_kat.c",
        kat_text: KatText::Counted,
        iccs: PKC_ICCS,
        profiled: true,
    },
    // The hash KAT driver needs only the DRNG; no placeholder primitives to profile.
    Shape {
        family: FamilyId::Hash,
        header_prefix: "CryptHash_",
        markers: &["CryptHash"],
        kat_prefix: "",
        kat_driver: "driver:iccs_hash_kat.c",
        kat_text: KatText::Schedule,
        iccs: &["drng.c"],
        profiled: false,
    },
];

/// The reference harness's `NGCC_EXCLUDE_RE` (`api/link_rules.mk`), case-sensitive as
/// its `grep -vE`: basenames starting with one of these...
const EXCLUDE_PREFIXES: &[&str] = &[
    "KAT_",
    "PQCgenKAT",
    "main",
    "test",
    "bench",
    "speed",
    "cpucycles",
    "osfreq",
    "run_bench",
    "selftest",
    "self_test",
    "example",
    "demo",
    "kat.c",
    "kat_",
];
/// ...or holding one of these right before a dot.
const EXCLUDE_BEFORE_DOT: &[&str] = &["_test", "test_", "_bench", "bench_", "_main", "_kat"];
pub const EXCLUDE_RE: &str = "^(KAT_|PQCgenKAT|main|test|bench|speed|cpucycles|osfreq|run_bench|selftest|self_test|\
                              example|demo|kat\\.c|kat_)|(_test|test_|_bench|bench_|_main|_kat)\\.";

/// Whether the harness's default glob drops this basename (drivers, demos, tests).
pub fn excluded(name: &str) -> bool {
    EXCLUDE_PREFIXES.iter().any(|p| name.starts_with(p))
        || EXCLUDE_BEFORE_DOT.iter().any(|t| name.contains(&format!("{t}.")))
}

/// What the tool's C recipe compiles (the harness also takes .cpp/.cc: no NGCC KEM has any).
fn is_source(name: &str) -> bool {
    name.ends_with(".c") || name.ends_with(".S")
}

/// Most bytes of one header or source read to find includes and names.
const READ_MAX: u64 = 4 << 20;
/// Most files followed through `#include` for one instance.
const INCLUDE_MAX: usize = 5000;

/// A TOML-safe rendering of untrusted text inside a comment or a message: quoted,
/// every control character escaped.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// The extracted tree: every regular file and folder, relative to the top.
struct Tree {
    top: Utf8PathBuf,
    files: BTreeSet<String>,
    by_name: BTreeMap<String, Vec<String>>,
    /// Files whose path holds `{` or `}`, which a manifest pattern cannot name.
    unnameable: Vec<String>,
}

impl Tree {
    fn scan(top: &Utf8Path) -> Result<Tree> {
        let mut files = BTreeSet::new();
        let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut unnameable = Vec::new();
        for e in walkdir::WalkDir::new(top).follow_links(false).sort_by_file_name() {
            let e = e.with_context(|| format!("cannot walk {top}"))?;
            let Some(path) = Utf8Path::from_path(e.path()) else { continue };
            let Ok(rel) = path.strip_prefix(top) else { continue };
            if !e.file_type().is_file() {
                continue;
            }
            if rel.as_str().contains(['{', '}']) {
                unnameable.push(rel.to_string());
                continue;
            }
            by_name.entry(e.file_name().to_string_lossy().into_owned()).or_default().push(rel.to_string());
            files.insert(rel.to_string());
        }
        Ok(Tree { top: top.to_owned(), files, by_name, unnameable })
    }

    fn read(&self, rel: &str) -> String {
        let bytes = project::read_regular(&self.top.join(rel), READ_MAX).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Files directly in `dir`.
    fn children<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.files.iter().map(String::as_str).filter(move |f| parent(f) == dir)
    }
}

fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(p, _)| p)
}

fn base(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, b)| b)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

fn is_under(path: &str, dir: &str) -> bool {
    dir.is_empty() || path == dir || path.starts_with(&format!("{dir}/"))
}

/// Whether `text` declares `f(`, spaces allowed before the parenthesis.
fn declares(text: &str, f: &str) -> bool {
    text.match_indices(f).any(|(at, _)| {
        let before = text[..at].chars().next_back().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        before && text[at + f.len()..].trim_start().starts_with('(')
    })
}

/// The string literals of `#define ALGORITHM_INSTANCE "..."` lines; `None` for a
/// definition that is not one plain literal (built from macros).
fn instance_names(text: &str) -> Vec<Option<String>> {
    let mut names = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#').map(str::trim_start).and_then(|r| r.strip_prefix("define")) else {
            continue;
        };
        let Some(value) = rest.trim_start().strip_prefix("ALGORITHM_INSTANCE") else { continue };
        if !value.starts_with(char::is_whitespace) {
            continue;
        }
        let value = value.trim();
        let literal = value
            .strip_prefix('"')
            .and_then(|v| v.split_once('"'))
            .filter(|(inner, after)| !inner.contains('\\') && after.trim().is_empty())
            .map(|(inner, _)| inner.to_owned());
        names.push(literal);
    }
    names
}

/// A shipped KAT file and its digest under the tool's canonical rule.
struct Kat {
    path: String,
    sha256: String,
    mode: Mode,
    records: usize,
    /// Its digest covers the first `records` records (`:N`), not the whole text.
    counted: bool,
    /// The one `Dst_Len` of a hash KAT file (the width it was made at).
    width: Option<u32>,
    why: String,
}

/// One KAT file of an instance (a hash function has four): the shipped file, or why none.
struct PartKat {
    part: KatPart,
    kat: Option<Kat>,
    why: String,
}

impl PartKat {
    /// The file the harness's driver writes: `KAT_2_12_<label>.txt`, `KAT_KEM_<label>.txt`.
    fn file(&self, f: &Found) -> String {
        format!("{}{}{}.txt", self.part.prefix, f.shape.kat_prefix, f.label)
    }
}

/// What onboarding found for one instance folder.
struct Found {
    dir: String,
    header: String,
    shape: &'static Shape,
    /// The header's one `ALGORITHM_INSTANCE`, if it has one (a literal, or expanded).
    declared: Option<String>,
    /// How `declared` was expanded from macros.
    declared_how: Option<String>,
    label: String,
    label_why: String,
    sources: Vec<String>,
    sources_why: String,
    /// `-D` defines of the archive's own build (its Makefile), in its order.
    defines: Vec<String>,
    includes: Vec<String>,
    unresolved: Vec<String>,
    /// The official ICCS files it needs and neither its sources nor the archive have.
    official_iccs: Vec<&'static str>,
    kats: Vec<PartKat>,
    /// A key exchange's passes and where the guess comes from.
    passes: Option<(u32, String)>,
    /// A hash function's digest width and where it comes from, or why none is known.
    width: Option<std::result::Result<(u32, String), String>>,
    /// Why the header says the instance is an extendable-output function.
    xof: Option<String>,
}

impl Found {
    /// The shipped KAT files found, each with its part.
    fn shipped(&self) -> impl Iterator<Item = (&PartKat, &Kat)> {
        self.kats.iter().filter_map(|p| p.kat.as_ref().map(|k| (p, k)))
    }
}

/// The instance folders of the tree: each folder holding an API header (a header that
/// declares a family's functions) and C sources, directly or in its subfolders.
fn find_instances(tree: &Tree, notes: &mut Vec<String>) -> Vec<(String, String, &'static Shape)> {
    let mut by_dir: BTreeMap<String, Vec<(String, &'static Shape)>> = BTreeMap::new();
    for h in tree.files.iter().filter(|f| f.ends_with(".h")) {
        let text = tree.read(h);
        if let Some(shape) = SHAPES.iter().find(|s| s.markers.iter().all(|m| declares(&text, m))) {
            by_dir.entry(parent(h).to_owned()).or_default().push((h.clone(), shape));
        }
    }
    let mut found = Vec::new();
    for (dir, mut headers) in by_dir {
        let skip =
            dir.split('/').find(|c| c.eq_ignore_ascii_case("AlgorithmInstance") || c.eq_ignore_ascii_case("API_PKC"));
        if let Some(c) = skip {
            notes.push(format!(
                "left out {}: a folder {} is the official API package or its blank template",
                q(&dir),
                q(c)
            ));
            continue;
        }
        if !tree.files.iter().any(|f| is_under(f, &dir) && is_source(base(f))) {
            continue;
        }
        // The official name first (`KEM_*.h`), then the shortest.
        headers.sort_by_key(|(h, s)| (!base(h).starts_with(s.header_prefix), h.len(), h.clone()));
        if headers.len() > 1 {
            let others: Vec<String> = headers[1..].iter().map(|(h, _)| q(base(h))).collect();
            notes.push(format!(
                "{}: API header {} taken; also declaring the API: {}",
                q(&dir),
                q(base(&headers[0].0)),
                others.join(", ")
            ));
        }
        let (h, shape) = headers.swap_remove(0);
        found.push((dir, h, shape));
    }
    let is_ref = |d: &str| d.split('/').any(|c| c.eq_ignore_ascii_case("Reference_Implementation"));
    if found.iter().any(|(d, _, _)| is_ref(d)) {
        for (d, _, _) in found.iter().filter(|(d, _, _)| !is_ref(d)) {
            notes.push(format!(
                "left out {}: not under Reference_Implementation (the harness builds the reference code)",
                q(d)
            ));
        }
        found.retain(|(d, _, _)| is_ref(d));
    }
    found.retain(|(d, _, _)| {
        let plain = !d.is_empty() && !d.contains(['{', '}']);
        if !plain {
            notes.push(format!(
                "left out {}: a folder name with `{{` or `}}` (or the archive's top) cannot be a manifest `dir`",
                q(d)
            ));
        }
        plain
    });
    found
}

/// The harness's default source rule for one instance folder.
fn default_sources(tree: &Tree, dir: &str, others: &[&str]) -> (Vec<String>, String) {
    let pick = |files: Vec<&str>| -> (Vec<String>, Vec<String>) {
        let (out, keep): (Vec<&str>, Vec<&str>) =
            files.into_iter().filter(|f| is_source(base(f))).partition(|f| excluded(base(f)));
        (keep.into_iter().map(str::to_owned).collect(), out.into_iter().map(|f| q(base(f))).collect())
    };
    let rule = format!(
        "every *.c and *.S directly in the instance folder minus the harness's exclusion regex {}",
        q(EXCLUDE_RE)
    );
    let (keep, out) = pick(tree.children(dir).collect());
    let left =
        |out: &[String]| if out.is_empty() { String::new() } else { format!("; left out by it: {}", out.join(", ")) };
    if !keep.is_empty() {
        return (keep, format!("{rule}{}", left(&out)));
    }
    // No source beside the header: the sources of its subfolders (not other instances').
    let nested = tree
        .files
        .iter()
        .map(String::as_str)
        .filter(|f| is_under(f, dir) && parent(f) != dir && !others.iter().any(|o| *o != dir && is_under(f, o)))
        .collect();
    let (keep, out2) = pick(nested);
    let all: Vec<String> = out.into_iter().chain(out2).collect();
    (
        keep,
        format!(
            "{rule}; the instance folder holds none, so every *.c and *.S of its subfolders, by the same regex{}",
            left(&all)
        ),
    )
}

/// The folders holding the headers that the sources include (followed through headers),
/// `dir` first as the harness puts it; the quoted includes found nowhere; and every file
/// reached (the roots and what they include).
fn include_dirs(tree: &Tree, dir: &str, roots: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut dirs = vec![dir.to_owned()];
    let mut unresolved = BTreeSet::new();
    let mut seen: BTreeSet<String> = roots.iter().cloned().collect();
    let mut queue: Vec<String> = roots.to_vec();
    // The KAT driver includes the DRNG header.
    let mut wanted: Vec<(String, String, bool)> = vec![(join(dir, "x"), "drng.h".into(), true)];
    while let Some(file) = queue.pop() {
        if seen.len() > INCLUDE_MAX {
            break;
        }
        for line in tree.read(&file).lines() {
            let Some(rest) =
                line.trim_start().strip_prefix('#').map(str::trim_start).and_then(|r| r.strip_prefix("include"))
            else {
                continue;
            };
            let rest = rest.trim();
            let (quoted, close) = match rest.chars().next() {
                Some('"') => (true, '"'),
                Some('<') => (false, '>'),
                _ => continue,
            };
            if let Some((name, _)) = rest[1..].split_once(close) {
                wanted.push((file.clone(), name.to_owned(), quoted));
            }
        }
        for (from, name, quoted) in std::mem::take(&mut wanted) {
            if name.starts_with('/') || name.split('/').any(|c| c == ".." || c == "." || c.is_empty()) {
                continue;
            }
            let Some(hit) = resolve_include(tree, (&from, &name), dir, &mut dirs) else {
                if quoted {
                    unresolved.insert(name);
                }
                continue;
            };
            if seen.insert(hit.clone()) {
                queue.push(hit);
            }
        }
    }
    (dirs, unresolved.into_iter().collect(), seen.into_iter().collect())
}

/// Where `#include "name"` in `from` lands: beside `from`, in a folder already on the
/// path, else in the folder nearest the instance that has it (added to `dirs`).
fn resolve_include(tree: &Tree, (from, name): (&str, &str), dir: &str, dirs: &mut Vec<String>) -> Option<String> {
    let beside = join(parent(from), name);
    if tree.files.contains(&beside) {
        return Some(beside);
    }
    if let Some(hit) = dirs.iter().map(|d| join(d, name)).find(|p| tree.files.contains(p)) {
        return Some(hit);
    }
    let suffix = format!("/{name}");
    let mut cands: Vec<&String> =
        tree.by_name.get(base(name))?.iter().filter(|p| p.ends_with(&suffix) || p.as_str() == name).collect();
    // Inside the instance first, then the longest common prefix with it.
    let common = |p: &str| p.split('/').zip(dir.split('/')).take_while(|(a, b)| a == b).count();
    cands.sort_by_key(|p| (!is_under(p, dir), std::cmp::Reverse(common(p)), p.len()));
    let hit = cands.first()?.to_string();
    let folder = hit[..hit.len() - name.len()].trim_end_matches('/').to_owned();
    if folder.is_empty() {
        return None;
    }
    dirs.push(folder);
    Some(hit)
}

/// One shipped KAT file of an instance: `KAT_<TYPE>_<name>.txt` (a hash's
/// `KAT_2_12_<name>.txt`, ...) under a `Test_Vector*` folder (else anywhere), by the
/// header's name, the label or the folder name.
fn find_kat(tree: &Tree, f: &Found, part: &KatPart) -> (Option<String>, String) {
    let folder = base(&f.dir);
    let names: Vec<String> = [f.declared.as_deref(), Some(f.label.as_str()), Some(folder)]
        .into_iter()
        .flatten()
        .map(|n| format!("{}{}{n}.txt", part.prefix, f.shape.kat_prefix))
        .fold(Vec::new(), |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        });
    let in_vectors = |p: &str| {
        let comps: Vec<&str> = p.split('/').collect();
        comps.iter().any(|c| c.to_ascii_lowercase().starts_with("test_vector")) && !comps.contains(&"Others")
    };
    for (place, filter) in [("under a Test_Vector* folder", true), ("outside any Test_Vector* folder", false)] {
        for name in &names {
            let mut hits: Vec<&String> =
                tree.by_name.get(name).into_iter().flatten().filter(|p| in_vectors(p) == filter).collect();
            if hits.len() > 1 {
                let own: Vec<&String> =
                    hits.iter().copied().filter(|p| p.split('/').any(|c| c == folder || c == f.label)).collect();
                if !own.is_empty() {
                    hits = own;
                }
            }
            match hits.as_slice() {
                [one] => return (Some((*one).clone()), format!("{} {place}", q(name))),
                [] => {}
                many => {
                    let list: Vec<String> = many.iter().map(|p| q(p)).collect();
                    return (None, format!("{} is ambiguous: {}", q(name), list.join(", ")));
                }
            }
        }
    }
    let tried: Vec<String> = names.iter().map(|n| q(n)).collect();
    (None, format!("no KAT file found (looked for {})", tried.join(", ")))
}

/// Lines the record, template and width checks look at: their first bytes are enough.
struct Scan {
    text: KatText,
    records: usize,
    blank_len: bool,
    blank_dst: bool,
    widths: BTreeSet<String>,
    line: Vec<u8>,
}

impl Scan {
    fn new(text: KatText) -> Scan {
        Scan { text, records: 0, blank_len: false, blank_dst: false, widths: BTreeSet::new(), line: Vec::new() }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end();
            } else if self.line.len() < 256 {
                self.line.push(b);
            }
        }
    }

    fn end(&mut self) {
        let line = String::from_utf8_lossy(&self.line).replace('\r', "");
        let field = line.split_once('=').map(|(k, v)| (k.trim(), v.trim()));
        let starts = match self.text {
            KatText::Counted => kat::is_record_start(&line),
            KatText::Schedule => field.is_some_and(|(k, _)| k == "Msg_Len"),
        };
        self.records += usize::from(starts);
        if kat::is_len_line(&line) && field.is_some_and(|(_, v)| v.is_empty()) {
            self.blank_len = true;
        }
        match field {
            Some(("Dst", "")) => self.blank_dst = true,
            Some(("Dst_Len", v)) if self.widths.len() < 4 => {
                self.widths.insert(v.to_owned());
            }
            _ => {}
        }
        self.line.clear();
    }

    /// The one `Dst_Len` of the file, when it has exactly one and it is a number.
    fn width(&self) -> Option<u32> {
        let [one] = self.widths.iter().collect::<Vec<_>>()[..] else { return None };
        one.parse().ok()
    }
}

/// The digest of a shipped KAT file: `strict`, or `nolen` when its lengths are blank
/// (template mode), over the records it has; a hash's file whole, `strict`, and none
/// for a template (blank digests). Streamed, so any size is fine.
fn digest_kat(tree: &Tree, path: &str, text: KatText) -> Result<Kat> {
    let file = project::open_regular(&tree.top.join(path))?;
    let mut scan = Scan::new(text);
    let mut strict = Canonical::new(Mode::Strict, None, Sha256::new());
    let mut nolen = Canonical::new(Mode::Nolen, None, Sha256::new());
    let mut reader = std::io::BufReader::new(file);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        scan.feed(&buf[..n]);
        strict.update(&buf[..n]);
        nolen.update(&buf[..n]);
    }
    scan.end();
    let counted = text == KatText::Counted;
    if scan.records == 0 {
        let key = if counted { "Count =" } else { "Msg_Len =" };
        anyhow::bail!("{}: no `{key}` line, not a KAT text", q(path));
    }
    if !counted && scan.blank_dst {
        anyhow::bail!("{}: its `Dst =` lines are blank (template mode), so its digest would check no output", q(path));
    }
    let (mode, c, why) = if counted && scan.blank_len {
        (Mode::Nolen, nolen, "its `*_Len =` lines are blank (template mode), so the lengths are left out (nolen)")
    } else {
        (Mode::Strict, strict, "the canonical strict text")
    };
    let sha256 = kat::finish_digest(c).map_err(|e| anyhow::anyhow!("{path}: {e}"))?;
    let (records, width, why) = (scan.records, scan.width(), why.to_owned());
    Ok(Kat { path: path.to_owned(), sha256, mode, records, counted, width, why })
}

/// A plain label from a folder name: every other character becomes `-`.
fn plain_from(name: &str) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "._+-".contains(c) { c } else { '-' }).collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches(|c: char| c == '-' || c == '.' || c == '+').to_owned();
    s.chars().take(project::NAME_MAX).collect()
}

/// Labels: the header's `ALGORITHM_INSTANCE` when it is one plain literal, no
/// placeholder and unique among the instances; else the folder name (made plain).
fn choose_labels(found: &mut [Found]) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for f in found.iter() {
        if let Some(d) = &f.declared {
            *count.entry(d.clone()).or_default() += 1;
        }
    }
    let mut used = BTreeSet::new();
    for f in found.iter_mut() {
        let folder = base(&f.dir).to_owned();
        let (label, why) = match &f.declared {
            Some(d) if d.eq_ignore_ascii_case("AlgorithmInstance") || d.is_empty() => {
                (plain_from(&folder), format!("the folder name: ALGORITHM_INSTANCE is the placeholder {}", q(d)))
            }
            Some(d) if count[d] > 1 => (
                plain_from(&folder),
                format!("the folder name: ALGORITHM_INSTANCE {} is shared by {} instances", q(d), count[d]),
            ),
            Some(d) if project::plain_name(d).is_err() => {
                (plain_from(&folder), format!("the folder name: ALGORITHM_INSTANCE {} is not a plain name", q(d)))
            }
            Some(d) => {
                let how = f.declared_how.as_ref().map_or(String::new(), |h| format!(", {h}"));
                (d.clone(), format!("ALGORITHM_INSTANCE {} of {}{how}", q(d), q(base(&f.header))))
            }
            None => (
                plain_from(&folder),
                format!("the folder name: {} has no single literal ALGORITHM_INSTANCE", q(base(&f.header))),
            ),
        };
        let mut label = if label.is_empty() { "instance".to_owned() } else { label };
        let mut why =
            if label != folder && why.starts_with("the folder name") { format!("{why} (made plain)") } else { why };
        let stem = label.clone();
        let mut n = 2;
        while !used.insert(label.clone()) {
            label = format!("{stem}-{n}");
            n += 1;
            why = format!("{why}; -{} added to tell it from another instance", n - 1);
        }
        f.label = label;
        f.label_why = why;
    }
}

/// Everything onboarding found in an archive.
struct Analysis {
    found: Vec<Found>,
    notes: Vec<String>,
    root: String,
    /// Every folder of the tree that holds a file (relative to its top).
    folders: BTreeSet<String>,
    /// Where the tree has each ICCS file, taken or not.
    iccs_elsewhere: BTreeMap<&'static str, Vec<String>>,
}

fn analyse(tree: &Tree) -> Result<Analysis> {
    let mut notes = Vec::new();
    if !tree.unnameable.is_empty() {
        let list: Vec<String> = tree.unnameable.iter().take(5).map(|p| q(p)).collect();
        notes.push(format!(
            "{} file(s) ignored, as a `{{` or `}}` in a path cannot be named by a manifest pattern: {}",
            tree.unnameable.len(),
            list.join(", ")
        ));
    }
    let dirs = find_instances(tree, &mut notes);
    if dirs.is_empty() {
        return crate::ui::usage(
            "no instance folder found: no folder holds a header declaring an ICCS API (kem_keygen, kem_enc, kem_dec; \
             sig_keygen, sig_sign, sig_verify; kex_init_a; CryptHash) beside C sources. Write the manifest by hand (README, \"Adding a submission\")",
        );
    }
    let families: BTreeSet<FamilyId> = dirs.iter().map(|(_, _, s)| s.family).collect();
    if families.len() > 1 {
        return crate::ui::usage(format!(
            "the archive mixes API families ({families:?}): onboard one family at a time"
        ));
    }
    let all_dirs: Vec<&str> = dirs.iter().map(|(d, _, _)| d.as_str()).collect();
    let mut found: Vec<Found> = Vec::new();
    for (hdir, header, shape) in &dirs {
        let f = found_at(tree, (hdir, header, shape), &all_dirs);
        match found.iter().find(|o| o.dir == f.dir) {
            Some(o) => {
                notes.push(format!("left out {}: its instance folder {} is {}'s", q(header), q(&f.dir), q(&o.header)))
            }
            None => found.push(f),
        }
    }
    let inst_dirs: Vec<String> = found.iter().map(|f| f.dir.clone()).collect();
    let inst_dirs: Vec<&str> = inst_dirs.iter().map(String::as_str).collect();
    for f in &mut found {
        take_iccs(tree, f, &inst_dirs);
    }
    found.retain(|f| {
        if f.sources.is_empty() {
            notes.push(format!("left out {}: no source by the harness's rule ({})", q(&f.dir), f.sources_why));
        }
        !f.sources.is_empty()
    });
    if found.is_empty() {
        return crate::ui::usage(
            "no instance folder has a source the harness's rule would compile: write the manifest by hand",
        );
    }
    let shape = found[0].shape;
    let iccs_elsewhere = shape.iccs.iter().map(|n| (*n, tree.by_name.get(*n).cloned().unwrap_or_default())).collect();
    choose_labels(&mut found);
    let family = shape.family.get()?;
    for f in &mut found {
        f.kats = family.kat_parts.iter().map(|part| read_kat(tree, f, part)).collect();
        let header = tree.read(&f.header);
        if family.passes {
            let kat = f.shipped().next().map(|(_, k)| tree.read(&k.path));
            f.passes = Some(guess_passes(kat.as_deref(), &header));
        }
        if family.digest_width {
            f.xof = guess_xof(f.declared.as_deref(), &header);
            f.width = Some(guess_width(f, &header));
        }
    }
    let mut no_width = Vec::new();
    found.retain(|f| match &f.width {
        Some(Err(why)) => {
            no_width.push(format!("left out {} ({}): no digest width: {why}", f.label, q(&f.dir)));
            false
        }
        _ => true,
    });
    if found.is_empty() {
        return crate::ui::usage(format!(
            "no instance's digest width is said by the archive:\n  {}\nwrite the manifest by hand (README, \
             \"Hash functions\")",
            no_width.join("\n  ")
        ));
    }
    notes.extend(no_width);
    let mut paths: Vec<&str> = found.iter().map(|f| f.dir.as_str()).collect();
    paths.extend(found.iter().flat_map(Found::shipped).map(|(_, k)| parent(&k.path)));
    let root = common_folder(&paths);
    // The root stays strictly above every instance folder (`{dir}` is never `.`).
    let root = if found.iter().any(|f| f.dir == root) { parent(&root).to_owned() } else { root };
    let folders = tree.files.iter().flat_map(|f| ancestors(f)).collect();
    Ok(Analysis { found, notes, root, folders, iccs_elsewhere })
}

/// What onboarding finds for the instance whose API header is `header` in `hdir`.
fn found_at(tree: &Tree, (hdir, header, shape): (&str, &str, &'static Shape), others: &[&str]) -> Found {
    let at = layout::locate(tree, hdir, others);
    let mut roots = at.sources.clone();
    roots.push(header.to_owned());
    let (includes, unresolved, _) = include_dirs(tree, &at.dir, &roots);
    let (declared, declared_how) = declared_name(tree, header, &at.defines);
    Found {
        dir: at.dir,
        header: header.to_owned(),
        shape,
        declared,
        declared_how,
        label: String::new(),
        label_why: String::new(),
        sources: at.sources,
        sources_why: at.why,
        defines: at.defines,
        includes,
        unresolved,
        official_iccs: Vec::new(),
        kats: Vec::new(),
        passes: None,
        width: None,
        xof: None,
    }
}

/// The header's one `ALGORITHM_INSTANCE`: a plain literal, else expanded from its
/// macros under the build's defines (and how).
fn declared_name(tree: &Tree, header: &str, defines: &[String]) -> (Option<String>, Option<String>) {
    let text = tree.read(header);
    match instance_names(&text).as_slice() {
        [Some(one)] => (Some(one.clone()), None),
        [None] => {
            let name = macros::Macros::of(tree, header, defines).string("ALGORITHM_INSTANCE");
            let with = if defines.is_empty() { "no define".to_owned() } else { defines.join(" ") };
            let how = name.as_ref().map(|_| format!("expanded from its macros with {}", q(&with)));
            (name, how)
        }
        _ => (None, None),
    }
}

/// The ICCS files the instance needs and its sources lack: the archive's own copy near
/// it when there is one (added to its sources), else the official one (`iccs`).
fn take_iccs(tree: &Tree, f: &mut Found, dirs: &[&str]) {
    let mut roots = f.sources.clone();
    roots.push(f.header.clone());
    let (_, _, reached) = include_dirs(tree, &f.dir, &roots);
    let mut added = false;
    for name in f.shape.iccs {
        if f.sources.iter().any(|s| base(s) == *name) || !layout::needs(tree, name, &reached) {
            continue;
        }
        match layout::own_copy(tree, name, &f.dir, dirs) {
            Some(copy) => {
                let shown = q(&layout::within(&f.dir, &copy));
                f.sources_why.push_str(&format!("; {name} is not among them, so the archive's own {shown} is taken"));
                f.sources.push(copy);
                added = true;
            }
            None => f.official_iccs.push(name),
        }
    }
    if added {
        let mut roots = f.sources.clone();
        roots.push(f.header.clone());
        (f.includes, f.unresolved, _) = include_dirs(tree, &f.dir, &roots);
    }
}

/// One KAT file of `f`: the shipped one found and its digest, or why there is none.
fn read_kat(tree: &Tree, f: &Found, part: &KatPart) -> PartKat {
    let (path, why) = find_kat(tree, f, part);
    let Some(p) = path else { return PartKat { part: *part, kat: None, why } };
    match digest_kat(tree, &p, f.shape.kat_text) {
        Ok(k) => PartKat { part: *part, kat: Some(k), why },
        Err(e) => PartKat { part: *part, kat: None, why: format!("{why}, but {e:#}") },
    }
}

/// A key exchange's passes: the shipped KAT file's first `Pass_Num` (blank in template
/// mode), else how many pass functions in a row the header declares. The KAT driver
/// checks the guess against `kex_get_passes_num()`.
fn guess_passes(kat: Option<&str>, header: &str) -> (u32, String) {
    let from_kat = kat.and_then(|t| t.lines().find_map(|l| l.trim().strip_prefix("Pass_Num = ")?.trim().parse().ok()));
    if let Some(n) = from_kat.filter(|&n| n <= crate::family::MAX_PASSES) {
        return (n, "the shipped KAT file's Pass_Num".into());
    }
    let declared = (1..=crate::family::MAX_PASSES)
        .take_while(|k| declares(header, &format!("kex_generate_pass{k}_msg_{}", if k % 2 == 1 { 'a' } else { 'b' })))
        .count() as u32;
    (declared, format!("the header declares kex_generate_pass1 to pass{declared} (no Pass_Num in a shipped KAT file)"))
}

/// `#define NAME VALUE` lines of a header whose value is a plain decimal number.
fn numeric_defines(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(rest) =
            line.trim_start().strip_prefix('#').map(str::trim_start).and_then(|r| r.strip_prefix("define"))
        else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else { continue };
        let value = value.trim_start_matches('(').trim_end_matches(')').trim_end_matches(['u', 'U', 'l', 'L']);
        if let Ok(n) = value.parse() {
            out.push((name.to_owned(), n));
        }
    }
    out
}

/// How a macro name says a width: its rank (`DIGEST_BIT_LENGTH`, the ICCS template's,
/// first; another digest or output length in bits; one in bytes) and bits per unit.
fn width_macro(name: &str) -> Option<(u8, u64)> {
    let up = name.to_ascii_uppercase();
    let about = ["DIGEST", "OUTPUT", "HASH"].iter().any(|w| up.contains(w));
    match () {
        _ if name == "DIGEST_BIT_LENGTH" => Some((0, 1)),
        _ if about && up.contains("BIT") => Some((1, 1)),
        _ if about && up.contains("BYTE") => Some((2, 8)),
        _ => None,
    }
}

/// The header's word for the width: the macro of the best rank and its bits; several
/// different values of that rank are no answer.
fn header_width(header: &str) -> std::result::Result<Option<(String, u64)>, String> {
    let defs: Vec<(u8, String, u64)> = numeric_defines(header)
        .into_iter()
        .filter_map(|(n, v)| width_macro(&n).map(|(rank, scale)| (rank, n, v.saturating_mul(scale))))
        .collect();
    let Some(best) = defs.iter().map(|(r, _, _)| *r).min() else { return Ok(None) };
    let hits: Vec<&(u8, String, u64)> = defs.iter().filter(|(r, _, _)| *r == best).collect();
    let values: BTreeSet<u64> = hits.iter().map(|(_, _, v)| *v).collect();
    if values.len() > 1 {
        let list: Vec<String> = hits.iter().map(|(_, n, v)| format!("{n} {v}")).collect();
        return Err(format!("the header defines several widths ({})", list.join(", ")));
    }
    Ok(hits.first().map(|(_, n, v)| (n.clone(), *v)))
}

/// The number a label ends in (`-256`, `_512`, `FEILIAN512`).
fn trailing_number(label: &str) -> Option<u64> {
    let digits = label.len() - label.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    label[label.len() - digits..].parse().ok()
}

/// A width the loader takes: whole bytes, at most the Loop's.
fn usable_width(bits: u64) -> Option<u32> {
    let max = u64::from(crate::compile::submission::MAX_DIGEST_BITS);
    (bits > 0 && bits.is_multiple_of(8) && bits <= max).then_some(bits as u32)
}

/// A hash instance's digest width, from what the archive says (nothing is run): the
/// shipped KAT files' `Dst_Len` (the width their digests were made at), else the
/// header's define, else the label's trailing number (never an XOF's: Dragon-XOF-256
/// is 1280 bits). A source that names an unusable width is passed over, and said.
fn guess_width(f: &Found, header: &str) -> std::result::Result<(u32, String), String> {
    let mut said: Vec<(u64, String)> = Vec::new();
    let mut passed = Vec::new();
    let kats: BTreeSet<u32> = f.shipped().filter_map(|(_, k)| k.width).collect();
    match kats.iter().collect::<Vec<_>>()[..] {
        [] => {}
        [one] => said.push((u64::from(*one), format!("the shipped KAT files' `Dst_Len = {one}`"))),
        _ => return Err(format!("the shipped KAT files disagree on Dst_Len ({kats:?})")),
    }
    match header_width(header) {
        Ok(Some((name, bits))) => {
            said.push((bits, format!("`#define {name}` in {} ({bits} bits)", q(base(&f.header)))))
        }
        Ok(None) => passed.push(format!("{} defines no digest length", q(base(&f.header)))),
        Err(why) => passed.push(why),
    }
    match (trailing_number(&f.label), &f.xof) {
        (Some(n), None) => said.push((n, format!("the label's trailing number {n}"))),
        (Some(_), Some(_)) => passed.push("an XOF label's number is not always its output length".into()),
        (None, _) => passed.push("the label ends in no number".into()),
    }
    let Some(pos) = said.iter().position(|(bits, _)| usable_width(*bits).is_some()) else {
        passed.extend(said.iter().map(|(b, why)| format!("{why}: {b} bits is no usable width")));
        let none = if kats.is_empty() { "no shipped KAT file gives `Dst_Len`; " } else { "" };
        return Err(format!("{none}{}", passed.join("; ")));
    };
    let (bits, why) = &said[pos];
    let others: Vec<String> = said.iter().filter(|(b, _)| b != bits).map(|(b, w)| format!("{w} says {b}")).collect();
    let why = if others.is_empty() { why.clone() } else { format!("{why}; but {}", others.join(", ")) };
    Ok((*bits as u32, why))
}

/// Why the header says the instance is an extendable-output function: its
/// `ALGORITHM_INSTANCE` has an `XOF` part, or a macro names XOF or squeezing.
fn guess_xof(declared: Option<&str>, header: &str) -> Option<String> {
    let xof_part = |n: &str| n.split(['-', '_']).any(|p| p.eq_ignore_ascii_case("XOF"));
    if let Some(d) = declared.filter(|d| xof_part(d)) {
        return Some(format!("ALGORITHM_INSTANCE {} names an XOF", q(d)));
    }
    defined_names(header).into_iter().find_map(|n| {
        let up = n.to_ascii_uppercase();
        (up.contains("XOF") || up.contains("SQUEEZE")).then(|| format!("the header defines {}", q(&n)))
    })
}

/// Every macro name a header `#define`s.
fn defined_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix('#').map(str::trim_start)?.strip_prefix("define"))
        .filter_map(|r| r.split(|c: char| c.is_whitespace() || c == '(').find(|w| !w.is_empty()).map(str::to_owned))
        .collect()
}

/// The folders above `rel`, nearest first.
fn ancestors(rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = parent(rel);
    while !p.is_empty() {
        out.push(p.to_owned());
        p = parent(p);
    }
    out
}

fn common_folder(paths: &[&str]) -> String {
    let Some(first) = paths.first() else { return String::new() };
    let mut common: Vec<&str> = first.split('/').collect();
    for p in &paths[1..] {
        let n = common.iter().zip(p.split('/')).take_while(|(a, b)| **a == *b).count();
        common.truncate(n);
    }
    common.join("/")
}

/// The draft's text, written line by line: keys and comments are the tool's, every
/// value is a TOML value written by the toml crate.
#[derive(Default)]
struct Doc(String);

impl Doc {
    fn line(&mut self, text: &str) {
        self.0.push_str(text);
        self.0.push('\n');
    }

    /// A comment; any line break in it starts another comment line.
    fn comment(&mut self, text: &str) {
        for l in text.lines() {
            self.line(&format!("# {l}"));
        }
    }

    fn kv(&mut self, key: &str, value: impl Into<toml::Value>) {
        let v: toml::Value = value.into();
        self.line(&format!("{key} = {v}"));
    }

    fn strings(&mut self, key: &str, values: &[String]) {
        self.kv(key, toml::Value::Array(values.iter().cloned().map(toml::Value::String).collect()));
    }
}

/// An instance as the manifest loader reads it (its own defaults for every other field).
fn instance(label: &str, dir: &str) -> Result<Instance> {
    let mut t = toml::Table::new();
    t.insert("label".into(), label.into());
    t.insert("dir".into(), dir.into());
    Ok(toml::Value::Table(t).try_into()?)
}

/// `path` (relative to the root) as a pattern for `inst`: `{dir}/...`, and `{label}`
/// where the label stands in it, when the pattern expands back to the path.
fn template(inst: &Instance, path: &str) -> String {
    let in_dir = path.strip_prefix(&format!("{}/", inst.dir)).or((path == inst.dir).then_some(""));
    let head = match in_dir {
        Some("") => "{dir}".to_owned(),
        Some(rest) => format!("{{dir}}/{rest}"),
        None => path.to_owned(),
    };
    let with_label = |s: &str| match s.strip_prefix("{dir}") {
        Some(rest) => format!("{{dir}}{}", rest.replace(&inst.label, "{label}")),
        None => s.replace(&inst.label, "{label}"),
    };
    [with_label(&head), head].into_iter().find(|t| inst.expand(t) == path).unwrap_or_else(|| path.to_owned())
}

/// One draft instance: paths relative to the root, as patterns.
struct Drafted<'a> {
    f: &'a Found,
    inst: Instance,
    sources: Vec<String>,
    includes: Vec<String>,
    header: String,
    reference: Option<String>,
}

fn rel<'a>(root: &str, p: &'a str) -> &'a str {
    if root.is_empty() {
        p
    } else {
        p.strip_prefix(root).map_or(p, |r| r.trim_start_matches('/'))
    }
}

fn drafted<'a>(a: &'a Analysis) -> Result<Vec<Drafted<'a>>> {
    a.found
        .iter()
        .map(|f| {
            let inst = instance(&f.label, rel(&a.root, &f.dir))?;
            let t = |p: &str| template(&inst, rel(&a.root, p));
            Ok(Drafted {
                sources: f.sources.iter().map(|s| t(s)).collect(),
                includes: f.includes.iter().map(|s| t(s)).collect(),
                header: t(&f.header),
                // `reference` names one file: an instance of several has none.
                reference: f
                    .kats
                    .first()
                    .filter(|_| f.kats.len() == 1)
                    .and_then(|p| p.kat.as_ref())
                    .map(|k| t(&k.path)),
                f,
                inst,
            })
        })
        .collect()
}

/// What onboard was asked for, resolved.
struct Draft<'a> {
    id: &'a str,
    archive: &'a Utf8Path,
    sha256: &'a str,
    bytes: u64,
}

fn render(d: &Draft, a: &Analysis) -> Result<(String, String)> {
    let items = drafted(a)?;
    let shape = a.found[0].shape;
    let file = d.archive.file_name().unwrap_or("archive").to_owned();
    let mut doc = Doc::default();
    doc.comment(&format!(
        "DRAFT written by `cargo xtask onboard` from {} ({} bytes, SHA-256 {}).\n\
         Every `guessed` comment says what was inferred from the archive and why: check each before adopting it\n\
         (submissions/{}.toml and kat/{}/kat.sha256).",
        q(&file),
        d.bytes,
        d.sha256,
        d.id,
        d.id
    ));
    for n in &a.notes {
        doc.comment(&format!("note: {n}"));
    }
    doc.kv("id", d.id);
    doc.comment("guessed: the archive's file name");
    doc.kv("name", d.archive.file_stem().unwrap_or(d.id));
    doc.comment(&format!("guessed: {} declares {}", q(base(&a.found[0].header)), shape.markers.join(", ")));
    doc.kv("family", shape.family.name());
    doc.line("");
    doc.line("[source]");
    doc.kv("kind", "archive");
    doc.kv("file", file.as_str());
    doc.kv("bytes", i64::try_from(d.bytes)?);
    doc.kv("sha256", d.sha256);
    doc.comment("page: unknown to onboard; add the NICCS page the archive is published on");
    doc.comment("guessed: the deepest folder above every instance folder and its KAT file");
    doc.kv("root", a.root.as_str());
    doc.line("");
    render_build(&mut doc, a, &items);
    render_kat(&mut doc, shape, &items);
    for item in &items {
        render_instance(&mut doc, item, &items);
    }
    doc.line("");
    if shape.profiled {
        doc.comment("`cargo xtask profile`: the ICCS placeholder hash functions and DRNG (ICCS API names).");
    }
    if shape.profiled {
        doc.0.push_str(ICCS_GROUPS);
    }
    Ok((doc.0, kat_lines(d, &items)))
}

const ICCS_GROUPS: &str = "[[profile.groups]]\nname = \"hash\"\nkind = \"iccs-hash\"\nfamily = \"ICCS\"\n\
     symbols = [\"pseudohash\", \"pseudoXOF\", \"sm3hash\"]\n\n[[profile.groups]]\nname = \"drng\"\n\
     kind = \"iccs-drng\"\nfamily = \"ICCS\"\nsymbols = [\"get_random_number\"]\n";

/// The patterns every instance has, in the first instance's order.
fn shared(lists: &[&[String]]) -> Vec<String> {
    let Some(first) = lists.first() else { return vec![] };
    let mut out: Vec<String> = Vec::new();
    for s in first.iter() {
        if lists.iter().all(|l| l.contains(s)) && !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn render_build(doc: &mut Doc, a: &Analysis, items: &[Drafted]) {
    doc.line("[build]");
    let lists: Vec<&[String]> = items.iter().map(|i| i.sources.as_slice()).collect();
    let common = shared(&lists);
    let whys: BTreeSet<&str> = items.iter().map(|i| i.f.sources_why.as_str()).collect();
    let whys: Vec<&str> = whys.into_iter().collect();
    doc.comment(&format!("guessed: {}", whys.join("\n  and elsewhere: ")));
    if common.len() < items.iter().map(|i| i.sources.len()).max().unwrap_or(0) {
        doc.comment("the instances differ in their sources: each [[instance]] lists its own beside these");
    }
    doc.strings("sources", &common);
    let mut include: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for i in items {
        for d in &i.includes {
            if include.contains(d) || dropped.contains(d) {
                continue;
            }
            // Every include folder is walked for each instance: it must exist for all.
            let everywhere = items.iter().all(|j| a.folders.contains(&join(&a.root, &j.inst.expand(d))));
            if everywhere { &mut include } else { &mut dropped }.push(d.clone());
        }
    }
    doc.comment("guessed: the instance folder first, as the harness puts it, then every folder holding a header the sources include");
    if !dropped.is_empty() {
        let list: Vec<String> = dropped.iter().map(|d| q(d)).collect();
        doc.comment(&format!(
            "left out (some instances only; no per-instance include in the format): {}",
            list.join(", ")
        ));
    }
    doc.strings("include", &include);
    let unresolved: BTreeSet<&String> = items.iter().flat_map(|i| &i.f.unresolved).collect();
    if !unresolved.is_empty() {
        let list: Vec<String> = unresolved.iter().map(|u| q(u)).collect();
        doc.comment(&format!(
            "included but found nowhere in the archive (system headers, or behind an #if): {}",
            list.join(", ")
        ));
    }
    render_iccs(doc, a, items);
    render_defines(doc, items);
    doc.line("");
}

/// The `-D` defines every instance's own build has (each instance lists the rest).
fn render_defines(doc: &mut Doc, items: &[Drafted]) {
    let lists: Vec<&[String]> = items.iter().map(|i| i.f.defines.as_slice()).collect();
    if lists.iter().all(|l| l.is_empty()) {
        doc.comment(
            "no defines guessed: a MISMATCH may mean one selects the ICCS DRNG or the KAT's hash backend (catalog need 2)",
        );
        return;
    }
    let common = shared(&lists);
    doc.comment("guessed: the -D flags of the archive's own build (its Makefile's target, read, never run)");
    if common.len() < lists.iter().map(|l| l.len()).max().unwrap_or(0) {
        doc.comment("the instances differ in their defines: each [[instance]] lists its own beside these");
    }
    doc.strings("defines", &common);
}

/// Official ICCS `drng.c`/`auxfunc.c` for a tree whose sources lack them.
fn render_iccs(doc: &mut Doc, a: &Analysis, items: &[Drafted]) {
    let mut iccs = Vec::new();
    for name in a.found[0].shape.iccs {
        let lacking: Vec<&str> =
            items.iter().filter(|i| i.f.official_iccs.contains(name)).map(|i| i.f.label.as_str()).collect();
        let shipped: Vec<String> = a.iccs_elsewhere[name].iter().take(3).map(|p| q(p)).collect();
        let shipped = match shipped.is_empty() {
            true => "the archive has none".to_owned(),
            false => {
                format!("the archive's copies ({}) are not in or above the folders that lack it", shipped.join(", "))
            }
        };
        if lacking.len() == items.len() {
            iccs.push((*name).to_owned());
            doc.comment(&format!(
                "guessed: no instance's sources hold {name} and {shipped}: the official ICCS copy is taken"
            ));
        } else if !lacking.is_empty() {
            doc.comment(&format!(
                "guessed: {name} is missing from the sources of {} only and {shipped}: those instances take the \
                 official copy",
                lacking.join(", ")
            ));
        }
    }
    if !iccs.is_empty() {
        doc.comment(&format!(
            "as the harness adds {}; verify needs the ICCS API package API_PKC.zip",
            iccs.iter().map(|n| format!("api/{n}")).collect::<Vec<_>>().join(" and ")
        ));
        doc.strings("iccs", &iccs);
    }
}

fn render_kat(doc: &mut Doc, shape: &Shape, items: &[Drafted]) {
    doc.line("[kat]");
    doc.comment(&format!("the harness's own KAT driver of the {} family, never the shipped KAT program", shape.family));
    doc.strings("program", &[shape.kat_driver.to_owned()]);
    let headers: BTreeSet<&String> = items.iter().map(|i| &i.header).collect();
    let header = if headers.len() == 1 { items[0].header.clone() } else { "{api_header}".to_owned() };
    doc.comment(&format!("guessed: the header that declares {} in the instance folder", shape.markers.join(", ")));
    doc.kv("api_header", header.as_str());
    let parts = &items[0].f.kats;
    if parts.len() > 1 {
        let names: Vec<String> = parts.iter().map(|p| format!("{}<file>", p.part.prefix)).collect();
        doc.comment(&format!("the {} files are {}", parts.len(), names.join(", ")));
    }
    doc.kv("file", format!("{}{{label}}.txt", shape.kat_prefix));
    let refs: BTreeSet<&String> = items.iter().filter_map(|i| i.reference.as_ref()).collect();
    match refs.iter().next() {
        Some(r) if refs.len() == 1 => {
            doc.comment("guessed: the shipped KAT file (used to show the first differing record of a MISMATCH)");
            doc.kv("reference", r.as_str());
        }
        Some(_) => doc.comment("no reference: the shipped KAT files follow no one pattern"),
        None => {}
    }
    doc.line("");
    doc.line("[bench]");
    doc.comment(&format!("guessed: the ICCS API ({}) through the same header", shape.markers.join(", ")));
    doc.kv("api", "iccs");
    doc.kv("header", header.as_str());
}

/// The ICCS files only some instances lack: theirs to take (the ones all lack are
/// `[build] iccs`).
fn own_iccs(item: &Drafted, items: &[Drafted]) -> Vec<String> {
    let lacks = |i: &Drafted, name: &str| i.f.official_iccs.contains(&name);
    let all = |name: &str| items.iter().all(|i| lacks(i, name));
    item.f.shape.iccs.iter().filter(|n| lacks(item, n) && !all(n)).map(|n| (*n).to_owned()).collect()
}

fn render_instance(doc: &mut Doc, item: &Drafted, items: &[Drafted]) {
    let f = item.f;
    doc.line("");
    doc.line("[[instance]]");
    doc.comment(&format!("guessed label: {}", f.label_why));
    doc.kv("label", f.label.as_str());
    doc.comment(&format!("guessed: the folder holding {} and its sources", q(base(&f.header))));
    doc.kv("dir", item.inst.dir.as_str());
    let headers: BTreeSet<&String> = items.iter().map(|i| &i.header).collect();
    if headers.len() > 1 {
        let mut vars = toml::Table::new();
        vars.insert("api_header".into(), item.header.clone().into());
        doc.kv("vars", toml::Value::Table(vars));
    }
    let lists: Vec<&[String]> = items.iter().map(|i| i.sources.as_slice()).collect();
    let common = shared(&lists);
    let own: Vec<String> = item.sources.iter().filter(|s| !common.contains(s)).cloned().collect();
    if !own.is_empty() {
        doc.strings("sources", &own);
    }
    let defines: Vec<&[String]> = items.iter().map(|i| i.f.defines.as_slice()).collect();
    let common = shared(&defines);
    let own: Vec<String> = f.defines.iter().filter(|d| !common.contains(d)).cloned().collect();
    if !own.is_empty() {
        doc.comment("guessed: the -D flags of its own Makefile that not every instance has");
        doc.strings("defines", &own);
    }
    let iccs = own_iccs(item, items);
    if !iccs.is_empty() {
        doc.comment("guessed: its sources lack these, so it takes the official ICCS copies");
        doc.strings("iccs", &iccs);
    }
    for p in &f.kats {
        render_part(doc, p);
    }
    if let Some((n, why)) = &f.passes {
        doc.comment(&format!("guessed passes: {why}; verify checks kex_get_passes_num() says the same"));
        doc.kv("passes", i64::from(*n));
    }
    if let Some(why) = &f.xof {
        doc.comment(&format!("guessed: an extendable-output instance: {why}; digest_bits is its one output length"));
        doc.kv("xof", true);
    }
    if let Some(Ok((bits, why))) = &f.width {
        doc.comment(&format!("guessed digest width: {why}"));
        doc.kv("digest_bits", i64::from(*bits));
    }
}

/// The comment on one KAT file of an instance (and `kat_records` where it counts).
fn render_part(doc: &mut Doc, p: &PartKat) {
    let name = if p.part.id.is_empty() { "KAT".to_owned() } else { format!("KAT {}", p.part.id) };
    match &p.kat {
        Some(k) => {
            doc.comment(&format!("{name}: {}; {} record(s); {}", p.why, k.records, k.why));
            if k.counted && k.records != 10 {
                doc.comment("guessed: the driver replays as many records as the shipped file has");
                doc.kv("kat_records", i64::try_from(k.records).unwrap_or(i64::MAX));
            }
        }
        None => doc.comment(&format!("{name}: {}; verify will say NOKAT", p.why)),
    }
}

fn kat_lines(d: &Draft, items: &[Drafted]) -> String {
    let mut out = format!(
        "# DRAFT by `cargo xtask onboard`: digests of the KAT files shipped in {}\n",
        q(d.archive.file_name().unwrap_or(""))
    );
    for i in items {
        for (p, k) in i.f.shipped() {
            out.push_str(&format!("# {} from {}\n", i.f.label, q(&k.path)));
            out.push_str(&format!("{} {} {}/{}\n", k.sha256, mode_word(k), i.f.label, p.file(i.f)));
        }
    }
    out
}

/// `strict`, `nolen:3`: the mode and records of a `kat.sha256` line.
fn mode_word(k: &Kat) -> String {
    let mode = format!("{:?}", k.mode).to_lowercase();
    match k.records {
        n if k.counted && n != 10 => format!("{mode}:{n}"),
        _ => mode,
    }
}

/// A word a POSIX shell reads back as itself.
fn sh_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._+-=:".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A submission id from an archive's file name.
fn id_from(archive: &Utf8Path) -> String {
    let stem = archive.file_stem().unwrap_or("");
    let stem = stem.strip_suffix(".tar").unwrap_or(stem);
    plain_from(stem).to_ascii_lowercase()
}

impl Onboard {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let started = Instant::now();
        // A draft is the archive's code under guessed rules: it runs in a sandbox or not at all.
        if self.target.engine == EngineChoice::Host {
            return crate::ui::usage(
                "onboard verifies a draft in a container only: --engine host is refused (use --engine auto, \
                 podman or docker; `cargo xtask doctor` says what to install)",
            );
        }
        if !self.archive.is_file() {
            return crate::ui::usage(format!("onboard: no archive at {}", self.archive));
        }
        let id = self.id.clone().unwrap_or_else(|| id_from(&self.archive));
        if let Err(why) = project::plain_name(&id) {
            return crate::ui::usage(format!("onboard: id {} {why}; name it with --id", q(&id)));
        }
        let manifest = self.dir.join(format!("{id}.toml"));
        // Into the checkout's submissions/, the digests go where shipped manifests keep them.
        let shipped = project::resolved(&self.dir) == project::resolved(&Submission::dir());
        let kat_path =
            if shipped { crate::kat::Manifest::default_path(&id) } else { self.dir.join(&id).join("kat.sha256") };
        for p in [&manifest, &kat_path] {
            if p.symlink_metadata().is_ok() && !self.force {
                return crate::ui::usage(format!("onboard: {p} exists; --force overwrites it"));
            }
        }
        // The digest the draft pins is that of the very bytes extracted.
        let cache = trees::Cache::sources();
        let copy = cache.copy_in(&self.archive)?;
        let (sha256, bytes) = (copy.sha256.clone(), copy.bytes);
        crate::note!("onboard: extracting {} ({bytes} bytes, SHA-256 {sha256})", self.archive);
        let tree = cache.extracted(copy, ExtractLimits::default())?;
        let analysis = analyse(&Tree::scan(&tree)?)?;
        let draft = Draft { id: &id, archive: &self.archive, sha256: &sha256, bytes };
        let (text, kats) = render(&draft, &analysis)?;
        // The draft must at least be TOML before it is written.
        toml::from_str::<toml::Table>(&text).context("onboard wrote a draft that is not TOML (a bug)")?;
        project::write_atomic(&manifest, text.as_bytes())?;
        project::write_atomic(&kat_path, kats.as_bytes())?;
        self.tell(&analysis, &manifest, &kat_path);
        let loaded = Submission::load(manifest.as_str());
        // The package named explicitly: the plain --archive would be taken for it too.
        let iccs = loaded
            .as_ref()
            .ok()
            .filter(|s| s.takes_iccs())
            .map(|_| self.iccs_api.clone().unwrap_or_else(|| project::root().join("archives").join("API_PKC.zip")));
        let (m, out) = (sh_quote(manifest.as_str()), sh_quote(self.out.as_str()));
        let with_iccs =
            iccs.as_ref().map_or(String::new(), |p| format!(" --archive iccs-api={}", sh_quote(p.as_str())));
        let verify_cmd =
            format!("cargo xtask verify {m} --archive {}{with_iccs} --out {out}", sh_quote(self.archive.as_str()));
        // Without the package the draft takes, verify cannot start: say what it needs, not a time.
        let missing = match &iccs {
            Some(p) => crate::compile::iccs::Pin::load()?.missing(Some(p)).map(|what| (what, p)),
            None => None,
        };
        if let Some((what, p)) = &missing {
            crate::say!("the draft takes official ICCS files: verify needs {what}");
            crate::say!(
                "next: put it at {} (or onboard again with --iccs-api PATH), then: {verify_cmd}",
                sh_quote(p.as_str())
            );
        }
        if self.no_verify {
            if missing.is_none() {
                crate::say!("next: {verify_cmd}");
            }
            return Ok(());
        }
        if let Some((what, _)) = missing {
            return crate::ui::usage(format!("onboard wrote {manifest} but cannot verify it: missing {what}"));
        }
        loaded.with_context(|| format!("the draft {manifest} does not load: edit it, then run `{verify_cmd}`"))?;
        let result = self.verify(sh, &manifest, iccs);
        crate::say!("onboard + verify: {:.1} s", started.elapsed().as_secs_f64());
        match &result {
            Ok(()) if shipped => crate::say!("next: cargo xtask report {id} --out {out} (the page)"),
            Ok(()) => {
                crate::say!("next: cargo xtask report {m} --out {out} (the page), then adopt the draft:");
                crate::say!(
                    "      cp {m} submissions/{id}.toml && mkdir -p kat/{id} && cp {} kat/{id}/kat.sha256",
                    sh_quote(kat_path.as_str())
                );
            }
            // A tool or engine failure judged nothing: the draft is not what to fix.
            Err(e) if crate::ui::exit_code(e) == crate::ui::exit::FAILURE => {
                crate::say!("next: fix the failure above (the draft was not judged), then: {verify_cmd}")
            }
            Err(_) => crate::say!("next: read the comments of {m}, fix what was guessed wrong, then: {verify_cmd}"),
        }
        result
    }

    fn tell(&self, a: &Analysis, manifest: &Utf8Path, kat_path: &Utf8Path) {
        crate::say!("onboard: {} instance(s), family {}", a.found.len(), a.found[0].shape.family);
        for f in &a.found {
            let kats: Vec<String> = f
                .kats
                .iter()
                .map(|p| {
                    p.kat.as_ref().map_or("no KAT file".to_owned(), |k| format!("{} {}", mode_word(k), &k.sha256[..12]))
                })
                .collect();
            let width = match &f.width {
                Some(Ok((bits, _))) => format!(" {bits} bits{}", if f.xof.is_some() { " (XOF)" } else { "" }),
                _ => String::new(),
            };
            crate::say!("  {:<24} {} ({} sources){width} {}", f.label, q(&f.dir), f.sources.len(), kats.join(", "));
        }
        for n in &a.notes {
            crate::say!("  note: {n}");
        }
        crate::say!("draft: {manifest} and {kat_path} (every guess is commented)");
    }

    fn verify(&self, sh: &Shell, manifest: &Utf8Path, iccs: Option<Utf8PathBuf>) -> Result<()> {
        let mut inputs =
            Inputs::for_ids(vec![manifest.to_string()], self.target.clone(), self.out.clone(), "local".into());
        let package = iccs.map(|path| Given { id: Some(crate::compile::iccs::ID.into()), path });
        inputs.archive = std::iter::once(Given { id: None, path: self.archive.clone() }).chain(package).collect();
        Verify { inputs, kat_manifest: None, timeout: None, resume: false, jobs: None, kat_files: Vec::new() }.run(sh)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_come_from_the_shipped_kat_else_from_the_header() {
        let header = "int kex_generate_pass1_msg_a(void);\nint kex_generate_pass2_msg_b (void);\n\
                      int kex_generate_pass4_msg_b(void);\n";
        assert_eq!(guess_passes(Some("Count = 0\nPass_Num = 4\nPKa_Len = 32\n"), header).0, 4);
        // Template mode leaves Pass_Num blank; the header's passes 1 and 2 (3 is missing).
        let (n, why) = guess_passes(Some("Count = 0\nPass_Num = \n"), header);
        assert_eq!(n, 2, "{why}");
        assert!(why.contains("pass2"), "{why}");
        assert_eq!(guess_passes(None, "int kex_init_a(void);\n").0, 0, "a non-interactive exchange");
        assert_eq!(guess_passes(Some("Pass_Num = 1099511627776\n"), header).0, 2, "beyond 8: not taken");
    }

    #[test]
    fn a_header_says_a_width_by_its_best_macro_and_an_xof_by_its_name() {
        let h = "#define DIGEST_BIT_LENGTH 768\n#define OUTPUT_BYTES 64\n#define CAPACITY_BITS 576\n";
        assert_eq!(header_width(h), Ok(Some(("DIGEST_BIT_LENGTH".into(), 768))));
        assert_eq!(header_width("#define HASH_OUTPUT_BYTES (64)\n"), Ok(Some(("HASH_OUTPUT_BYTES".into(), 512))));
        assert!(header_width("#define DIGEST_BIT_LENGTH 256\n#define DIGEST_BIT_LENGTH 512\n").is_err());
        assert_eq!(header_width("#define STATE_BITS (DIGEST_BIT_LENGTH + 64)\n"), Ok(None));
        assert_eq!((trailing_number("FEILIAN512"), trailing_number("X-XOF")), (Some(512), None));
        assert_eq!(usable_width(1001), None);
        assert!(guess_xof(Some("Thunder-XOF-256"), "").is_some());
        assert!(guess_xof(Some("Thunder-512"), "#define SQUEEZE_BIT_LENGTH 1280\n").is_some());
        assert!(guess_xof(Some("Xoferia-512"), "#define DIGEST_BIT_LENGTH 512\n").is_none());
    }

    #[test]
    fn the_harness_exclusion_rule_is_kept_exactly() {
        for gone in
            ["main.c", "KAT_KEM.c", "kem_test.c", "test.c", "speed.c", "kat.c", "PQCgenKAT_kem.c", "x_kat.c", "demo1.c"]
        {
            assert!(excluded(gone), "{gone}");
        }
        // Case-sensitive as the harness's grep; a token must stand right before a dot.
        for kept in ["Main.c", "kem.c", "attest.c", "contest_x.c", "KEM_AlgorithmInstance.c", "katx.c"] {
            assert!(!excluded(kept), "{kept}");
        }
        assert!(is_source("ntt.S") && is_source("a.c") && !is_source("a.cpp") && !is_source("a.s"));
    }

    #[test]
    fn instance_names_are_literals_only() {
        let h = "#define ALGORITHM_INSTANCE \"BRQC-128\"\n";
        assert_eq!(instance_names(h), [Some("BRQC-128".to_owned())]);
        assert_eq!(instance_names("# define ALGORITHM_INSTANCE \"Aigis\" STR(PARAMS)\n"), [None]);
        assert_eq!(instance_names("#define ALGORITHM_INSTANCE_X 1\n#define OTHER \"x\"\n").len(), 0);
        assert!(declares("int kem_keygen (unsigned char *pk);", "kem_keygen"));
        assert!(!declares("int my_kem_keygen(void);", "kem_keygen"));
    }

    #[test]
    fn patterns_expand_back_to_their_paths() {
        let inst = instance("X-128", "Impl/Cand X-128").unwrap();
        assert_eq!(template(&inst, "Impl/Cand X-128/KEM_X-128.c"), "{dir}/KEM_{label}.c");
        assert_eq!(template(&inst, "Impl/Cand X-128"), "{dir}");
        assert_eq!(template(&inst, "Test_Vectors/KAT_KEM_X-128.txt"), "Test_Vectors/KAT_KEM_{label}.txt");
        assert_eq!(template(&inst, "Test_Vectors/{x}.txt"), "Test_Vectors/{x}.txt", "no expansion, no pattern");
        assert_eq!(plain_from("Cand $(id) X-128"), "Cand-id-X-128");
        assert_eq!(sh_quote("a b'c"), "'a b'\\''c'");
        assert_eq!(id_from(Utf8Path::new("/x/Fixture KEM v1.zip")), "fixture-kem-v1");
    }
}
