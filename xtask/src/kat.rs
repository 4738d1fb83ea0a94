//! KAT manifests (`kat/<id>/kat.sha256`) and the one canonical-text rule.
//!
//! Line format: `<sha256> <mode>[:<records>] <label>/<file>`.

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};

use crate::project;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The bytes exactly as written (PQClean's `nistkat-sha256`, liboqs's kats.json).
    Raw,
    /// CR and trailing blanks removed, empty lines dropped, every line ends in LF.
    Strict,
    /// As strict, and `*_Len = ...` lines dropped.
    Nolen,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub sha256: String,
    pub mode: Mode,
    /// Only the first N records are covered.
    pub records: Option<usize>,
    pub label: String,
    pub file: String,
}

#[derive(Debug, Clone)]
pub struct Manifest {
    pub path: Utf8PathBuf,
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// `kat/<id>/kat.sha256`.
    pub fn default_path(id: &str) -> Utf8PathBuf {
        project::root().join("kat").join(id).join("kat.sha256")
    }

    pub fn load(path: &Utf8Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read KAT manifest {path}"))?;
        let entries = parse(&text).with_context(|| format!("invalid KAT manifest {path}"))?;
        Ok(Manifest { path: path.to_owned(), entries })
    }

    pub fn entry(&self, label: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.label == label)
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
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("{}: not a SHA-256", ctx());
        }
        let (mode, records) = match mode.split_once(':') {
            Some((m, r)) => (m, Some(r.parse::<usize>().with_context(ctx)?)),
            None => (mode, None),
        };
        let mode = match mode {
            "raw" => Mode::Raw,
            "strict" => Mode::Strict,
            "nolen" => Mode::Nolen,
            other => bail!("{}: unknown mode {other:?} (raw, strict, nolen)", ctx()),
        };
        let (label, file) = path.split_once('/').with_context(|| format!("{}: expected <label>/<file>", ctx()))?;
        if entries.iter().any(|e| e.label == label) {
            bail!("{}: label {label} appears twice", ctx());
        }
        entries.push(Entry {
            sha256: sha.to_ascii_lowercase(),
            mode,
            records,
            label: label.to_owned(),
            file: file.to_owned(),
        });
    }
    Ok(entries)
}

fn is_record_start(line: &str) -> bool {
    line.trim_start().to_ascii_lowercase().starts_with("count =")
}

/// The text a digest covers under `mode`, cut to the first `records` records.
pub fn canonical(raw: &[u8], mode: Mode, records: Option<usize>) -> Vec<u8> {
    let cut = match records {
        Some(n) => cut_records(raw, n),
        None => raw,
    };
    if mode == Mode::Raw {
        return cut.to_vec();
    }
    let text = String::from_utf8_lossy(cut);
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        let line = line.replace('\r', "");
        let line = line.trim_end_matches([' ', '\t']);
        if line.is_empty() {
            continue;
        }
        if mode == Mode::Nolen && is_len_line(line) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.into_bytes()
}

fn is_len_line(line: &str) -> bool {
    line.split_once('=').is_some_and(|(k, _)| k.trim_end().ends_with("_Len"))
}

/// The bytes before the start of record `n` (counting from zero).
fn cut_records(raw: &[u8], n: usize) -> &[u8] {
    let mut seen = 0;
    let mut offset = 0;
    for line in raw.split_inclusive(|&b| b == b'\n') {
        if is_record_start(&String::from_utf8_lossy(line)) {
            if seen == n {
                return &raw[..offset];
            }
            seen += 1;
        }
        offset += line.len();
    }
    raw
}

pub fn digest(raw: &[u8], entry: &Entry) -> String {
    project::sha256_hex(&canonical(raw, entry.mode, entry.records))
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
        assert!(parse(&format!("{sha} strict A/b\n{sha} raw A/c\n")).is_err());
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
}
