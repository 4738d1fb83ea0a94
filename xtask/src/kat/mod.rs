//! KAT manifests (`kat/<id>/kat.sha256`) and the one canonical-text rule.
//!
//! Line format: `<sha256> <mode>[:<records>] <label>/<file>`.

#[cfg(test)]
mod fuzz;
pub mod kept;
pub mod verify;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use sha2::{Digest, Sha256};

use crate::compile::submission::Submission;
use crate::project;
use crate::sha::{Sha256Hex, EMPTY};

fn labels(sub: &Submission) -> String {
    sub.instances.iter().map(|i| i.label.as_str()).collect::<Vec<_>>().join(", ")
}

pub use crate::evidence::domain::Mode;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub sha256: Sha256Hex,
    pub mode: Mode,
    /// Only the first N records are covered.
    pub records: Option<usize>,
    pub label: String,
    pub file: String,
    /// Line in the manifest file, for messages.
    #[serde(skip)]
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub path: Utf8PathBuf,
    pub entries: Vec<Entry>,
    /// Instances whose lines are another instance's (the submission's `kat_from`):
    /// label → the label whose lines they are checked against.
    pub kat_from: std::collections::BTreeMap<String, String>,
}

impl Manifest {
    /// `kat/<id>/kat.sha256`.
    pub fn default_path(id: &str) -> Utf8PathBuf {
        project::kat_manifest_path(id)
    }

    pub fn load(path: &Utf8Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read KAT manifest {path}"))?;
        let entries =
            parse(&text).with_context(|| format!("invalid KAT manifest {path}")).map_err(crate::ui::Usage::of)?;
        Ok(Manifest { path: path.to_owned(), entries, kat_from: Default::default() })
    }

    /// `sub`'s manifest, loaded, with the instances that take another's KAT (`kat_from`).
    pub fn of(sub: &Submission, path: &Utf8Path) -> Result<Manifest> {
        Ok(Manifest::load(path)?.with_kat_from(sub))
    }

    /// The same lines, read for `sub`: an instance with `kat_from` has the lines of the
    /// instance it names.
    pub fn with_kat_from(mut self, sub: &Submission) -> Manifest {
        let taken = sub.instances.iter().filter_map(|i| Some((i.label.clone(), i.kat_from.clone()?)));
        self.kat_from = taken.collect();
        self
    }

    /// The line of `label`'s KAT file `file` (that of its `kat_from` instance, if any).
    pub fn entry(&self, label: &str, file: &str) -> Option<&Entry> {
        let label = self.kat_from.get(label).map_or(label, String::as_str);
        self.entries.iter().find(|e| e.label == label && e.file == file)
    }

    /// Every line names an instance of `sub` and the KAT file its manifest names; a line
    /// that does not is a usage error (exit 2).
    pub fn check_against(&self, sub: &Submission) -> Result<()> {
        self.check_lines(sub).map_err(crate::ui::Usage::of)
    }

    fn check_lines(&self, sub: &Submission) -> Result<()> {
        for e in &self.entries {
            let at = || format!("{}:{}", self.path, e.line);
            let inst = sub.instances.iter().find(|i| i.label == e.label).with_context(|| {
                format!("{}: {} has no instance {:?} (it has {})", at(), sub.id, e.label, labels(sub))
            })?;
            if let Some(from) = &inst.kat_from {
                bail!(
                    "{}: {} takes its KAT from {from} (kat_from in {}), so a line of its own would never be read; \
                     remove it",
                    at(),
                    e.label,
                    sub.path
                );
            }
            let files: Vec<String> = sub.kat_files(inst)?.into_iter().map(|(_, f)| f).collect();
            if !files.contains(&e.file) {
                let want = files.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", ");
                bail!("{}: the KAT files of {} are {want} ([kat] file of {}), not {:?}", at(), e.label, sub.id, e.file);
            }
            // A digest of more records than the driver prints could never match, for the
            // instance or a variant checked against its line.
            let readers = sub.instances.iter().filter(|i| i.label == e.label || i.kat_from.as_ref() == Some(&e.label));
            for reader in readers {
                if let Some(n) = e.records.filter(|n| *n > reader.kat_records as usize) {
                    bail!(
                        "{}: the digest of {} covers {n} records, but {} replays {} (set kat_records = {n} in {})",
                        at(),
                        e.label,
                        reader.label,
                        reader.kat_records,
                        sub.path
                    );
                }
            }
        }
        Ok(())
    }
}

pub fn parse(text: &str) -> Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let ctx = || format!("line {}: {line:?}", n + 1);
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [sha, mode, path] = fields[..] else {
            bail!("{}: expected `<sha256> <mode>[:<records>] <label>/<file>`", ctx());
        };
        let sha: Sha256Hex = sha.parse().map_err(|e| anyhow::anyhow!("{}: {e}", ctx()))?;
        if sha == *EMPTY {
            bail!("{}: that is the SHA-256 of empty text, which any program that prints nothing matches", ctx());
        }
        let (mode, records) = match mode.split_once(':') {
            Some((m, r)) => (m, Some(r.parse::<usize>().with_context(ctx)?)),
            None => (mode, None),
        };
        if records == Some(0) {
            bail!("{}: `:0` covers no record, so any output would match", ctx());
        }
        let mode = match mode {
            "raw" => Mode::Raw,
            "strict" => Mode::Strict,
            "nolen" => Mode::Nolen,
            other => bail!("{}: unknown mode {other:?} (raw, strict, nolen)", ctx()),
        };
        let (label, file) = path.split_once('/').with_context(|| format!("{}: expected <label>/<file>", ctx()))?;
        if label.is_empty() || file.is_empty() || file.contains('/') {
            bail!("{}: expected <label>/<file>", ctx());
        }
        if entries.iter().any(|e| e.label == label && e.file == file) {
            bail!("{}: {label}/{file} appears twice", ctx());
        }
        entries.push(Entry { sha256: sha, mode, records, label: label.to_owned(), file: file.to_owned(), line: n + 1 });
    }
    Ok(entries)
}

pub fn is_record_start(line: &str) -> bool {
    line.trim_start().as_bytes().get(..7).is_some_and(|p| p.eq_ignore_ascii_case(b"count ="))
}

pub fn is_len_line(line: &str) -> bool {
    line.split_once('=').is_some_and(|(k, _)| k.trim_end().ends_with("_Len"))
}

/// The longest line the canonical rule reads. No KAT text comes near it (the longest
/// published line is under 80 KB); a longer one is refused, which keeps the memory of
/// the streaming rule bounded whatever a program prints.
pub const MAX_LINE: usize = 4 << 20;

/// The canonical rule, applied to a stream: feed the raw text in pieces of any size,
/// get the canonical text out (to a hash or to memory). `records` cuts the text before
/// the start of record N (counting from zero), on the raw lines.
pub struct Canonical<S> {
    mode: Mode,
    records: Option<usize>,
    seen: usize,
    cut: bool,
    line: Vec<u8>,
    too_long: Option<usize>,
    lines: usize,
    sink: S,
}

/// Where canonical text goes.
pub trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Sha256 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

/// A KAT text streamed into the canonical rule (`std::io::copy` from a log or a pipe).
impl<S: Sink> std::io::Write for Canonical<S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<S: Sink> Canonical<S> {
    pub fn new(mode: Mode, records: Option<usize>, sink: S) -> Self {
        Canonical { mode, records, seen: 0, cut: false, line: Vec::new(), too_long: None, lines: 0, sink }
    }

    pub fn update(&mut self, mut bytes: &[u8]) {
        if self.mode == Mode::Raw && self.records.is_none() {
            self.sink.put(bytes);
            return;
        }
        while !bytes.is_empty() {
            let (piece, rest, ends) = match bytes.iter().position(|&b| b == b'\n') {
                Some(i) => (&bytes[..=i], &bytes[i + 1..], true),
                None => (bytes, &bytes[..0], false),
            };
            if self.too_long.is_none() {
                self.line.extend_from_slice(piece);
                if self.line.len() > MAX_LINE {
                    self.too_long = Some(self.lines + 1);
                    self.line = Vec::new();
                }
            }
            if ends {
                self.end_line();
            }
            bytes = rest;
        }
    }

    /// The sink, or the line number of a line longer than [`MAX_LINE`].
    pub fn finish(mut self) -> std::result::Result<S, usize> {
        if !self.line.is_empty() {
            self.end_line();
        }
        match self.too_long {
            Some(n) => Err(n),
            None => Ok(self.sink),
        }
    }

    fn end_line(&mut self) {
        self.lines += 1;
        let raw = std::mem::take(&mut self.line);
        if self.cut || self.too_long.is_some() {
            return;
        }
        let text = String::from_utf8_lossy(&raw);
        if is_record_start(&text) {
            if self.records == Some(self.seen) {
                self.cut = true;
                return;
            }
            self.seen += 1;
        }
        if self.mode == Mode::Raw {
            self.sink.put(&raw);
            return;
        }
        let line: std::borrow::Cow<str> = if text.contains('\r') { text.replace('\r', "").into() } else { text };
        let line = line.trim_end_matches(['\n', ' ', '\t']);
        if line.is_empty() || (self.mode == Mode::Nolen && is_len_line(line)) {
            return;
        }
        self.sink.put(line.as_bytes());
        self.sink.put(b"\n");
    }
}

/// The text a digest covers under `mode`, cut to the first `records` records (in
/// memory: for tests and diagnostics on bounded texts).
pub fn canonical(raw: &[u8], mode: Mode, records: Option<usize>) -> Vec<u8> {
    let mut c = Canonical::new(mode, records, Vec::new());
    c.update(raw);
    c.finish().unwrap_or_default()
}

/// The digest of the canonical text, or why there is none.
pub fn digest(raw: &[u8], entry: &Entry) -> std::result::Result<String, String> {
    let mut c = Canonical::new(entry.mode, entry.records, Sha256::new());
    c.update(raw);
    finish_digest(c)
}

pub fn finish_digest(c: Canonical<Sha256>) -> std::result::Result<String, String> {
    match c.finish() {
        Ok(h) => Ok(project::hex(&h.finalize())),
        Err(line) => Err(format!("line {line} is longer than {} MiB: not a KAT text", MAX_LINE >> 20)),
    }
}

/// The first record (in canonical form) where two KAT texts differ, with its index.
pub fn first_differing_record(expected: &[u8], actual: &[u8], mode: Mode) -> Option<(usize, String, String)> {
    let split = |raw: &[u8]| -> Vec<String> {
        let text = String::from_utf8_lossy(&canonical(raw, mode, None)).into_owned();
        let mut records: Vec<String> = vec![String::new()];
        for line in text.lines() {
            if is_record_start(line) {
                records.push(String::new());
            }
            let last = records.last_mut().unwrap();
            last.push_str(line);
            last.push('\n');
        }
        records
    };
    let (e, a) = (split(expected), split(actual));
    (0..e.len().max(a.len())).find_map(|i| {
        let (x, y) = (e.get(i).cloned().unwrap_or_default(), a.get(i).cloned().unwrap_or_default());
        (x != y).then_some((i, x, y))
    })
}

/// Byte strings that a program embedding a KAT text, or its records, would contain:
/// the first 16 hex digits (both cases) and the first 16 bytes of every long value.
/// No honest build contains the keys, ciphertexts and secrets it computes from seeds.
pub struct Needles {
    found: std::collections::HashMap<[u8; NEEDLE], String>,
    /// Whether any needle starts with these two bytes: most positions stop here.
    first: Vec<bool>,
}

const NEEDLE: usize = 16;
/// Values shorter than this many hex digits (lengths, counts, short tags) are left out.
const MIN_VALUE_HEX: usize = 2 * NEEDLE;
const MAX_NEEDLES: usize = 3000;

impl Needles {
    /// The needles of a KAT text (the `Name = HEX` lines of its records).
    pub fn of_text(text: &[u8]) -> Needles {
        let mut n = Needles { found: std::collections::HashMap::new(), first: vec![false; 1 << 16] };
        let mut record = String::from("?");
        for line in String::from_utf8_lossy(text).lines() {
            let Some((name, value)) = line.split_once('=') else { continue };
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("count") {
                value.clone_into(&mut record);
            } else if value.len() >= MIN_VALUE_HEX && value.bytes().all(|b| b.is_ascii_hexdigit()) {
                n.add_value(&format!("record {record}'s {name}"), value);
            }
            if n.found.len() >= MAX_NEEDLES {
                break;
            }
        }
        n
    }

    fn add_value(&mut self, what: &str, hex: &str) {
        let head = &hex.as_bytes()[..NEEDLE];
        let bytes: Vec<u8> =
            (0..NEEDLE).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or_default()).collect();
        for (form, needle) in [
            ("as upper-case hex", head.to_ascii_uppercase()),
            ("as lower-case hex", head.to_ascii_lowercase()),
            ("as bytes", bytes),
        ] {
            let key: [u8; NEEDLE] = needle.try_into().expect("needles have NEEDLE bytes");
            self.first[usize::from(u16::from_be_bytes([key[0], key[1]]))] = true;
            self.found.entry(key).or_insert_with(|| format!("{what} {form}"));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The first needle in `data`: what it is and where.
    pub fn find(&self, data: &[u8]) -> Option<(String, usize)> {
        data.windows(NEEDLE).enumerate().find_map(|(at, w)| {
            if !self.first[usize::from(u16::from_be_bytes([w[0], w[1]]))] {
                return None;
            }
            let key: &[u8; NEEDLE] = w.try_into().ok()?;
            self.found.get(key).map(|what| (what.clone(), at))
        })
    }
}

/// The first record of `text` (a KAT text this build printed) found in the build's
/// outputs: a text that was embedded, not computed.
pub fn embedded_record(build: &crate::compile::builder::Build, text: &[u8]) -> Result<Option<String>> {
    let needles = Needles::of_text(text);
    if needles.is_empty() {
        return Ok(None);
    }
    let outputs = build.record.plan.steps.iter().filter_map(|s| s.output.as_deref());
    for name in outputs.chain(build.record.plan.run.first().map(String::as_str)) {
        if build.record.output_sha256(name).is_none() {
            continue;
        }
        let data = crate::project::read_regular(&build.out.join(name), 1 << 30)?;
        if let Some((what, at)) = needles.find(&data) {
            return Ok(Some(format!("{name} contains {what} of its own KAT text (offset {at})")));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_rule_matches_the_published_description() {
        let raw = b"Count = 0\r\nSeed_Len = 64 \t\r\n\r\nSeed = AB\n\n";
        assert_eq!(canonical(raw, Mode::Strict, None), b"Count = 0\nSeed_Len = 64\nSeed = AB\n");
        // Final LF is added when missing.
        assert_eq!(canonical(b"A = 1", Mode::Strict, None), b"A = 1\n");
        assert_eq!(canonical(raw, Mode::Raw, None), raw.to_vec());
    }

    #[test]
    fn nolen_drops_length_lines_only() {
        let raw = b"Count = 0\nPK_Len = 3\nPK = 010203\nSS_Len=\n";
        assert_eq!(canonical(raw, Mode::Nolen, None), b"Count = 0\nPK = 010203\n");
    }

    #[test]
    fn records_limit_cuts_before_the_next_count_line() {
        let raw = b"# header\ncount = 0\nx = 1\n\ncount = 1\nx = 2\n\ncount = 2\nx = 3\n";
        assert_eq!(canonical(raw, Mode::Raw, Some(2)), b"# header\ncount = 0\nx = 1\n\ncount = 1\nx = 2\n\n".to_vec());
        assert_eq!(canonical(raw, Mode::Strict, Some(1)), b"# header\ncount = 0\nx = 1\n");
        assert_eq!(canonical(raw, Mode::Raw, Some(9)), raw.to_vec());
    }

    #[test]
    fn manifest_lines_parse_and_errors_name_the_line() {
        let sha = "a".repeat(64);
        let text = format!("# c\n{sha} strict BRQC-128/KAT_KEM_BRQC-128.txt\n{sha} nolen:3 X/y.txt\n");
        let e = parse(&text).unwrap();
        assert_eq!(e[0].mode, Mode::Strict);
        assert_eq!(e[1].records, Some(3));
        assert_eq!(e[1].file, "y.txt");
        let err = parse(&format!("{sha} fuzzy A/b\n")).unwrap_err();
        assert!(format!("{err:#}").contains("line 1"), "{err:#}");
        assert!(parse("abc strict A/b\n").is_err());
        assert!(parse(&format!("{sha} strict A/b\n{sha} raw A/b\n")).is_err(), "one file, one line");
        assert_eq!(parse(&format!("{sha} strict A/b\n{sha} raw A/c\n")).unwrap().len(), 2, "a hash's four files");
        // Lines that would let any output pass.
        let empty = format!("{EMPTY} strict A/b\n");
        assert!(format!("{:#}", parse(&empty).unwrap_err()).contains("empty text"));
        assert!(format!("{:#}", parse(&format!("{sha} nolen:0 A/b\n")).unwrap_err()).contains(":0"));
        assert!(parse(&format!("{sha} strict A/\n")).is_err());
        assert_eq!(parse(&text).unwrap()[1].line, 3);
    }

    /// A variant (`kat_from`) is checked against the named instance's line; a line of
    /// its own is refused (exit 2), as it would never be read.
    #[test]
    fn a_kat_from_instance_reads_the_named_instances_line() {
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap();
        let text = "id = \"s\"\nname = \"s\"\n[source]\nkind = \"crate\"\nname = \"c\"\nversion = \"1\"\n\
                    [build]\nsources = [\"{dir}/a.c\"]\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
                    file = \"KAT_{label}.txt\"\n[[instance]]\nlabel = \"R\"\ndir = \"r\"\n\
                    [[instance]]\nlabel = \"R-fast\"\ndir = \"f\"\nkat_from = \"R\"\n";
        let sub = Submission::from_text(&dir.join("s.toml"), text).unwrap();
        let (sha, other) = ("a".repeat(64), "b".repeat(64));
        let path = dir.join("kat.sha256");
        std::fs::write(&path, format!("{sha} strict R/KAT_R.txt\n")).unwrap();
        let m = Manifest::of(&sub, &path).unwrap();
        m.check_against(&sub).unwrap();
        let fast = &sub.instances[1];
        let file = sub.kat_files(fast).unwrap().remove(0).1;
        assert_eq!(file, "KAT_R.txt");
        assert_eq!(m.entry(&fast.label, &file).map(|e| e.sha256.as_str()), Some(sha.as_str()));
        assert!(Manifest::load(&path).unwrap().entry(&fast.label, &file).is_none(), "read without the manifest");
        std::fs::write(&path, format!("{sha} strict R/KAT_R.txt\n{other} strict R-fast/KAT_R.txt\n")).unwrap();
        let e = Manifest::of(&sub, &path).unwrap().check_against(&sub).unwrap_err();
        assert_eq!(crate::ui::exit_code(&e), crate::ui::exit::USAGE);
        assert!(format!("{e:#}").contains("kat.sha256:2: R-fast takes its KAT from R"), "{e:#}");
        // A digest of 20 records needs 20 from the variant too.
        let sub = Submission::from_text(
            &dir.join("s.toml"),
            &text.replace("dir = \"r\"\n", "dir = \"r\"\nkat_records = 20\n"),
        )
        .unwrap();
        std::fs::write(&path, format!("{sha} strict:20 R/KAT_R.txt\n")).unwrap();
        let e = format!("{:#}", Manifest::of(&sub, &path).unwrap().check_against(&sub).unwrap_err());
        assert!(e.contains("covers 20 records, but R-fast replays 10"), "{e}");
    }

    #[test]
    fn streaming_in_any_pieces_equals_the_whole() {
        let raw = b"# h\r\ncount = 0\r\nK_Len = 2 \t\r\nK = AB\r\n\r\ncount = 1\nK = CD\n\ncount = 2\nK = EF";
        for mode in [Mode::Raw, Mode::Strict, Mode::Nolen] {
            for records in [None, Some(0), Some(1), Some(2), Some(5)] {
                let whole = canonical(raw, mode, records);
                for size in 1..raw.len() {
                    let mut c = Canonical::new(mode, records, Vec::new());
                    for piece in raw.chunks(size) {
                        c.update(piece);
                    }
                    assert_eq!(c.finish().unwrap(), whole, "{mode:?} {records:?} pieces of {size}");
                }
            }
        }
    }

    #[test]
    fn an_endless_line_is_refused_with_bounded_memory() {
        let mut c = Canonical::new(Mode::Strict, None, Sha256::new());
        c.update(b"Count = 0\n");
        let chunk = vec![b'A'; 1 << 20];
        for _ in 0..(MAX_LINE >> 20) + 2 {
            c.update(&chunk);
            assert!(c.line.capacity() <= 2 * MAX_LINE + (1 << 20));
        }
        c.update(b"\nK = 1\n");
        assert_eq!(finish_digest(c).unwrap_err(), "line 2 is longer than 4 MiB: not a KAT text");
    }

    #[test]
    fn first_difference_is_located_by_record() {
        let a = b"count = 0\nk = 1\n\ncount = 1\nk = 2\n";
        let b = b"count = 0\nk = 1\n\ncount = 1\nk = 3\n";
        let (i, x, y) = first_differing_record(a, b, Mode::Strict).unwrap();
        assert_eq!(i, 2);
        assert_eq!((x.as_str(), y.as_str()), ("count = 1\nk = 2\n", "count = 1\nk = 3\n"));
        assert!(first_differing_record(a, a, Mode::Strict).is_none());
    }

    #[test]
    fn needles_find_a_kat_text_embedded_as_text_or_bytes_and_nothing_else() {
        let pk = "AABBCCDDEEFF00112233445566778899ABCDEF0123456789ABCDEF0123456789";
        let text = format!("Count = 0\nSeed_Len = 64\nPK_Len = 32\nPK = {pk}\nSS = 01\n\nCount = 1\n");
        let n = Needles::of_text(text.as_bytes());
        assert!(!n.is_empty());
        let mut lib = b"\x7fELF some code ".to_vec();
        assert_eq!(n.find(&lib), None);
        lib.extend_from_slice(pk.to_ascii_lowercase().as_bytes());
        assert_eq!(n.find(&lib), Some(("record 0's PK as lower-case hex".into(), 15)));
        let bytes: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&pk[2 * i..2 * i + 2], 16).unwrap()).collect();
        let mut array = vec![0u8; 5];
        array.extend_from_slice(&bytes);
        assert_eq!(n.find(&array).map(|f| f.0), Some("record 0's PK as bytes".into()));
        // Short values (lengths, one-byte secrets) make no needle.
        assert_eq!(n.find(b"= 64 01"), None);
    }
}
