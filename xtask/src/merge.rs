//! `cargo xtask merge`: campaign shards → one evidence set with a fresh index.
//! Each shard must pass its own index check, and every PASS it records is derived
//! again from its KAT log against this checkout's `kat/<id>/kat.sha256` (an index
//! proves only that nobody changed the files after indexing, not what they say); a
//! path present in two shards with different contents is a conflict and nothing is
//! merged.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use xshell::Shell;

use crate::evidence::schema::{self, FileView, InstanceResult, Summary};
use crate::kat::kept::check_pass;
use crate::kat::verify::Status;
use crate::kat::Manifest;
use crate::{evidence, project};

mod combine;

/// `merge`: campaign shards into one evidence set.
#[derive(Debug, Clone)]
pub struct Merge {
    pub shards: Vec<camino::Utf8PathBuf>,
    pub out: camino::Utf8PathBuf,
}

impl Merge {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        if self.out.exists() && self.out.read_dir_utf8()?.next().is_some() {
            bail!("{} is not empty: merge into a new folder", self.out);
        }
        // path → every (digest, shard) that holds it
        let mut found: BTreeMap<String, Vec<(String, Utf8PathBuf)>> = BTreeMap::new();
        for shard in &self.shards {
            check_shard(shard)?;
            rederive(shard, &manifest_of)?;
            for (path, sha) in evidence::read_index(shard)? {
                found.entry(path).or_default().push((sha, shard.clone()));
            }
        }
        let plan = plan(found, &order_of)?;
        for (path, source) in &plan {
            let dest = self.out.join(path);
            std::fs::create_dir_all(dest.parent().unwrap_or(&self.out))?;
            match source {
                Source::Copy(sha, shard) => copy(shard, path, (&dest, sha))?,
                Source::Combined(text) => project::write_atomic(&dest, text.as_bytes())?,
            }
        }
        let digest = evidence::write_index(&self.out)?;
        // The merged set as any reader sees it: its own check, and every PASS derived
        // again from its log (a combined summary included).
        if let Err(e) = check_shard(&self.out).and_then(|()| rederive(&self.out, &manifest_of)) {
            std::fs::remove_dir_all(&self.out).with_context(|| format!("cannot remove {}", self.out))?;
            return Err(e.context("the merged set is refused, nothing merged"));
        }
        let combined = plan.values().filter(|s| matches!(s, Source::Combined(_))).count();
        crate::say!(
            "merged {} shards: {} files ({combined} combined from several shards) into {}; index sha256 {digest}",
            self.shards.len(),
            plan.len(),
            self.out
        );
        Ok(())
    }
}

/// Where a merged file's bytes come from.
enum Source {
    /// The file of one shard (every shard that holds it holds these bytes).
    Copy(String, Utf8PathBuf),
    /// Several shards' copies of one per-submission file, combined (`combine`).
    Combined(String),
}

/// Each path's source: one shard's bytes when every copy is the same; several
/// different copies combined when the layout makes the file one submission's
/// (`combine::kind`) and they are parts of one run; any other difference a conflict,
/// and nothing is merged.
fn plan(
    found: BTreeMap<String, Vec<(String, Utf8PathBuf)>>,
    order_of: &dyn Fn(&str) -> Vec<String>,
) -> Result<BTreeMap<String, Source>> {
    let mut plan = BTreeMap::new();
    let mut conflicts = Vec::new();
    for (path, copies) in found {
        let (sha, first) = &copies[0];
        let Some((theirs, shard)) = copies.iter().find(|(s, _)| s != sha) else {
            plan.insert(path, Source::Copy(sha.clone(), first.clone()));
            continue;
        };
        match combine::kind(&path) {
            Some((kind, id)) => {
                let shards: Vec<&Utf8PathBuf> = copies.iter().map(|(_, from)| from).collect();
                match combine::combine(kind, &path, &shards, &order_of(&id)) {
                    // What was read is the indexed bytes, as a copied file is shown to be.
                    Ok(text) => match copies.iter().find(|(sha, from)| !indexed(from, &path, sha)) {
                        Some((_, from)) => conflicts.push(format!("{path}: {from}/{path} changed while merging")),
                        None => {
                            plan.insert(path, Source::Combined(text));
                        }
                    },
                    Err(e) => conflicts.push(format!("{path}: cannot be combined: {e:#}")),
                }
            }
            None => conflicts.push(format!("{path}: {first} has {sha}, {shard} has {theirs}")),
        }
    }
    if !conflicts.is_empty() {
        bail!("conflicting duplicates, nothing merged:\n  {}", conflicts.join("\n  "));
    }
    Ok(plan)
}

/// A shard (or the merged set) that matches its own index, else why not.
fn check_shard(shard: &Utf8Path) -> Result<()> {
    let problems = evidence::check(shard).with_context(|| format!("shard {shard}"))?;
    if !problems.is_clean() {
        bail!(
            "shard {shard} does not match its own index (changed {:?}, missing {:?}, extra {:?}{}); \
             run `cargo xtask evidence check {shard}`",
            problems.changed,
            problems.missing,
            problems.extra,
            problems.index.iter().chain(&problems.refused).map(|i| format!(", {i}")).collect::<String>()
        );
    }
    Ok(())
}

/// `shard/path` is still the bytes its index lists.
fn indexed(shard: &Utf8Path, path: &str, sha: &str) -> bool {
    project::sha256_regular(&shard.join(path)).is_ok_and(|now| now == sha)
}

/// `shard/path` copied to `dest`, and shown to be the indexed bytes `sha`.
fn copy(shard: &Utf8Path, path: &str, (dest, sha): (&Utf8Path, &str)) -> Result<()> {
    let mut from = project::open_regular(&shard.join(path))?;
    let mut to = std::fs::File::create(dest).with_context(|| format!("cannot create {dest}"))?;
    std::io::copy(&mut from, &mut to).with_context(|| format!("cannot copy {shard}/{path}"))?;
    if project::sha256_regular(dest)? != sha {
        bail!("{shard}/{path} changed while merging");
    }
    Ok(())
}

/// The instance labels of `id` in manifest order, when its submission loads here.
fn order_of(id: &str) -> Vec<String> {
    crate::compile::submission::Submission::load(id)
        .map(|sub| sub.instances.iter().map(|i| i.label.clone()).collect())
        .unwrap_or_default()
}

/// `id`'s KAT manifest in this checkout, read with its submission's `kat_from` when the
/// submission loads; without it a variant's PASS finds no line and is refused, never
/// accepted.
fn manifest_of(id: &str) -> Result<Manifest> {
    let manifest = Manifest::load(&Manifest::default_path(id))?;
    Ok(match crate::compile::submission::Submission::load(id) {
        Ok(sub) => manifest.with_kat_from(&sub),
        Err(_) => manifest,
    })
}

/// Every PASS in the KAT summaries of `shard`, derived again: the log the summary
/// names is the instance's own, a regular non-empty file of the shard, and its
/// canonical digest (the manifest line's rule) is the manifest's and the recorded one.
fn rederive(shard: &Utf8Path, manifest_of: &dyn Fn(&str) -> Result<Manifest>) -> Result<()> {
    let index = evidence::read_index(shard)?;
    for path in index.keys() {
        let parts: Vec<&str> = path.split('/').collect();
        let [system, "kat", id, "summary.json"] = parts[..] else { continue };
        for name in [system, id] {
            project::plain_name(name).map_err(|why| anyhow::anyhow!("shard {shard}: {path}: {name:?} {why}"))?;
        }
        let summary: Summary = schema::read(&shard.join(path))?.with_context(|| format!("{shard}/{path} vanished"))?;
        if summary.id != id {
            bail!("shard {shard}: {path} is the summary of {}, not of {id}", summary.id);
        }
        // Every file recorded PASS, whichever way its family records files.
        let passes: Vec<(&InstanceResult, FileView)> = summary
            .instances
            .iter()
            .flat_map(|i| i.file_views().into_iter().map(move |v| (i, v)))
            .filter(|(_, v)| v.status == Some(Status::Pass))
            .collect();
        if passes.is_empty() {
            continue;
        }
        let manifest = manifest_of(id).with_context(|| format!("shard {shard}: {path} records PASS"))?;
        for (r, v) in passes {
            let log = format!("{system}/kat/{id}/{}", evidence::kat_log_name(&r.label, v.part));
            let what = v.file.filter(|_| !v.part.is_empty()).map_or(String::new(), |f| format!(" ({f})"));
            check_pass(shard, &log, &manifest, (r, &v))
                .with_context(|| format!("shard {shard}: {path} records PASS for {}{what}; refused", r.label))?;
            if !index.contains_key(&log) {
                bail!("shard {shard}: the KAT log {log} of {id} {} is not in its index", r.label);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kat;
    use crate::kat::kept::check_kept;

    const LOG: &str = "local/kat/fixture-kem/fix-a.log";

    /// A shard whose summary (the golden one, relabelled) records one PASS for
    /// `fix-a` with the digest of `text` under the strict rule.
    fn shard(dir: &Utf8Path, log: Option<&str>, text: &str) -> Manifest {
        let digest = project::sha256_hex(&kat::canonical(text.as_bytes(), kat::Mode::Strict, None));
        let entries = kat::parse(&format!("{digest} strict fix-a/kat.rsp")).unwrap();
        let golden = Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/summary.json");
        let mut s: Summary = schema::read(&golden).unwrap().unwrap();
        s.id = "fixture-kem".into();
        s.instances.truncate(1);
        let r = &mut s.instances[0];
        r.label = "fix-a".into();
        r.kat_file = Some("kat.rsp".into());
        r.expected_sha256 = Some(digest.parse().unwrap());
        r.actual_sha256 = r.expected_sha256.clone();
        r.log = Some(LOG.into());
        schema::write(&dir.join("local/kat/fixture-kem/summary.json"), &s).unwrap();
        if let Some(log) = log {
            std::fs::write(dir.join(LOG), log).unwrap();
        }
        evidence::write_index(dir).unwrap();
        Manifest { path: "kat.sha256".into(), entries, kat_from: Default::default() }
    }

    fn merged(dir: &Utf8Path, manifest: &Manifest) -> std::result::Result<(), String> {
        rederive(dir, &|_| Ok(manifest.clone())).map_err(|e| format!("{e:#}"))
    }

    #[test]
    fn a_kept_pass_is_the_indexed_log_and_gives_the_published_digest() {
        let text = "count = 0\nss = 00\n";
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap();
        let manifest = shard(dir, Some(text), text);
        let summary = "local/kat/fixture-kem/summary.json";
        let kept = |dir: &Utf8Path| {
            let s: Summary = schema::read(&dir.join(summary)).unwrap().unwrap();
            let index = evidence::read_index(dir).unwrap();
            check_kept(dir, &index, (summary, &manifest), &s.instances[0]).map_err(|e| format!("{e:#}"))
        };
        assert_eq!(kept(dir), Ok(()));
        // One byte more in the log: no longer the indexed file.
        std::fs::write(dir.join(LOG), format!("{text}x")).unwrap();
        assert!(kept(dir).unwrap_err().contains("fix-a.log changed since it was indexed"));
        // Indexed again by whoever edited it: the log no longer gives the digest.
        std::fs::write(dir.join(LOG), "count = 0\nss = 01\n").unwrap();
        evidence::write_index(dir).unwrap();
        let e = kept(dir).unwrap_err();
        assert!(e.contains("its PASS for fix-a") && e.contains("gives sha256"), "{e}");
    }

    /// A variant's PASS (`kat_from`) is derived against the line of the instance it names,
    /// and only when the manifest is read with the submission's `kat_from`.
    #[test]
    fn a_variants_pass_is_derived_from_the_named_instances_line() {
        let text = "count = 0\nss = 00\n";
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap();
        let mut manifest = shard(dir, Some(text), text);
        manifest.entries[0].label = "fix-ref".into();
        let e = merged(dir, &manifest).unwrap_err();
        assert!(e.contains("has no line for it"), "{e}");
        manifest.kat_from.insert("fix-a".into(), "fix-ref".into());
        assert_eq!(merged(dir, &manifest), Ok(()));
    }

    #[test]
    fn a_pass_is_merged_only_when_its_log_gives_the_published_digest() {
        let text = "count = 0\nss = 00\n";
        for (log, refused) in [
            (Some(text), None),
            (Some("count = 0\nss = 01\n"), Some("gives sha256")),
            (Some(""), Some("is empty")),
            (None, Some("no KAT log local/kat/fixture-kem/fix-a.log")),
        ] {
            let t = tempfile::tempdir().unwrap();
            let dir = Utf8Path::from_path(t.path()).unwrap();
            let manifest = shard(dir, log, text);
            match (merged(dir, &manifest), refused) {
                (Ok(()), None) => {}
                (Err(e), Some(why)) => assert!(e.contains(why) && e.contains("PASS for fix-a; refused"), "{e}"),
                (got, want) => panic!("log {log:?}: {got:?}, wanted refusal {want:?}"),
            }
        }
    }
}
