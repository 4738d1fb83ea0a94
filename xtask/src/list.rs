//! `cargo xtask list`: submissions, instances, which candidates' archives are here, and
//! toolchains.

use anyhow::Result;
use camino::{Utf8Path, Utf8PathBuf};
use xshell::Shell;

use crate::compile::submission::{Instance, SourceSpec, Submission};
use crate::container::toolchain::Toolchain;
use crate::family::{Family, FamilyId};
use crate::project;

/// `list`: submissions, instances, archives present, toolchains.
#[derive(Debug, Clone)]
pub struct List {
    pub archive_dir: Option<camino::Utf8PathBuf>,
    /// `--matrix --sums FILE`: the workflow's matrices against this listing instead.
    pub matrix: Option<camino::Utf8PathBuf>,
}

/// The instances with a KAT of their own (the field counts these): not the variants
/// that take another's (`kat_from`).
fn own_kat(s: &Submission) -> impl Iterator<Item = &Instance> {
    s.instances.iter().filter(|i| i.kat_from.is_none())
}

/// How many of a submission's instances with a KAT of their own `kat.sha256` gives a
/// digest for, every KAT file.
fn digests(s: &Submission) -> Result<usize> {
    let m = crate::kat::Manifest::of(s, &s.kat_manifest_path())?;
    let all_files = |i: &&Instance| s.kat_files(i).is_ok_and(|f| f.iter().all(|(_, f)| m.entry(&i.label, f).is_some()));
    Ok(own_kat(s).filter(all_files).count())
}

fn digests_line(s: &Submission) -> String {
    match digests(s) {
        Ok(known) if own_kat(s).count() < s.instances.len() => {
            format!("{known} of {} instances with a KAT of their own", own_kat(s).count())
        }
        Ok(known) => format!("{known} of {} instances", s.instances.len()),
        Err(e) => format!("none ({e:#})"),
    }
}

/// `BiT-128, BiT-128-avx2 (optimized, KAT of BiT-128)`: each label, what a variant is,
/// and whose KAT it takes.
fn labels_line(s: &Submission) -> String {
    let label = |i: &Instance| {
        let notes: Vec<String> = i
            .variant
            .map(|_| "optimized".to_owned())
            .into_iter()
            .chain(i.kat_from.as_ref().map(|from| format!("KAT of {from}")))
            .collect();
        match notes.is_empty() {
            true => i.label.clone(),
            false => format!("{} ({})", i.label, notes.join(", ")),
        }
    };
    s.instances.iter().map(label).collect::<Vec<_>>().join(", ")
}

/// One family's share of NGCC round 1 and how much of it has manifests here.
#[derive(Debug, serde::Serialize, PartialEq, Eq)]
struct FieldRow {
    family: FamilyId,
    candidates: u32,
    manifests: u32,
    instances: u32,
    /// The field's instances: a variant that takes another's KAT (`kat_from`) is none.
    instances_with_manifest: u32,
    instances_with_digests: u32,
}

impl FieldRow {
    fn of(f: &Family, subs: &[Submission]) -> FieldRow {
        let mine: Vec<&Submission> = subs.iter().filter(|s| s.family == f.id && f.field.holds(&s.id)).collect();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        FieldRow {
            family: f.id,
            candidates: f.field.candidates,
            manifests: count(mine.len()),
            instances: f.field.instances,
            instances_with_manifest: count(mine.iter().map(|s| own_kat(s).count()).sum()),
            instances_with_digests: count(mine.iter().map(|s| digests(s).unwrap_or(0)).sum()),
        }
    }

    fn field(subs: &[Submission]) -> Result<Vec<FieldRow>> {
        FamilyId::ALL.iter().map(|id| Ok(FieldRow::of(id.get()?, subs))).collect()
    }
}

fn say_field(rows: &[FieldRow]) {
    let sum = |f: fn(&FieldRow) -> u32| rows.iter().map(f).sum::<u32>();
    crate::say!(
        "NGCC round 1: manifests for {} of {} candidates, {} of {} instances ({} with published KAT digests):",
        sum(|r| r.manifests),
        sum(|r| r.candidates),
        sum(|r| r.instances_with_manifest),
        sum(|r| r.instances),
        sum(|r| r.instances_with_digests)
    );
    for r in rows {
        crate::say!(
            "  {:<5} {:>2} of {:>2} candidates, {:>3} of {:>3} instances, {:>3} with digests",
            r.family.to_string(),
            r.manifests,
            r.candidates,
            r.instances_with_manifest,
            r.instances,
            r.instances_with_digests
        );
    }
}

/// Where a pinned archive stands in the folder `list` looks in. Only its name and size
/// are looked at (reading every archive, about 6 GB for the whole field, is no listing's
/// work): a file of the pinned size may still have another SHA-256, which `verify` and
/// `campaign` check before anything is extracted.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Presence {
    /// A regular file of the pinned name and size.
    Present,
    /// A regular file of the pinned name and another size: not the pinned archive.
    SizeDiffers,
    /// A link, folder or special file at the path: `verify` refuses it.
    NotAFile,
    Missing,
}

#[derive(Debug, serde::Serialize)]
struct ArchiveHere {
    file: String,
    bytes: u64,
    path: Utf8PathBuf,
    state: Presence,
    /// The size of the file found, when it is a regular file.
    found_bytes: Option<u64>,
}

impl ArchiveHere {
    /// Look for `file` in `dir` (never through a link).
    fn look(dir: &Utf8Path, file: &str, bytes: u64) -> ArchiveHere {
        let path = dir.join(file);
        let (state, found_bytes) = match std::fs::symlink_metadata(&path) {
            Err(_) => (Presence::Missing, None),
            Ok(m) if !m.file_type().is_file() => (Presence::NotAFile, None),
            Ok(m) if m.len() == bytes => (Presence::Present, Some(m.len())),
            Ok(m) => (Presence::SizeDiffers, Some(m.len())),
        };
        ArchiveHere { file: file.to_owned(), bytes, path, state, found_bytes }
    }

    fn of(s: &Submission, dir: &Utf8Path) -> Option<ArchiveHere> {
        let SourceSpec::Archive { file, bytes, .. } = &s.source else { return None };
        Some(ArchiveHere::look(dir, file, *bytes))
    }

    /// What a submission's listing says of it.
    fn words(&self) -> String {
        let at = project::relative(&self.path);
        match (self.state, self.found_bytes) {
            (Presence::Present, _) => format!("present ({at}, the pinned size; SHA-256 checked when used)"),
            (Presence::SizeDiffers, Some(n)) => {
                format!("present, size differs ({at} has {n} bytes, the pin {}): not the pinned file", self.bytes)
            }
            (Presence::SizeDiffers, None) | (Presence::NotAFile, _) => {
                format!("present, not a regular file ({at}: a link or folder, which verify refuses)")
            }
            (Presence::Missing, _) => format!("missing (looked for {at})"),
        }
    }
}

/// The archives of every candidate pinned by one, in one folder, counted.
#[derive(Debug, serde::Serialize)]
struct Archives {
    /// The folder looked in (`archives/` of the checkout unless `--archives DIR`).
    dir: Utf8PathBuf,
    /// Submissions whose source is a pinned archive (the NGCC candidates).
    candidates: usize,
    present: usize,
    /// Of another size, or not a regular file: not usable as they are.
    not_pinned: usize,
    missing: usize,
    /// The ICCS API package, and how many of the candidates take its files.
    iccs_api: ArchiveHere,
    iccs_takers: usize,
}

impl Archives {
    fn count(dir: &Utf8Path, subs: &[Submission]) -> Result<Archives> {
        let found: Vec<ArchiveHere> = subs.iter().filter_map(|s| ArchiveHere::of(s, dir)).collect();
        let n = |p: &[Presence]| found.iter().filter(|a| p.contains(&a.state)).count();
        let pin = crate::compile::iccs::Pin::load()?;
        Ok(Archives {
            dir: dir.to_owned(),
            candidates: found.len(),
            present: n(&[Presence::Present]),
            not_pinned: n(&[Presence::SizeDiffers, Presence::NotAFile]),
            missing: n(&[Presence::Missing]),
            iccs_api: ArchiveHere::look(dir, &pin.file, pin.bytes),
            iccs_takers: subs.iter().filter(|s| ArchiveHere::of(s, dir).is_some() && s.takes_iccs()).count(),
        })
    }

    fn say(&self) {
        let dir = format!("{}/", project::relative(&self.dir).trim_end_matches('/'));
        crate::say!(
            "Archives in {dir}: {} of {} candidates present, {} present but not the pinned file, {} missing; \
             the ICCS API package {} ({} of them take its files): {}",
            self.present,
            self.candidates,
            self.not_pinned,
            self.missing,
            self.iccs_api.file,
            self.iccs_takers,
            match self.iccs_api.state {
                Presence::Present => "present",
                Presence::SizeDiffers | Presence::NotAFile => "present but not the pinned file",
                Presence::Missing => "missing",
            }
        );
        crate::say!(
            "  (names and sizes only: verify and campaign check each SHA-256 before extracting anything; \
             `campaign --archives DIR` finds them by SHA-256 under any name)"
        );
    }
}

fn verified(s: &Submission) -> String {
    match &s.verified {
        Some(how) => format!("verified on the real source: {how}"),
        None => "never verified on the real archive here (written from published facts)".into(),
    }
}

impl List {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        if let Some(sums) = &self.matrix {
            let m = crate::matrix::of_listing(sums)?;
            let shards = |i: &crate::matrix::Include| i.include.len();
            crate::say!("{} shards on x86_64, {} on aarch64", shards(&m.x86_64), shards(&m.aarch64));
            m.left_out.iter().for_each(|w| crate::say!("  left out: {w}"));
            return crate::ui::emit(&m);
        }
        let subs = Submission::ids()?.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        let tcs = Toolchain::names()?.iter().map(|n| Toolchain::load(n)).collect::<Result<Vec<_>>>()?;
        let dir = self.archive_dir.unwrap_or_else(|| project::root().join("archives"));
        let archives = Archives::count(&dir, &subs)?;
        if crate::ui::json() {
            #[derive(serde::Serialize)]
            struct Listing<'a> {
                field: Vec<FieldRow>,
                archives: Archives,
                submissions: Vec<Listed<'a>>,
                toolchains: &'a [Toolchain],
            }
            #[derive(serde::Serialize)]
            struct Listed<'a> {
                #[serde(flatten)]
                submission: &'a Submission,
                /// Instances with a published digest for every KAT file; null without a `kat.sha256`.
                instances_with_digests: Option<usize>,
                /// Where its pinned archive stands in the folder looked in; null for a crate.
                archive: Option<ArchiveHere>,
            }
            let submissions = subs
                .iter()
                .map(|s| Listed {
                    submission: s,
                    instances_with_digests: digests(s).ok(),
                    archive: ArchiveHere::of(s, &dir),
                })
                .collect();
            crate::ui::emit(&Listing { field: FieldRow::field(&subs)?, archives, submissions, toolchains: &tcs })?;
            return Ok(());
        }
        say_field(&FieldRow::field(&subs)?);
        let count = |f: FamilyId| subs.iter().filter(|s| s.family == f).count();
        let families: Vec<String> = FamilyId::ALL.iter().map(|f| format!("{} {f}", count(*f))).collect();
        crate::say!("Submissions ({}: {}):", subs.len(), families.join(", "));
        for s in &subs {
            let source = match &s.source {
                SourceSpec::Crate { name, version, .. } => format!("crate {name} {version} (pinned by the lock file)"),
                SourceSpec::Archive { file, bytes, sha256, .. } => {
                    format!("archive {file}, {bytes} bytes, pinned sha256 {}…", sha256.short())
                }
            };
            crate::say!("  {:<16} {} ({}) — {source}", s.id, s.name, s.family);
            crate::say!("  {:<16} {} instances: {}", "", s.instances.len(), labels_line(s));
            crate::say!("  {:<16} KAT digests: {}; {}", "", digests_line(s), verified(s));
            if let Some(a) = ArchiveHere::of(s, &dir) {
                crate::say!("  {:<16} archive: {}", "", a.words());
            }
            if let Some(why) = s.nested_refusal() {
                crate::say!("  {:<16} not runnable from the archive: {why}", "");
            }
        }
        archives.say();
        crate::say!("Toolchains:");
        for t in &tcs {
            let pins: Vec<String> = t.pinned.iter().map(|(p, v)| format!("{p}={v}")).collect();
            crate::say!(
                "  {:<16} {:?} {} [{}] — {}",
                t.name,
                t.distro,
                t.suite,
                t.architectures.iter().map(|a| a.debian()).collect::<Vec<_>>().join(", "),
                pins.join(" ")
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field's counts in the family data agree with the shipped manifests: never fewer
    /// candidates or instances than are shipped, and equal where a family is complete.
    #[test]
    fn the_field_counts_agree_with_the_manifests() {
        let subs: Vec<Submission> = Submission::ids().unwrap().iter().map(|id| Submission::load(id).unwrap()).collect();
        let rows = FieldRow::field(&subs).unwrap();
        assert_eq!(rows.iter().map(|r| r.candidates).sum::<u32>(), 119);
        assert_eq!(rows.iter().map(|r| r.instances).sum::<u32>(), 585);
        for r in &rows {
            assert!(r.manifests <= r.candidates && r.instances_with_manifest <= r.instances, "{r:?}");
            assert!(r.instances_with_digests <= r.instances_with_manifest, "{r:?}");
            if r.manifests == r.candidates {
                assert_eq!(r.instances_with_manifest, r.instances, "{r:?}");
            }
        }
    }

    #[test]
    fn field_ids_are_two_digit_and_in_range() {
        let f = crate::family::FamilyId::Kex.get().unwrap().field;
        assert!(f.holds("kex-01") && f.holds("kex-09"));
        assert!(
            !f.holds("kex-10") && !f.holds("kex-1") && !f.holds("kex-00") && !f.holds("kem-01") && !f.holds("kexx-01")
        );
    }
}
