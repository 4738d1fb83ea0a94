//! Extracting an archive that is hostile input: its kind from its first bytes, the room
//! it declares checked before anything is written, every entry bounded (bytes, entries,
//! ratio), no path leaving the folder, no link, no execute bit.

use std::io::{Read, Seek};

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use crate::compile::submission::ArchiveLimits;
use crate::project;

/// Bounds on what one archive may expand to: a submission is hostile input too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtractLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
    /// Expanded bytes per archive byte.
    pub max_ratio: u64,
}

impl ExtractLimits {
    /// The bounds where neither the command line nor the manifest says more: the one
    /// place they are written.
    pub const DEFAULT: ExtractLimits = ExtractLimits { max_bytes: 4096 << 20, max_entries: 100_000, max_ratio: 200 };

    /// Each bound from the command line when it gives one, else from the archive's
    /// manifest (`[source.limits]`), else the default.
    pub fn resolve(given: &ArchiveLimits, manifest: Option<&ArchiveLimits>) -> ExtractLimits {
        let m = manifest.copied().unwrap_or_default();
        let d = ExtractLimits::DEFAULT;
        let mib = given.max_extract_mib.or(m.max_extract_mib);
        ExtractLimits {
            max_bytes: mib.map_or(d.max_bytes, |mib| mib.saturating_mul(1 << 20)),
            max_entries: given.max_entries.or(m.max_entries).unwrap_or(d.max_entries),
            max_ratio: given.max_ratio.or(m.max_ratio).unwrap_or(d.max_ratio),
        }
    }

    /// What an archive of `size` bytes may expand to: the byte limit, or the ratio's.
    fn budget(&self, size: u64) -> u64 {
        self.max_bytes.min(size.saturating_mul(self.max_ratio))
    }
}

impl Default for ExtractLimits {
    fn default() -> Self {
        ExtractLimits::DEFAULT
    }
}

/// What an archive is, by its first bytes (never by its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Zip,
    Gzip,
    Tar,
}

fn kind(head: &[u8]) -> Option<Kind> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Kind::Zip)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some(Kind::Gzip)
    } else if head.get(257..262) == Some(b"ustar".as_slice()) {
        Some(Kind::Tar)
    } else {
        None
    }
}

/// Unpack the archive (zip, tar, tar.gz/.crate) open as `file` into the empty folder
/// `dest`, within `limits`, when the file system of `dest` has room for what the archive
/// declares; `name` is what messages call it. Only that descriptor is read, from its start.
pub fn unpack(file: &std::fs::File, name: &str, dest: &Utf8Path, limits: ExtractLimits) -> Result<()> {
    unpack_with_free(file, name, dest, limits, project::free_bytes(dest))
}

/// [`unpack`] with the free space of `dest`'s file system given (None: unknown, and the
/// room is not checked): what the tests set to a small number.
pub fn unpack_with_free(
    file: &std::fs::File,
    name: &str,
    dest: &Utf8Path,
    limits: ExtractLimits,
    free: Option<u64>,
) -> Result<()> {
    let kind = kind_of(file, name)?;
    let budget = limits.budget(file.metadata()?.len());
    let declared = declared_as(kind, file, limits).with_context(|| format!("cannot extract {name}"))?;
    check_room(name, declared.need, free, dest.parent().unwrap_or(dest))?;
    let mut budget = Budget { limits, total: budget, bytes_left: budget, entries: 0 };
    (&*file).seek(std::io::SeekFrom::Start(0))?;
    let result = match kind {
        Kind::Zip => extract_zip(file, dest, &mut budget),
        Kind::Gzip => extract_tar(flate2::read::GzDecoder::new(file), dest, &mut budget),
        Kind::Tar => extract_tar(file, dest, &mut budget),
    };
    result.with_context(|| format!("cannot extract {name}"))
}

/// What the archive open as `file` is, by its first bytes.
fn kind_of(file: &std::fs::File, name: &str) -> Result<Kind> {
    let mut reader = file;
    let mut head = Vec::new();
    reader.seek(std::io::SeekFrom::Start(0))?;
    reader.take(512).read_to_end(&mut head)?;
    kind(&head).with_context(|| {
        let first: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("{name} is neither a zip nor a tar archive (it begins {})", first.join(" "))
    })
}

/// The file system's allocation unit assumed for each file and folder of a tree.
pub const BLOCK: u64 = 4096;

/// What an archive declares it expands to (its entries' headers), read before anything
/// is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    /// The files' declared bytes.
    pub bytes: u64,
    pub entries: u64,
    /// The disk the tree takes: each file rounded up to whole [`BLOCK`]s, at least one
    /// block per entry.
    pub need: u64,
}

impl Declared {
    /// One more entry of `size` bytes (0 for a folder), within `limits` and `budget`.
    fn add(&mut self, size: u64, limits: ExtractLimits, budget: u64) -> Result<()> {
        self.entries += 1;
        self.bytes = self.bytes.saturating_add(size);
        self.need = self.need.saturating_add(size.div_ceil(BLOCK).max(1).saturating_mul(BLOCK));
        if self.entries > limits.max_entries {
            bail!("{}", too_many(limits));
        }
        if self.bytes > budget {
            bail!("it declares more than {} MiB of files; {}", budget >> 20, too_large(limits));
        }
        Ok(())
    }
}

/// What the archive open as `file` declares, within `limits` (an archive that declares
/// more is refused here, before anything is written). A tar is read through once.
pub fn declared(file: &std::fs::File, name: &str, limits: ExtractLimits) -> Result<Declared> {
    declared_as(kind_of(file, name)?, file, limits).with_context(|| format!("cannot extract {name}"))
}

fn declared_as(kind: Kind, file: &std::fs::File, limits: ExtractLimits) -> Result<Declared> {
    let budget = limits.budget(file.metadata()?.len());
    let mut d = Declared::default();
    (&*file).seek(std::io::SeekFrom::Start(0))?;
    match kind {
        Kind::Zip => {
            let mut zip = zip::ZipArchive::new(file)?;
            for i in 0..zip.len() {
                let entry = zip.by_index_raw(i)?;
                d.add(if entry.is_file() { entry.size() } else { 0 }, limits, budget)?;
            }
        }
        Kind::Gzip => declared_tar(flate2::read::GzDecoder::new(file), &mut d, (limits, budget))?,
        Kind::Tar => declared_tar(file, &mut d, (limits, budget))?,
    }
    Ok(d)
}

/// Every entry's declared size; what is read is bounded by the sizes so far, which stay
/// within the budget.
fn declared_tar(reader: impl Read, d: &mut Declared, (limits, budget): (ExtractLimits, u64)) -> Result<()> {
    for entry in tar::Archive::new(reader).entries()? {
        let entry = entry?;
        let file = matches!(entry.header().entry_type(), tar::EntryType::Regular | tar::EntryType::Continuous);
        d.add(if file { entry.size() } else { 0 }, limits, budget)?;
    }
    Ok(())
}

/// Refuse an extraction that the file system of the cache folder `folder` has no room
/// for: `need` bytes (the archive's declared sizes), `free` what it has (None: unknown,
/// not checked). Nothing is written before this holds.
pub fn check_room(name: &str, need: u64, free: Option<u64>, folder: &Utf8Path) -> Result<()> {
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / f64::from(1u32 << 20));
    match free {
        Some(free) if free < need => bail!(
            "not extracting {name}: it needs {need} bytes ({}) of disk, but the file system of {folder} has \
             {free} bytes ({}) free; free space there, or set NGCC_CACHE to a folder on a larger file system",
            mib(need),
            mib(free)
        ),
        _ => Ok(()),
    }
}

fn too_many(l: ExtractLimits) -> String {
    format!(
        "more than {} entries (raise --max-entries, or max_entries in the manifest's [source.limits])",
        l.max_entries
    )
}

fn too_large(l: ExtractLimits) -> String {
    format!(
        "the limit is the smaller of {} MiB and {} times the archive's size (raise --max-extract-mib or \
         --max-ratio, or max_extract_mib or max_ratio in the manifest's [source.limits])",
        l.max_bytes >> 20,
        l.max_ratio
    )
}

/// What an extraction may still write.
struct Budget {
    limits: ExtractLimits,
    /// What the archive may expand to in all.
    total: u64,
    bytes_left: u64,
    entries: u64,
}

impl Budget {
    fn entry(&mut self) -> Result<()> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            bail!("{}", too_many(self.limits));
        }
        Ok(())
    }
}

/// A relative path without `..`, or an error.
fn safe_path(name: &str) -> Result<Utf8PathBuf> {
    let p = Utf8PathBuf::from(name.replace('\\', "/"));
    if p.is_absolute() || p.components().any(|c| matches!(c, camino::Utf8Component::ParentDir)) {
        bail!("archive entry {name:?} escapes the extraction folder");
    }
    Ok(p)
}

fn write_file(dest: &Utf8Path, rel: &Utf8Path, reader: impl Read, budget: &mut Budget) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = dest.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut out = std::fs::File::create(&path).with_context(|| format!("cannot create {path}"))?;
    let written = std::io::copy(&mut reader.take(budget.bytes_left + 1), &mut out)?;
    if written > budget.bytes_left {
        bail!(
            "the archive expands to more than {} MiB, past what it declares; {}",
            budget.total >> 20,
            too_large(budget.limits)
        );
    }
    budget.bytes_left -= written;
    // Shipped binaries lose their execute bits.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

fn extract_zip(archive: &std::fs::File, dest: &Utf8Path, budget: &mut Budget) -> Result<()> {
    let mut zip = zip::ZipArchive::new(archive)?;
    for i in 0..zip.len() {
        budget.entry()?;
        let entry = zip.by_index(i)?;
        let rel = safe_path(&entry.name()?)?;
        if entry.is_dir() {
            std::fs::create_dir_all(dest.join(&rel))?;
        } else if entry.is_file() {
            write_file(dest, &rel, entry, budget)?;
        }
        // Symlinks and other entries are skipped: sources are regular files.
    }
    Ok(())
}

fn extract_tar(reader: impl Read, dest: &Utf8Path, budget: &mut Budget) -> Result<()> {
    let mut tar = tar::Archive::new(reader);
    for entry in tar.entries()? {
        budget.entry()?;
        let entry = entry?;
        let name = entry.path()?.to_string_lossy().into_owned();
        let rel = safe_path(&name)?;
        match entry.header().entry_type() {
            tar::EntryType::Directory => std::fs::create_dir_all(dest.join(&rel))?,
            tar::EntryType::Regular | tar::EntryType::Continuous => write_file(dest, &rel, entry, budget)?,
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_entries_are_refused() {
        assert!(safe_path("../x").is_err());
        assert!(safe_path("/etc/passwd").is_err());
        assert!(safe_path("a/../../b").is_err());
        assert_eq!(safe_path("a\\b c.c").unwrap(), Utf8PathBuf::from("a/b c.c"));
    }

    /// Each limit from the command line, else the manifest's `[source.limits]`, else the
    /// one default; the byte budget is the smaller of the limit and the ratio's.
    #[test]
    fn limits_come_from_the_flag_then_the_manifest_then_the_default() {
        let none = ArchiveLimits::default();
        assert_eq!(ExtractLimits::resolve(&none, None), ExtractLimits::DEFAULT);
        let manifest = ArchiveLimits { max_extract_mib: Some(8192), max_entries: None, max_ratio: Some(50) };
        let l = ExtractLimits::resolve(&none, Some(&manifest));
        assert_eq!((l.max_bytes, l.max_entries, l.max_ratio), (8192 << 20, 100_000, 50));
        let flag = ArchiveLimits { max_extract_mib: Some(100), ..none };
        assert_eq!(ExtractLimits::resolve(&flag, Some(&manifest)).max_bytes, 100 << 20, "the command line wins");
        let huge = ArchiveLimits { max_extract_mib: Some(u64::MAX), ..none };
        assert_eq!(ExtractLimits::resolve(&huge, None).max_bytes, u64::MAX, "saturates, never wraps");
        // 594,738,942 bytes at the default: 4096 MiB (the ratio's 200x is larger).
        assert_eq!(ExtractLimits::DEFAULT.budget(594_738_942), 4096 << 20);
        assert_eq!(ExtractLimits::resolve(&none, Some(&manifest)).budget(1000), 50_000);
    }

    /// The space an extraction needs: every file rounded up to whole blocks, a block for
    /// each folder and empty file; an archive that declares more than its limits is refused
    /// before anything is written.
    #[test]
    fn the_declared_need_counts_blocks_and_stops_at_the_limits() {
        let limits = ExtractLimits { max_bytes: 10 * BLOCK, max_entries: 4, max_ratio: u64::MAX };
        let mut d = Declared::default();
        for size in [0, 1, BLOCK, BLOCK + 1] {
            d.add(size, limits, limits.max_bytes).unwrap();
        }
        assert_eq!(d, Declared { bytes: 2 * BLOCK + 2, entries: 4, need: 5 * BLOCK });
        let e = format!("{:#}", d.add(0, limits, limits.max_bytes).unwrap_err());
        assert!(e.contains("more than 4 entries") && e.contains("[source.limits]"), "{e}");
        let mut d = Declared::default();
        d.add(10 * BLOCK, limits, limits.max_bytes).unwrap();
        let e = format!("{:#}", d.add(1, limits, limits.max_bytes).unwrap_err());
        assert!(e.contains("declares more than") && e.contains("max_extract_mib"), "{e}");
    }

    /// A tar (and a tar.gz) is read through for its headers' sizes; a folder and a link
    /// count as entries of no bytes.
    #[test]
    fn a_tar_declares_its_entries_sizes() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("a.tar");
        let mut b = tar::Builder::new(std::fs::File::create(&path).unwrap());
        let mut add = |name: &str, kind: tar::EntryType, data: &[u8]| {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if kind == tar::EntryType::Symlink {
                h.set_link_name("a/x.c").unwrap();
            }
            b.append_data(&mut h, name, data).unwrap();
        };
        add("a/", tar::EntryType::Directory, b"");
        add("a/x.c", tar::EntryType::Regular, &[b'x'; 5000]);
        add("a/l.c", tar::EntryType::Symlink, b"");
        b.into_inner().unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let d = declared(&file, "a.tar", ExtractLimits::DEFAULT).unwrap();
        assert_eq!(d, Declared { bytes: 5000, entries: 3, need: 4 * BLOCK });
        let small = ExtractLimits { max_bytes: 4999, ..ExtractLimits::DEFAULT };
        assert!(format!("{:#}", declared(&file, "a.tar", small).unwrap_err()).contains("cannot extract a.tar"));
    }

    #[test]
    fn room_is_checked_against_the_free_space_given() {
        let folder = Utf8Path::new("/cache/sources");
        check_room("A.zip", 5000, Some(5000), folder).unwrap();
        check_room("A.zip", 5000, None, folder).unwrap();
        let err = check_room("A.zip", 5000, Some(4999), folder).unwrap_err();
        let e = format!("{err:#}");
        for said in ["A.zip", "5000 bytes", "4999 bytes", "/cache/sources", "NGCC_CACHE"] {
            assert!(e.contains(said), "{said}: {e}");
        }
        // The machine's shortage, not a wrong value of the operator's: exit 3.
        assert_eq!(crate::ui::exit_code(&err), crate::ui::exit::FAILURE);
    }

    #[test]
    fn archives_are_told_by_their_first_bytes() {
        assert_eq!(kind(b"PK\x03\x04rest"), Some(Kind::Zip));
        assert_eq!(kind(&[0x1f, 0x8b, 8, 0]), Some(Kind::Gzip));
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        assert_eq!(kind(&tar), Some(Kind::Tar));
        assert_eq!(kind(b"\x7fELF\x02\x01\x01"), None);
        assert_eq!(kind(&[0u8; 100]), None);
    }
}
