//! Obtaining submission sources: a pinned crate, a pinned archive, or a local tree.
//! An archive is copied into the cache and checked by SHA-256 before anything is
//! extracted; the checked copy is extracted (`compile::trees`), into a cache keyed by that
//! digest, with every execute bit dropped, so nothing that came inside a source package
//! can be run.

use anyhow::{anyhow, bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use xshell::{cmd, Shell};

use crate::compile::extract::ExtractLimits;
use crate::compile::submission::{ArchiveLimits, SourceSpec, Submission};
use crate::compile::trees;
use crate::evidence::domain::Arch;
use crate::project;
use crate::sha::Sha256Hex;

pub use crate::evidence::domain::Provenance;

impl Provenance {
    /// A short digest that changes whenever the tree may have changed.
    pub fn digest(&self) -> &str {
        match self {
            Provenance::Crate { checksum, .. } => checksum.as_str(),
            Provenance::Archive { sha256, .. } => sha256.as_str(),
            Provenance::Directory { tree_sha256, .. } => tree_sha256.as_str(),
        }
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Provenance::Crate { name, version, checksum } => {
                write!(f, "crate {name} {version} (sha256 {})", checksum.short())
            }
            Provenance::Archive { file, sha256 } => write!(f, "archive {file} (sha256 {})", sha256.short()),
            Provenance::Directory { path, tree_sha256, note } => {
                write!(f, "{note} {path} (tree sha256 {})", tree_sha256.short())
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Source {
    /// Host path of the source root (what manifests' paths are relative to).
    pub root: Utf8PathBuf,
    pub provenance: Provenance,
    /// Patches applied to a copy of the tree, in order.
    pub patches: Vec<PatchRecord>,
    /// Digest → path of every regular file of the tree, made when first asked.
    pub shipped: std::sync::OnceLock<std::collections::HashMap<String, Utf8PathBuf>>,
    /// The checked ICCS API package, for manifests that take its official files.
    pub iccs: Option<crate::compile::iccs::IccsApi>,
}

impl Source {
    pub fn new(root: Utf8PathBuf, provenance: Provenance, patches: Vec<PatchRecord>) -> Source {
        Source { root, provenance, patches, shipped: Default::default(), iccs: None }
    }

    /// Take the official ICCS files from `api`: listed beside the patches, in every record
    /// and build key.
    pub fn with_iccs(mut self, api: crate::compile::iccs::IccsApi) -> Source {
        self.patches.extend(api.records.iter().cloned());
        self.iccs = Some(api);
        self
    }

    /// The shipped file with this SHA-256, if any: a build output equal to one was not
    /// made by the pinned compilers.
    pub fn shipped_file(&self, sha256: &str) -> Result<Option<Utf8PathBuf>> {
        if self.shipped.get().is_none() {
            let mut map = std::collections::HashMap::new();
            for entry in walkdir::WalkDir::new(&self.root).into_iter().filter_map(std::result::Result::ok) {
                if let (true, Some(path)) = (entry.file_type().is_file(), Utf8Path::from_path(entry.path())) {
                    map.insert(project::sha256_regular(path)?, path.to_owned());
                }
            }
            let _ = self.shipped.set(map);
        }
        Ok(self.shipped.get().and_then(|m| m.get(sha256)).cloned())
    }
}

pub use crate::evidence::domain::PatchRecord;

pub fn patch_note(patches: &[PatchRecord]) -> String {
    if patches.is_empty() {
        return String::new();
    }
    let list: Vec<String> = patches.iter().map(|p| format!("{} sha256 {}", p.file, p.sha256.short())).collect();
    format!(", patched ({})", list.join("; "))
}

/// How the user pointed at the sources (command-line overrides).
#[derive(Debug, Clone)]
pub struct Overrides {
    pub archive: Option<Utf8PathBuf>,
    pub source_dir: Option<Utf8PathBuf>,
    /// The extraction limits the command line gives (`--max-extract-mib` ...); each wins
    /// over the manifest's `[source.limits]`.
    pub limits: ArchiveLimits,
    /// The architecture being built: patches scoped to others are left out.
    pub arch: Arch,
}

pub fn obtain(sh: &Shell, sub: &Submission, overrides: &Overrides) -> Result<Source> {
    let src = match (&overrides.source_dir, &sub.source) {
        (Some(dir), _) => from_directory(sub, dir)?,
        (None, SourceSpec::Crate { name, version, subdir }) => from_crate(name, version, subdir)?,
        (None, SourceSpec::Archive { limits, .. }) => {
            let limits = ExtractLimits::resolve(&overrides.limits, limits.as_ref());
            from_archive(sh, sub, overrides.archive.as_deref(), limits)?
        }
    };
    apply_patches(sh, sub, src, overrides.arch)
}

/// The header of a patch: a first line `Reason: ...`, then optionally `Arch: aarch64`
/// (names separated by spaces) before the diff; a scoped patch applies only there.
fn patch_header(f: &Utf8Path, text: &str) -> Result<(String, Vec<Arch>)> {
    let reason = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("Reason:"))
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .with_context(|| format!("patch {f} must start with a one-line `Reason: ...`"))?;
    let mut arches = Vec::new();
    for (n, line) in
        text.lines().enumerate().skip(1).take_while(|(_, l)| !l.starts_with("--- ") && !l.starts_with("diff "))
    {
        if let Some(list) = line.strip_prefix("Arch:") {
            for name in list.split_whitespace() {
                let arch = Arch::parse(name)
                    .ok_or_else(|| anyhow::anyhow!("{f}:{}: unknown architecture {name:?} (x86_64, aarch64)", n + 1))?;
                arches.push(arch);
            }
        }
    }
    Ok((reason, arches))
}

/// Apply `<base>/<id>/patches/*.patch` (sorted) that apply to `arch` to a copy of the
/// tree; the original is never touched.
fn apply_patches(sh: &Shell, sub: &Submission, src: Source, arch: Arch) -> Result<Source> {
    let dir = sub.patches_dir();
    let mut files: Vec<Utf8PathBuf> = match dir.read_dir_utf8() {
        Ok(entries) => entries
            .filter_map(std::result::Result::ok)
            .map(|e| e.path().to_owned())
            .filter(|p| p.extension() == Some("patch"))
            .collect(),
        Err(_) => return Ok(src),
    };
    if files.is_empty() {
        return Ok(src);
    }
    files.sort();
    let mut patches = Vec::new();
    files.retain(|f| {
        let applies = std::fs::read_to_string(f)
            .map_err(anyhow::Error::from)
            .and_then(|text| patch_header(f, &text))
            .map(|(_, arches)| arches.is_empty() || arches.contains(&arch));
        applies.unwrap_or(true) // unreadable or bad headers fail below, with the reason
    });
    if files.is_empty() {
        return Ok(src);
    }
    for f in &files {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read patch {f}"))?;
        let (reason, arches) = patch_header(f, &text)?;
        let file = f.file_name().unwrap_or_default().to_owned();
        patches.push(PatchRecord { file, sha256: Sha256Hex::computed(project::sha256_file(f)?), reason, arches });
    }
    let key_input: Vec<&str> =
        std::iter::once(src.provenance.digest()).chain(patches.iter().map(|p| p.sha256.as_str())).collect();
    let key = project::sha256_hex(key_input.join("\n").as_bytes());
    let dest = trees::Cache::patched().tree(&key, |tmp| {
        copy_tree(&src.root, tmp)?;
        for f in &files {
            cmd!(sh, "patch --batch --forward --no-backup-if-mismatch -p1 -d {tmp} -i {f}")
                .quiet()
                .ignore_stdout()
                .run()
                .with_context(|| format!("patch {f} does not apply to {}", src.root))?;
        }
        Ok(())
    })?;
    Ok(Source::new(dest, src.provenance, patches))
}

fn copy_tree(from: &Utf8Path, to: &Utf8Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let path = Utf8Path::from_path(entry.path()).context("non-UTF-8 path")?;
        let rel = path.strip_prefix(from).unwrap_or(path);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(to.join(rel))?;
        } else if entry.file_type().is_file() {
            // A copy of a tree already in the cache: its size was bounded there.
            use std::os::unix::fs::PermissionsExt;
            std::fs::copy(path, to.join(rel)).with_context(|| format!("cannot copy {path}"))?;
            std::fs::set_permissions(to.join(rel), std::fs::Permissions::from_mode(0o644))?;
        }
    }
    Ok(())
}

fn from_directory(sub: &Submission, dir: &Utf8Path) -> Result<Source> {
    let dir = dir.canonicalize_utf8().with_context(|| format!("--source-dir {dir} does not exist"))?;
    let root = match &sub.source {
        SourceSpec::Archive { root, .. } => find_root(&dir, root).unwrap_or(dir.clone()),
        SourceSpec::Crate { .. } => dir.clone(),
    };
    let tree_sha256 = Sha256Hex::computed(project::tree_digest(&root)?);
    Ok(Source::new(
        root.clone(),
        Provenance::Directory {
            path: root.file_name().unwrap_or("/").to_owned(),
            tree_sha256,
            note: "unpinned directory".into(),
        },
        vec![],
    ))
}

fn from_crate(name: &str, version: &str, subdir: &str) -> Result<Source> {
    let manifest = project::root().join("sources/Cargo.toml");
    // --locked: Cargo downloads the crate and checks it against Cargo.lock's checksum.
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(&manifest)
        .other_options(vec!["--locked".to_owned()])
        .exec()
        .with_context(|| format!("`cargo metadata --locked` failed for {manifest}"))?;
    let pkg = meta.packages.iter().find(|p| p.name.as_str() == name && p.version.to_string() == version).with_context(
        || format!("crate {name} {version} is not pinned in {manifest} (add it with an exact `=` version)"),
    )?;
    let checksum = lock_checksum(&project::root().join("sources/Cargo.lock"), name, version)?;
    // Re-check the downloaded .crate ourselves, then unpack our own read-only copy.
    let unpacked = pkg.manifest_path.parent().context("crate manifest without a folder")?;
    let index_dir = unpacked.parent().and_then(|p| p.file_name()).context("unexpected registry layout")?;
    let registry =
        unpacked.parent().and_then(|p| p.parent()).and_then(|p| p.parent()).context("unexpected registry layout")?;
    let crate_file = registry.join("cache").join(index_dir).join(format!("{name}-{version}.crate"));
    let refuse = |c: &trees::Copied| anyhow!("{crate_file} has SHA-256 {}, but Cargo.lock pins {checksum}", c.sha256);
    let tree = trees::Cache::sources().pinned(&crate_file, &checksum, ExtractLimits::default(), refuse)?;
    let root = tree.join(format!("{name}-{version}")).join(subdir);
    if !root.is_dir() {
        bail!("crate {name} {version} has no folder {subdir:?}");
    }
    Ok(Source::new(root, Provenance::Crate { name: name.into(), version: version.into(), checksum }, vec![]))
}

fn lock_checksum(lock: &Utf8Path, name: &str, version: &str) -> Result<Sha256Hex> {
    #[derive(serde::Deserialize)]
    struct Lock {
        package: Vec<LockPackage>,
    }
    #[derive(serde::Deserialize)]
    struct LockPackage {
        name: String,
        version: String,
        checksum: Option<Sha256Hex>,
    }
    let lock: Lock = project::read_toml(lock)?;
    lock.package
        .into_iter()
        .find(|p| p.name == name && p.version == version)
        .and_then(|p| p.checksum)
        .with_context(|| format!("no checksum for {name} {version} in the lock file"))
}

/// Where the archive of `sub` is looked for: the given path, else archives/<file>.
fn archive_path(file: &str, given: Option<&Utf8Path>) -> Utf8PathBuf {
    given.map_or_else(|| project::root().join("archives").join(file), Utf8Path::to_owned)
}

/// The archive `sub` needs, when it is neither given as a URL nor found where it is
/// looked for: one line with its file, size, SHA-256, page and the place looked at.
pub fn missing_archive(sub: &Submission, given: Option<&Utf8Path>) -> Option<String> {
    let SourceSpec::Archive { file, bytes, sha256, page, .. } = &sub.source else { return None };
    if given.is_some_and(|g| g.as_str().contains("://")) {
        return None;
    }
    let path = archive_path(file, given);
    (!path.is_file()).then(|| {
        format!(
            "{} needs its archive {file} ({bytes} bytes, SHA-256 {sha256}){}; it was not found at {path}",
            sub.id,
            page.as_ref().map(|p| format!(", published at {p}")).unwrap_or_default(),
        )
    })
}

/// How to supply missing archives, after the list of them.
pub const SUPPLY_ARCHIVES: &str = "Download each, then either put it at archives/<file name> or pass \
     --archive PATH (--archive ID=PATH when several submissions are selected; a local file, or a URL \
     to fetch it from).";

fn from_archive(sh: &Shell, sub: &Submission, given: Option<&Utf8Path>, limits: ExtractLimits) -> Result<Source> {
    let SourceSpec::Archive { file, bytes, sha256, root, .. } = &sub.source else { unreachable!() };
    if let Some(why) = missing_archive(sub, given) {
        return crate::ui::usage(format!("{why}.\n{SUPPLY_ARCHIVES}"));
    }
    let path = match given {
        Some(url) if url.as_str().starts_with("https://") || url.as_str().starts_with("http://") => {
            download(sh, url.as_str(), file)?
        }
        _ => archive_path(file, given),
    };
    let refuse = |c: &trees::Copied| {
        anyhow!(
            "refusing {path}: SHA-256 {} ({} bytes), but {} pins {file} as {sha256} ({bytes} bytes). \
             Nothing was extracted.",
            c.sha256,
            c.bytes,
            sub.id
        )
    };
    let tree = trees::Cache::sources().pinned(&path, sha256, limits, refuse)?;
    let root = find_root(&tree, root).with_context(|| format!("{file} has no folder {root:?}"))?;
    Ok(Source::new(root, Provenance::Archive { file: file.clone(), sha256: sha256.clone() }, vec![]))
}

/// Fetch an archive the user named by URL into the cache; its digest is checked next.
fn download(sh: &Shell, url: &str, file: &str) -> Result<Utf8PathBuf> {
    let dir = project::cache_dir().join("downloads");
    std::fs::create_dir_all(&dir)?;
    let dest = dir.join(file);
    let part = dir.join(format!("{file}.part"));
    cmd!(sh, "curl --fail --location --silent --show-error --output {part} {url}")
        .quiet()
        .run()
        .with_context(|| format!("cannot download {url}"))?;
    std::fs::rename(&part, &dest)?;
    Ok(dest)
}

/// `rel` inside `tree`, also below up to two wrapping folders.
fn find_root(tree: &Utf8Path, rel: &str) -> Option<Utf8PathBuf> {
    let direct = tree.join(rel);
    if direct.is_dir() {
        return Some(direct);
    }
    let mut level: Vec<Utf8PathBuf> = vec![tree.to_owned()];
    for _ in 0..2 {
        let mut next = Vec::new();
        for dir in &level {
            let Ok(entries) = dir.read_dir_utf8() else {
                continue;
            };
            for e in entries.flatten() {
                if e.path().is_dir() {
                    let cand = e.path().join(rel);
                    if cand.is_dir() {
                        return Some(cand);
                    }
                    next.push(e.path().to_owned());
                }
            }
        }
        level = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_headers_give_reason_and_architectures() {
        let f = Utf8Path::new("p.patch");
        let (reason, arches) = patch_header(f, "Reason: x86 intrinsics\nArch: aarch64 arm64\n--- a/x\n").unwrap();
        assert_eq!((reason.as_str(), arches), ("x86 intrinsics", vec![Arch::Aarch64, Arch::Aarch64]));
        assert!(patch_header(f, "Reason: r\n--- a/x\nArch: mips\n").unwrap().1.is_empty(), "only the header counts");
        assert!(format!("{:#}", patch_header(f, "Reason: r\nArch: mips\n").unwrap_err()).contains("p.patch:2"));
        assert!(patch_header(f, "--- a/x\n").is_err());
    }

    #[test]
    fn a_source_dir_is_recorded_by_its_name_and_digest_only() {
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap().join("My Tree");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/a.c"), "int a;\n").unwrap();
        let text = "id = \"t\"\nname = \"t\"\n[source]\nkind = \"crate\"\nname = \"c\"\nversion = \"1\"\n\
                    subdir = \"\"\n[build]\nsources = [\"src/a.c\"]\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
                    file = \"k.txt\"\n[[instance]]\nlabel = \"L\"\ndir = \"src\"\n";
        let sub = Submission::from_text(&dir.parent().unwrap().join("t.toml"), text).unwrap();
        let src = from_directory(&sub, &dir).unwrap();
        let json = serde_json::to_string(&src.provenance).unwrap();
        assert!(!json.contains(t.path().to_str().unwrap()), "a host path in the record: {json}");
        let Provenance::Directory { path, tree_sha256, .. } = &src.provenance else { panic!("{json}") };
        assert_eq!(path, "My Tree");
        assert_eq!(tree_sha256.as_str(), project::tree_digest(&dir).unwrap());
    }

    /// A patch scoped `Arch: aarch64` changes the tree of AArch64 builds only: an x86-64
    /// build gets the tree as it is (no patch listed, so the key of its build is unchanged),
    /// an AArch64 build a patched copy, keyed by the patch and listing it with its
    /// architecture; the original tree is never touched.
    #[test]
    fn an_arch_scoped_patch_applies_on_its_architecture_only() {
        let t = tempfile::tempdir().unwrap();
        let base = Utf8Path::from_path(t.path()).unwrap();
        let tree = base.join("tree");
        std::fs::create_dir_all(tree.join("src")).unwrap();
        std::fs::write(tree.join("src/a.c"), "#include <x86only.h>\nint a;\n").unwrap();
        let text = "id = \"scoped\"\nname = \"t\"\n[source]\nkind = \"archive\"\nfile = \"a.zip\"\nbytes = 1\n\
                    sha256 = \"SHA\"\n[build]\nsources = [\"src/a.c\"]\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
                    file = \"k.txt\"\n[[instance]]\nlabel = \"L\"\ndir = \"src\"\n"
            .replace("SHA", &"a".repeat(64));
        let sub = Submission::from_text(&base.join("m/scoped.toml"), &text).unwrap();
        std::fs::create_dir_all(sub.patches_dir()).unwrap();
        let patch = "Reason: x86only.h exists on x86-64 only\nArch: aarch64\n--- /dev/null\n+++ b/compat/x86only.h\n\
                     @@ -0,0 +1 @@\n+/* stand-in */\n";
        std::fs::write(sub.patches_dir().join("0001-stand-in.patch"), patch).unwrap();
        let sh = Shell::new().unwrap();
        let plain = from_directory(&sub, &tree).unwrap();
        let x86 = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::X86_64).unwrap();
        assert_eq!(x86.root, plain.root, "x86-64 builds the tree as it is");
        assert!(x86.patches.is_empty() && !x86.root.join("compat").exists());
        let arm = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::Aarch64).unwrap();
        assert_ne!(arm.root, plain.root, "AArch64 gets a patched copy");
        assert!(arm.root.join("compat/x86only.h").is_file() && arm.root.join("src/a.c").is_file());
        assert_eq!(arm.patches.len(), 1);
        assert_eq!(
            (arm.patches[0].file.as_str(), arm.patches[0].reason.as_str(), arm.patches[0].arches.as_slice()),
            ("0001-stand-in.patch", "x86only.h exists on x86-64 only", [Arch::Aarch64].as_slice())
        );
        assert_eq!(arm.provenance.digest(), plain.provenance.digest(), "the same source, patched");
        assert!(!tree.join("compat").exists(), "the original tree is untouched");
        // Scoped to x86-64 instead: the other way round.
        std::fs::write(sub.patches_dir().join("0001-stand-in.patch"), patch.replace("aarch64", "x86_64")).unwrap();
        let x86 = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::X86_64).unwrap();
        assert!(x86.root.join("compat/x86only.h").is_file() && x86.patches[0].arches == [Arch::X86_64]);
        let arm = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::Aarch64).unwrap();
        assert!(arm.patches.is_empty() && arm.root == plain.root);
    }

    /// kem-12's and kem-17's shipped AArch64 stand-ins (headers of our own, created by
    /// their patches) land in the folder their `[build.arch.aarch64]` puts on the include
    /// path, on AArch64 only.
    #[test]
    fn the_shipped_aarch64_stand_ins_land_where_the_manifests_look() {
        for (id, header) in [("kem-12", "quadmath.h"), ("kem-17", "immintrin.h")] {
            let sub = Submission::load(id).unwrap();
            let t = tempfile::tempdir().unwrap();
            let tree = Utf8Path::from_path(t.path()).unwrap().join("tree");
            std::fs::create_dir_all(&tree).unwrap();
            std::fs::write(tree.join("placeholder.c"), "int x;\n").unwrap();
            let sh = Shell::new().unwrap();
            let include = &sub.build.arch[&Arch::Aarch64].include;
            assert_eq!(include.len(), 1, "{id}");
            let arm = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::Aarch64).unwrap();
            let text = std::fs::read_to_string(arm.root.join(&include[0]).join(header)).unwrap();
            assert!(text.contains("ngcc-repro stand-in"), "{id}: {text}");
            assert!(arm.patches.iter().all(|p| p.arches == [Arch::Aarch64] && !p.reason.is_empty()), "{id}");
            let x86 = apply_patches(&sh, &sub, from_directory(&sub, &tree).unwrap(), Arch::X86_64).unwrap();
            assert!(x86.patches.is_empty() && !x86.root.join(&include[0]).exists(), "{id}");
            assert!(!sub.build.arch.get(&Arch::X86_64).is_some_and(|a| a.include.contains(&include[0])), "{id}");
        }
        // kem-12 links libquadmath on x86-64 only.
        let kem12 = Submission::load("kem-12").unwrap();
        assert!(!kem12.build.libs.contains(&"quadmath".to_owned()));
        assert!(kem12.build.arch[&Arch::X86_64].libs.contains(&"quadmath".to_owned()));
        assert!(!kem12.build.arch[&Arch::Aarch64].libs.contains(&"quadmath".to_owned()));
    }
}
