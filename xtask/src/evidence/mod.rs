//! The evidence layout of a run, in one place:
//!
//! ```text
//! <out>/<system>/kat/<id>/<label>.log        KAT text exactly as generated
//! <out>/<system>/kat/<id>/<label>.<part>.log one KAT file of several (hash: 2_12 … Loop)
//! <out>/<system>/kat/<id>/<label>.build.log  compiler output
//! <out>/<system>/kat/<id>/summary.json       one verify run of one submission
//! <out>/<system>/records/<id>/<label>__<op>.json  one timed operation
//! <out>/<system>/records/<id>/size_audit.json     API sizes against the catalog
//! <out>/<system>/records/<id>/environment.json    environment manifest, campaign start/end
//! <out>/<system>/profile/<id>/<label>__<op>.json  symmetric-primitive profile of one operation
//! <out>/<system>/profile/<id>/survey.json         compiled-in and reached primitives, verdict
//! <out>/<system>/ct/<id>/<label>__<op>.json       constant-time findings of one operation
//! <out>/<system>/report/<id>.md              the page rendered from the above
//! <out>/EVIDENCE.sha256                       index of every file above
//! <out>/EVIDENCE.sha256.sha256                the index's own digest
//! ```
//!
//! `<system>` is the evidence folder `SystemProfile::evidence_name` gives: the system's
//! name, or `<system>-<arch>` for a run off the profile's architecture.

pub mod command;
pub mod domain;
pub mod schema;

/// The file name of an instance's KAT log, or of one part's (`<label>.<part>.log`).
pub fn kat_log_name(label: &str, part: &str) -> String {
    match part {
        "" => format!("{label}.log"),
        p => format!("{label}.{p}.log"),
    }
}

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;

use self::schema::{CtRecord, Environment, ProfileRecord, Record, SizeAudit, Summary, Survey};
use crate::project;

#[derive(Clone)]
pub struct Layout {
    pub out: Utf8PathBuf,
    pub system_dir: Utf8PathBuf,
}

impl Layout {
    pub fn new(out: &Utf8Path, system: &str) -> Layout {
        Layout { out: out.to_owned(), system_dir: out.join(system) }
    }

    /// A path as evidence names it: relative to the evidence root, so that a moved or
    /// merged set still points at its own files.
    pub fn relative(&self, path: &Utf8Path) -> String {
        path.strip_prefix(&self.out).unwrap_or(path).to_string()
    }

    pub fn kat_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("kat").join(id)
    }

    pub fn kat_log(&self, id: &str, label: &str) -> Utf8PathBuf {
        self.kat_part_log(id, label, "")
    }

    /// The log of one KAT file of a family that writes several (`<label>.2_12.log`);
    /// `kat_log` for a family's only file.
    pub fn kat_part_log(&self, id: &str, label: &str, part: &str) -> Utf8PathBuf {
        self.kat_dir(id).join(kat_log_name(label, part))
    }

    pub fn build_log(&self, id: &str, label: &str) -> Utf8PathBuf {
        self.kat_dir(id).join(format!("{label}.build.log"))
    }

    pub fn kat_summary(&self, id: &str) -> Utf8PathBuf {
        self.kat_dir(id).join("summary.json")
    }

    pub fn records_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("records").join(id)
    }

    pub fn record(&self, id: &str, label: &str, op: &str) -> Utf8PathBuf {
        self.records_dir(id).join(format!("{label}__{op}.json"))
    }

    pub fn size_audit(&self, id: &str) -> Utf8PathBuf {
        self.records_dir(id).join("size_audit.json")
    }

    pub fn report(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("report").join(format!("{id}.md"))
    }

    pub fn profile_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("profile").join(id)
    }

    pub fn profile(&self, id: &str, label: &str, op: &str) -> Utf8PathBuf {
        self.profile_dir(id).join(format!("{label}__{op}.json"))
    }

    pub fn survey(&self, id: &str) -> Utf8PathBuf {
        self.profile_dir(id).join("survey.json")
    }

    pub fn sanitize(&self, id: &str, label: &str) -> Utf8PathBuf {
        self.system_dir.join("sanitize").join(id).join(format!("{label}.json"))
    }

    pub fn ct_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("ct").join(id)
    }

    pub fn ct(&self, id: &str, label: &str, op: &str) -> Utf8PathBuf {
        self.ct_dir(id).join(format!("{label}__{op}.json"))
    }

    pub fn environment(&self, id: &str) -> Utf8PathBuf {
        self.records_dir(id).join("environment.json")
    }
}

/// The index of an evidence set: `sha256sum` lines for every file below the
/// evidence root, sorted by path; its own digest sits next to it in the same format,
/// so `sha256sum -c` checks both.
pub const INDEX: &str = "EVIDENCE.sha256";
pub const INDEX_DIGEST: &str = "EVIDENCE.sha256.sha256";

/// What a walk of an evidence set found: its regular files (relative paths, sorted,
/// index files excluded), and every entry no reader may open, with why.
#[derive(Debug, Default)]
pub struct Scan {
    pub files: Vec<Utf8PathBuf>,
    pub refused: Vec<String>,
}

/// Walk `root` without following anything: a link (to a file or a folder) or a special
/// file is refused, and so is a file above its cap (by its size alone, unread).
pub fn scan(root: &Utf8Path) -> Result<Scan> {
    let mut scan = Scan::default();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot walk {root}"))?;
        let path = Utf8Path::from_path(entry.path()).context("non-UTF-8 evidence path")?;
        let rel = path.strip_prefix(root).unwrap_or(path).to_owned();
        let ft = entry.file_type();
        if ft.is_dir() && !ft.is_symlink() {
            continue;
        }
        if ft.is_symlink() {
            scan.refused.push(format!("{rel}: a link (links are never followed)"));
        } else if !ft.is_file() {
            scan.refused.push(format!("{rel}: not a regular file"));
        } else if let Some(why) = oversize(&rel, entry.metadata().map(|m| m.len()).unwrap_or(u64::MAX)) {
            scan.refused.push(format!("{rel}: {why}"));
        } else if rel != INDEX && rel != INDEX_DIGEST {
            scan.files.push(rel);
        }
    }
    Ok(scan)
}

/// Why a file of `len` bytes at `rel` is too large to be evidence, if it is.
fn oversize(rel: &Utf8Path, len: u64) -> Option<String> {
    let json = rel.extension() == Some("json") || rel == INDEX || rel == INDEX_DIGEST;
    let cap = if json { project::EVIDENCE_JSON_CAP } else { project::EVIDENCE_FILE_CAP };
    (len > cap).then(|| format!("{len} bytes, more than the {cap} an evidence file of its kind may hold"))
}

/// Refuse an evidence set that holds anything its readers may not open.
pub fn refuse_unsafe(root: &Utf8Path) -> Result<()> {
    refuse(root, &scan(root)?)
}

/// Refuse to make pages from an evidence set that does not match its index (an edited
/// or removed file is no evidence of the run that indexed it): a finding, exit 1. Files
/// the index does not list are no claim of it; pages list them as unindexed.
pub fn refuse_unindexed(root: &Utf8Path) -> Result<()> {
    refuse_unsafe(root)?;
    let why = match check(root).map(|p| Problems { extra: Vec::new(), ..p }) {
        Ok(p) if p.is_clean() => return Ok(()),
        Ok(p) => p.summary(),
        Err(e) => format!("{e:#}"),
    };
    Err(crate::ui::Findings(format!(
        "evidence {root} does not match its index ({why}); run `cargo xtask evidence check {root}`, and run again \
         the commands that wrote what changed"
    ))
    .into())
}

fn refuse(root: &Utf8Path, scan: &Scan) -> Result<()> {
    let refused = &scan.refused;
    if refused.is_empty() {
        return Ok(());
    }
    let more = refused.len().saturating_sub(10);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    bail!(
        "refusing to read evidence {root}: {}{more}; run `cargo xtask evidence check {root}`",
        refused[..refused.len().min(10)].join("; ")
    )
}

/// Every evidence file below `root` (relative paths, sorted), index files excluded;
/// an error when the set holds a link, a special file or an oversize file.
pub fn files(root: &Utf8Path) -> Result<Vec<Utf8PathBuf>> {
    let scan = scan(root)?;
    refuse(root, &scan)?;
    Ok(scan.files)
}

/// Re-index after a run (`update_index`) and say so.
pub fn reindex(root: &Utf8Path) -> Result<()> {
    let digest = update_index(root)?;
    crate::say!("evidence index {root}/{INDEX} (sha256 {})", &digest[..16]);
    Ok(())
}

/// Index every file of `root` as it is now: the operator's word (`evidence index`), a
/// merge of checked shards, a test's fabricated set. A run never calls it: it would
/// bless whatever was edited since the last run (`update_index`). Returns the index's
/// own SHA-256.
pub fn write_index(root: &Utf8Path) -> Result<String> {
    let _one_at_a_time = indexing();
    let mut entries = BTreeMap::new();
    for rel in files(root)? {
        entries.insert(rel.to_string(), project::sha256_regular(&root.join(&rel))?);
    }
    put_index(root, &entries)
}

/// The index after a run: a file this process wrote gets the digest of what it wrote;
/// every other file keeps its earlier entry, and one whose bytes no longer match it is
/// not indexed again (its old entry stays, so `evidence check` and the pages still name
/// it; the run warns). A file this process removed loses its entry; a file neither
/// written nor indexed before stays out of the index (unindexed). Returns the index's
/// own SHA-256.
pub fn update_index(root: &Utf8Path) -> Result<String> {
    let _one_at_a_time = indexing();
    let present = files(root)?;
    let earlier = earlier_index(root);
    let names: BTreeSet<String> = present.iter().map(|p| p.to_string()).chain(earlier.keys().cloned()).collect();
    let mut entries = BTreeMap::new();
    for rel in names {
        let path = root.join(&rel);
        match (project::written(&path), earlier.get(&rel)) {
            (Some(Some(sha)), _) => {
                entries.insert(rel, sha);
            }
            (Some(None), _) => {}
            (None, Some(sha)) => {
                let now = project::is_regular(&path).then(|| project::sha256_regular(&path)).transpose()?;
                if now.as_ref().is_some_and(|now| now != sha) {
                    warn_once(
                        &rel,
                        "changed since it was indexed, and not by this run: its entry is kept, not made anew",
                    );
                }
                entries.insert(rel, sha.clone());
            }
            // A step beside this one is writing it (renamed into place, then indexed).
            (None, None) if project::own_temp(&path) => {}
            (None, None) => warn_once(&rel, "not in the evidence index and not written by this run: left unindexed"),
        }
    }
    put_index(root, &entries)
}

/// Held while an index is written: steps of a run that go side by side write it one
/// at a time, the last from everything written so far (index and digest never torn).
static INDEXING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn indexing() -> std::sync::MutexGuard<'static, ()> {
    INDEXING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `f` while no index of this process is being written: a check of files against the
/// index (`check`) made beside running steps sees an index and its digest that agree.
pub fn settled<T>(f: impl FnOnce() -> T) -> T {
    let _one_at_a_time = indexing();
    f()
}

/// The entries of the index a run found, when the index is intact; none (with a
/// warning) when it does not match its own digest: an edited index vouches for nothing.
fn earlier_index(root: &Utf8Path) -> BTreeMap<String, String> {
    if std::fs::symlink_metadata(root.join(INDEX)).is_err() {
        return BTreeMap::new();
    }
    let intact = || -> Result<BTreeMap<String, String>> {
        let text = read_index_text(root, INDEX)?;
        let want = read_index_text(root, INDEX_DIGEST)?;
        if want.split_whitespace().next() != Some(project::sha256_hex(text.as_bytes()).as_str()) {
            bail!("{INDEX} does not match {INDEX_DIGEST}");
        }
        read_index(root)
    };
    intact().unwrap_or_else(|e| {
        crate::warning!(
            "WARNING: {root}/{INDEX}: {e:#}; none of its entries is kept, and only this run's files are indexed"
        );
        BTreeMap::new()
    })
}

/// Say once per process what a run's index did with a file it did not write.
fn warn_once(rel: &str, what: &str) {
    static SAID: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    if SAID.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(rel.to_owned()) {
        crate::warning!("WARNING: {rel}: {what}; `cargo xtask evidence check` names it");
    }
}

/// Write `entries` (path → digest) as the index of `root`, with its own digest.
fn put_index(root: &Utf8Path, entries: &BTreeMap<String, String>) -> Result<String> {
    let text: String = entries.iter().map(|(rel, sha)| format!("{sha}  {rel}\n")).collect();
    project::write_atomic(&root.join(INDEX), text.as_bytes())?;
    let digest = project::sha256_hex(text.as_bytes());
    project::write_atomic(&root.join(INDEX_DIGEST), format!("{digest}  {INDEX}\n").as_bytes())?;
    Ok(digest)
}

/// What differs between an evidence set and its index.
#[derive(Debug, Default, Serialize)]
pub struct Problems {
    pub index: Option<String>,
    pub changed: Vec<String>,
    pub missing: Vec<String>,
    pub extra: Vec<String>,
    /// Files that do not read back through their type byte for byte.
    pub schema: Vec<String>,
    /// Links, special files and oversize files: never opened, always a defect.
    pub refused: Vec<String>,
}

impl Problems {
    /// The first few problems, in words.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self.index.iter().cloned().collect();
        for (what, list) in [("changed", &self.changed), ("missing", &self.missing), ("extra", &self.extra)] {
            if !list.is_empty() {
                let more = list.len().saturating_sub(5);
                let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                parts.push(format!("{what}: {}{more}", list[..list.len().min(5)].join(", ")));
            }
        }
        parts.extend(self.schema.iter().chain(&self.refused).take(5).cloned());
        parts.join("; ")
    }

    pub fn is_clean(&self) -> bool {
        self.index.is_none()
            && self.changed.is_empty()
            && self.missing.is_empty()
            && self.extra.is_empty()
            && self.schema.is_empty()
            && self.refused.is_empty()
    }
}

/// The typed check of a file of the layout, by its place; None for files without one.
fn typed(root: &Utf8Path, rel: &Utf8Path) -> Option<std::result::Result<(), String>> {
    let parts: Vec<&str> = rel.iter().collect();
    let path = root.join(rel);
    match parts.as_slice() {
        [_, "kat", _, "summary.json"] => Some(schema::round_trip::<Summary>(&path)),
        [_, "records", _, "environment.json"] => Some(schema::round_trip::<Environment>(&path)),
        [_, "records", _, "size_audit.json"] => Some(schema::round_trip::<SizeAudit>(&path)),
        [_, "profile", _, "survey.json"] => Some(schema::round_trip::<Survey>(&path)),
        [_, "profile", _, file] if file.ends_with(".json") => Some(schema::round_trip::<ProfileRecord>(&path)),
        [_, "ct", _, file] if file.ends_with(".json") => Some(schema::round_trip::<CtRecord>(&path)),
        [_, "sanitize", _, file] if file.ends_with(".json") => {
            Some(schema::round_trip::<schema::SanitizeRecord>(&path))
        }
        [_, "records", _, file] if file.contains("__") && file.ends_with(".json") => {
            Some(schema::round_trip::<Record>(&path))
        }
        _ => None,
    }
}

/// Parse an index: path → digest.
pub fn read_index(root: &Utf8Path) -> Result<BTreeMap<String, String>> {
    let text = read_index_text(root, INDEX)?;
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (sha, path) = l.split_once("  ").with_context(|| format!("bad index line {l:?}"))?;
            Ok((path.to_owned(), sha.to_owned()))
        })
        .collect()
}

/// An index file through the one reader (no link, capped).
fn read_index_text(root: &Utf8Path, name: &str) -> Result<String> {
    let path = root.join(name);
    let bytes = project::read_regular(&path, project::EVIDENCE_JSON_CAP)
        .with_context(|| format!("no readable evidence index {path}"))?;
    String::from_utf8(bytes).with_context(|| format!("{path} is not UTF-8 text"))
}

pub fn check(root: &Utf8Path) -> Result<Problems> {
    let mut p = Problems::default();
    let scan = scan(root)?;
    p.refused = scan.refused;
    let text = read_index_text(root, INDEX)?;
    let want = read_index_text(root, INDEX_DIGEST).unwrap_or_default();
    let actual = project::sha256_hex(text.as_bytes());
    if want.split_whitespace().next() != Some(actual.as_str()) {
        p.index = Some(format!("{INDEX} has SHA-256 {actual}, but {INDEX_DIGEST} says {}", want.trim()));
    }
    let index = read_index(root)?;
    let present: BTreeSet<String> = scan.files.into_iter().map(|f| f.to_string()).collect();
    let refused = |path: &str| p.refused.iter().any(|r| r.starts_with(&format!("{path}: ")));
    for (path, sha) in &index {
        if refused(path) {
            continue;
        } else if !present.contains(path) {
            p.missing.push(path.clone());
        } else if &project::sha256_regular(&root.join(path))? != sha {
            p.changed.push(path.clone());
        }
    }
    for rel in &present {
        if let Some(Err(why)) = typed(root, Utf8Path::new(rel)) {
            p.schema.push(why);
        }
    }
    p.extra = present.into_iter().filter(|f| !index.contains_key(f)).collect();
    Ok(p)
}

/// `rel` is in the index with the digest it has now.
pub fn indexed(root: &Utf8Path, index: &BTreeMap<String, String>, rel: &str) -> Result<()> {
    let want = index.get(rel).with_context(|| format!("{rel} is not in the evidence index"))?;
    if &project::sha256_regular(&root.join(rel))? != want {
        bail!("{rel} changed since it was indexed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_detects_changed_missing_and_extra_files_and_its_own_tampering() {
        let t = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(t.path()).unwrap();
        std::fs::create_dir_all(root.join("local/kat/x")).unwrap();
        std::fs::write(root.join("local/kat/x/a.log"), "a").unwrap();
        std::fs::write(root.join("local/kat/x/b.log"), "b").unwrap();
        write_index(root).unwrap();
        assert!(check(root).unwrap().is_clean());
        std::fs::write(root.join("local/kat/x/a.log"), "A").unwrap();
        std::fs::remove_file(root.join("local/kat/x/b.log")).unwrap();
        std::fs::write(root.join("local/new.json"), "{}").unwrap();
        let p = check(root).unwrap();
        assert_eq!(p.changed, ["local/kat/x/a.log"]);
        assert_eq!(p.missing, ["local/kat/x/b.log"]);
        assert_eq!(p.extra, ["local/new.json"]);
        assert!(p.index.is_none());
        // Rewriting a listed digest is caught by the index's own digest.
        let index = std::fs::read_to_string(root.join(INDEX)).unwrap();
        let forged = index.replacen(&index[..64], &project::sha256_hex(b"A"), 1);
        std::fs::write(root.join(INDEX), forged).unwrap();
        let p = check(root).unwrap();
        assert!(p.index.is_some());
        assert!(!p.changed.contains(&"local/kat/x/a.log".to_owned()));
    }

    #[test]
    fn a_runs_index_keeps_the_old_entry_of_a_file_edited_since_and_blesses_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(t.path()).unwrap();
        std::fs::create_dir_all(root.join("local/kat/x")).unwrap();
        std::fs::write(root.join("local/kat/x/a.log"), "a").unwrap();
        write_index(root).unwrap();
        // Between runs: a KAT log edited, a file dropped in; then a run writes its own.
        std::fs::write(root.join("local/kat/x/a.log"), "forged").unwrap();
        std::fs::write(root.join("local/kat/x/stray.log"), "s").unwrap();
        let own = root.join("local/records/x/mine.json");
        project::write_atomic(&own, b"{}").unwrap();
        update_index(root).unwrap();
        let p = check(root).unwrap();
        assert_eq!(
            (p.changed.as_slice(), p.extra.as_slice()),
            (&["local/kat/x/a.log".to_owned()][..], &["local/kat/x/stray.log".to_owned()][..])
        );
        assert!(p.index.is_none() && read_index(root).unwrap().contains_key("local/records/x/mine.json"));
        assert!(format!("{:#}", refuse_unindexed(root).unwrap_err()).contains("changed: local/kat/x/a.log"));
        // A file the run removed loses its entry; the edited one still does not pass.
        project::remove_file(&own).unwrap();
        update_index(root).unwrap();
        let p = check(root).unwrap();
        assert!(p.missing.is_empty() && p.changed == ["local/kat/x/a.log"], "{p:?}");
    }
}
