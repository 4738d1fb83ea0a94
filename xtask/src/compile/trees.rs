//! Cached source trees. An archive is copied into the cache through the one descriptor it
//! is opened with, hashed on the way, and it is that copy, out of every sandbox's reach,
//! that is checked against its pin and extracted: a file renamed over the archive's path
//! meanwhile is never read. Each tree has the host's record of its entries beside it
//! (`<key>.tree.json`, [`TreeRecord`]), checked before every reuse; a tree whose entries
//! changed is discarded and made again.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use crate::compile::extract::{self, ExtractLimits};
use crate::evidence::schema::{self, TreeRecord};
use crate::lock::KeyLock;
use crate::project;
use crate::sha::Sha256Hex;

/// A folder of cached trees, each under its key.
pub struct Cache {
    base: Utf8PathBuf,
}

/// An archive's bytes as copied into the cache, with their digest. The copy is removed
/// when this is dropped: nothing stays of an archive that is refused.
pub struct Copied {
    file: tempfile::NamedTempFile,
    /// The path it was copied from, for messages.
    pub from: Utf8PathBuf,
    pub sha256: String,
    pub bytes: u64,
}

/// What a cached tree was found to be.
#[derive(Debug, PartialEq)]
enum Found {
    Intact,
    Absent,
    /// No record of its entries: an older harness or an interrupted run made it.
    Unrecorded,
    /// Why it must not be reused.
    Changed(String),
}

impl Cache {
    /// Extracted archives and crates, by their SHA-256.
    pub fn sources() -> Cache {
        Cache::at(project::cache_dir().join("sources"))
    }

    /// Patched copies of trees, by the digest of tree and patches.
    pub fn patched() -> Cache {
        Cache::at(project::cache_dir().join("patched"))
    }

    pub fn at(base: Utf8PathBuf) -> Cache {
        Cache { base }
    }

    /// The extracted tree of the archive at `path`, whose SHA-256 must be `pin`; `refuse`
    /// is the error for any other.
    pub fn pinned(
        &self,
        path: &Utf8Path,
        pin: &Sha256Hex,
        limits: ExtractLimits,
        refuse: impl FnOnce(&Copied) -> anyhow::Error,
    ) -> Result<Utf8PathBuf> {
        self.pinned_with(path, pin, limits, refuse, || {})
    }

    /// [`Cache::pinned`], running `between` once the copy is checked and before anything
    /// is extracted: where the tests rename another file over `path`.
    fn pinned_with(
        &self,
        path: &Utf8Path,
        pin: &Sha256Hex,
        limits: ExtractLimits,
        refuse: impl FnOnce(&Copied) -> anyhow::Error,
        between: impl FnOnce(),
    ) -> Result<Utf8PathBuf> {
        let copy = self.copy_in(path)?;
        if copy.sha256 != pin.as_str() {
            return Err(refuse(&copy));
        }
        between();
        self.extracted(copy, limits)
    }

    /// Copy the regular file at `path` (a link is refused, never followed) into the cache
    /// through the one descriptor it is opened with, hashing the bytes as they are written.
    pub fn copy_in(&self, path: &Utf8Path) -> Result<Copied> {
        let from = open_archive(path)?;
        std::fs::create_dir_all(&self.base).with_context(|| format!("cannot create {}", self.base))?;
        let file = tempfile::Builder::new()
            .prefix(".archive-")
            .tempfile_in(&self.base)
            .with_context(|| format!("cannot copy {path} into {}", self.base))?;
        let (sha256, bytes) = project::copy_hashing(from, file.as_file(), path)?;
        Ok(Copied { file, from: path.to_owned(), sha256, bytes })
    }

    /// The tree of a checked copy, extracted from the copy alone, cached under its SHA-256.
    pub fn extracted(&self, copy: Copied, limits: ExtractLimits) -> Result<Utf8PathBuf> {
        let name = copy.from.to_string();
        self.tree(&copy.sha256, |dest| extract::unpack(copy.file.as_file(), &name, dest, limits))
    }

    /// The tree cached under `key`, reused while every entry is as its record says; else
    /// made again by `make` into an empty folder, listed, and put in its place.
    pub fn tree(&self, key: &str, make: impl FnOnce(&Utf8Path) -> Result<()>) -> Result<Utf8PathBuf> {
        std::fs::create_dir_all(&self.base).with_context(|| format!("cannot create {}", self.base))?;
        let _lock = KeyLock::exclusive(&self.base.join(format!("{key}.lock")))?;
        let dest = self.base.join(key);
        match self.found(key) {
            Found::Intact => return Ok(dest),
            Found::Absent => {}
            Found::Unrecorded => crate::note!("{dest} has no record of its files: it is made again"),
            Found::Changed(why) => crate::warning!("warning: the cached tree {dest} is made again: {why}"),
        }
        let tmp = tempfile::Builder::new()
            .prefix(".make-")
            .tempdir_in(&self.base)
            .with_context(|| format!("cannot make a folder in {}", self.base))?;
        let tmp_path = Utf8Path::from_path(tmp.path()).context("non-UTF-8 cache path")?;
        make(tmp_path)?;
        let files = listing(tmp_path)?;
        self.install(key, tmp, files)
    }

    fn record_path(&self, key: &str) -> Utf8PathBuf {
        self.base.join(format!("{key}.tree.json"))
    }

    /// Whether the tree under `key` may be reused, and why not.
    fn found(&self, key: &str) -> Found {
        let dir = self.base.join(key);
        match std::fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Absent,
            Err(e) => return Found::Changed(format!("cannot read it: {e}")),
            Ok(m) if !m.is_dir() => return Found::Changed("it is not a folder".into()),
            Ok(_) => {}
        }
        let record = match schema::read::<TreeRecord>(&self.record_path(key)) {
            Ok(Some(record)) => record,
            Ok(None) => return Found::Unrecorded,
            Err(e) => return Found::Changed(format!("{e:#}")),
        };
        if record.key != key {
            return Found::Changed(format!("its record is that of another tree ({})", record.key));
        }
        match listing(&dir) {
            Ok(now) => changes(&record.files, &now).map_or(Found::Intact, Found::Changed),
            Err(e) => Found::Changed(format!("cannot read it: {e:#}")),
        }
    }

    /// Put the finished tree `tmp` in the place of `key`: the old record goes first, the
    /// new one last, so a run stopped in between leaves a tree that is made again.
    fn install(&self, key: &str, tmp: tempfile::TempDir, files: BTreeMap<String, String>) -> Result<Utf8PathBuf> {
        let (dest, record) = (self.base.join(key), self.record_path(key));
        remove(&record)?;
        remove(&dest)?;
        std::fs::rename(tmp.path(), &dest).with_context(|| format!("cannot move the new tree to {dest}"))?;
        let _ = tmp.keep();
        let schema = schema::version::<TreeRecord>();
        schema::write(&record, &TreeRecord { schema, key: key.to_owned(), files })?;
        Ok(dest)
    }
}

/// Open the archive at `path`, a regular file itself: a link or a special file there is a
/// wrong `--archive`, said before anything runs.
fn open_archive(path: &Utf8Path) -> Result<std::fs::File> {
    let opened = project::open_regular(path);
    match std::fs::symlink_metadata(path) {
        Ok(m) if opened.is_err() && m.file_type().is_symlink() => {
            let target = std::fs::read_link(path).map(|t| t.display().to_string()).unwrap_or_default();
            crate::ui::usage(format!(
                "{path} is a link (to {target}): an archive is read as the file itself, never through a link; \
                 name the file"
            ))
        }
        Ok(m) if opened.is_err() && !m.is_file() => {
            crate::ui::usage(format!("{path} is not a regular file: name the archive file itself"))
        }
        _ => opened,
    }
}

/// Remove a file or a folder, if there is one (never following a link).
fn remove(path: &Utf8Path) -> Result<()> {
    let removed = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        _ => std::fs::remove_file(path),
    };
    removed.with_context(|| format!("cannot remove {path}"))
}

/// Every entry below `dir`, by relative path (`project::entry_kind`), read without
/// following links.
fn listing(dir: &Utf8Path) -> Result<BTreeMap<String, String>> {
    let mut entries = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).max_open(64).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot walk {dir}"))?;
        let path = Utf8Path::from_path(entry.path()).with_context(|| {
            format!("a file name that is not UTF-8: {}", String::from_utf8_lossy(entry.file_name().as_encoded_bytes()))
        })?;
        let rel = path.strip_prefix(dir).unwrap_or(path).to_string();
        entries.insert(rel, project::entry_kind(path, entry.file_type())?);
    }
    Ok(entries)
}

/// The entries that differ from the record, in words (the first few); None when none do.
fn changes(recorded: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Option<String> {
    const SHOWN: usize = 5;
    let paths: BTreeSet<&String> = recorded.keys().chain(now.keys()).collect();
    let said: Vec<String> = paths
        .into_iter()
        .filter_map(|path| {
            let how = match (recorded.get(path), now.get(path)) {
                (Some(was), Some(is)) if was == is => return None,
                (Some(_), Some(is)) if is.starts_with("link ") => "replaced by a link",
                (Some(_), Some(_)) => "changed",
                (Some(_), None) => "removed",
                (None, _) => "added",
            };
            Some(format!("{path:?} {how}"))
        })
        .collect();
    let more = said.len().saturating_sub(SHOWN);
    let shown = said.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    match (said.is_empty(), more) {
        (true, _) => None,
        (false, 0) => Some(format!("its files changed since it was made ({shown})")),
        (false, n) => Some(format!("its files changed since it was made ({shown} and {n} more)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A zip of `files` (name, text).
    fn zip(path: &Utf8Path, files: &[(&str, &str)]) {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for (name, text) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }

    struct Case {
        _tmp: tempfile::TempDir,
        dir: Utf8PathBuf,
        cache: Cache,
        /// Where the operator's archive lies.
        archive: Utf8PathBuf,
        pin: Sha256Hex,
    }

    const GENUINE: &[(&str, &str)] = &[("API/drng.c", "/* official */\n"), ("API/auxfunc.c", "int aux;\n")];

    fn case() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(tmp.path()).unwrap().to_owned();
        let archive = dir.join("API_PKC.zip");
        zip(&archive, GENUINE);
        let pin = Sha256Hex::computed(project::sha256_file(&archive).unwrap());
        let cache = Cache::at(dir.join("cache/sources"));
        Case { _tmp: tmp, dir, cache, archive, pin }
    }

    impl Case {
        /// A file of the attacker's, with another drng.c, renamed over the archive's path.
        fn rename_forgery_over_archive(&self) {
            let forged = self.dir.join("forged.zip");
            zip(&forged, &[("API/drng.c", "/* forged */\n"), ("API/auxfunc.c", "int aux;\n")]);
            std::fs::rename(&forged, &self.archive).unwrap();
        }

        fn refuse(&self) -> impl FnOnce(&Copied) -> anyhow::Error {
            |c: &Copied| anyhow::anyhow!("refusing {}: SHA-256 {}", c.from, c.sha256)
        }

        fn pinned(&self) -> Result<Utf8PathBuf> {
            self.cache.pinned(&self.archive, &self.pin, ExtractLimits::default(), self.refuse())
        }

        /// The cache folder's names, sorted.
        fn cached(&self) -> Vec<String> {
            let mut names: Vec<String> = match self.cache.base.read_dir_utf8() {
                Ok(entries) => entries.map(|e| e.unwrap().file_name().to_owned()).collect(),
                Err(_) => vec![],
            };
            names.sort();
            names
        }
    }

    fn drng(tree: &Utf8Path) -> String {
        std::fs::read_to_string(tree.join("API/drng.c")).unwrap()
    }

    /// The attack of issue 32: the archive passes its digest, then another file is renamed
    /// over its path before extraction. What is extracted is the copy that was hashed.
    #[test]
    fn a_file_renamed_over_the_archive_after_its_digest_is_never_extracted() {
        let c = case();
        let between = || c.rename_forgery_over_archive();
        let tree = c.cache.pinned_with(&c.archive, &c.pin, ExtractLimits::default(), c.refuse(), between).unwrap();
        assert_eq!(drng(&tree), "/* official */\n");
        assert_eq!(c.cached(), [c.pin.to_string(), format!("{}.lock", c.pin), format!("{}.tree.json", c.pin)]);
        // The forgery at the path now is refused, and the genuine tree is still the one cached.
        let e = format!("{:#}", c.pinned().unwrap_err());
        assert!(e.starts_with(&format!("refusing {}: SHA-256 ", c.archive)), "{e}");
        assert_eq!(drng(&tree), "/* official */\n");
        // The next genuine run reuses that very tree (the same folder, not one made again).
        zip(&c.archive, GENUINE);
        let inode = |p: &Utf8Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let made = inode(&tree);
        assert_eq!(c.pinned().unwrap(), tree);
        assert_eq!((inode(&tree), drng(&tree).as_str()), (made, "/* official */\n"));
    }

    #[test]
    fn a_refused_archive_leaves_nothing_in_the_cache() {
        let c = case();
        c.rename_forgery_over_archive();
        assert!(c.pinned().is_err());
        assert!(c.cached().is_empty(), "{:?}", c.cached());
    }

    /// A tree edited on disk (a file changed, one added, a link put in) is named, discarded
    /// and extracted again from the checked archive.
    #[test]
    fn an_edited_tree_is_named_and_extracted_again() {
        let c = case();
        let tree = c.pinned().unwrap();
        std::fs::write(tree.join("API/drng.c"), "/* edited */\n").unwrap();
        std::fs::write(tree.join("API/drng.h"), "#define EXTRA\n").unwrap();
        std::fs::remove_file(tree.join("API/auxfunc.c")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", tree.join("API/auxfunc.c")).unwrap();
        let Found::Changed(why) = c.cache.found(c.pin.as_str()) else { panic!("an edited tree is reusable") };
        assert_eq!(
            why,
            "its files changed since it was made (\"API/auxfunc.c\" replaced by a link, \"API/drng.c\" changed, \
             \"API/drng.h\" added)"
        );
        assert_eq!(c.pinned().unwrap(), tree);
        assert_eq!(drng(&tree), "/* official */\n");
        assert!(project::is_regular(&tree.join("API/auxfunc.c")));
        assert!(!tree.join("API/drng.h").exists());
        assert_eq!(c.cache.found(c.pin.as_str()), Found::Intact);
    }

    /// A tree with no record, or a record that does not fit it, is never reused.
    #[test]
    fn a_tree_without_its_record_is_made_again() {
        let c = case();
        let tree = c.pinned().unwrap();
        let record = c.cache.record_path(c.pin.as_str());
        std::fs::remove_file(&record).unwrap();
        std::fs::write(tree.join(".complete"), c.pin.as_str()).unwrap(); // the old marker
        assert_eq!(c.cache.found(c.pin.as_str()), Found::Unrecorded);
        c.pinned().unwrap();
        assert!(!tree.join(".complete").exists());
        let text = std::fs::read_to_string(&record).unwrap();
        std::fs::write(&record, text.replace(c.pin.as_str(), &"0".repeat(64))).unwrap();
        assert!(matches!(c.cache.found(c.pin.as_str()), Found::Changed(why) if why.contains("another tree")));
        std::fs::remove_file(&record).unwrap();
        std::os::unix::fs::symlink(c.dir.join("elsewhere.json"), &record).unwrap();
        assert!(matches!(c.cache.found(c.pin.as_str()), Found::Changed(why) if why.contains("links are not followed")));
        c.pinned().unwrap();
        assert_eq!(c.cache.found(c.pin.as_str()), Found::Intact);
    }

    /// The archive is opened once, as the file itself: a link or a FIFO at its path is a
    /// usage error (exit 2), and nothing is read through it.
    #[test]
    fn a_link_or_fifo_at_the_archive_path_is_refused() {
        let c = case();
        let link = c.dir.join("link.zip");
        std::os::unix::fs::symlink(&c.archive, &link).unwrap();
        let e = c.cache.pinned(&link, &c.pin, ExtractLimits::default(), c.refuse()).unwrap_err();
        assert_eq!(crate::ui::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("is a link (to "), "{e:#}");
        let fifo = c.dir.join("fifo.zip");
        assert!(std::process::Command::new("mkfifo").arg(fifo.as_str()).status().unwrap().success());
        let e = c.cache.pinned(&fifo, &c.pin, ExtractLimits::default(), c.refuse()).unwrap_err();
        assert_eq!(crate::ui::exit_code(&e), 2);
        assert!(format!("{e:#}").contains("is not a regular file"), "{e:#}");
        assert!(c.cached().is_empty(), "{:?}", c.cached());
    }

    #[test]
    fn the_copy_is_hashed_as_it_is_written() {
        let c = case();
        let copy = c.cache.copy_in(&c.archive).unwrap();
        assert_eq!((copy.sha256.as_str(), copy.bytes), (c.pin.as_str(), std::fs::metadata(&c.archive).unwrap().len()));
        assert_eq!(std::fs::read(copy.file.path()).unwrap(), std::fs::read(&c.archive).unwrap());
        let path = copy.file.path().to_owned();
        drop(copy);
        assert!(!path.exists(), "a copy that is not extracted stays behind");
    }
}
