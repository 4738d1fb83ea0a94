//! Evidence kept from an earlier run is evidence only while its KAT logs are the indexed
//! files and every PASS is derived again from its own log against the published digest:
//! what `verify --resume`, `campaign --resume`, `ct` and `merge` demand.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use sha2::Sha256;

use crate::evidence::schema::{FileView, InstanceResult, Status};
use crate::evidence::{self, indexed};
use crate::kat::{self, Canonical, Manifest};
use crate::project;

/// An earlier result of `summary` (`<system>/kat/<id>/summary.json`, relative to `root`)
/// is evidence only while every log it names is the indexed file and every PASS it
/// records is derived again from its own log against `manifest` (what `merge` demands).
pub fn check_kept(
    root: &Utf8Path,
    index: &BTreeMap<String, String>,
    (summary, manifest): (&str, &Manifest),
    r: &InstanceResult,
) -> Result<()> {
    let dir = summary.strip_suffix("/summary.json").with_context(|| format!("{summary} is no KAT summary"))?;
    for v in r.file_views() {
        if let Some(log) = v.log {
            indexed(root, index, log)?;
        }
        if v.status == Some(Status::Pass) {
            let log = format!("{dir}/{}", evidence::kat_log_name(&r.label, v.part));
            check_pass(root, &log, manifest, (r, &v)).with_context(|| format!("its PASS for {}", r.label))?;
        }
    }
    Ok(())
}

pub(crate) fn check_pass(
    shard: &Utf8Path,
    log: &str,
    manifest: &Manifest,
    (r, v): (&InstanceResult, &FileView),
) -> Result<()> {
    let entry = v
        .file
        .and_then(|f| manifest.entry(&r.label, f))
        .with_context(|| format!("{} has no line for it", manifest.path))?;
    let recorded = |d: Option<&crate::sha::Sha256Hex>| d.map_or("none".to_owned(), ToString::to_string);
    if v.expected_sha256 != Some(&entry.sha256) || v.actual_sha256 != Some(&entry.sha256) {
        bail!(
            "it records expected {} and actual {}, but {} line {} says {}",
            recorded(v.expected_sha256),
            recorded(v.actual_sha256),
            manifest.path,
            entry.line,
            entry.sha256
        );
    }
    if v.log != Some(log) {
        bail!("its log is {:?}, not the instance's own {log}", v.log);
    }
    let path = shard.join(log);
    let file = project::open_regular(&path).with_context(|| format!("no KAT log {log}"))?;
    if file.metadata()?.len() == 0 {
        bail!("its KAT log {log} is empty");
    }
    let mut canonical = Canonical::new(entry.mode, entry.records, Sha256::default());
    std::io::copy(&mut file.take(project::EVIDENCE_FILE_CAP), &mut canonical)
        .with_context(|| format!("cannot read {path}"))?;
    let actual = kat::finish_digest(canonical).map_err(|why| anyhow::anyhow!("its KAT log {log}: {why}"))?;
    if entry.sha256 != *actual {
        bail!(
            "its KAT log {log} gives sha256 {actual} under the {} rule, not {}",
            format!("{:?}", entry.mode).to_lowercase(),
            entry.sha256
        );
    }
    Ok(())
}
