//! Where things live, and small helpers used by every command.

use std::io::Read;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use sha2::{Digest, Sha256};
use xshell::{cmd, Shell};

/// The checkout this run works on, found at run time: the `CARGO_MANIFEST_DIR` that
/// `cargo run` (and `cargo test`) set, else the nearest folder above the binary that
/// holds the manifests. A binary moved away from its checkout refuses to run instead of
/// reading another checkout's manifests and digests.
pub fn locate_root() -> Result<Utf8PathBuf> {
    let is_root =
        |d: &Utf8Path| d.join("xtask/Cargo.toml").is_file() && d.join("submissions").is_dir() && d.join("kat").is_dir();
    if let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") {
        if let Some(root) = Utf8Path::new(&dir).parent().filter(|r| is_root(r)) {
            return Ok(root.to_owned());
        }
    }
    let exe = std::env::current_exe().context("cannot find the running binary")?;
    let exe = Utf8PathBuf::from_path_buf(exe).map_err(|p| anyhow::anyhow!("non-UTF-8 binary path {}", p.display()))?;
    match exe.ancestors().find(|d| is_root(d)) {
        Some(root) => Ok(root.to_owned()),
        None => bail!(
            "cannot find the ngcc-repro checkout ({exe} is not inside one, and CARGO_MANIFEST_DIR is not set): \
             run it as `cargo xtask ...` in the repository"
        ),
    }
}

/// The repository root (see [`locate_root`]); `main` has checked that there is one.
pub fn root() -> Utf8PathBuf {
    static ROOT: std::sync::OnceLock<Utf8PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| locate_root().expect("the project root")).clone()
}

/// A path as records name it: relative to the project root when it lies there (the
/// machine that ran a command is no business of its evidence).
pub fn relative(path: &Utf8Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).to_string()
}

/// The harness's own C drivers.
pub fn drivers_dir() -> Utf8PathBuf {
    root().join("drivers")
}

/// Cache for root filesystems, extracted archives and builds. Safe to delete.
pub fn cache_dir() -> Utf8PathBuf {
    match std::env::var("NGCC_CACHE") {
        Ok(dir) if !dir.is_empty() => Utf8PathBuf::from(dir),
        _ => root().join("target/ngcc-repro"),
    }
}

/// The bytes an unprivileged user may still write on the file system of `path`
/// (`statvfs`); None when it cannot be read.
pub fn free_bytes(path: &Utf8Path) -> Option<u64> {
    let c = std::ffi::CString::new(path.as_str()).ok()?;
    // SAFETY: a zeroed statvfs is a valid value of the plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a struct to fill.
    (unsafe { libc::statvfs(c.as_ptr(), &raw mut st) } == 0).then(|| st.f_bavail.saturating_mul(st.f_frsize))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `n` bytes from the kernel's random source, never from anything a sandbox saw.
pub fn random_bytes(n: usize) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| anyhow::anyhow!("cannot read /dev/urandom: {e}"))?;
    Ok(bytes)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_file(path: &Utf8Path) -> Result<String> {
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {path}"))?;
    hash_reader(file, path)
}

fn hash_reader(file: impl Read, path: &Utf8Path) -> Result<String> {
    copy_hashing(file, std::io::sink(), path).map(|(sha256, _)| sha256)
}

/// Copy `from` (the file at `path`) into `to`; the SHA-256 and length of the bytes
/// copied, taken as they are written.
pub fn copy_hashing(mut from: impl Read, mut to: impl std::io::Write, path: &Utf8Path) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = from.read(&mut buf).with_context(|| format!("cannot read {path}"))?;
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n]).with_context(|| format!("cannot write the copy of {path}"))?;
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hex(&hasher.finalize()), len))
}

/// Content digest of a directory tree: SHA-256 over sorted `path\0kind\0detail\n` lines.
/// Nothing is followed: a link is hashed by its target text, and a file that is not a
/// regular file or folder (a FIFO, a socket, a device) by its kind alone, so that trees
/// a sandbox wrote can be digested safely. File times and owners do not count.
pub fn tree_digest(dir: &Utf8Path) -> Result<String> {
    let mut lines = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot walk {dir}"))?;
        let path = Utf8Path::from_path(entry.path()).with_context(|| format!("non-UTF-8 path below {dir}"))?;
        let rel = path.strip_prefix(dir).unwrap_or(path);
        let ft = entry.file_type();
        if ft.is_file() {
            lines.push(format!("{rel}\0file\0{}\n", sha256_regular(path)?));
        } else if ft.is_symlink() {
            let target = std::fs::read_link(path)?;
            lines.push(format!("{rel}\0link\0{}\n", target.display()));
        } else if !ft.is_dir() {
            lines.push(format!("{rel}\0special\0\n"));
        }
    }
    Ok(sha256_hex(lines.concat().as_bytes()))
}

/// Open a regular file without following a link at its last component (a sandbox may
/// have left one), and refuse anything else.
pub fn open_regular(path: &Utf8Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot open {path} (links are not followed)"))?;
    if !file.metadata()?.is_file() {
        bail!("{path} is not a regular file");
    }
    Ok(file)
}

/// SHA-256 of a regular file, without following links.
pub fn sha256_regular(path: &Utf8Path) -> Result<String> {
    hash_reader(open_regular(path)?, path)
}

/// One entry of a tree a sandbox could have written, read without following it:
/// `file <sha256>`, `link <target>`, `dir`, or `special` (a FIFO, a socket, a device).
pub fn entry_kind(path: &Utf8Path, ft: std::fs::FileType) -> Result<String> {
    Ok(if ft.is_file() {
        format!("file {}", sha256_regular(path)?)
    } else if ft.is_symlink() {
        let target = std::fs::read_link(path).with_context(|| format!("cannot read the link {path}"))?;
        format!("link {}", target.display())
    } else if ft.is_dir() {
        "dir".to_owned()
    } else {
        "special".to_owned()
    })
}

/// The most a JSON evidence file (summary, record, manifest, audit, survey) or an
/// index may hold: far above any the tool writes, far below what would hurt to read.
pub const EVIDENCE_JSON_CAP: u64 = 16 << 20;

/// The most any evidence file (a KAT log among them) may hold; logs are streamed,
/// never read whole, and the KAT output cap (`--output-cap-mib`) keeps them far below.
pub const EVIDENCE_FILE_CAP: u64 = 8 << 30;

/// True when `path` is a regular file itself, not a link to one.
pub fn is_regular(path: &Utf8Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// At most `max` bytes of a regular file, without following links: the one reader of
/// evidence (O_NOFOLLOW, fstat says regular, size checked before any byte is read).
pub fn read_regular(path: &Utf8Path, max: u64) -> Result<Vec<u8>> {
    let file = open_regular(path)?;
    let len = file.metadata()?.len();
    if len > max {
        bail!("{path} is {len} bytes, more than the {max} this reads");
    }
    let mut data = Vec::with_capacity(len as usize);
    file.take(max).read_to_end(&mut data).with_context(|| format!("cannot read {path}"))?;
    Ok(data)
}

/// The longest instance label, submission id or system name.
pub const NAME_MAX: usize = 64;

/// `; did you mean \`x\`?` for the known name nearest to `given` (by edit distance,
/// close enough to be a typo), else nothing.
pub fn suggest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let limit = (given.chars().count() / 3).max(2);
    known
        .into_iter()
        .map(|k| (edit_distance(&given.to_lowercase(), &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map_or(String::new(), |(_, k)| format!("; did you mean `{k}`?"))
}

/// Levenshtein distance of two short names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// `path` with every link of its existing part resolved and `.`/`..` of the rest
/// applied, so that two ways of naming a folder compare equal.
pub fn resolved(path: &Utf8Path) -> Utf8PathBuf {
    let mut existing = path.to_owned();
    let mut rest = Vec::new();
    while !existing.exists() {
        let (Some(last), Some(parent)) = (existing.components().next_back(), existing.parent()) else { break };
        rest.push(last.as_str().to_owned());
        existing = parent.to_owned();
    }
    let mut p = existing.canonicalize_utf8().unwrap_or(existing);
    for c in rest.iter().rev() {
        match Utf8Path::new(c).components().next() {
            Some(camino::Utf8Component::ParentDir) => {
                p.pop();
            }
            Some(camino::Utf8Component::CurDir) | None => {}
            Some(_) => p.push(c),
        }
    }
    p
}

/// The rule for instance labels, submission ids and system names, which become file
/// and folder names and page text: ASCII letters, digits, `.`, `_`, `+` and `-`,
/// starting with a letter, digit or `_`, at most [`NAME_MAX`] characters. Every label
/// of the NGCC catalogs (KEM, key exchange, signature, hash) is of this form.
pub fn plain_name(s: &str) -> std::result::Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._+-".contains(c);
    if s.is_empty() || s.len() > NAME_MAX {
        return Err(format!("must have 1 to {NAME_MAX} characters, not {}", s.len()));
    }
    if let Some(c) = s.chars().find(|&c| !plain(c)) {
        return Err(format!("holds {c:?}: only ASCII letters, digits, '.', '_', '+' and '-' are allowed"));
    }
    if !s.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
        return Err("must start with a letter, a digit or '_'".into());
    }
    Ok(())
}

/// The harness commit, with `-dirty` when the work tree has uncommitted changes.
pub fn harness_commit(sh: &Shell) -> String {
    let root = root();
    let head = cmd!(sh, "git -C {root} rev-parse HEAD").quiet().ignore_stderr().read();
    let dirty = cmd!(sh, "git -C {root} status --porcelain --untracked-files=no")
        .quiet()
        .ignore_stderr()
        .read()
        .is_ok_and(|s| !s.trim().is_empty());
    match head {
        Ok(h) if dirty => format!("{h}-dirty"),
        Ok(h) => h,
        Err(_) => "unknown (not a git checkout)".to_owned(),
    }
}

/// Text from a sandbox made safe to print: control characters (terminal escapes among
/// them) are shown escaped, newlines and tabs kept, very long lines cut.
/// The last `n` lines of a sandbox's text, safe to print (for error messages).
pub fn last_lines(text: &str, n: usize) -> String {
    let text = printable(text.trim_end());
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub fn printable(text: &str) -> String {
    const LINE: usize = 2000;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        for (n, c) in line.chars().enumerate() {
            if n == LINE {
                out.push_str(" [...]");
                if line.ends_with('\n') {
                    out.push('\n');
                }
                break;
            }
            match c {
                '\n' | '\t' => out.push(c),
                c if c.is_control() => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
    }
    out
}

pub fn now_utc() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Write a file whole or not at all: a temporary file in the same folder, renamed over
/// `path` (a link at `path` is replaced, never followed).
pub fn write_atomic(path: &Utf8Path, bytes: &[u8]) -> Result<()> {
    let parent = path.parent().filter(|p| !p.as_str().is_empty()).unwrap_or(Utf8Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("cannot create {parent}"))?;
    let mut tmp = temp_in(parent)?;
    std::io::Write::write_all(&mut tmp, bytes).with_context(|| format!("cannot write {path}"))?;
    persist(tmp, path)
}

/// A temporary file in `dir`, for a file about to be written whole (renamed into place
/// or removed when dropped). Noted: an index written meanwhile by a step running beside
/// this one passes over it without a word (`evidence::update_index`).
pub fn temp_in(dir: &Utf8Path) -> Result<tempfile::NamedTempFile> {
    let tmp = tempfile::NamedTempFile::new_in(dir).with_context(|| format!("cannot write in {dir}"))?;
    TEMPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(std::path::absolute(tmp.path())?);
    Ok(tmp)
}

/// Temporary files this process made (`temp_in`), by absolute path.
static TEMPS: std::sync::Mutex<std::collections::BTreeSet<std::path::PathBuf>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Whether `path` is a temporary file this process made (being written, or gone).
pub fn own_temp(path: &Utf8Path) -> bool {
    TEMPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&written_key(path))
}

/// Move a finished temporary file to `path`, readable like any evidence file; the
/// digest of what it holds is noted as this process's (`written`).
pub fn persist(tmp: tempfile::NamedTempFile, path: &Utf8Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644))?;
    let from = Utf8Path::from_path(tmp.path()).context("non-UTF-8 temporary path")?.to_owned();
    let sha = sha256_regular(&from)?;
    tmp.persist(path).with_context(|| format!("cannot write {path}"))?;
    note(path, Some(sha));
    Ok(())
}

/// Remove a file this process means to remove (an evidence file its run replaces or
/// drops); noted, so that the run's index drops its entry.
pub fn remove_file(path: &Utf8Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("cannot remove {path}"))?;
    note(path, None);
    Ok(())
}

/// What this process wrote (the SHA-256 of the bytes it wrote) or removed (None), by
/// absolute path: a run indexes its own files only (`evidence::update_index`).
static WRITTEN: std::sync::Mutex<std::collections::BTreeMap<std::path::PathBuf, Option<String>>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn written_key(path: &Utf8Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.into())
}

fn note(path: &Utf8Path, sha: Option<String>) {
    WRITTEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(written_key(path), sha);
}

/// Whether this process wrote `path` (Some(Some(digest of what it wrote))) or removed
/// it (Some(None)); None when it did neither.
pub fn written(path: &Utf8Path) -> Option<Option<String>> {
    WRITTEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&written_key(path)).cloned()
}

pub fn read_toml<T: serde::de::DeserializeOwned>(path: &Utf8Path) -> Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {path}"))?;
    toml::from_str(&text).with_context(|| format!("invalid TOML in {path}"))
}

/// File stems of the `*.toml` files in `dir`, sorted.
pub fn toml_stems(dir: &Utf8Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in dir.read_dir_utf8().with_context(|| format!("cannot read {dir}"))? {
        let path = entry?.into_path();
        if path.extension() == Some("toml") {
            names.extend(path.file_stem().map(str::to_owned));
        }
    }
    names.sort();
    Ok(names)
}

/// Set once Ctrl-C or SIGTERM has come (`container::interrupt` sets it): what is running
/// is being stopped, and nothing unfinished may be recorded.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the run has been interrupted.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Mark the run interrupted; whether it was already.
pub fn mark_interrupted() -> bool {
    INTERRUPTED.swap(true, std::sync::atomic::Ordering::SeqCst)
}

/// The error a command stops with after an interruption.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted: no status was recorded for unfinished work")
    }
}

impl std::error::Error for Interrupted {}

/// `Err(Interrupted)` once the signal has come.
pub fn check_interrupted() -> anyhow::Result<()> {
    if interrupted() {
        return Err(Interrupted.into());
    }
    Ok(())
}

/// Where a submission's published KAT digests are: `kat/<id>/kat.sha256`.
pub fn kat_manifest_path(id: &str) -> Utf8PathBuf {
    root().join("kat").join(id).join("kat.sha256")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_the_nearest_name_and_strangers_get_none() {
        let known = ["kem-03", "kem-04", "kem-07", "pqclean-ml-kem"];
        assert_eq!(suggest("kem-7", known), "; did you mean `kem-07`?");
        assert_eq!(suggest("pqclean-mlkem", known), "; did you mean `pqclean-ml-kem`?");
        assert_eq!(suggest("ML-KEM-51", ["ML-KEM-512", "ML-KEM-768"]), "; did you mean `ML-KEM-512`?");
        assert_eq!(suggest("falcon", known), "");
    }

    #[test]
    fn names_are_plain() {
        for ok in ["ML-KEM-512", "bag_piglet_128", "SQISign2Dsquare-Level1-eff_uncompressed", "x86_1", "CS+1.0", "_a"] {
            assert_eq!(plain_name(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(NAME_MAX + 1);
        for bad in ["", "../../evil", ".hidden", "-flag", "a|b", "a`b", "a b", "a/b", "é", "a\n", long.as_str()] {
            assert!(plain_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sandbox_text_is_printed_without_terminal_controls() {
        let hostile = "ok\tline\n\u{1b}[2A\r\u{1b}[2K  L1 PASS\n\u{1b}[8mhidden\u{7}\n";
        let p = printable(hostile);
        assert!(!p.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{p:?}");
        assert!(p.starts_with("ok\tline\n\\u{1b}[2A\\r"), "{p:?}");
        let long = "x".repeat(5000);
        assert_eq!(printable(&long).len(), 2000 + " [...]".len());
    }

    /// A temporary file of a write in progress is known as this process's own, and a
    /// file at another path is not.
    #[test]
    fn own_temporary_files_are_known_as_such() {
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap();
        let tmp = temp_in(dir).unwrap();
        let path = Utf8Path::from_path(tmp.path()).unwrap();
        assert!(own_temp(path));
        write_atomic(&dir.join("x.json"), b"{}").unwrap();
        assert!(!own_temp(&dir.join("x.json")), "a finished file is not a temporary one");
    }
}
